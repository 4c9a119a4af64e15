"""Site checks: run once in finalize over the audit's Page, LinkEdge and Frontier rows.

Set-based: joins and groupings happen in SQL, rows are streamed in chunks and issues written in batches,
so memory does not grow with the site. A rerun deletes the audit's site-check issues and writes the same
rows again (deterministic ids, details and ordering).
"""

import logging

from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, Window

from audits.bulk import issues_insert
from audits.checks.bots import BOT_SITE_TYPES
from audits.checks.content import near_duplicates, soft_404s
from audits.checks.external import EXTERNAL_SITE_TYPES
from audits.checks.images import IMAGE_SITE_TYPES
from audits.checks.page import hreflang_problem, robots_directives
from audits.checks.pagination import pagination_checks
from audits.checks.registry import SITE_TYPES, CheckSettings, as_uuid, make_issue
from audits.checks.resources import RESOURCE_SITE_TYPES
from audits.checks.security import HEADER_TYPES, security_header_checks
from audits.checks.skips import skipped_url_issues
from audits.fencing import FinalizeRun, finalize_atomic
from audits.limits import ISSUE_WRITE_BATCH
from audits.models import Issue, Page
from crawler.discovery import SitemapCap, invalid_lines
from crawler.limits import MAX_SITEMAP_DOCUMENTS, SITEMAP_DISCOVERY_DEADLINE_S, sitemap_url_cap
from scratchpad.models import Frontier, LinkEdge

logger = logging.getLogger(__name__)

SITE_CHECK_TYPES: tuple[str, ...] = SITE_TYPES

LINK_ISSUES_MAX = 2000  # per link check and audit; the rest is counted in a marker issue
STREAM_CHUNK_ROWS = 2000
FOLLOW_BATCH_URLS = 500  # redirect chains followed together, one query per hop
REDIRECT_FOLLOW_HOPS_MAX = 50  # the crawler stops at 10 hops; a chain is never followed further than this
OTHER_URLS_MAX = 3  # other URLs of a duplicate group named on each page
EXAMPLES_MAX = 5
ROBOTS_INVALID_LINES_LISTED = 20
SQL_IN_BATCH = 900  # values per IN (...) list: under SQLite's variable limit
# Checks that read the frontier. It is purged after finalize; a rerun after that keeps their results.
FRONTIER_CHECK_TYPES = ("orphan-page", "max-pages-reached", "crawl-urls-skipped")
NOT_JUDGED_FETCH_CLASSES = (Page.FetchClass.BLOCKED.value, Page.FetchClass.RATE_LIMITED.value)


class _IssueWriter:
    def __init__(self, audit_id, settings: CheckSettings):
        self.audit_id = audit_id
        self.settings = settings
        self.buffer: list[Issue] = []
        self.written = 0

    def add(self, issue_type: str, *, page_id=None, page_url: str = "", dedupe_key: str = "", severity=None, **details):
        issue = make_issue(
            self.audit_id,
            issue_type,
            page_id=page_id,
            page_url=page_url,
            details=details,
            dedupe_key=dedupe_key,
            settings=self.settings,
        )
        if issue is None:
            return
        if severity:
            issue.severity = severity
        self.buffer.append(issue)
        if len(self.buffer) >= ISSUE_WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            issues_insert(self.buffer)
            self.written += len(self.buffer)
            self.buffer = []


