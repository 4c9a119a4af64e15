"""Crawl services: discovery (robots, sitemaps, seeding) and one crawl chunk (claim, fetch, parse, persist).

Tasks in audits.workflow and the in-process runner both call these; nothing here knows about Celery.
"""

import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audits.checks import PAGE_CHECK_TYPES, page_issues
from audits.checks.page import challenge_reason, robots_directives
from audits.limits import CHUNK_SEEN_URLS_MAX, CHUNK_SOFT_DEADLINE_S, PERSIST_BATCH_PAGES
from audits.models import Audit, Issue, Page, page_id_for
from audits.politeness import DiscoveryPacer, Politeness, is_rate_limit_answer
from audits.render import render_session_for
from audits.scope import CrawlScope, url_pattern
from audits.services import audit_fail, audit_set_phase
from crawler import limits as crawl_limits
from crawler.auth import SiteBasicAuth, site_basic_auth
from crawler.discovery import fetch_robots, fetch_sitemaps
from crawler.fetch import FetchResult, build_session, fetch
from crawler.parse import PageData, parse_html, parse_link_header
from crawler.urls import normalize
from scratchpad.models import Frontier, Throttle
from scratchpad.services import (
    ClaimedURL,
    Edge,
    NewURL,
    frontier_claim,
    frontier_mark_started,
    frontier_record_batch,
    frontier_release,
    frontier_seed,
    frontier_start_allowed,
)

logger = logging.getLogger(__name__)
Source = Frontier.Source

BLOCKED_STATUS_CODES = frozenset({401, 403})
RATE_LIMITED_STATUS_CODES = frozenset({429})
CHALLENGE_HEADERS = ("cf-mitigated",)


# --- discovery -------------------------------------------------------------------------------------


def audit_discover(*, audit_id) -> bool:
    """Resolve the start URL, read robots.txt and sitemaps, seed the frontier. False when the audit ended."""
    audit = Audit.objects.select_related("project").filter(id=audit_id, status=Audit.Status.RUNNING).first()
    if audit is None:
        return False
    session = build_session(audit.config.get("user_agent") or None)
    session.auth = _site_auth(audit)
    pace = DiscoveryPacer(audit)
    if not audit.discovery.get("robots_fetched"):
        final_url, error = _resolve_start_url(session, audit.start_url, pace)
        if error:
            audit_fail(
                audit_id=audit.id,
                code="start_url_unreachable",
                detail=f"The start URL {audit.start_url} gave no HTTP answer: {error}",
                phase=Audit.Phase.DISCOVERY,
            )
            return False
        robots = fetch_robots(session, final_url, allow_private=settings.ALLOW_PRIVATE_TARGETS, pace=pace)
        # Kept raw on the audit so that a retried step re-parses it and never fetches it again.
        audit.site_url = final_url
        audit.robots_txt = robots.raw
        audit.robots_status = robots.status_code
        audit.discovery = {**audit.discovery, "robots_fetched": True, "robots_error": robots.error}
        audit.save(update_fields=["site_url", "robots_txt", "robots_status", "discovery"])

    scope = CrawlScope.for_audit(audit)
    pace.use_crawl_delay(scope.robots.crawl_delay_s())
    sitemaps = fetch_sitemaps(
        session,
        scope.site_url,
        scope.robots,
        max_urls=crawl_limits.sitemap_url_cap(audit.max_pages),
        allow_private=settings.ALLOW_PRIVATE_TARGETS,
        pace=pace,
    )
    pace.hand_over()
    seeds = [NewURL(audit.start_url, depth=0, source=Source.START, pattern=url_pattern(audit.start_url))]
    skipped = 0
    for url in sitemaps.urls:
        url = scope.rewrite(url)
        if scope.allows(url):
            seeds.append(NewURL(url, depth=None, source=Source.SITEMAP, in_sitemap=True, pattern=url_pattern(url)))
        else:
            skipped += 1
    frontier_seed(audit_id=audit.id, urls=seeds)
    discovery = {
        **audit.discovery,
        "sitemaps": sitemaps.sitemaps_found[:50],
        "sitemap_documents": sitemaps.documents_fetched,
        "sitemap_urls": len(sitemaps.urls),
        "sitemap_urls_out_of_scope": skipped,
        "sitemap_capped": sitemaps.capped,
        "sitemap_errors": sitemaps.errors[:20],
        "crawl_delay_s": scope.robots.crawl_delay_s(),
        # Stored patterns RE2 cannot run (saved before patterns were checked for it): the crawl goes on
        # without them and says so here instead of failing.
        "skipped_patterns": scope.skipped_patterns,
    }
    return audit_set_phase(audit_id=audit.id, phase=Audit.Phase.CRAWLING, discovery=discovery)


