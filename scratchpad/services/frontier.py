"""Writes to the frontier: lease URLs to a chunk, give back what it did not do, record what it did (its URLs done,
their link edges, the new URLs it found queued, or recorded as skipped under the caps it is handed).

Claiming follows the lease invariants in docs/ARCHITECTURE.md: a short transaction picks rows with
SELECT ... FOR UPDATE SKIP LOCKED, marks them leased under the chunk's key and commits before any I/O.
The same key gets the same URLs back; an expired lease is claimable by anyone. A lease is (key, generation):
a run of a chunk takes it with a new generation, and every write of the run is fenced on both, so a run that
was paused and taken over writes nothing.
"""

from collections.abc import Callable, Collection
from dataclasses import replace
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from scratchpad.limits import MAX_CAREFUL_STARTS_PER_URL, NEW_URLS_PER_BATCH
from scratchpad.models import CrawlChunk, Frontier, LinkEdge, ShapeText, SkippedURL
from scratchpad.services.records import BatchOutcome, ClaimedURL, Edge, FrontierCaps, InsertOutcome, NewURL, batched
from scratchpad.services.skips import shapes_trapped_out, skipped_record

State = Frontier.State
NO_CAPS = FrontierCaps()  # seeding, and a batch without trap rules or a per-shape cap
SITEMAP = Frontier.Source.SITEMAP
LINK = Frontier.Source.LINK
PAGINATION = Frontier.Source.PAGINATION


def _claim_candidates(audit_id, now, limit: int, *, linked_only: bool) -> list[int]:
    """Up to `limit` claimable ids in claim order, locked (SKIP LOCKED) until the claim commits.

    Two scans that each walk frontier_claim_order in order and stop at `limit` (pending rows, then expired
    leases, which are few), instead of one `pending OR expired` filter that sorts every pending row of the
    audit on each claim: that sort took 58 ms a claim with 55,000 URLs queued."""
    scans = (
        Frontier.objects.filter(audit_id=audit_id, state=State.PENDING),
        Frontier.objects.filter(audit_id=audit_id, state=State.LEASED, leased_until__lt=now),
    )
    found: list[tuple[int | None, int]] = []
    for rows in scans:
        if linked_only:
            rows = rows.filter(depth__isnull=False)
        found += rows.select_for_update(skip_locked=True).order_by(*_claim_order()).values_list("depth", "id")[:limit]
    found.sort(key=_claim_key)
    return [frontier_id for _, frontier_id in found[:limit]]


def _claim_order():
    # Link-discovered before sitemap-only (depth NULL), shallow first, then discovery order.
    return (F("depth").asc(nulls_last=True), "id")


def _claim_key(row: tuple[int | None, int]) -> tuple:
    """_claim_order for a (depth, id) pair in Python: merging the claim's two ordered scans."""
    depth, frontier_id = row
    return (depth is None, depth or 0, frontier_id)


def frontier_claim(
    *, audit_id, lease_key: str, limit: int, lease_s: int, lease_gen: int = 0, resume: bool = True
) -> list[ClaimedURL]:
    """Lease up to `limit` URLs to (`lease_key`, `lease_gen`); a later run of the same key gets the key's
    unfinished URLs back (whatever generation held them: that run is taken to be dead).

    A run claims in slices: its first claim resumes (takes the key's unfinished URLs back, if any), the next
    ones pass `resume=False`, since the URLs the key holds then are this run's own, in flight."""
    now = timezone.now()
    with transaction.atomic():
        rows = []
        if resume:
            rows = list(
                Frontier.objects.select_for_update()
                .filter(audit_id=audit_id, state=State.LEASED, lease_key=lease_key)
                .order_by(*_claim_order())
                .values_list("id", flat=True)
            )
        if not rows and limit > 0:
            # Sitemap-only URLs wait until no link-discovered URL is left: the link crawl may still find
            # them (giving them a depth), and a small page budget goes to what the site links first.
            rows = _claim_candidates(audit_id, now, limit, linked_only=True)
            linked_left = Frontier.objects.filter(
                audit_id=audit_id, state__in=(State.PENDING, State.LEASED), depth__isnull=False
            )
            if not rows and not linked_left.exists():
                rows = _claim_candidates(audit_id, now, limit, linked_only=False)
        if not rows:
            return []
        Frontier.objects.filter(id__in=rows).update(
            state=State.LEASED,
            lease_key=lease_key,
            lease_gen=lease_gen,
            leased_until=now + timedelta(seconds=lease_s),
            attempts=F("attempts") + 1,
        )
        claimed = Frontier.objects.filter(id__in=rows).order_by(*_claim_order())
        fields = ("id", "url", "depth", "in_sitemap", "redirect_hops", "attempts", "starts", "source", "found_from")
        return [
            ClaimedURL(
                r.id, r.url, r.depth, r.in_sitemap, r.redirect_hops, r.attempts, r.starts, r.source, r.found_from
            )
            for r in claimed.only(*fields)
        ]