def run_site_checks(audit, *, run: FinalizeRun | None = None) -> None:
    """Compute every site check of the catalogue for `audit`, replacing earlier results. Idempotent; given
    finalize's `run`, the writes are fenced on it (audits.fencing)."""
    settings = CheckSettings.for_audit(audit)
    frontier = _frontier_counts(audit.id)
    # The image, bot, external link and resource checks' issues are their passes' (audits.pipeline.images, .bots,
    # .external and .resources, after this in finalize): kept here.
    kept = (
        *IMAGE_SITE_TYPES,
        *BOT_SITE_TYPES,
        *EXTERNAL_SITE_TYPES,
        *RESOURCE_SITE_TYPES,
        *(FRONTIER_CHECK_TYPES if frontier is None else ()),
    )
    with finalize_atomic(run):
        Issue.objects.filter(audit_id=audit.id, type__in=[t for t in SITE_CHECK_TYPES if t not in kept]).delete()
        out = _IssueWriter(audit.id, settings)
        enabled = settings.enabled
        if enabled("broken-internal-link"):
            _link_issues(audit, out, "broken-internal-link")
        if enabled("internal-link-to-redirect"):
            _link_issues(audit, out, "internal-link-to-redirect")
        if enabled("redirect-chain") or enabled("redirect-loop"):
            _redirects(audit, out, min_hops=settings.threshold("redirect-chain", "min_hops"))
        for issue_type, column in (
            ("duplicate-title", "title"),
            ("duplicate-meta-description", "meta_description"),
            ("duplicate-content", "main_text_hash"),
        ):
            if enabled(issue_type):
                _duplicates(audit, out, issue_type, column)
        if enabled("near-duplicate-content"):
            near_duplicates(audit, out, judged_pages(audit.id))
        if enabled("soft-404"):
            soft_404s(audit, out, judged_pages(audit.id))
        if any(enabled(t) for t in HEADER_TYPES):
            security_header_checks(audit, out, judged_pages(audit.id))
        if any(enabled(t) for t in ("pagination-broken-sequence", "pagination-url-not-ok", "pagination-loop")):
            pagination_checks(audit, out, judged_pages(audit.id), enabled)
        if enabled("canonical-target-not-ok"):
            _canonical_targets(audit, out)
        if enabled("hreflang-missing-return-link"):
            _hreflang_returns(audit, out)
        if enabled("sitemap-url-not-indexable"):
            _sitemap_not_indexable(audit, out)
        _discovery_checks(audit, out)
        if frontier is not None:
            _frontier_checks(audit, out, frontier)
            if enabled("crawl-urls-skipped"):
                skipped_url_issues(audit, out)  # the skipped-URL records go with the frontier
        out.flush()
    logger.info("site checks done", extra={"audit_id": str(audit.id), "issues": out.written})


# --- helpers ---------------------------------------------------------------------------------------


def _tables() -> dict:
    q = connection.ops.quote_name
    return {"page": q(Page._meta.db_table), "edge": q(LinkEdge._meta.db_table), "issue": q(Issue._meta.db_table)}


def _db_id(value):
    """An audit/page id as the database takes it in raw SQL (uuid on PostgreSQL, hex text on SQLite)."""
    return Page._meta.pk.get_db_prep_value(value, connection)


def _stream(sql: str, params: list):
    """Rows of a raw query, fetched in chunks (a server-side cursor on PostgreSQL)."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(STREAM_CHUNK_ROWS):
            yield from rows


def _batched(items: list, size: int = SQL_IN_BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _pages_by_url(audit_id, urls, *fields) -> dict:
    found = {}
    for part in _batched(sorted(set(urls))):
        for row in Page.objects.filter(audit_id=audit_id, url__in=part).values("url", *fields):
            found[row["url"]] = row
    return found


def judged_pages(audit_id):
    """The audit's pages minus those whose answer was a refusal (a challenge page says nothing of the site)."""
    refused = Issue.objects.filter(audit_id=audit_id, page_id=OuterRef("id"), type="blocked-page")
    return (
        Page.objects.filter(audit_id=audit_id)
        .exclude(fetch_class__in=NOT_JUDGED_FETCH_CLASSES)
        .filter(~Exists(refused))
    )


def _is_2xx(status) -> bool:
    return status is not None and 200 <= status < 300


# --- links -----------------------------------------------------------------------------------------

_LINK_TARGET_CONDITIONS = {
    # Blocked and rate-limited targets are reported as such on the target; they say nothing about the link.
    "broken-internal-link": "((t.status_code >= 400 AND t.fetch_class NOT IN (%s, %s)) OR t.status_code IS NULL)"
    " AND NOT EXISTS (SELECT 1 FROM {issue} b WHERE b.page_id = t.id AND b.type = 'blocked-page')",
    "internal-link-to-redirect": "(t.status_code >= 300 AND t.status_code < 400 AND t.redirect_url <> '')",
}