def _resolve_start_url(session, url: str, pace) -> tuple[str, str | None]:
    """Follow the start URL's redirects by hand: the site is where it lands. Error text if no answer."""
    current = url
    for _ in range(crawl_limits.MAX_REDIRECT_HOPS):
        pace()
        result = fetch(session, current, read_body="never", allow_private=settings.ALLOW_PRIVATE_TARGETS)
        if result.status_code is None:
            return current, result.error or result.error_kind or "no answer"
        target = normalize(result.redirect_url) if result.redirect_url else None
        if not target or target == current:
            return current, None
        current = target
    return current, None


# --- one crawl chunk -------------------------------------------------------------------------------


@dataclass
class PageRecord:
    claimed: ClaimedURL
    page: Page
    discovered: list[NewURL]
    edges: list[Edge]
    issues: list[Issue]
    rate_limited: int = 0  # 429/503 answers seen (and waited out) for this URL
    cooldown_s: float = 0.0  # time spent waiting them out
    final_rate_limited: bool = False  # the last answer was still a 429/503


def _site_auth(audit: Audit) -> SiteBasicAuth | None:
    """The project's basic auth, sent only to the start URL's site (subdomains if the project crawls them).

    Not to audit.site_url: when the start URL redirects to another host, the crawl follows it but the
    credentials stay with the host the person typed (a redirect must not be able to collect them).
    """
    project = audit.project
    return site_basic_auth(
        project.auth_username,
        project.auth_password,
        audit.start_url,
        include_subdomains=bool((audit.config or {}).get("crawl_subdomains", False)),
    )


@dataclass(frozen=True)
class FetchOptions:
    """How a chunk talks to the site: the project's user agent and basic auth, the SSRF policy."""

    user_agent: str | None = None
    auth: SiteBasicAuth | None = None
    allow_private: bool = False

    @classmethod
    def for_audit(cls, audit: Audit) -> "FetchOptions":
        return cls(
            user_agent=audit.config.get("user_agent") or None,
            auth=_site_auth(audit),
            allow_private=settings.ALLOW_PRIVATE_TARGETS,
        )


_thread_state = threading.local()


def _thread_session(options: FetchOptions):
    # requests.Session is not documented as thread-safe: one per fetch thread (and per set of options),
    # reused across URLs so connections are kept alive.
    sessions = getattr(_thread_state, "sessions", None)
    if sessions is None:
        sessions = _thread_state.sessions = {}
    session = sessions.get(options)
    if session is None:
        session = build_session(options.user_agent)
        session.auth = options.auth
        sessions.clear()  # one audit at a time per thread: drop another audit's pooled connections
        sessions[options] = session
    return session


