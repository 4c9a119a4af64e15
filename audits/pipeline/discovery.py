"""Stage 2, discovery: follow the start URL's redirects (the site is where it lands), read robots.txt
(kept raw on the audit, so a retry re-parses and never re-fetches) and the sitemaps, seed the frontier.

The frontier is seeded as the sitemaps are read, a list of URLs at a time (_Seeder), so a sitemap of millions of
URLs is never one list in a worker; the phase move to crawling comes once the last list is in.

Every write of the step is conditional on the audit still running in its discovery phase: the broker hands the
step out again when its worker's connection drops, and a run that comes back late (its host cut off, so its start
URL "gave no answer") must neither fail an audit another run moved on, nor rewrite its robots.txt, nor seed a
frontier that was already crawled or purged. Seeding twice (a run handed out again) inserts nothing new."""

from django.conf import settings
from django.db import transaction

from audits.models import Audit, AuditEvent
from audits.pipeline.lifecycle import audit_event, audit_fail, audit_set_phase
from audits.pipeline.politeness import DiscoveryPacer
from audits.pipeline.scope import CrawlScope, audit_site_auth
from audits.pipeline.start import Mode, audit_mode
from crawler import limits as crawl_limits
from crawler.discovery import SitemapResult, fetch_robots, fetch_sitemaps
from crawler.fetch import build_session, fetch
from crawler.shapes import url_pattern
from crawler.urls import normalize
from scratchpad.models import Frontier
from scratchpad.services import NewURL, batched, frontier_seed, frontier_seed_sitemap

Source = Frontier.Source

# What Audit.discovery keeps of the sitemaps (audits.pipeline.changes compares these lists between audits).
SITEMAPS_KEPT = 50  # sitemap document URLs, in the order discovery found them
SITEMAP_ERRORS_KEPT = 20  # "URL: message" strings, one per sitemap that failed
REFUSED_EXAMPLES_KEPT = 20  # listed URLs robots.txt or the project's rules refused, named on the audit


def audit_discover(*, audit_id) -> bool:
    """Resolve the start URL, read robots.txt and sitemaps, seed the frontier. False when the audit ended."""
    audit = _in_discovery(audit_id).select_related("project").first()
    if audit is None:
        return False  # ended, or a late duplicate of the step: another run moved the audit on
    session = build_session(audit.config.get("user_agent") or None)
    session.auth = audit_site_auth(audit)
    pace = DiscoveryPacer(audit)
    if not audit.discovery.get("robots_fetched"):
        final_url, error = _resolve_start_url(session, audit.start_url, pace)
        if error and audit.config.get("http_fallback") and audit.start_url.startswith("https://"):
            final_url, error = _http_fallback(audit, session, pace, https_error=error)
        if error:
            audit_fail(
                audit_id=audit.id,
                code="start_url_unreachable",
                detail=f"The start URL {audit.start_url} gave no HTTP answer: {error}",
                phase=Audit.Phase.DISCOVERY,
                from_phases=(Audit.Phase.DISCOVERY,),
            )
            return False
        robots = fetch_robots(session, final_url, allow_private=settings.ALLOW_PRIVATE_TARGETS, pace=pace)
        # Kept raw on the audit so that a retried step re-parses it and never fetches it again.
        audit.site_url = final_url
        audit.robots_txt = robots.raw
        audit.robots_status = robots.status_code
        audit.discovery = {**audit.discovery, "robots_fetched": True, "robots_error": robots.error}
        if not _in_discovery(audit.id).update(
            site_url=audit.site_url, robots_txt=audit.robots_txt, robots_status=audit.robots_status,
            discovery=audit.discovery,
        ):  # fmt: skip
            return False

    scope = CrawlScope.for_audit(audit)
    pace.use_crawl_delay(scope.robots.crawl_delay_s())
    mode = audit_mode(audit)
    if mode == Mode.LIST:
        pace.hand_over()
        seeder = _Seeder(audit, scope, listed=True, in_sitemap=False)
        for urls in batched(audit.config.get("list_urls") or [], crawl_limits.SITEMAP_URLS_PER_HANDOFF):
            if not seeder(urls):
                break
        return _listed_seeded(audit, seeder, sitemaps=None)
    seeder = _Seeder(audit, scope, listed=mode == Mode.SITEMAP, in_sitemap=True)
    if mode != Mode.SITEMAP and not seeder.seed_start():
        return False
    sitemaps = fetch_sitemaps(
        session,
        scope.site_url,
        scope.robots,
        max_urls=crawl_limits.sitemap_url_cap(audit.max_pages),
        allow_private=settings.ALLOW_PRIVATE_TARGETS,
        pace=pace,
        only=[audit.config["sitemap_url"]] if mode == Mode.SITEMAP else None,
        on_urls=seeder,
    )
    pace.hand_over()
    if seeder.moved_on:
        return False
    if mode == Mode.SITEMAP:
        return _listed_seeded(audit, seeder, sitemaps=sitemaps)
    discovery = {
        **audit.discovery,
        **_sitemap_summary(sitemaps),
        # Distinct URLs: those in scope as the frontier holds them (a URL listed by two sitemaps is one row)
        "sitemap_urls": seeder.sitemap_rows() + seeder.out_of_scope,
        "sitemap_urls_out_of_scope": seeder.out_of_scope,
        "crawl_delay_s": scope.robots.crawl_delay_s(),
        # Stored patterns RE2 cannot run (saved before patterns were checked for it): the crawl goes on
        # without them and says so here instead of failing.
        "skipped_patterns": scope.skipped_patterns,
    }
    return _crawl_from(audit, discovery)