def _link_issues(audit, out: _IssueWriter, issue_type: str) -> None:
    """One issue per (source page, target) whose target answered badly, capped per audit."""
    condition = _LINK_TARGET_CONDITIONS[issue_type]
    condition_params = list(NOT_JUDGED_FETCH_CLASSES) if "%s" in condition else []
    tables = _tables()
    joins = """
        FROM {edge} e
        JOIN {page} t ON t.audit_id = e.audit_id AND t.url = e.target_url
    """.format(**tables)
    where = f"WHERE e.audit_id = %s AND e.internal = %s AND {condition.format(**tables)}"
    params = [_db_id(audit.id), True, *condition_params]
    sql = f"""
        SELECT e.source_page_id, s.url, e.target_url, SUM(e.link_count), MIN(e.anchor_text),
               t.status_code, t.redirect_url, t.fetch_error
        {joins}
        JOIN {tables["page"]} s ON s.id = e.source_page_id
        {where}
        GROUP BY e.source_page_id, s.url, e.target_url, t.status_code, t.redirect_url, t.fetch_error
        ORDER BY s.url, e.target_url
        LIMIT %s
    """
    reported = 0
    for source_id, source_url, target, links, anchor, status, redirect_url, fetch_error in _stream(
        sql, [*params, LINK_ISSUES_MAX]
    ):
        details = {"target_url": target, "status_code": status, "links": links, "anchor_text": anchor}
        if issue_type == "internal-link-to-redirect":
            details["redirect_url"] = redirect_url
        elif status is None:
            details["fetch_error"] = fetch_error
        out.add(issue_type, page_id=as_uuid(source_id), page_url=source_url, dedupe_key=target, **details)
        reported += 1
    if reported < LINK_ISSUES_MAX:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM (SELECT DISTINCT e.source_page_id, e.target_url {joins} {where}) pairs", params
        )
        total = cursor.fetchone()[0]
    if total > reported:
        out.add(
            issue_type,
            dedupe_key="cap",
            severity=Issue.Severity.INFO,
            capped=True,
            reported=reported,
            left_out=total - reported,
            total=total,
            message=f"{total - reported} more (page, link) pairs of this kind were found and not listed.",
        )


# --- redirects -------------------------------------------------------------------------------------


def _redirect_pages(audit_id):
    return Page.objects.filter(audit_id=audit_id, status_code__gte=300, status_code__lt=400).exclude(redirect_url="")


def _follow(audit_id, starts: list[dict]) -> list[dict]:
    """Follow each start's redirects through the audit's pages, all starts together, one query per hop.

    Each start dict has url, status_code, redirect_url; returned with chain (the redirecting URLs),
    final_url/final_status_code, and loop_to (the URL the chain came back to) or None.
    """
    active = []
    for start in starts:
        start.update(
            chain=[{"url": start["url"], "status_code": start["status_code"]}],
            seen={start["url"]},
            next=start["redirect_url"],
            final_url=None,
            final_status_code=None,
            loop_to=None,
            truncated=False,
        )
        active.append(start)
    while active:
        targets = _pages_by_url(audit_id, [s["next"] for s in active], "status_code", "redirect_url")
        still = []
        for s in active:
            url = s["next"]
            if url in s["seen"]:
                s["loop_to"] = url
                continue
            row = targets.get(url)
            is_redirect = row is not None and row["redirect_url"] and 300 <= (row["status_code"] or 0) < 400
            if not is_redirect:
                s["final_url"], s["final_status_code"] = url, (row or {}).get("status_code")
                continue
            if len(s["chain"]) >= REDIRECT_FOLLOW_HOPS_MAX:
                s["final_url"], s["truncated"] = url, True
                continue
            s["chain"].append({"url": url, "status_code": row["status_code"]})
            s["seen"].add(url)
            s["next"] = row["redirect_url"]
            still.append(s)
        active = still
    return starts


def _cycle_key(chain: list[dict], loop_to: str) -> str:
    urls = [hop["url"] for hop in chain]
    return min(urls[urls.index(loop_to) :])