def crawl_chunk_run(*, audit_id, lease_key: str, quota: int) -> dict:
    """Claim up to `quota` URLs under `lease_key`, fetch them politely in an adaptive window, persist in
    batches. Stops starting fetches at the soft deadline (or when the crawl must stop) and releases the rest.
    """
    audit = Audit.objects.select_related("project").filter(id=audit_id, status=Audit.Status.RUNNING).first()
    if audit is None:
        return {"skipped": "audit not running"}
    scope = CrawlScope.for_audit(audit)
    politeness = Politeness.for_audit(audit, crawl_delay_s=scope.robots.crawl_delay_s())
    if politeness.stopped_reason:
        return {"skipped": politeness.stopped_reason}
    options = FetchOptions.for_audit(audit)
    renderer = render_session_for(audit)
    claimed = frontier_claim(
        audit_id=audit_id, lease_key=lease_key, limit=quota, lease_s=settings.CRAWL_LEASE_DURATION_S
    )
    # URLs handed out before and never finished: the chunk that held them may have died because of one
    # of them. Fetch those one at a time, persisting each, and count each start before it happens, so
    # a URL that kills its worker every time is singled out and recorded instead of taking others along.
    careful = any(c.suspect for c in claimed)
    persister = _BatchPersister(
        audit_id=audit_id,
        lease_key=lease_key,
        batch_size=1 if careful else None,
        politeness=politeness,
        max_per_pattern=scope.max_urls_per_pattern,
    )
    for item in claimed:
        if item.exhausted:
            error = FetchResult(url=item.url, error_kind="worker_lost", error="crawl attempts exhausted")
            persister.add(build_page_record(audit_id, scope, item, error))
    todo = iter([c for c in claimed if not c.exhausted])
    deadline = time.monotonic() + CHUNK_SOFT_DEADLINE_S
    unstarted: list[ClaimedURL] = []

    def window() -> int:
        return 1 if careful else politeness.window

    def may_start(item: ClaimedURL) -> bool:
        if not careful:
            return True
        starts = frontier_mark_started(audit_id=audit_id, lease_key=lease_key, frontier_id=item.id)
        if frontier_start_allowed(starts):
            return True
        error = FetchResult(
            url=item.url,
            error_kind="worker_lost",
            error=f"the crawl worker died {starts - 1} times while fetching this URL",
        )
        persister.add(build_page_record(audit_id, scope, item, error))
        return False

    try:
        with ThreadPoolExecutor(max_workers=politeness.max_window, thread_name_prefix="fetch") as pool:
            running = {}

            def fill():
                while len(running) < window() and not persister.stopped and not politeness.stopped_reason:
                    item = next(todo, None)
                    if item is None:
                        return
                    if time.monotonic() >= deadline or not politeness.wait_turn(deadline):
                        unstarted.append(item)
                        continue
                    if may_start(item):
                        job = pool.submit(fetch_and_build, audit_id, scope, item, options, politeness, renderer)
                        running[job] = item

            fill()
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    running.pop(future)
                    persister.add(future.result())
                fill()
        persister.flush()
    finally:
        if renderer is not None:
            renderer.close()
    unstarted.extend(todo)  # left when the audit stopped running or the site made the crawl stop
    released = frontier_release(audit_id=audit_id, lease_key=lease_key, ids=[c.id for c in unstarted])
    return {"claimed": len(claimed), "finished": persister.finished, "released": released}


def fetch_and_build(
    audit_id, scope: CrawlScope, item: ClaimedURL, options: FetchOptions, politeness: Politeness, renderer=None
) -> PageRecord:
    """Fetch (waiting out 429/503 as the site asks), render if asked, parse one URL. Runs in a fetch
    thread and touches no database."""
    try:
        session = _thread_session(options)
        seen = 0
        cooldown = 0.0
        while True:
            result = fetch(session, item.url, allow_private=options.allow_private)
            if not is_rate_limit_answer(result):
                break
            wait_s = politeness.backoff_s(result, seen)
            seen += 1
            if wait_s is None:
                break
            time.sleep(wait_s)
            cooldown += wait_s
        rendered_html = None
        if renderer is not None and result.is_html and result.status_code and 200 <= result.status_code < 300:
            rendered_html = renderer.render(item.url)
        record = build_page_record(audit_id, scope, item, result, rendered_html=rendered_html)
    except Exception as exc:  # a bug or a pathological page must cost one page, not the chunk
        logger.exception("building page record failed", extra={"url": item.url})
        result = FetchResult(url=item.url, error_kind="other", error=f"internal error: {exc!r}"[:500])
        record = build_page_record(audit_id, scope, item, result)
        seen, cooldown = 0, 0.0
    record.rate_limited = seen
    record.cooldown_s = cooldown
    record.final_rate_limited = is_rate_limit_answer(result)
    return record


def fetch_class_for(result: FetchResult) -> str:
    # A deadline or a broken connection after the headers is still a failed fetch: the page was not read.
    if result.status_code is None or result.error_kind:
        return Page.FetchClass.ERROR
    if result.status_code in BLOCKED_STATUS_CODES or any(h in result.headers for h in CHALLENGE_HEADERS):
        return Page.FetchClass.BLOCKED
    if result.status_code in RATE_LIMITED_STATUS_CODES:
        return Page.FetchClass.RATE_LIMITED
    return Page.FetchClass.OK


