"""Finalize, exact click depth: a breadth-first pass over the stored link graph from the start page, so the
crawl's claim order no longer has to carry depth (chunks claim without a barrier between depth layers).
Then `deep-page`, which needs the exact depth, is judged here instead of at crawl time.

The graph is the one the crawl follows (audits.pipeline.page_record): from a page fetched OK whose robots
directives allow following, each internal link edge (nofollow ones only when the project follows nofollow)
costs one click; from any 2xx HTML page its canonical and hreflang targets cost one click (the crawl queues
them too); a redirect costs nothing (its target stands where the redirect stood). Pages no path reaches
(sitemap-only) keep depth NULL. In list and sitemap mode links are not followed and every page stays at depth 0.

Memory is a few bytes a page and 4 bytes a click edge, never a row per page or a client-side result: pages are
numbered by id in SQL, every join (links, redirects, canonicals, hreflang) runs in SQL and streams page-number
pairs (source << 32 | target), ordered by source, through a server-side cursor, so each kind of click lands
straight in a compressed sparse row graph of its own (an int32 target per edge, an int32 offset per page) with
no sort and no source held per edge (before, an int64 per edge and its sort: 8 bytes, ~170 MiB at a million
pages of 21 links). PostgreSQL does the sort, spilling to disk past its work_mem. The search runs level by level
in numpy, in slices of bounded size. Only targets with a query string come back as URLs, when the project
rewrites query strings, and only those are looked up in Python (their few pairs are sorted here).
"""

import uuid
from array import array
from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.utils import timezone

from audits.bulk import issues_insert
from audits.checks.page import robots_directives
from audits.checks.registry import CheckSettings, make_issue
from audits.fencing import FinalizeRun, finalize_atomic
from audits.limits import (
    DEPTH_BFS_GATHER_EDGES,
    DEPTH_EDGE_FETCH_ROWS,
    DEPTH_ISSUE_READ_ROWS,
    DEPTH_PAGE_FETCH_ROWS,
    DEPTH_SQL_WORK_MEM_MB,
    DEPTH_WRITE_BATCH_PAGES,
)
from audits.models import Audit, Issue, Page, set_issue_id_for, set_issue_id_sql
from audits.pipeline.scope import CrawlScope, QueryPolicy
from scratchpad.models import LinkEdge

DEEP_PAGE = "deep-page"
PAIR_SHIFT = 32  # a (source, target) pair of page numbers travels and is stored as source << 32 | target
TARGET_MASK = (1 << PAIR_SHIFT) - 1
UNREACHED = -1  # depth of a page no path reaches (stored as NULL)


@dataclass(frozen=True)
class DepthPass:
    pages: int
    reached: int
    changed: int  # pages whose stored depth the pass corrected
    edges: int  # followable edges between stored pages
    deep_pages: int


@dataclass(frozen=True)
class _Targets:
    """One kind of target a page points at, as SQL over `p` (the audit's pages, numbered by id) aliased `s`."""

    columns: str  # page columns `p` must carry
    source: str  # FROM clause giving the source page `s`
    target: str  # SQL expression of the target URL
    where: str
    params: tuple = ()
    is_link: bool = False  # a link edge: also matched unrewritten, and only from pages whose robots allow it


@dataclass
class _Clicks:
    """One kind of click as a compressed sparse row graph."""

    indptr: np.ndarray  # pages + 1 (int32; int64 past 2**31 edges): page n's are targets[indptr[n]:indptr[n + 1]]
    targets: np.ndarray  # int32, one a click edge, grouped by source


@dataclass
class _Graph:
    pages: int
    starts: np.ndarray  # page numbers at depth 0
    jumps: np.ndarray  # int32 per page: its redirect's target page number, or -1 (no click)
    clicks: list[_Clicks]  # one per kind of click that has any (canonical, hreflang, links, rewritten targets)
    edges: int  # followable link edges (canonical and hreflang targets not counted)


