"""Stage of finalize: the resource pass. Each distinct script, stylesheet, icon and preloaded font the audit's judged
pages load (Page.resource_urls, on this site or another) is asked once, bounded per audit and in wall time; each
stylesheet that answers 2xx is read (size-capped) for the fonts of its @font-face rules, each distinct font asked
once too. The resource checks (audits.checks.resources) then read the answers and the broken-script / -stylesheet /
-font / -icon issues replace earlier ones. Idempotent.

Like the image pass (audits.pipeline.images): the requests run before the issues' transaction and use the crawler's
fetch, its egress guard (ALLOW_PRIVATE_TARGETS), user agent and deadline; the site's basic auth goes to the site's
own hosts only (crawler.auth.SiteBasicAuth judges every request), never to a CDN. Requests to the site's own host are
spaced like the crawl (the audit's interval and Crawl-delay); other hosts get a handful of sequential requests, as
from one browser. HEAD first, GET (body not read) where HEAD is refused; redirects followed up to a limit, each hop
its own guarded request, as a browser follows them.
"""

import time
from urllib.parse import urlsplit

from django.conf import settings

from audits.bulk import issues_insert
from audits.checks.registry import CheckSettings
from audits.checks.resources import RESOURCE_SITE_TYPES, RESOURCE_TYPE_OF_KIND, resource_site_issues
from audits.checks.site import judged_pages
from audits.fencing import FinalizeRun, finalize_atomic
from audits.models import Issue
from audits.pipeline.politeness import DiscoveryPacer
from audits.pipeline.scope import audit_site_auth
from crawler.fetch import build_session, fetch
from crawler.parse.css import stylesheet_font_urls, stylesheet_text
from crawler.urls import normalize

RESOURCE_REQUESTS_MAX_PER_AUDIT = 500  # distinct resource and font URLs asked per audit; the rest are not judged
RESOURCE_PASS_BUDGET_S = 120  # wall time the pass may take in finalize (a slow CDN, a long Crawl-delay)
RESOURCE_FETCH_DEADLINE_S = 15  # one request, headers (and a stylesheet's body): one dead host cannot eat the budget
STYLESHEET_READ_MAX_BYTES = 2 * 1024 * 1024  # of a stylesheet's text read for its @font-face rules
RESOURCE_REDIRECT_HOPS_MAX = 5  # redirects followed from one resource URL
HEAD_REFUSED_STATUS_CODES = frozenset({405, 501})  # HEAD not allowed / not implemented: asked again with GET
HEAD_RETRY_ERRORS = frozenset({"connect", "other"})  # a server that drops a HEAD (RemoteDisconnected)


def resources_judge(audit, *, run: FinalizeRun | None = None) -> None:
    """Ask for the audit's page resources (when a resource check is enabled) and replace the audit's resource
    issues with what the resource checks make of the answers (given finalize's `run`, only while it holds the
    audit: audits.fencing)."""
    check_settings = CheckSettings.for_audit(audit)
    kinds = {kind for kind, issue_type in RESOURCE_TYPE_OF_KIND.items() if check_settings.enabled(issue_type)}
    if kinds:
        answers, fonts_of = resource_answers(audit, judged_pages(audit.id), kinds=kinds)
    else:
        answers, fonts_of = {}, {}
    with finalize_atomic(run):
        Issue.objects.filter(audit_id=audit.id, type__in=RESOURCE_SITE_TYPES).delete()
        issues = resource_site_issues(audit.id, judged_pages(audit.id), answers, fonts_of, check_settings)
        issues_insert(issues)