def frontier_mark_started(*, audit_id, lease_key: str, frontier_id: int, lease_gen: int | None = None) -> int:
    """Count a careful (one-at-a-time) fetch start, committed before the fetch; returns the new count."""
    _held(Frontier.objects.filter(id=frontier_id, audit_id=audit_id), lease_key, lease_gen).update(
        starts=F("starts") + 1
    )
    return Frontier.objects.filter(id=frontier_id).values_list("starts", flat=True).first() or 0


def frontier_start_allowed(starts: int) -> bool:
    return starts <= MAX_CAREFUL_STARTS_PER_URL


def frontier_release(*, audit_id, lease_key: str, ids: list[int], lease_gen: int | None = None) -> int:
    """Give unattempted URLs back: pending again, and the hand-out does not count against them. With
    `lease_gen`, only what that run still holds."""
    released = 0
    for part in batched(ids):
        released += _held(Frontier.objects.filter(audit_id=audit_id, id__in=part), lease_key, lease_gen).update(
            state=State.PENDING,
            lease_key="",
            leased_until=None,
            attempts=F("attempts") - 1,
        )
    return released


def frontier_seed(*, audit_id, urls: list[NewURL]) -> int:
    """Insert URLs that are not known yet; mark known ones as in the sitemap where they are. Idempotent.
    Returns how many rows went in (URLs already known are not counted)."""
    with transaction.atomic():
        return _insert_new(audit_id, urls).queued


def frontier_seed_sitemap(*, audit_id, urls: list[tuple[str, str]]) -> int:
    """Queue sitemap-only URLs, (url, pattern) pairs discovery read: new ones at depth NULL, known ones marked as in
    the sitemap. Idempotent; returns how many rows went in or were marked.

    On PostgreSQL one COPY into a stage and one upsert, in URL order: no lookup of which URLs are known (the
    crawl's batches need one; see _insert_new), which made seeding a million sitemap URLs a quarter of the
    discovery step's time limit. An upsert is safe here because no chunk writes the frontier while its audit is
    in discovery, and two runs of the step lock the same rows in the same (URL) order."""
    if connection.vendor != "postgresql":
        new = [NewURL(url, depth=None, source=SITEMAP, in_sitemap=True, pattern=pattern) for url, pattern in urls]
        return frontier_seed(audit_id=audit_id, urls=new)
    table = Frontier._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {_SEED_STAGE} (url text, pattern text) ON COMMIT DELETE ROWS"
        )
        with cursor.cursor.copy(f"COPY {_SEED_STAGE} (url, pattern) FROM STDIN") as copy:
            for row in urls:
                copy.write_row(row)
        cursor.execute(
            f"""
            INSERT INTO {table} (audit_id, url, depth, source, found_from, in_sitemap, redirect_hops, pattern,
                                 path_key, state, lease_key, lease_gen, attempts, starts)
            SELECT %s, s.url, NULL, %s, '', TRUE, 0, s.pattern, '', %s, '', 0, 0, 0
            FROM (SELECT DISTINCT ON (url) url, pattern FROM {_SEED_STAGE} ORDER BY url) AS s
            ON CONFLICT (audit_id, url) DO UPDATE SET in_sitemap = TRUE WHERE NOT {table}.in_sitemap
            """,
            [audit_id, SITEMAP, State.PENDING],
        )
        return cursor.rowcount