def page_depths_store(*, audit_id, run: FinalizeRun | None = None) -> DepthPass:
    """Store every page's exact click depth (NULL when no link path from the start page reaches it), then
    replace the audit's deep-page issues with those the exact depths give. Idempotent; given finalize's `run`,
    its writes are fenced on it (audits.fencing)."""
    audit = Audit.objects.get(id=audit_id)
    scope = CrawlScope.for_audit(audit)
    pages = reached = changed = edges = 0
    if scope.follow_links:
        with finalize_atomic(run):  # scopes the server-side cursors and the planner setting to the pass
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    # A cursor's plan is costed for its first 10 % of rows by default, which favours fast-start
                    # plans; every row is read here, so cost it as the plain query it replaced.
                    cursor.execute("SET LOCAL cursor_tuple_fraction = 1.0")
                    # The link pairs' hash join (every page URL) and sort (every edge) spill to disk past the 4 MB
                    # default: at a million pages (14 M edges) the query took 44-46 s, with 64 MB 35-36 s.
                    cursor.execute(f"SET LOCAL work_mem = '{DEPTH_SQL_WORK_MEM_MB}MB'")
            graph = _graph_load(audit, scope)
            depths, edges = _bfs(graph), graph.edges
            del graph  # the edge arrays go before the writes
            changed = _write_depths(audit_id, depths)
        pages, reached = len(depths), int(np.count_nonzero(depths != UNREACHED))
    deep = _deep_pages_store(audit, run)
    return DepthPass(pages=pages, reached=reached, changed=changed, edges=edges, deep_pages=deep)


def _numbered(columns: str) -> str:
    """`p`: the audit's pages with their number n, the rank by id (the order the pages are streamed in)."""
    return (
        f"WITH p AS (SELECT id, url{columns}, ROW_NUMBER() OVER (ORDER BY id) - 1 AS n "
        f"FROM {Page._meta.db_table} WHERE audit_id = %s)"
    )


def _target_kinds(audit_id, scope: CrawlScope) -> tuple[_Targets, list[_Targets]]:
    """(redirects: no click, [clicks: canonical, hreflang, link edges])."""
    two_xx = "s.status_code >= 200 AND s.status_code < 300"
    if connection.vendor == "postgresql":
        pairs = "CASE WHEN jsonb_typeof(s.hreflang) = 'array' THEN s.hreflang ELSE '[]'::jsonb END"
        hreflang_source = f"p s CROSS JOIN LATERAL jsonb_array_elements({pairs}) AS h(pair)"
        hreflang_target = "(CASE WHEN jsonb_typeof(h.pair) = 'array' THEN h.pair ->> 1 END)"
    else:
        pairs = "CASE WHEN json_type(s.hreflang) = 'array' THEN s.hreflang ELSE '[]' END"
        hreflang_source = f"p s, json_each({pairs}) AS h"
        hreflang_target = "(CASE WHEN h.type = 'array' THEN json_extract(h.value, '$[1]') END)"
    redirects = _Targets(
        ", status_code, redirect_url", "p s", "s.redirect_url",
        "s.status_code >= 300 AND s.status_code < 400 AND s.redirect_url <> ''",
    )  # fmt: skip
    canonicals = _Targets(
        ", status_code, canonical_url", "p s", "s.canonical_url",
        f"{two_xx} AND s.canonical_url <> '' AND s.canonical_url <> s.url",
    )  # fmt: skip
    hreflangs = _Targets(
        ", status_code, hreflang", hreflang_source, hreflang_target,
        f"{two_xx} AND {hreflang_target} <> '' AND {hreflang_target} <> s.url",
    )  # fmt: skip
    links = _Targets(
        "", f"{LinkEdge._meta.db_table} e JOIN p s ON s.id = e.source_page_id", "e.target_url",
        "e.audit_id = %s AND e.internal AND (%s OR NOT e.nofollow)",
        (audit_id, bool(scope.follow_nofollow)), is_link=True,
    )  # fmt: skip
    return redirects, [canonicals, hreflangs, links]


