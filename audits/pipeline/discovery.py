"""Stage 2, discovery: follow the start URL's redirects (the site is where it lands), read robots.txt
(kept raw on the audit, so a retry re-parses and never re-fetches) and the sitemaps, seed the frontier.

Every write of the step is conditional on the audit still running in its discovery phase: the broker hands the
step out again when its worker's connection drops, and a run that comes back late (its host cut off, so its start
URL "gave no answer") must neither fail an audit another run moved on, nor rewrite its robots.txt, nor seed a
frontier that was already crawled or purged."""

from django.conf import settings
from django.db import transaction

from audits.models import Audit, AuditEvent
from audits.pipeline.lifecycle import audit_event, audit_fail, audit_set_phase
from audits.pipeline.politeness import DiscoveryPacer
from audits.pipeline.scope import CrawlScope, audit_site_auth
from audits.pipeline.start import Mode, audit_mode
from crawler import limits as crawl_limits
from crawler.discovery import fetch_robots, fetch_sitemaps
from crawler.fetch import build_session, fetch
from crawler.shapes import url_pattern
from crawler.urls import normalize
from scratchpad.models import Frontier
from scratchpad.services import NewURL, frontier_seed

Source = Frontier.Source

# What Audit.discovery keeps of the sitemaps (audits.pipeline.changes compares these lists between audits).
SITEMAPS_KEPT = 50  # sitemap document URLs, in the order discovery found them
SITEMAP_ERRORS_KEPT = 20  # "URL: message" strings, one per sitemap that failed


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
        return _seed_listed(audit, scope, config_urls=audit.config.get("list_urls") or [], sitemaps=None)
    sitemaps = fetch_sitemaps(
        session,
        scope.site_url,
        scope.robots,
        max_urls=crawl_limits.sitemap_url_cap(audit.max_pages),
        allow_private=settings.ALLOW_PRIVATE_TARGETS,
        pace=pace,
        only=[audit.config["sitemap_url"]] if mode == Mode.SITEMAP else None,
    )
    pace.hand_over()
    if mode == Mode.SITEMAP:
        return _seed_listed(audit, scope, config_urls=sitemaps.urls, sitemaps=sitemaps)
    seeds = [NewURL(audit.start_url, depth=0, source=Source.START, pattern=url_pattern(audit.start_url))]
    skipped = 0
    for url in sitemaps.urls:
        url = scope.rewrite(url)
        if scope.allows(url):
            seeds.append(NewURL(url, depth=None, source=Source.SITEMAP, in_sitemap=True, pattern=url_pattern(url)))
        else:
            skipped += 1
    discovery = {
        **audit.discovery,
        "sitemaps": sitemaps.sitemaps_found[:SITEMAPS_KEPT],
        "sitemap_documents": sitemaps.documents_fetched,
        "sitemap_urls": len(sitemaps.urls),
        "sitemap_urls_out_of_scope": skipped,
        "sitemap_capped": sitemaps.capped,
        "sitemap_errors": sitemaps.errors[:SITEMAP_ERRORS_KEPT],
        "crawl_delay_s": scope.robots.crawl_delay_s(),
        # Stored patterns RE2 cannot run (saved before patterns were checked for it): the crawl goes on
        # without them and says so here instead of failing.
        "skipped_patterns": scope.skipped_patterns,
    }
    return _crawl_from(audit, seeds, discovery)


def _in_discovery(audit_id):
    """The audit while it still runs in its discovery phase: what every write of the step is conditional on."""
    return Audit.objects.filter(id=audit_id, status=Audit.Status.RUNNING, current_phase=Audit.Phase.DISCOVERY)


def _crawl_from(audit: Audit, seeds: list[NewURL], discovery: dict) -> bool:
    """Seed the frontier and move the audit to crawling, together, and only from discovery (the phase move comes
    first: its row lock holds off any other finish until the seeds are in). False: the audit moved on or ended."""
    with transaction.atomic():
        moved = audit_set_phase(
            audit_id=audit.id, phase=Audit.Phase.CRAWLING, from_phases=(Audit.Phase.DISCOVERY,), discovery=discovery
        )
        if moved:
            frontier_seed(audit_id=audit.id, urls=seeds)
    return moved


def _seed_listed(audit: Audit, scope: CrawlScope, *, config_urls: list[str], sitemaps) -> bool:
    """List and sitemap mode: exactly the given URLs at depth 0 (the page budget's worth, in the list's order),
    each still asked of robots.txt and the include/exclude rules; what they refuse is counted and named."""
    in_sitemap = sitemaps is not None
    source = Source.SITEMAP if in_sitemap else Source.START
    seeds: list[NewURL] = []
    refused: list[str] = []
    off_site = 0
    for url in config_urls:
        if not scope.is_internal(url):
            off_site += 1  # a sitemap may name other hosts; a list was checked against the site at start
            continue
        url = scope.rewrite(url)
        if not scope.allows(url, 0):
            refused.append(url)
            continue
        seeds.append(NewURL(url, depth=0, source=source, in_sitemap=in_sitemap, pattern=url_pattern(url)))
    seeds = list({s.url: s for s in seeds}.values())[: audit.max_pages]
    discovery = {
        **audit.discovery,
        "mode": audit_mode(audit),
        "listed_urls": len(config_urls),
        "listed_urls_seeded": len(seeds),
        # robots.txt and the project's exclude rules still apply to a list: what they refused is reported
        "listed_urls_disallowed": len(refused),
        "listed_urls_disallowed_examples": refused[:20],
        "listed_urls_off_site": off_site,
        "crawl_delay_s": scope.robots.crawl_delay_s(),
        "skipped_patterns": scope.skipped_patterns,
        "list_mode_note": "Links are recorded but not followed: orphan pages and click depth are not judged.",
    }
    if in_sitemap:
        discovery |= {
            "sitemaps": sitemaps.sitemaps_found[:SITEMAPS_KEPT],
            "sitemap_documents": sitemaps.documents_fetched,
            "sitemap_urls": len(sitemaps.urls),
            "sitemap_urls_out_of_scope": off_site + len(refused),
            "sitemap_capped": sitemaps.capped,
            "sitemap_errors": sitemaps.errors[:SITEMAP_ERRORS_KEPT],
        }
    if not seeds:
        _in_discovery(audit.id).update(discovery=discovery)  # what was refused, for the person
        audit_fail(
            audit_id=audit.id,
            code="no_listed_url_allowed",
            detail="None of the listed URLs may be crawled (robots.txt, the project's rules or an empty sitemap).",
            phase=Audit.Phase.DISCOVERY,
            from_phases=(Audit.Phase.DISCOVERY,),
        )
        return False
    return _crawl_from(audit, seeds, discovery)


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
