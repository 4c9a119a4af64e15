"""Stage of finalize: the image pass. One headers-only request per distinct internal image URL of the audit's judged
pages (Page.image_urls), bounded per audit and spaced like the crawl; the image checks (audits.checks.images) then
read its answers and the broken-image / image-too-large issues replace earlier ones. Idempotent.

The requests run before the issues' transaction (no transaction is held open over the network) and use the
crawler's fetch: the same SSRF guard (ALLOW_PRIVATE_TARGETS), user agent, total deadline and basic auth
(audit_site_auth: sent to the project's own site only, so an image on another origin gets no credentials, and a
site behind basic auth does not report each of its images as broken with a 401).
Not judged: images robots.txt disallows are requested all the same (they are not pages), and a 3xx image is
not followed (counted as answered).
"""

import itertools
import time

from django.conf import settings

from audits.bulk import issues_insert
from audits.checks.images import IMAGE_SITE_TYPES, image_site_issues
from audits.checks.registry import CheckSettings
from audits.checks.site import judged_pages
from audits.fencing import FinalizeRun, finalize_atomic
from audits.models import Issue
from audits.pipeline.politeness import DiscoveryPacer
from audits.pipeline.scope import audit_site_auth
from crawler.fetch import build_session, fetch

IMAGE_REQUESTS_MAX_PER_AUDIT = 500  # distinct image URLs asked per audit; the rest are not judged
IMAGE_PASS_BUDGET_S = 120  # wall time the pass may take in finalize (a slow site or a long Crawl-delay)


def images_judge(audit, *, run: FinalizeRun | None = None) -> None:
    """Ask the site for the audit's image URLs (when an image check is enabled) and replace the audit's image
    issues with what the image checks make of the answers; given finalize's `run`, only while it holds the audit
    (audits.fencing): a run cut off from the network gets no answer and must not write them as broken images."""
    check_settings = CheckSettings.for_audit(audit)
    enabled = any(check_settings.enabled(t) for t in IMAGE_SITE_TYPES)
    answers = image_answers(audit, judged_pages(audit.id)) if enabled else {}
    with finalize_atomic(run):
        Issue.objects.filter(audit_id=audit.id, type__in=IMAGE_SITE_TYPES).delete()
        if enabled:
            issues_insert(image_site_issues(audit.id, judged_pages(audit.id), answers, check_settings))


def image_answers(audit, pages) -> dict[str, dict]:
    """url -> {"status_code", "bytes" (Content-Length or None), "error"} for the audit's distinct image URLs,
    first-linked first, at most IMAGE_REQUESTS_MAX_PER_AUDIT and within IMAGE_PASS_BUDGET_S."""
    urls: dict[str, None] = {}
    for image_urls in pages.exclude(image_urls=[]).order_by("url").values_list("image_urls", flat=True).iterator():
        urls.update(dict.fromkeys(image_urls or []))  # a URL seen before keeps its place
        if len(urls) >= IMAGE_REQUESTS_MAX_PER_AUDIT:
            break  # the rest of the pages add nothing asked
    urls = dict(itertools.islice(urls.items(), IMAGE_REQUESTS_MAX_PER_AUDIT))  # the last page's may go over
    if not urls:
        return {}
    pace = DiscoveryPacer(audit)
    pace.use_crawl_delay((audit.discovery or {}).get("crawl_delay_s"))
    session = build_session((audit.config or {}).get("user_agent") or None)
    session.auth = audit_site_auth(audit)
    answers: dict[str, dict] = {}
    stop_at = time.monotonic() + IMAGE_PASS_BUDGET_S
    try:
        for url in urls:
            if time.monotonic() > stop_at:
                break
            pace()
            # GET with the body never read: some servers answer HEAD wrongly; the connection is dropped after
            # the headers, so no image is downloaded.
            result = fetch(session, url, read_body="never", allow_private=settings.ALLOW_PRIVATE_TARGETS)
            length = result.headers.get("content-length", "")
            answers[url] = {
                "status_code": result.status_code,
                "bytes": int(length) if length.strip().isdigit() else None,
                "error": result.error_kind or "",
            }
    finally:
        session.close()
    return answers