def _in_discovery(audit_id):
    """The audit while it still runs in its discovery phase: what every write of the step is conditional on."""
    return Audit.objects.filter(id=audit_id, status=Audit.Status.RUNNING, current_phase=Audit.Phase.DISCOVERY)


def _sitemap_summary(sitemaps: SitemapResult) -> dict:
    """What Audit.discovery keeps of the sitemap reading (sitemap-read-in-part reads `sitemap_capped_by`)."""
    return {
        "sitemaps": sitemaps.sitemaps_found[:SITEMAPS_KEPT],
        "sitemap_documents": sitemaps.documents_fetched,
        "sitemap_capped": sitemaps.capped,
        "sitemap_capped_by": sitemaps.capped_by,
        "sitemap_errors": sitemaps.errors[:SITEMAP_ERRORS_KEPT],
    }


class _Seeder:
    """The frontier's seeds, written as discovery reads them: each list of URLs (fetch_sitemaps' `on_urls`, or
    a part of the audit's URL list) in its own short transaction, and only while the audit is still in its
    discovery phase. The audit row is locked for the write, so a fail or a phase move waits for the list, and a
    list after them writes nothing (`moved_on`); reading then stops.

    Crawl mode: sitemap URLs the crawl may fetch are queued sitemap-only (depth NULL; a link gives them a depth),
    the others counted. List and sitemap mode (`listed`): exactly the given URLs at depth 0, each still asked of
    robots.txt and the project's rules, up to the page budget in the list's order; reading stops once it is full.
    """

    def __init__(self, audit: Audit, scope: CrawlScope, *, listed: bool, in_sitemap: bool):
        self.audit, self.scope = audit, scope
        self.listed, self.in_sitemap = listed, in_sitemap
        self.read = 0  # URLs handed to the seeder
        # Listed: the frontier's rows, the page budget's count. A run handed out again after seeding part of the
        # list starts from what is there, and seeding the same URLs again adds none.
        self.seeded = Frontier.objects.filter(audit_id=audit.id).count() if listed else 0
        self.out_of_scope = 0  # crawl mode: sitemap URLs robots.txt or the project's rules keep out
        self.off_site = 0  # listed: URLs of another site (a sitemap may name other hosts)
        self.refused = 0  # listed: URLs robots.txt or the project's rules refuse
        self.refused_examples: list[str] = []
        self.moved_on = False  # the audit left discovery (another run moved it on, or it ended)

    def seed_start(self) -> bool:
        url = self.audit.start_url
        start = NewURL(url, depth=0, source=Source.START, pattern=url_pattern(url))
        return self._write(frontier_seed, [start]) is not None

    def sitemap_rows(self) -> int:
        return Frontier.objects.filter(audit_id=self.audit.id, in_sitemap=True).count()

    def __call__(self, urls: list[str]) -> bool:
        """Seed one list; False when no more is wanted (the audit moved on, or the listed budget is full)."""
        self.read += len(urls)
        if not self.listed:
            rows = []
            for url in urls:
                url = self.scope.rewrite(url)
                if self.scope.allows(url):
                    rows.append((url, url_pattern(url)))
                else:
                    self.out_of_scope += 1
            return self._write(frontier_seed_sitemap, rows) is not None
        seeds = list({seed.url: seed for seed in self._listed(urls)}.values())
        while seeds and self.seeded < self.audit.max_pages:
            room = self.audit.max_pages - self.seeded
            inserted = self._write(frontier_seed, seeds[:room])  # a URL an earlier list seeded is not counted again
            if inserted is None:
                return False
            self.seeded += inserted
            seeds = seeds[room:]
        return self.seeded < self.audit.max_pages

    def _listed(self, urls: list[str]) -> list[NewURL]:
        source = Source.SITEMAP if self.in_sitemap else Source.START
        seeds = []
        for url in urls:
            if not self.scope.is_internal(url):
                self.off_site += 1  # a sitemap may name other hosts; a list was checked against the site at start
                continue
            url = self.scope.rewrite(url)
            if not self.scope.allows(url, 0):
                self.refused += 1
                if len(self.refused_examples) < REFUSED_EXAMPLES_KEPT:
                    self.refused_examples.append(url)
                continue
            seeds.append(NewURL(url, depth=0, source=source, in_sitemap=self.in_sitemap, pattern=url_pattern(url)))
        return seeds

    def _write(self, seed, urls: list) -> int | None:
        """`seed(audit_id=, urls=)` while the audit is in discovery: how many rows it wrote, None when it is not."""
        with transaction.atomic():
            if not _in_discovery(self.audit.id).select_for_update(no_key=True).values_list("id", flat=True)[:1]:
                self.moved_on = True
                return None
            return seed(audit_id=self.audit.id, urls=urls) if urls else 0