def resource_answers(audit, pages, *, kinds: set[str]) -> tuple[dict[str, dict], dict[str, list[str]]]:
    """(answers, fonts_of): url -> {"status_code", "error"} for the distinct resource URLs of `pages` whose kind is
    in `kinds`, first-loaded first, and stylesheet url -> its @font-face font URLs; at most
    RESOURCE_REQUESTS_MAX_PER_AUDIT requests' worth of URLs, within RESOURCE_PASS_BUDGET_S."""
    read_fonts = "font" in kinds
    wanted = kinds | ({"stylesheet"} if read_fonts else set())  # fonts are found in stylesheets
    queue: dict[str, bool] = {}  # url -> read it as a stylesheet
    rows = pages.exclude(resource_urls=[]).order_by("url").values_list("resource_urls", flat=True).iterator()
    for resource_urls in rows:
        for entry in resource_urls or []:
            if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and entry[0] in wanted):
                continue
            kind, url = entry
            if url in queue:
                queue[url] = queue[url] or (read_fonts and kind == "stylesheet")
            elif len(queue) < RESOURCE_REQUESTS_MAX_PER_AUDIT:
                queue[url] = read_fonts and kind == "stylesheet"
    if not queue:
        return {}, {}
    site_host = urlsplit(audit.site_url or audit.start_url).hostname
    pace = DiscoveryPacer(audit)
    pace.use_crawl_delay((audit.discovery or {}).get("crawl_delay_s"))
    session = build_session((audit.config or {}).get("user_agent") or None)
    session.auth = audit_site_auth(audit)  # sent to the site's own hosts only, hop by hop
    answers: dict[str, dict] = {}
    fonts_of: dict[str, list[str]] = {}
    asked = 0
    stop_at = time.monotonic() + RESOURCE_PASS_BUDGET_S

    def paced(url: str) -> None:
        if urlsplit(url).hostname == site_host:
            pace()

    try:
        urls = list(queue)
        i = 0
        while i < len(urls) and time.monotonic() < stop_at:
            url = urls[i]
            i += 1
            answer, css = _ask(session, url, read_css=queue[url], paced=paced, stop_at=stop_at)
            answers[url] = answer
            asked += 1
            if css is None:
                continue
            fonts_of[url] = fonts = stylesheet_font_urls(css, answer.get("final_url") or url)
            for font in fonts:
                if font not in queue and len(queue) < RESOURCE_REQUESTS_MAX_PER_AUDIT:
                    queue[font] = False
                    urls.append(font)
    finally:
        session.close()
    return {url: {"status_code": a["status_code"], "error": a["error"]} for url, a in answers.items()}, fonts_of


def _ask(session, url: str, *, read_css: bool, paced, stop_at: float) -> tuple[dict, str | None]:
    """The answer for one resource URL, redirects followed; a stylesheet's text when read_css and it answered 2xx."""
    current = url
    for _hop in range(RESOURCE_REDIRECT_HOPS_MAX + 1):
        paced(current)
        result = _request(session, current, read_css=read_css, paced=paced)
        status = result.status_code
        if result.error_kind is None and status is not None and 300 <= status < 400 and result.redirect_url:
            target = normalize(result.redirect_url)
            if target is None or time.monotonic() > stop_at:
                return {"status_code": status, "error": "", "final_url": current}, None
            current = target
            continue
        answer = {"status_code": status, "error": result.error_kind or "", "final_url": current}
        css = None
        if read_css and not result.error_kind and status is not None and 200 <= status < 300:
            css = stylesheet_text(result.body, result.charset)
        return answer, css
    return {"status_code": None, "error": "too_many_redirects", "final_url": current}, None


def _request(session, url: str, *, read_css: bool, paced):
    guard = {"allow_private": settings.ALLOW_PRIVATE_TARGETS, "deadline_s": RESOURCE_FETCH_DEADLINE_S}
    if read_css:
        return fetch(session, url, read_body="always", max_bytes=STYLESHEET_READ_MAX_BYTES, **guard)
    result = fetch(session, url, method="HEAD", **guard)
    if result.status_code in HEAD_REFUSED_STATUS_CODES or result.error_kind in HEAD_RETRY_ERRORS:
        paced(url)
        # GET with the body never read: the connection is dropped after the headers, nothing is downloaded.
        result = fetch(session, url, read_body="never", **guard)
    return result