def _redirects(audit, out: _IssueWriter, *, min_hops: int) -> None:
    redirects = _redirect_pages(audit.id)
    pointed_at = Page.objects.filter(audit_id=audit.id, redirect_url=OuterRef("url")).exclude(id=OuterRef("id"))
    fields = ("id", "url", "status_code", "redirect_url")
    cycles_reported: set[str] = set()

    def report(s: dict) -> None:
        chain = s["chain"]
        if s["loop_to"] is not None:
            cycles_reported.add(_cycle_key(chain, s["loop_to"]))
            out.add(
                "redirect-loop",
                page_id=s["id"],
                page_url=s["url"],
                hops=chain,
                hops_count=len(chain),
                loops_back_to=s["loop_to"],
            )
        elif len(chain) >= min_hops:
            out.add(
                "redirect-chain",
                page_id=s["id"],
                page_url=s["url"],
                hops=chain,
                hops_count=len(chain),
                final_url=s["final_url"],
                final_status_code=s["final_status_code"],
                followed_to_limit=s["truncated"],
            )

    # Heads: redirects no other redirect points to. Each chain is reported once, there.
    heads = redirects.filter(~Exists(pointed_at)).order_by("url").values(*fields)
    batch = []
    for row in heads.iterator(chunk_size=STREAM_CHUNK_ROWS):
        batch.append(row)
        if len(batch) >= FOLLOW_BATCH_URLS:
            for s in _follow(audit.id, batch):
                report(s)
            batch = []
    for s in _follow(audit.id, batch):
        report(s)

    # A loop nothing leads into has no head: report it once, at its smallest URL.
    members = redirects.filter(Exists(pointed_at)).order_by("url").values(*fields)
    batch = []

    def report_headless(rows: list[dict]) -> None:
        for s in _follow(audit.id, rows):
            if s["loop_to"] == s["url"]:
                key = _cycle_key(s["chain"], s["loop_to"])
                if key == s["url"] and key not in cycles_reported:
                    cycles_reported.add(key)
                    report(s)

    for row in members.iterator(chunk_size=STREAM_CHUNK_ROWS):
        batch.append(row)
        if len(batch) >= FOLLOW_BATCH_URLS:
            report_headless(batch)
            batch = []
    report_headless(batch)


# --- duplicates ------------------------------------------------------------------------------------


def _duplicates(audit, out: _IssueWriter, issue_type: str, column: str) -> None:
    """Indexable pages sharing a value: each gets the group size and up to 3 other URLs of its group."""
    rows = (
        judged_pages(audit.id)
        .filter(is_indexable=True)
        .exclude(**{column: ""})
        .exclude(**{f"{column}__isnull": True})
        .annotate(group_size=Window(Count("id"), partition_by=[F(column)]))
        .filter(group_size__gt=1)
        .order_by(column, "url")
        .values_list("id", "url", column, "group_size")
    )
    # The main text's fingerprint keeps the details key "text_hash" the evidence columns read.
    label = {"title": "title", "meta_description": "meta_description", "main_text_hash": "text_hash"}[column]
    group_value = object()
    first_urls: list[str] = []  # the group's first OTHER_URLS_MAX + 1 URLs: enough to name 3 others for anyone
    waiting: list[tuple] = []

    def emit(row) -> None:
        page_id, url, value, size = row
        others = [u for u in first_urls if u != url][:OTHER_URLS_MAX]
        out.add(issue_type, page_id=page_id, page_url=url, group_size=size, other_urls=others, **{label: value[:500]})

    for row in rows.iterator(chunk_size=STREAM_CHUNK_ROWS):
        if row[2] != group_value:
            for held in waiting:
                emit(held)
            group_value, first_urls, waiting = row[2], [], []
        if len(first_urls) <= OTHER_URLS_MAX:
            first_urls.append(row[1])
            waiting.append(row)
            if len(first_urls) > OTHER_URLS_MAX:
                for held in waiting:
                    emit(held)
                waiting = []
        else:
            emit(row)
    for held in waiting:
        emit(held)


# --- canonicals, hreflang, sitemap -----------------------------------------------------------------