def _queue(scope: CrawlScope, url: str, depth: int | None, source: str, hops: int = 0) -> NewURL | None:
    """The frontier entry for an internal URL a page leads to, or None when the scope refuses it."""
    url = scope.rewrite(url)
    if not scope.allows(url, depth):
        return None
    return NewURL(url, depth=depth, source=source, redirect_hops=hops)  # pattern: set once it is known new


def build_page_record(
    audit_id, scope: CrawlScope, item: ClaimedURL, result: FetchResult, *, rendered_html: str | None = None
) -> PageRecord:
    page = Page(
        id=page_id_for(audit_id, item.url),
        audit_id=audit_id,
        url=item.url,
        status_code=result.status_code,
        fetch_class=fetch_class_for(result),
        fetch_error=(result.error or "")[:500],
        content_type=result.content_type[:120],
        bytes=result.bytes_read,
        truncated=result.truncated,
        response_time_ms=result.response_time_ms,
        depth=item.depth,
        in_sitemap=item.in_sitemap,
        x_robots_tag=result.headers.get("x-robots-tag", "")[:500],
        fetched_at=timezone.now(),
    )
    discovered: list[NewURL] = []
    edges: list[Edge] = []
    data: PageData | None = None
    canonical_header = next(
        (normalize(url, item.url) for url, rel in parse_link_header(result.link_headers) if rel == "canonical"), None
    )
    page.canonical_header = canonical_header or ""

    if result.redirect_url and result.status_code and 300 <= result.status_code < 400:
        target = normalize(result.redirect_url, item.url)
        page.redirect_url = target or result.redirect_url[:2048]
        if target and item.redirect_hops < crawl_limits.MAX_REDIRECT_HOPS:
            new = _queue(scope, target, item.depth, Source.REDIRECT, item.redirect_hops + 1)
            discovered += [new] if new else []
    elif result.is_html and result.body and result.status_code and 200 <= result.status_code < 300:
        if rendered_html is not None:
            # The rendered DOM is what a JavaScript-running search engine sees; the response time
            # stays the fetch's own.
            data = parse_html(rendered_html.encode("utf-8"), item.url, content_type_charset="utf-8")
        else:
            data = parse_html(result.body, item.url, content_type_charset=result.charset)
        _fill_from_html(page, data)
        if challenge_reason(result, data):
            page.fetch_class = Page.FetchClass.BLOCKED  # a WAF/bot challenge stands in for the page
        follow_all = page.fetch_class == Page.FetchClass.OK and "nofollow" not in robots_directives(
            page.meta_robots, page.x_robots_tag
        )
        child_depth = None if item.depth is None else item.depth + 1
        internal = external = 0
        for link in data.links if page.fetch_class == Page.FetchClass.OK else []:
            is_internal = scope.is_internal(link.url)
            internal += is_internal
            external += not is_internal
            edges.append(Edge(page.id, link.url, link.anchor, link.nofollow, is_internal))
            if follow_all and is_internal and (scope.follow_nofollow or not link.nofollow):
                new = _queue(scope, link.url, child_depth, Source.LINK)
                discovered += [new] if new else []
        page.internal_links, page.external_links = internal, external
        # Canonical and hreflang targets are crawled too: their answers decide canonical/hreflang issues.
        for extra in [page.canonical_url, *(href for _, href in data.hreflang)]:
            if extra and extra != item.url and scope.is_internal(extra):
                new = _queue(scope, extra, child_depth, Source.LINK)
                discovered += [new] if new else []
    page.is_indexable = _is_indexable(page)
    issues = page_issues(page, data, result, scope.checks)
    return PageRecord(item, page, discovered, edges, issues)