def _graph_load(audit: Audit, scope: CrawlScope) -> _Graph:
    """The click graph as the crawl follows it, in page numbers (see the module docstring)."""
    db_audit_id = Audit._meta.pk.get_db_prep_value(audit.id, connection)  # a UUID on PostgreSQL, hex on SQLite
    follows = _follows(audit.id)
    pages = len(follows)
    redirects, click_kinds = _target_kinds(db_audit_id, scope)
    rewrites = scope.query_policy != QueryPolicy.KEEP
    jumps = np.full(pages, -1, dtype=np.int32)
    for keys in _pair_batches(db_audit_id, redirects, rewrites=rewrites):
        jumps[keys >> PAIR_SHIFT] = keys & TARGET_MASK
    clicks, edges = [], 0
    for kind in click_kinds:
        batches = _pair_batches(db_audit_id, kind, rewrites=rewrites)
        kind_clicks = _clicks_load(pages, batches, follows=follows if kind.is_link else None)
        edges += len(kind_clicks.targets) if kind.is_link else 0
        if len(kind_clicks.targets):
            clicks.append(kind_clicks)
    if rewrites:
        # The crawl queued a URL with a query string rewritten by the policy: such targets meet their page
        # only rewritten (a link edge also counts unrewritten, matched above).
        rewritten = array("q")
        for is_jump, is_link, keys in _rewritten_pairs(audit.id, db_audit_id, scope, redirects, click_kinds, follows):
            if is_jump:
                jumps[keys >> PAIR_SHIFT] = keys & TARGET_MASK
            else:
                edges += len(keys) if is_link else 0
                rewritten.frombytes(keys.tobytes())
        if rewritten:
            keys = np.sort(np.frombuffer(rewritten, dtype=np.int64))
            clicks.append(_clicks_load(pages, [keys]))
    with connection.cursor() as cursor:
        cursor.execute(f"{_numbered('')} SELECT n FROM p WHERE url = %s", [db_audit_id, audit.start_url])
        starts = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
    return _Graph(pages=pages, starts=starts, jumps=jumps, clicks=clicks, edges=edges)


def _clicks_load(pages: int, batches, *, follows: np.ndarray | None = None) -> _Clicks:
    """A compressed sparse row graph from int64 batches of source << 32 | target in source order (kept only
    from sources that `follows`, when given): each batch's targets are appended, its sources only counted."""
    counts = None  # counts[n + 1]: page n's edges; their running sum is indptr. Made at the first edge: a kind
    # without any (no canonical on the site) costs nothing
    targets, last = array("i"), -1
    for keys in batches:
        sources = keys >> PAIR_SHIFT
        if len(sources) and (sources[0] < last or np.any(sources[1:] < sources[:-1])):
            raise ValueError("click pairs must come in source order")  # the CSR would be wrong
        last = int(sources[-1]) if len(sources) else last
        if follows is not None:
            kept = follows[sources]
            keys, sources = keys[kept], sources[kept]
        if not len(keys):
            continue
        targets.frombytes((keys & TARGET_MASK).astype(np.int32).tobytes())
        numbers, n = np.unique(sources, return_counts=True)
        if counts is None:
            counts = np.zeros(pages + 1, dtype=np.int32)
        counts[numbers + 1] += n.astype(np.int32)
    if counts is None:
        return _Clicks(indptr=np.broadcast_to(np.int32(0), (pages + 1,)), targets=np.zeros(0, np.int32))
    # 4 bytes a page while the offsets fit (2**31 edges), 8 past that
    indptr = np.cumsum(counts, out=counts) if len(targets) < 2**31 else np.cumsum(counts, dtype=np.int64)
    return _Clicks(indptr=indptr, targets=np.frombuffer(targets, dtype=np.int32))


def _follows(audit_id) -> np.ndarray:
    """Per page number: whether the crawl follows its links (fetched OK, robots directives without nofollow)."""
    follows = bytearray()
    rows = (
        Page.objects.filter(audit_id=audit_id).order_by("id").values_list("fetch_class", "meta_robots", "x_robots_tag")
    )
    for fetch_class, meta, xrt in rows.iterator(chunk_size=DEPTH_PAGE_FETCH_ROWS):
        follows.append(fetch_class == Page.FetchClass.OK and "nofollow" not in robots_directives(meta, xrt))
    return np.frombuffer(follows, dtype=np.bool_)


def _pair_batches(db_audit_id, kind: _Targets, *, rewrites: bool):
    """int64 arrays of source << 32 | target for every target URL that is a stored page, in that order, read in
    batches through a server-side cursor (the database sorts them; the graph is built from them as they come).
    When the project rewrites query strings, a redirect, canonical or hreflang target with a query string is left
    to _rewritten_pairs (it meets its page only rewritten)."""
    plain = f" AND {kind.target} NOT LIKE '%%?%%'" if rewrites and not kind.is_link else ""
    sql = f"""{_numbered(kind.columns)}
        SELECT s.n * {1 << PAIR_SHIFT} + t.n FROM {kind.source} JOIN p t ON t.url = {kind.target}
        WHERE {kind.where}{plain} ORDER BY 1"""
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [db_audit_id, *kind.params])
        while batch := cursor.fetchmany(DEPTH_EDGE_FETCH_ROWS):
            yield np.fromiter((row[0] for row in batch), dtype=np.int64, count=len(batch))