def _canonical_targets(audit, out: _IssueWriter) -> None:
    sql = """
        SELECT p.id, p.url, p.canonical_url, t.status_code, t.redirect_url, t.fetch_error
        FROM {page} p
        JOIN {page} t ON t.audit_id = p.audit_id AND t.url = p.canonical_url
        WHERE p.audit_id = %s AND p.canonical_url <> '' AND p.canonical_url <> p.url
          AND (t.status_code IS NULL OR t.status_code < 200 OR t.status_code >= 300)
          AND t.fetch_class NOT IN (%s, %s)
          AND NOT EXISTS (SELECT 1 FROM {issue} b WHERE b.page_id = t.id AND b.type = 'blocked-page')
        ORDER BY p.url
    """.format(**_tables())
    for page_id, url, canonical, status, redirect_url, fetch_error in _stream(
        sql, [_db_id(audit.id), *NOT_JUDGED_FETCH_CLASSES]
    ):
        details = {"canonical_url": canonical, "status_code": status}
        if redirect_url:
            details["redirect_url"] = redirect_url
        if status is None:
            details["fetch_error"] = fetch_error
        out.add("canonical-target-not-ok", page_id=as_uuid(page_id), page_url=url, **details)


def _hreflang_returns(audit, out: _IssueWriter) -> None:
    """Page A names B (crawled, 2xx) as an alternate; B's own hreflang list does not name A."""
    pages = (
        Page.objects.filter(audit_id=audit.id, status_code__gte=200, status_code__lt=300)
        .exclude(hreflang=[])
        .order_by("url")
        .values_list("id", "url", "hreflang")
    )
    batch: list[tuple] = []

    def check(rows: list[tuple]) -> None:
        targets = {href for _, url, pairs in rows for _, href in _pairs(pairs) if href != url}
        found = _pages_by_url(audit.id, targets, "status_code", "hreflang")
        for page_id, url, pairs in rows:
            missing = []
            for lang, href in _pairs(pairs):
                target = found.get(href)
                if href == url or target is None or not _is_2xx(target["status_code"]):
                    continue
                if hreflang_problem(lang):
                    continue  # ignored by search engines whatever the other page says; see hreflang-invalid
                if not any(back == url for _, back in _pairs(target["hreflang"])):
                    missing.append({"hreflang": lang, "href": href})
            if missing:
                out.add(
                    "hreflang-missing-return-link",
                    page_id=page_id,
                    page_url=url,
                    missing_count=len(missing),
                    missing=missing[:EXAMPLES_MAX],
                )

    for row in pages.iterator(chunk_size=STREAM_CHUNK_ROWS):
        batch.append(row)
        if len(batch) >= FOLLOW_BATCH_URLS // 5:
            check(batch)
            batch = []
    check(batch)


def _pairs(value) -> list[tuple[str, str]]:
    pairs = []
    for item in value or []:
        if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], str):
            pairs.append((str(item[0]), item[1]))
    return pairs


def _sitemap_not_indexable(audit, out: _IssueWriter) -> None:
    candidates = (
        judged_pages(audit.id)
        .filter(in_sitemap=True)
        .filter(
            Q(status_code__isnull=True)
            | Q(status_code__lt=200)
            | Q(status_code__gte=300)
            | ~Q(meta_robots="")
            | ~Q(x_robots_tag="")
            | (~Q(canonical_url="") & ~Q(canonical_url=F("url")))
        )
        .order_by("url")
        .values_list("id", "url", "status_code", "meta_robots", "x_robots_tag", "canonical_url", "redirect_url")
    )
    for page_id, url, status, meta_robots, x_robots_tag, canonical, redirect_url in candidates.iterator(
        chunk_size=STREAM_CHUNK_ROWS
    ):
        reasons = []
        details: dict = {"status_code": status}
        if not _is_2xx(status):
            reasons.append("no answer" if status is None else ("redirect" if redirect_url else "non-2xx status"))
            if redirect_url:
                details["redirect_url"] = redirect_url
        elif "noindex" in robots_directives(meta_robots, x_robots_tag):
            reasons.append("noindex")
            details["robots"] = ", ".join(x for x in (meta_robots, x_robots_tag) if x)
        elif canonical and canonical != url:
            reasons.append("canonicalized")
            details["canonical_url"] = canonical
        if reasons:
            out.add("sitemap-url-not-indexable", page_id=page_id, page_url=url, reasons=reasons, **details)


# --- site-level checks: discovery and the frontier -------------------------------------------------


