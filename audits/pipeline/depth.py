"""Finalize, exact click depth: a breadth-first pass over the stored link graph from the start page, so the
crawl's claim order no longer has to carry depth (chunks claim without a barrier between depth layers).
Then `deep-page`, which needs the exact depth, is judged here instead of at crawl time.

The graph is the one the crawl follows (audits.pipeline.page_record): from a page fetched OK whose robots
directives allow following, each internal link edge (nofollow ones only when the project follows nofollow)
costs one click; from any 2xx HTML page its canonical and hreflang targets cost one click (the crawl queues
them too); a redirect costs nothing (its target stands where the redirect stood). Pages no path reaches
(sitemap-only) keep depth NULL. In list and sitemap mode links are not followed and every page stays at depth 0.

Memory is bounded by the pages and edges as integers: the edge join runs in SQL and returns page numbers,
never URLs (only edges with a query string come back as URLs, when the project rewrites query strings).
"""

from array import array
from collections import deque
from dataclasses import dataclass

from django.db import connection, transaction

from audits.checks.page import robots_directives
from audits.checks.registry import CheckSettings, make_issue
from audits.limits import DEPTH_EDGE_FETCH_ROWS, DEPTH_ISSUE_WRITE_BATCH, DEPTH_WRITE_BATCH_PAGES
from audits.models import Audit, Issue, Page
from audits.pipeline.scope import CrawlScope, QueryPolicy
from scratchpad.models import LinkEdge

DEEP_PAGE = "deep-page"


@dataclass(frozen=True)
class DepthPass:
    pages: int
    reached: int
    changed: int  # pages whose stored depth the pass corrected
    edges: int  # followable edges between stored pages
    deep_pages: int


def page_depths_store(*, audit_id) -> DepthPass:
    """Store every page's exact click depth (NULL when no link path from the start page reaches it), then
    replace the audit's deep-page issues with those the exact depths give. Idempotent."""
    audit = Audit.objects.get(id=audit_id)
    scope = CrawlScope.for_audit(audit)
    if scope.follow_links:
        pages, depths, edges = _bfs(audit, scope)
        changed = _write_depths(audit_id, pages, depths)
    else:
        pages, depths, edges, changed = [], [], 0, 0
    deep = _deep_pages_store(audit)
    reached = sum(1 for d in depths if d is not None)
    return DepthPass(pages=len(pages), reached=reached, changed=changed, edges=edges, deep_pages=deep)


def _bfs(audit: Audit, scope: CrawlScope) -> tuple[list, list, int]:
    """(page rows, their exact depths, followable edges). Page n is the n-th page by id."""
    rows = list(
        Page.objects.filter(audit_id=audit.id)
        .order_by("id")
        .values_list(
            "id", "url", "depth", "status_code", "fetch_class", "redirect_url", "canonical_url", "hreflang",
            "meta_robots", "x_robots_tag", "content_type",
        )
    )  # fmt: skip
    index = {row[1]: n for n, row in enumerate(rows)}
    links: list[array] = [array("i") for _ in rows]  # one click
    jumps: list[array] = [array("i") for _ in rows]  # redirects: no click
    follows = [False] * len(rows)
    for n, (_, url, _, status, fetch_class, redirect_url, canonical, hreflang, meta, xrt, _) in enumerate(rows):
        follows[n] = fetch_class == Page.FetchClass.OK and "nofollow" not in robots_directives(meta, xrt)
        target = index.get(scope.rewrite(redirect_url)) if redirect_url else None
        if target is not None and status is not None and 300 <= status < 400:
            jumps[n].append(target)
        if status is not None and 200 <= status < 300:
            for extra in [canonical, *(pair[1] for pair in hreflang or [] if len(pair) > 1)]:
                target = index.get(scope.rewrite(extra)) if extra and extra != url else None
                if target is not None:
                    links[n].append(target)
    edges = 0
    for source, target in _link_pairs(audit.id, scope, index, [row[0] for row in rows]):
        if follows[source]:
            links[source].append(target)
            edges += 1
    depths: list[int | None] = [None] * len(rows)
    starts = [index[u] for u in {audit.start_url} if u in index]
    # 0-1 breadth-first search: a redirect (cost 0) goes to the front of the queue, a click to the back.
    queue = deque()
    for s in starts:
        depths[s] = 0
        queue.append(s)
    while queue:
        n = queue.popleft()
        d = depths[n]
        for m in jumps[n]:
            if depths[m] is None or depths[m] > d:
                depths[m] = d
                queue.appendleft(m)
        for m in links[n]:
            if depths[m] is None or depths[m] > d + 1:
                depths[m] = d + 1
                queue.append(m)
    return rows, depths, edges