def _rewritten_pairs(audit_id, db_audit_id, scope: CrawlScope, redirects: _Targets, clicks: list, follows):
    """(is redirect, is link, source << 32 | target array) for targets with a query string, rewritten by the
    query policy: the rewritten URLs are collected (only these), then met by one pass over the page URLs."""
    wanted: dict[tuple[str, bool, bool], array] = {}
    for kind, is_jump in [(redirects, True), *((kind, False) for kind in clicks)]:
        sql = f"""{_numbered(kind.columns)}
            SELECT s.n, {kind.target} FROM {kind.source} WHERE {kind.where} AND {kind.target} LIKE '%%?%%'"""
        with connection.chunked_cursor() as cursor:
            cursor.execute(sql, [db_audit_id, *kind.params])
            while batch := cursor.fetchmany(DEPTH_EDGE_FETCH_ROWS):
                for source, url in batch:
                    if kind.is_link and not follows[source]:
                        continue
                    rewritten = scope.rewrite(url)
                    if kind.is_link and rewritten == url:
                        continue  # already matched as it is
                    wanted.setdefault((rewritten, is_jump, kind.is_link), array("q")).append(source << PAIR_SHIFT)
    if not wanted:
        return
    by_url: dict[str, list] = {}
    for (url, is_jump, is_link), sources in wanted.items():
        by_url.setdefault(url, []).append((is_jump, is_link, sources))
    urls = Page.objects.filter(audit_id=audit_id).order_by("id").values_list("url", flat=True)
    for n, url in enumerate(urls.iterator(chunk_size=DEPTH_PAGE_FETCH_ROWS)):
        for is_jump, is_link, sources in by_url.get(url, ()):
            yield is_jump, is_link, np.frombuffer(sources, dtype=np.int64) + n


def _bfs(graph: _Graph) -> np.ndarray:
    """Exact depth per page number (UNREACHED when no path): level by level, each level first closed under
    redirects (no click), then its click targets not reached yet make the next level."""
    depths = np.full(graph.pages, UNREACHED, dtype=np.int32)
    level, depth = np.unique(graph.starts), 0
    depths[level] = 0
    while level.size:
        level = _redirect_closure(graph, depths, level, depth)
        depth += 1
        level = _clicks(graph, depths, level, depth)
    return depths


def _redirect_closure(graph: _Graph, depths: np.ndarray, level: np.ndarray, depth: int) -> np.ndarray:
    """`level` with every page its redirects reach, chains followed to their end, at the same `depth`."""
    parts, new = [level], level
    while new.size:
        new = graph.jumps[new]
        new = np.unique(new[new >= 0])
        new = new[depths[new] == UNREACHED]
        depths[new] = depth
        parts.append(new)
    return np.concatenate(parts) if len(parts) > 2 else level


def _clicks(graph: _Graph, depths: np.ndarray, level: np.ndarray, depth: int) -> np.ndarray:
    """Pages one click from `level` not reached yet, now at `depth`, over every kind of click."""
    parts = [part for clicks in graph.clicks for part in _gather(clicks, depths, level, depth)]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _gather(clicks: _Clicks, depths: np.ndarray, level: np.ndarray, depth: int):
    """Yield the pages one `clicks` edge from `level` not reached yet, marked at `depth`; gathered in slices of at
    most DEPTH_BFS_GATHER_EDGES edges (or one page's), so the temporaries stay small on any level."""
    begins, ends = clicks.indptr[level], clicks.indptr[level + 1]
    reached_before = np.cumsum(ends - begins)
    i = 0
    while i < level.size:
        done = int(reached_before[i - 1]) if i else 0
        j = max(i + 1, int(np.searchsorted(reached_before, done + DEPTH_BFS_GATHER_EDGES, side="right")))
        counts = ends[i:j] - begins[i:j]
        total = int(counts.sum())
        if total:
            offsets = np.cumsum(counts) - counts
            found = clicks.targets[np.repeat(begins[i:j] - offsets, counts) + np.arange(total)]
            found = np.unique(found[depths[found] == UNREACHED])
            depths[found] = depth
            yield found
        i = j