def _crawl_from(audit: Audit, discovery: dict) -> bool:
    """Move the audit to crawling, only from discovery, once its seeds are in. False: it moved on or ended.

    The URLs known start as the seeds, counted once here (no chunk writes the frontier before the move); from
    then on every persisted batch adds the rows it inserted (audits.pipeline.persist)."""
    return audit_set_phase(
        audit_id=audit.id,
        phase=Audit.Phase.CRAWLING,
        from_phases=(Audit.Phase.DISCOVERY,),
        discovery=discovery,
        pages_total=Frontier.objects.filter(audit_id=audit.id).count(),
    )


def _listed_seeded(audit: Audit, seeder: _Seeder, *, sitemaps: SitemapResult | None) -> bool:
    """List and sitemap mode: what the seeder took and refused, on the audit; crawling starts, or the audit fails
    when robots.txt and the project's rules refused every URL."""
    if seeder.moved_on:
        return False
    discovery = {
        **audit.discovery,
        "mode": audit_mode(audit),
        "listed_urls": seeder.read,
        "listed_urls_seeded": seeder.seeded,
        # robots.txt and the project's exclude rules still apply to a list: what they refused is reported
        "listed_urls_disallowed": seeder.refused,
        "listed_urls_disallowed_examples": seeder.refused_examples,
        "listed_urls_off_site": seeder.off_site,
        "crawl_delay_s": seeder.scope.robots.crawl_delay_s(),
        "skipped_patterns": seeder.scope.skipped_patterns,
        "list_mode_note": "Links are recorded but not followed: orphan pages and click depth are not judged.",
    }
    if sitemaps is not None:
        discovery |= {
            **_sitemap_summary(sitemaps),
            "sitemap_urls": sitemaps.urls_read,
            "sitemap_urls_out_of_scope": seeder.off_site + seeder.refused,
        }
    if not seeder.seeded:
        _in_discovery(audit.id).update(discovery=discovery)  # what was refused, for the person
        audit_fail(
            audit_id=audit.id,
            code="no_listed_url_allowed",
            detail="None of the listed URLs may be crawled (robots.txt, the project's rules or an empty sitemap).",
            phase=Audit.Phase.DISCOVERY,
            from_phases=(Audit.Phase.DISCOVERY,),
        )
        return False
    return _crawl_from(audit, discovery)


def _http_fallback(audit: Audit, session, pace, *, https_error: str) -> tuple[str, str | None]:
    """A base URL typed without a scheme was taken as https, which gave no answer (no connection, a TLS error):
    try http. When it answers, the audit starts there and an event says which scheme was used and why."""
    http_url = "http://" + audit.start_url.removeprefix("https://")
    final_url, error = _resolve_start_url(session, http_url, pace)
    if error:
        return final_url, f"{https_error}; over http too: {error}"
    audit.start_url = http_url
    if not _in_discovery(audit.id).update(start_url=http_url):
        return final_url, None  # moved on without this run: its next write stops it
    audit_event(
        audit_id=audit.id,
        kind=AuditEvent.Kind.HTTP_FALLBACK,
        message=f"Crawled over http: {http_url} (typed without a scheme; https gave no answer: {https_error})"[:500],
        https_url="https://" + http_url.removeprefix("http://"),
        http_url=http_url,
        https_error=https_error[:300],
    )
    return final_url, None


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