_SEED_STAGE = "scratchpad_frontier_seed_stage"


def frontier_hold(*, audit_id, lease_key: str, lease_gen: int | None, ids: list[int]) -> set[int]:
    """Of `ids`, the URLs this run still holds, locked until the transaction ends (call inside the batch's
    transaction, before writing anything): a batch writes only for these, so a run whose lease was taken
    over writes nothing. Locked in id order, the order every other locker of a chunk's rows uses."""
    held: set[int] = set()
    for part in batched(sorted(ids)):
        rows = _held(Frontier.objects.filter(audit_id=audit_id, id__in=part), lease_key, lease_gen)
        held.update(rows.select_for_update().order_by("id").values_list("id", flat=True))
    return held


def frontier_renew(*, audit_id, lease_key: str, lease_gen: int, lease_s: int) -> int:
    """Push back the expiry of what this run still holds; returns how many URLs that is.

    SKIP LOCKED: a row locked right now is being finished by the run's own batch (or taken by a claimer of
    expired leases); waiting for it could only deadlock with that batch."""
    until = timezone.now() + timedelta(seconds=lease_s)
    if connection.vendor != "postgresql":
        return _held(Frontier.objects.filter(audit_id=audit_id), lease_key, lease_gen).update(leased_until=until)
    table = Frontier._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table} SET leased_until = %s
            WHERE id IN (
                SELECT id FROM {table}
                WHERE audit_id = %s AND lease_key = %s AND lease_gen = %s AND state = %s
                ORDER BY id FOR UPDATE SKIP LOCKED
            )
            """,
            [until, audit_id, lease_key, lease_gen, State.LEASED],
        )
        return cursor.rowcount


def frontier_record_batch(
    *,
    audit_id,
    lease_key: str,
    done_ids: list[int],
    discovered: list[NewURL],
    edges: list[Edge],
    caps: FrontierCaps = NO_CAPS,
    lease_gen: int | None = None,
    shape: Callable[[NewURL], NewURL] | None = None,
    replayed: Collection | None = None,
) -> BatchOutcome:
    """Finish a persisted batch: its URLs done, their links stored, new URLs queued. `shape` fills in what the
    caps read (pattern, trap signs) of the discovered URLs the frontier does not know yet, and of those only:
    most links of a page lead to URLs already queued or crawled. `replayed`: the source pages of `edges` that an
    earlier run stored, whose edges are replaced (None: any of them may be); the others' edges are only inserted.

    Call inside the transaction that upserts the batch's pages.
    """
    finished = 0
    for part in batched(done_ids):
        finished += _held(Frontier.objects.filter(audit_id=audit_id, id__in=part), lease_key, lease_gen).update(
            state=State.DONE, leased_until=None
        )
    _replace_edges(audit_id, edges, replayed)
    inserted = _insert_new(audit_id, discovered[:NEW_URLS_PER_BATCH], caps, shape)
    return BatchOutcome(finished, inserted.skipped, inserted.first, inserted.queued)


def frontier_purge(*, audit_id) -> int:
    """Drop the audit's frontier, skipped URLs (the site checks made them issues) and crawl chunks once the
    audit is over (completed, failed or cancelled); link edges stay (they are the link graph). Returns how many
    frontier rows went."""
    deleted, _ = Frontier.objects.filter(audit_id=audit_id).delete()
    SkippedURL.objects.filter(audit_id=audit_id).delete()
    ShapeText.objects.filter(audit_id=audit_id).delete()
    CrawlChunk.objects.filter(audit_id=audit_id).delete()
    return deleted


def _held(rows, lease_key: str, lease_gen: int | None):
    """`rows` narrowed to those leased under `lease_key` (and `lease_gen`, when given)."""
    rows = rows.filter(state=State.LEASED, lease_key=lease_key)
    return rows if lease_gen is None else rows.filter(lease_gen=lease_gen)


def _replace_edges(audit_id, edges: list[Edge], replayed: Collection | None = None) -> None:
    # Delete-then-insert per source page keeps a replayed batch from duplicating edges. The parser already
    # folded each page's links into distinct targets (and capped them); a page that comes twice in one batch
    # (a replay) keeps one edge per target.
    by_source: dict = {}
    for edge in edges:
        by_source.setdefault(edge.source_page_id, {}).setdefault(edge.target_url, edge)
    if not by_source:
        return
    # By page id alone (a page's id is made from its audit and URL): the source page index, which a planner without
    # this audit's statistics cannot trade for an (audit, ...) index that reads every edge of the audit.
    stale = list(by_source) if replayed is None else [page_id for page_id in by_source if page_id in replayed]
    if stale:
        LinkEdge.objects.filter(source_page_id__in=stale).delete()
    if connection.vendor == "postgresql":
        # COPY: the link graph is the bulk of what a crawl writes (hundreds of rows per batch). The ids go as text,
        # each page's made once: psycopg dumps a uuid.UUID in Python, two a row (2.16 us a row with them, 0.87 as
        # text: ~0.04 CPU ms a page at ~30 edges).
        columns = "audit_id, source_page_id, target_url, anchor_text, nofollow, internal, link_count"
        audit_text = str(audit_id)
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {LinkEdge._meta.db_table} ({columns}) FROM STDIN") as copy:
                for source, kept in by_source.items():
                    source_text = str(source)
                    for e in kept.values():
                        copy.write_row(
                            (audit_text, source_text, e.target_url, e.anchor_text[:200], e.nofollow, e.internal,
                             e.link_count)
                        )  # fmt: skip
        return
    LinkEdge.objects.bulk_create(
        [
            LinkEdge(
                audit_id=audit_id,
                source_page_id=e.source_page_id,
                target_url=e.target_url,
                anchor_text=e.anchor_text[:200],
                nofollow=e.nofollow,
                internal=e.internal,
                link_count=e.link_count,
            )
            for kept in by_source.values()
            for e in kept.values()
        ],
        batch_size=1000,
    )


def _insert_new(
    audit_id, urls: list[NewURL], caps: FrontierCaps = NO_CAPS, shape: Callable[[NewURL], NewURL] | None = None
) -> InsertOutcome:
    """Queue URLs not known yet; known ones learn a link depth or the sitemap flag. New link-found URLs that
    break a trap rule (NewURL.trap, set by audits.pipeline.traps), or one of `caps`, are recorded as skipped
    instead (sitemap URLs never are: the site asked for them). `shape` fills in the unknown URLs' shapes first.
    Returns how many were skipped and which (rule, shape) skipped its first URL here.

    Only unknown URLs are inserted: an INSERT ... ON CONFLICT that meets a row another chunk has just
    updated (marked done) waits for that chunk, and two chunks doing that to each other deadlock. New
    URLs go in sorted, so chunks inserting the same new URLs take their locks in one order.
    """
    if not urls:
        return InsertOutcome()
    unique: dict[str, NewURL] = {}
    for new in urls:
        seen = unique.get(new.url)
        if seen is None or _shallower(new, seen) or _linked_instead(new, seen):
            unique[new.url] = new
    known: dict[str, int | None] = {}  # url -> its link depth so far (None: sitemap-only)
    by_pagination: list[tuple[str, str | None]] = []  # (url, linking page) of rows a rel=next/prev link queued
    for part in batched(list(unique)):
        rows = Frontier.objects.filter(audit_id=audit_id, url__in=part).values_list("url", "depth", "source")
        for url, depth, source in rows:
            known[url] = depth
            reached = unique[url]
            if source == PAGINATION and reached.source == LINK:
                # The linking page becomes found_from only if it is as close to the start (found_from stays one
                # click closer than the row's depth).
                closer = depth is not None and reached.depth is not None and reached.depth <= depth
                by_pagination.append((url, reached.found_from if closer else None))
    if by_pagination:
        _found_by_link(audit_id, by_pagination)
    new = sorted((u for u in unique.values() if u.url not in known), key=lambda u: u.url)
    if shape is not None:
        new = [shape(u) for u in new]
    skipped: list[tuple[NewURL, str]] = []
    kept = []
    for u in new:
        if u.trap and u.source != SITEMAP:
            skipped.append((u, u.trap))
        else:
            kept.append(u)
    kept, over = _cap_counted(
        audit_id, kept, "pattern", caps.max_dated_per_pattern, key=lambda u: u.dated and u.pattern
    )
    skipped += [(u, SkippedURL.RULE_CALENDAR_DATES) for u in over]
    kept, over = _cap_counted(audit_id, kept, "path_key", caps.max_query_variants, key=lambda u: u.path_key)
    skipped += [(u, SkippedURL.RULE_QUERY_VARIANTS) for u in over]
    if caps.identical_rule:
        kept, over = shapes_trapped_out(audit_id, kept)
        skipped += [(u, SkippedURL.RULE_IDENTICAL_PAGES) for u in over]
    kept, over = _cap_counted(audit_id, kept, "pattern", caps.max_per_pattern, key=lambda u: u.pattern)
    skipped += [(u, SkippedURL.RULE_PATTERN_CAP) for u in over]
    queued = _insert_rows(audit_id, sorted(kept, key=lambda u: u.url)) if kept else 0
    # A known URL reached by a shorter path (chunks claim without a barrier between depth layers): its queued row
    # takes the shorter depth, so what it links stays within max_depth and the claim order stays shallow-first.
    linked = [
        (u.url, u.depth, u.found_from)
        for u in unique.values()
        if u.url in known and u.depth is not None and (known[u.url] is None or u.depth < known[u.url])
    ]
    if linked:
        _learn_depths(audit_id, linked)
    sitemap_urls = [u.url for u in unique.values() if u.in_sitemap and u.url in known]
    for part in batched(sitemap_urls):
        Frontier.objects.filter(audit_id=audit_id, in_sitemap=False, url__in=part).update(in_sitemap=True)
    return replace(skipped_record(audit_id, skipped), queued=queued)


def _cap_counted(audit_id, new: list[NewURL], column: str, cap: int | None, *, key) -> tuple[list, list]:
    """Split link-found URLs into those under `cap` per `key` (counting the frontier's rows with that `column`
    value) and those over it. Shallow URLs first, so a cap keeps what the site links most prominently."""
    if not cap:
        return new, []
    keys = {key(u) for u in new if u.source != SITEMAP} - {"", False}
    if not keys:
        return new, []
    counts: dict[str, int] = {}
    for part in batched(sorted(keys)):
        rows = (
            Frontier.objects.filter(audit_id=audit_id, **{f"{column}__in": part})
            .values(column)
            .annotate(n=Count("id"))
            .values_list(column, "n")
        )
        counts.update(rows)
    kept, over = [], []
    for u in sorted(new, key=lambda u: (u.depth is None, u.depth or 0, u.url)):
        k = key(u) if u.source != SITEMAP else ""
        if k in keys:
            if counts.get(k, 0) >= cap:
                over.append(u)
                continue
            counts[k] = counts.get(k, 0) + 1
        kept.append(u)
    return kept, over


def _insert_rows(audit_id, new: list[NewURL]) -> int:
    """Insert the rows of URLs not known yet; how many went in (a row another chunk inserted first does not)."""
    if connection.vendor != "postgresql":
        created = Frontier.objects.bulk_create(
            [
                Frontier(
                    audit_id=audit_id,
                    url=u.url,
                    depth=u.depth,
                    source=u.source,
                    found_from=u.found_from,
                    in_sitemap=u.in_sitemap,
                    redirect_hops=u.redirect_hops,
                    pattern=u.pattern,
                    path_key=u.path_key,
                )
                for u in new
            ],
            ignore_conflicts=True,
            batch_size=1000,
        )
        return len(created)  # SQLite runs one writer at a time: nothing known was in `new`
    # One statement over arrays instead of ORM objects: frontier rows are most of a batch's inserts.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Frontier._meta.db_table} (audit_id, url, depth, source, found_from, in_sitemap,
                                                   redirect_hops, pattern, path_key, state, lease_key, lease_gen,
                                                   attempts, starts)
            SELECT %s, t.url, t.depth, t.source, t.found_from, t.in_sitemap, t.hops, t.pattern, t.path_key, %s, '',
                   0, 0, 0
            FROM unnest(%s::text[], %s::int[], %s::text[], %s::text[], %s::bool[], %s::int[], %s::text[],
                        %s::text[])
                 AS t(url, depth, source, found_from, in_sitemap, hops, pattern, path_key)
            ON CONFLICT (audit_id, url) DO NOTHING
            """,
            [
                audit_id,
                State.PENDING,
                [u.url for u in new],
                [u.depth for u in new],
                [u.source for u in new],
                [u.found_from for u in new],
                [u.in_sitemap for u in new],
                [u.redirect_hops for u in new],
                [u.pattern for u in new],
                [u.path_key for u in new],
            ],
        )
        return cursor.rowcount