def _discovery_checks(audit, out: _IssueWriter) -> None:
    discovery = audit.discovery or {}
    if "sitemaps" in discovery:
        found = list(discovery.get("sitemaps") or [])
        errors = list(discovery.get("sitemap_errors") or [])
        urls = int(discovery.get("sitemap_urls") or 0)
        all_failed = bool(found) and urls == 0 and len(errors) >= len(found)
        if not found or all_failed:
            out.add(
                "sitemap-missing",
                sitemaps_tried=found[:EXAMPLES_MAX],
                errors=errors[:EXAMPLES_MAX],
            )

        capped_by = discovery.get("sitemap_capped_by")
        if capped_by:
            out.add("sitemap-read-in-part", **_sitemap_cap_details(audit, capped_by, discovery))

    status = audit.robots_status
    if audit.robots_txt is not None and status is not None and 200 <= status < 300:
        bad = invalid_lines(audit.robots_txt)  # the crawler's own reading of robots.txt, capped
        if bad:
            out.add("robots-txt-invalid", invalid_count=len(bad), lines=bad[:ROBOTS_INVALID_LINES_LISTED])

    stop = discovery.get("rate_limited_stop")
    if stop:
        out.add("crawl-rate-limited", **(stop if isinstance(stop, dict) else {"stopped": True}))


def _sitemap_cap_details(audit, capped_by: str, discovery: dict) -> dict:
    """sitemap-read-in-part's details: which cap stopped discovery reading the sitemaps, and what it had read."""
    reasons = {
        SitemapCap.URLS: (
            "The sitemap URLs this audit reads for its page limit were read", sitemap_url_cap(audit.max_pages)
        ),
        SitemapCap.DOCUMENTS: ("The most sitemap documents an audit reads were read", MAX_SITEMAP_DOCUMENTS),
        SitemapCap.DEADLINE: (
            f"Reading the sitemaps took longer than {SITEMAP_DISCOVERY_DEADLINE_S} s", SITEMAP_DISCOVERY_DEADLINE_S
        ),
    }  # fmt: skip
    reason, limit = reasons.get(capped_by, (f"A discovery cap was reached ({capped_by})", None))
    return {
        "reason": reason,
        "sitemap_urls_read": int(discovery.get("sitemap_urls") or 0),
        "sitemap_documents_fetched": int(discovery.get("sitemap_documents") or 0),
        "limit": limit,
    }


def _frontier_counts(audit_id) -> dict | None:
    """Pending/leased/total frontier rows, or None when the frontier is gone (purged after finalize)."""
    row = Frontier.objects.filter(audit_id=audit_id).aggregate(
        total=Count("id"),
        pending=Count("id", filter=Q(state__in=[Frontier.State.PENDING, Frontier.State.LEASED])),
    )
    return row if row["total"] else None


def _frontier_checks(audit, out: _IssueWriter, frontier: dict) -> None:
    rate_limited = bool((audit.discovery or {}).get("rate_limited_stop"))
    if frontier["pending"] and not rate_limited:
        out.add(
            "max-pages-reached",
            max_pages=audit.max_pages,
            pages_crawled=Page.objects.filter(audit_id=audit.id).count(),
            urls_pending=frontier["pending"],
        )
    if frontier["pending"] or rate_limited or not out.settings.enabled("orphan-page"):
        return  # the crawl did not finish: an unlinked sitemap URL may just not have been reached
    linked = LinkEdge.objects.filter(audit_id=audit.id, target_url=OuterRef("url")).exclude(
        source_page_id=OuterRef("id")
    )
    redirected = Page.objects.filter(audit_id=audit.id, redirect_url=OuterRef("url")).exclude(id=OuterRef("id"))
    # A frontier depth means a link, canonical or hreflang from a page reachable from the start URL.
    reached = Frontier.objects.filter(audit_id=audit.id, url=OuterRef("url"), depth__isnull=False)
    orphans = (
        Page.objects.filter(audit_id=audit.id, in_sitemap=True, depth__isnull=True)
        .exclude(url__in={audit.start_url, audit.site_url or audit.start_url})
        .filter(~Exists(linked), ~Exists(redirected), ~Exists(reached))
        .order_by("url")
        .values_list("id", "url", "status_code")
    )
    for page_id, url, status in orphans.iterator(chunk_size=STREAM_CHUNK_ROWS):
        out.add("orphan-page", page_id=page_id, page_url=url, status_code=status, in_sitemap=True)