def _link_pairs(audit_id, scope: CrawlScope, index: dict, ids: list):
    """(source page number, target page number) of every internal link edge whose target is a stored page,
    nofollow edges only when the project follows nofollow. Numbers are ranks by page id (the order of _bfs)."""
    page_table, edge_table = Page._meta.db_table, LinkEdge._meta.db_table
    nofollow_ok = bool(scope.follow_nofollow)
    db_audit_id = Audit._meta.pk.get_db_prep_value(audit_id, connection)  # a UUID on PostgreSQL, hex on SQLite
    numbered = (
        f"WITH p AS (SELECT id, url, ROW_NUMBER() OVER (ORDER BY id) - 1 AS n FROM {page_table} WHERE audit_id = %s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""{numbered}
            SELECT s.n, t.n FROM {edge_table} e
            JOIN p s ON s.id = e.source_page_id
            JOIN p t ON t.url = e.target_url
            WHERE e.audit_id = %s AND e.internal AND (%s OR NOT e.nofollow)
            """,
            [db_audit_id, db_audit_id, nofollow_ok],
        )
        while batch := cursor.fetchmany(DEPTH_EDGE_FETCH_ROWS):
            yield from batch
    if scope.query_policy == QueryPolicy.KEEP:
        return
    # The crawl queued a link's URL rewritten by the query policy: such edges meet their page only rewritten.
    order = {page_id: n for n, page_id in enumerate(ids)}
    edges = LinkEdge.objects.filter(audit_id=audit_id, internal=True, target_url__contains="?")
    if not nofollow_ok:
        edges = edges.filter(nofollow=False)
    for source_id, target_url in edges.values_list("source_page_id", "target_url").iterator(chunk_size=2000):
        rewritten = scope.rewrite(target_url)
        if rewritten != target_url and rewritten in index:
            yield order[source_id], index[rewritten]


def _write_depths(audit_id, rows: list, depths: list) -> int:
    """Store the depths that differ from what the crawl recorded; returns how many."""
    changed = [(row[0], d) for row, d in zip(rows, depths, strict=True) if row[2] != d]
    for start in range(0, len(changed), DEPTH_WRITE_BATCH_PAGES):
        part = changed[start : start + DEPTH_WRITE_BATCH_PAGES]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    f"""
                    UPDATE {Page._meta.db_table} AS p SET depth = t.depth
                    FROM unnest(%s::uuid[], %s::int[]) AS t(id, depth)
                    WHERE p.id = t.id AND p.audit_id = %s
                    """,
                    [[page_id for page_id, _ in part], [d for _, d in part], audit_id],
                )
            continue
        by_depth: dict = {}
        for page_id, d in part:
            by_depth.setdefault(d, []).append(page_id)
        for d, ids in by_depth.items():
            Page.objects.filter(audit_id=audit_id, id__in=ids).update(depth=d)
    return len(changed)


def _deep_pages_store(audit: Audit) -> int:
    """Replace the audit's deep-page issues: a 2xx page fetched OK at an exact depth of min_depth or more
    (the same pages the page check judged at crawl time, with the depth it could not know then)."""
    settings = CheckSettings.for_audit(audit)
    with transaction.atomic():
        Issue.objects.filter(audit_id=audit.id, type=DEEP_PAGE).delete()
        if not settings.enabled(DEEP_PAGE):
            return 0
        min_depth = settings.threshold(DEEP_PAGE, "min_depth")
        pages = (
            Page.objects.filter(
                audit_id=audit.id,
                depth__gte=min_depth,
                fetch_class=Page.FetchClass.OK,
                status_code__gte=200,
                status_code__lt=300,
            )
            .order_by("url")
            .values_list("id", "url", "depth")
        )
        buffer, written = [], 0
        for page_id, url, depth in pages.iterator(chunk_size=DEPTH_ISSUE_WRITE_BATCH):
            buffer.append(
                make_issue(
                    audit.id,
                    DEEP_PAGE,
                    page_id=page_id,
                    page_url=url,
                    details={"depth": depth, "min_depth": min_depth},
                    settings=settings,
                )
            )
            if len(buffer) >= DEPTH_ISSUE_WRITE_BATCH:
                Issue.objects.bulk_create(buffer, ignore_conflicts=True)
                written, buffer = written + len(buffer), []
        Issue.objects.bulk_create(buffer, ignore_conflicts=True)
        return written + len(buffer)