def _learn_depths(audit_id, linked: list[tuple[str, int, str]]) -> None:
    """Rows found by a link get its depth and the page it came from: sitemap-only ones, and those it reaches
    by a shorter path (so a page's found_from is always one click closer to the start page)."""
    if connection.vendor != "postgresql":
        by_step: dict[tuple[int, str], list[str]] = {}
        for url, depth, found_from in linked:
            by_step.setdefault((depth, found_from), []).append(url)
        for (depth, found_from), step_urls in by_step.items():
            for part in batched(step_urls):
                Frontier.objects.filter(audit_id=audit_id, url__in=part).filter(
                    Q(depth__isnull=True) | Q(depth__gt=depth)
                ).update(depth=depth, found_from=found_from)
        return
    # SKIP LOCKED: a row another chunk is updating gets a depth from that chunk; waiting for it would only
    # risk a deadlock.
    table = Frontier._meta.db_table
    urls = [u for u, _, _ in linked]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table} AS f SET depth = t.depth, found_from = t.found_from
            FROM unnest(%s::text[], %s::int[], %s::text[]) AS t(url, depth, found_from)
            WHERE f.url = t.url AND (f.depth IS NULL OR f.depth > t.depth) AND f.id IN (
                SELECT id FROM {table}
                WHERE audit_id = %s AND url = ANY(%s::text[])
                FOR UPDATE SKIP LOCKED
            )
            """,
            [urls, [d for _, d, _ in linked], [f for _, _, f in linked], audit_id, urls],
        )


def _linked_instead(a: NewURL, b: NewURL) -> bool:
    """`a` reaches the URL by a link at the depth `b` reaches it by a rel=next/prev link: a link it is."""
    return a.source == LINK and b.source == PAGINATION and a.depth == b.depth


def _found_by_link(audit_id, found: list[tuple[str, str | None]]) -> None:
    """Pending rows queued by a rel=next/prev link that a link now reaches (`found`: (url, linking page, None to
    keep the row's)): found via a link (Page.found_via says 'pagination' only of a URL nothing else leads to).
    A row locked by a claim right now is left alone, as _learn_depths leaves it."""
    table = Frontier._meta.db_table
    if connection.vendor != "postgresql":
        for url, found_from in found:
            Frontier.objects.filter(audit_id=audit_id, url=url, source=PAGINATION, state=State.PENDING).update(
                source=LINK, found_from=found_from if found_from is not None else F("found_from")
            )
        return
    urls = [url for url, _ in found]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table} AS f SET source = %s, found_from = COALESCE(t.found_from, f.found_from)
            FROM unnest(%s::text[], %s::text[]) AS t(url, found_from)
            WHERE f.url = t.url AND f.id IN (
                SELECT id FROM {table}
                WHERE audit_id = %s AND url = ANY(%s::text[]) AND source = %s AND state = %s
                FOR UPDATE SKIP LOCKED
            )
            """,
            [LINK, urls, [f for _, f in found], audit_id, urls, PAGINATION, State.PENDING],
        )


def _shallower(a: NewURL, b: NewURL) -> bool:
    if a.depth is None:
        return False
    return b.depth is None or a.depth < b.depth