def _write_depths(audit_id, depths: np.ndarray) -> int:
    """Store the depths that differ from what the crawl recorded; returns how many. The pages are streamed
    again in id order; only the changed ones are kept (16 + 4 bytes each) until the writes."""
    changed_ids, changed_depths = bytearray(), array("i")
    rows = Page.objects.filter(audit_id=audit_id).order_by("id").values_list("id", "depth")
    for n, (page_id, stored) in enumerate(rows.iterator(chunk_size=DEPTH_PAGE_FETCH_ROWS)):
        exact = int(depths[n])
        if (UNREACHED if stored is None else stored) != exact:
            changed_ids += page_id.bytes
            changed_depths.append(exact)
    for start in range(0, len(changed_depths), DEPTH_WRITE_BATCH_PAGES):
        end = min(start + DEPTH_WRITE_BATCH_PAGES, len(changed_depths))
        ids = [uuid.UUID(bytes=bytes(changed_ids[16 * k : 16 * k + 16])) for k in range(start, end)]
        part = [None if d == UNREACHED else d for d in changed_depths[start:end]]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    f"""
                    UPDATE {Page._meta.db_table} AS p SET depth = t.depth
                    FROM unnest(%s::uuid[], %s::int[]) AS t(id, depth)
                    WHERE p.id = t.id AND p.audit_id = %s
                    """,
                    [ids, part, audit_id],
                )
            continue
        by_depth: dict = {}
        for page_id, d in zip(ids, part, strict=True):
            by_depth.setdefault(d, []).append(page_id)
        for d, same in by_depth.items():
            Page.objects.filter(audit_id=audit_id, id__in=same).update(depth=d)
    return len(changed_depths)


def _deep_pages_store(audit: Audit, run: FinalizeRun | None = None) -> int:
    """Replace the audit's deep-page issues: a 2xx page fetched OK at an exact depth of min_depth or more
    (the same pages the page check judged at crawl time, with the depth it could not know then). On PostgreSQL
    one INSERT … SELECT writes them from the page rows (no row travels to Python); elsewhere they are built here.
    Either way in URL order, so the issue grid reads them from neighbouring heap pages."""
    settings = CheckSettings.for_audit(audit)
    with finalize_atomic(run):
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
        if connection.vendor == "postgresql":
            return _deep_issues_insert_sql(audit, pages, min_depth, settings.severity(DEEP_PAGE))
        issues = (
            make_issue(
                audit.id,
                DEEP_PAGE,
                page_id=page_id,
                page_url=url,
                details={"depth": depth, "min_depth": min_depth},
                settings=settings,
            )
            for page_id, url, depth in pages.iterator(chunk_size=DEPTH_ISSUE_READ_ROWS)
        )
        return issues_insert(_with_set_id(issue) for issue in issues)


def _with_set_id(issue: Issue) -> Issue:
    issue.id = set_issue_id_for(issue.audit_id, issue.page_url, issue.type)
    return issue


def _deep_issues_insert_sql(audit: Audit, pages, min_depth: int, severity: str) -> int:
    """The deep-page rows of `pages` (id, url, depth in URL order) in one statement. Built in Python they cost
    0.05 ms a row at 100,000 pages and 0.18 at a million (a Django object, a uuid5 and a COPY line each, behind a
    cursor over the pages; 180.8 s for 989,090 rows with their COMMIT), this statement 0.04 (40.2 s)."""
    pages_sql, pages_params = pages.query.sql_with_params()
    issue_id, id_params = set_issue_id_sql(audit.id, "d.url", DEEP_PAGE)
    columns = ", ".join(
        connection.ops.quote_name(Issue._meta.get_field(name).column)
        for name in ("id", "audit", "page", "page_url", "type", "severity", "details", "created_at")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Issue._meta.db_table} ({columns})
            SELECT {issue_id}, %s, d.id, d.url, %s, %s, jsonb_build_object('depth', d.depth, 'min_depth', %s), %s
            FROM ({pages_sql}) AS d(id, url, depth)
            ORDER BY d.url
            ON CONFLICT (id) DO NOTHING
            """,
            [*id_params, audit.id, DEEP_PAGE, severity, min_depth, timezone.now(), *pages_params],
        )
        return cursor.rowcount
