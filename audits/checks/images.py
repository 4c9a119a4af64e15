"""Image checks. One page at a time: <img> without width and height (layout shifts), alt text over the threshold.
In finalize: broken images (4xx/5xx or no answer) and images over the size threshold, from one headers-only
request per distinct internal image URL (Page.image_urls), bounded per audit and spaced like the crawl.

The image pass runs before the site checks' transaction (no transaction is held open over the network) and
uses the crawler's fetch: the same SSRF guard (ALLOW_PRIVATE_TARGETS), user agent, total deadline and basic auth
(audit_site_auth: sent to the project's own site only, so an image on another origin gets no credentials, and a
site behind basic auth does not report each of its images as broken with a 401).
Not judged: images robots.txt disallows are requested all the same (they are not pages), and a 3xx image is
not followed (counted as answered).
"""

import time

from django.conf import settings

from audits.pipeline.politeness import DiscoveryPacer
from audits.pipeline.scope import audit_site_auth
from crawler.fetch import build_session, fetch

EXAMPLES_MAX = 5  # image srcs listed in one issue
IMAGE_REQUESTS_MAX_PER_AUDIT = 500  # distinct image URLs asked per audit; the rest are not judged
IMAGE_PASS_BUDGET_S = 120  # wall time the pass may take in finalize (a slow site or a long Crawl-delay)
IMAGE_SITE_TYPES = ("broken-image", "image-too-large")


def image_page_checks(data, add, limit) -> None:
    if data.images_missing_size:
        add(
            "image-missing-size",
            images_missing_size=data.images_missing_size,
            images_total=data.images_total,
            srcs=data.images_missing_size_srcs[:EXAMPLES_MAX],
        )
    max_chars = limit("image-alt-too-long", "max_chars")
    long_alts = sorted((item for item in data.image_alts if item[1] > max_chars), key=lambda item: -item[1])
    if long_alts:
        add(
            "image-alt-too-long",
            images_count=len(long_alts),
            max_chars=max_chars,
            images=[{"src": src, "alt_chars": chars} for src, chars in long_alts[:EXAMPLES_MAX]],
        )


def image_answers(audit, pages) -> dict[str, dict]:
    """url -> {"status_code", "bytes" (Content-Length or None), "error"} for the audit's distinct image URLs,
    first-linked first, at most IMAGE_REQUESTS_MAX_PER_AUDIT and within IMAGE_PASS_BUDGET_S."""
    urls: dict[str, None] = {}
    for image_urls in pages.exclude(image_urls=[]).order_by("url").values_list("image_urls", flat=True).iterator():
        for url in image_urls or []:
            if len(urls) >= IMAGE_REQUESTS_MAX_PER_AUDIT:
                break
            urls.setdefault(url, None)
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


def image_site_checks(out, pages, answers: dict, enabled, max_kb: int) -> None:
    """One issue per page and type, listing its broken or too large images."""
    if not answers:
        return
    max_bytes = max_kb * 1024
    rows = pages.exclude(image_urls=[]).order_by("url").values_list("id", "url", "image_urls").iterator()
    for page_id, page_url, image_urls in rows:
        broken, large = [], []
        for src in image_urls or []:
            answer = answers.get(src)
            if answer is None:
                continue
            status = answer["status_code"]
            if answer["error"] or status is None or status >= 400:
                broken.append({"src": src, "status_code": status, "error": answer["error"]})
            elif answer["bytes"] is not None and answer["bytes"] > max_bytes:
                large.append({"src": src, "kb": round(answer["bytes"] / 1024)})
        if broken and enabled("broken-image"):
            out.add("broken-image", page_id=page_id, page_url=page_url, images_count=len(broken),
                    images=broken[:EXAMPLES_MAX])  # fmt: skip
        if large and enabled("image-too-large"):
            out.add("image-too-large", page_id=page_id, page_url=page_url, images_count=len(large), max_kb=max_kb,
                    images=large[:EXAMPLES_MAX])  # fmt: skip