def _fill_from_html(page: Page, data: PageData) -> None:
    page.title = data.titles[0][:1000] if data.titles else ""
    page.titles_count = len(data.titles)
    page.meta_description = data.meta_description
    page.canonical_url = data.canonical_url or ""
    page.canonicals_count = len(data.canonicals)
    page.meta_robots = data.meta_robots[:500]
    page.open_graph = data.og
    levels = [level for level, _ in data.headings]
    page.heading_order = levels
    page.heading_counts = {f"h{n}": levels.count(n) for n in range(1, 7) if n in levels}
    page.h1_count = sum(1 for level, text in data.headings if level == 1 and text.strip())
    page.word_count = data.word_count
    page.text_hash = data.text_hash
    page.html_lang = (data.html_lang or "")[:64]
    page.images_total = data.images_total
    page.images_missing_alt = data.images_missing_alt
    page.hreflang = [[lang, href] for lang, href in data.hreflang]
    page.structured_data = {
        "jsonld_blocks": data.jsonld_blocks,
        "jsonld_invalid": data.jsonld_invalid,
        "types": data.structured_data_types[:50],
    }


def _is_indexable(page: Page) -> bool:
    """2xx HTML, no noindex (meta or header), canonical absent or pointing at itself (CHECKS.md)."""
    if page.fetch_class != Page.FetchClass.OK:
        return False
    if not page.status_code or not 200 <= page.status_code < 300:
        return False
    if page.content_type not in ("text/html", "application/xhtml+xml"):
        return False
    if "noindex" in robots_directives(page.meta_robots, page.x_robots_tag):
        return False
    canonical = page.canonical_url or page.canonical_header
    return not canonical or canonical == page.url


class _BatchPersister:
    """Collects page records and upserts them PERSIST_BATCH_PAGES at a time, one transaction each."""

    def __init__(
        self,
        *,
        audit_id,
        lease_key: str,
        batch_size: int | None = None,
        politeness: Politeness | None = None,
        max_per_pattern: int | None = None,
    ):
        self.audit_id = audit_id
        self.lease_key = lease_key
        self.batch_size = batch_size or PERSIST_BATCH_PAGES
        self.politeness = politeness
        self.max_per_pattern = max_per_pattern
        self.batch: list[PageRecord] = []
        self.seen_urls: set[str] = set()  # queued by this chunk already: no need to insert them again
        self.finished = 0
        self.stopped = False  # the audit is no longer running: start nothing new

    def add(self, record: PageRecord) -> None:
        if self.politeness is not None:
            self.politeness.record_rate_limits(record)
        self.batch.append(record)
        if len(self.batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        records, self.batch = self.batch, []
        discovered = []
        for record in records:
            for new in record.discovered:
                if new.url not in self.seen_urls:
                    # The URL's shape only for URLs this chunk has not queued yet: most links repeat.
                    discovered.append(replace(new, pattern=url_pattern(new.url)))
                    if len(self.seen_urls) < CHUNK_SEEN_URLS_MAX:
                        self.seen_urls.add(new.url)
        with transaction.atomic():
            Page.objects.bulk_create(
                [r.page for r in records],
                update_conflicts=True,
                unique_fields=["id"],
                update_fields=PAGE_UPSERT_FIELDS,
            )
            # Page checks replace what an earlier attempt at the same pages found.
            Issue.objects.filter(
                audit_id=self.audit_id, page_id__in=[r.page.id for r in records], type__in=PAGE_CHECK_TYPES
            ).delete()
            Issue.objects.bulk_create([i for r in records for i in r.issues], ignore_conflicts=True)
            outcome = frontier_record_batch(
                audit_id=self.audit_id,
                lease_key=self.lease_key,
                done_ids=[r.claimed.id for r in records],
                discovered=discovered,
                edges=[e for r in records for e in r.edges],
                max_per_pattern=self.max_per_pattern,
            )
            if outcome.capped:
                Throttle.objects.filter(audit_id=self.audit_id).update(urls_capped=F("urls_capped") + outcome.capped)
            running = Audit.objects.filter(id=self.audit_id, status=Audit.Status.RUNNING).update(
                pages_crawled=F("pages_crawled") + outcome.finished, last_progress_at=timezone.now()
            )
        self.finished += outcome.finished
        self.stopped = not running
        if self.politeness is not None:
            self.politeness.end_batch(records)


PAGE_UPSERT_FIELDS = [f.name for f in Page._meta.concrete_fields if f.name not in ("id", "audit") and not f.primary_key]
