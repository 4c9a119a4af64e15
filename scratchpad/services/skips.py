"""The store of what the trap rules refused and of the counts the identical-pages rule reads: SkippedURL rows
(one per refused URL, the first of each (rule, shape) noted for the audit's event) and ShapeText counters.
It counts and records; audits.pipeline.traps decides."""

import hashlib
from dataclasses import dataclass

from django.db import connection
from django.db.models import F

from scratchpad.models import Frontier, ShapeText, SkippedURL
from scratchpad.services.records import InsertOutcome, NewURL, SkipFirst, batched

SITEMAP = Frontier.Source.SITEMAP


def shapes_trapped_out(audit_id, new: list[NewURL]) -> tuple[list, list]:
    """Split new URLs into those kept and the link-found ones whose shape the identical-pages rule trapped."""
    patterns = sorted({u.pattern[:250] for u in new if u.source != SITEMAP})
    trapped: set[str] = set()
    for part in batched(patterns):
        trapped.update(
            ShapeText.objects.filter(audit_id=audit_id, text_hash="", trapped=True, pattern__in=part).values_list(
                "pattern", flat=True
            )
        )
    if not trapped:
        return new, []
    kept, over = [], []
    for u in new:
        (over if u.source != SITEMAP and u.pattern[:250] in trapped else kept).append(u)
    return kept, over


@dataclass(frozen=True)
class ShapeCount:
    """One shape's counters after a batch's pages were added: its pages, and the most of them sharing one main
    text among the texts this batch added to."""

    pattern: str
    pages: int
    most_alike: int


def shape_texts_count(*, audit_id, pages: list[tuple[str, str]]) -> list[ShapeCount]:
    """Add a persisted batch's pages to the counters per (shape, main-text fingerprint) and per shape. `pages` are
    (shape, fingerprint) of pages with a main text. Returns the counts of the shapes this batch touched.

    Call inside the batch's transaction, late: the shape's own row is taken by every batch with pages of that
    shape, and the rows are locked in one (sorted) order, so two batches wait for each other at most briefly and
    never in a cycle."""
    if not pages:
        return []
    counts: dict[tuple[str, str], int] = {}
    for pattern, text_hash in pages:
        for key in ((pattern[:250], ""), (pattern[:250], text_hash[:16])):
            counts[key] = counts.get(key, 0) + 1
    rows = sorted(counts.items())
    totals: dict[str, int] = {}
    largest: dict[str, int] = {}
    for (pattern, text_hash), pages_now in _shape_texts_add(audit_id, rows):
        if text_hash:
            largest[pattern] = max(largest.get(pattern, 0), pages_now)
        else:
            totals[pattern] = pages_now
    return [ShapeCount(pattern, totals.get(pattern, 0), most) for pattern, most in largest.items()]


def shape_texts_trap(*, audit_id, patterns: list[str]) -> list[str]:
    """Mark these shapes trapped (the identical-pages rule then refuses their new link-found URLs); returns those
    that were not trapped before. Call in the transaction that counted them (shape_texts_count)."""
    if not patterns:
        return []
    rows = ShapeText.objects.filter(audit_id=audit_id, text_hash="", pattern__in=sorted(patterns), trapped=False)
    newly = sorted(rows.values_list("pattern", flat=True))  # the shape rows are this transaction's: no race
    rows.update(trapped=True)
    return newly


def _shape_texts_add(audit_id, rows: list[tuple[tuple[str, str], int]]) -> list[tuple[tuple[str, str], int]]:
    """Add the counts (upsert, in the given order); returns each row's count after the addition."""
    if connection.vendor == "postgresql":
        table = ShapeText._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {table} (audit_id, pattern, text_hash, pages, trapped)
                SELECT %s, t.pattern, t.text_hash, t.pages, false
                FROM unnest(%s::text[], %s::text[], %s::int[]) WITH ORDINALITY AS t(pattern, text_hash, pages, n)
                ORDER BY t.n
                ON CONFLICT (audit_id, pattern, text_hash) DO UPDATE SET pages = {table}.pages + EXCLUDED.pages
                RETURNING pattern, text_hash, pages
                """,
                [audit_id, [p for (p, _), _ in rows], [h for (_, h), _ in rows], [n for _, n in rows]],
            )
            return [((pattern, text_hash), pages) for pattern, text_hash, pages in cursor.fetchall()]
    added = []
    for (pattern, text_hash), n in rows:  # SQLite (make run): one writer at a time
        row, _ = ShapeText.objects.get_or_create(audit_id=audit_id, pattern=pattern, text_hash=text_hash)
        ShapeText.objects.filter(id=row.id).update(pages=F("pages") + n)
        added.append(((pattern, text_hash), row.pages + n))
    return added


def skipped_record(audit_id, skipped: list[tuple[NewURL, str]]) -> InsertOutcome:
    """Store each skipped URL once (a URL linked from many pages counts once); note which (rule, shape) had
    none before, for the audit's event. Sorted, like frontier inserts, so two chunks lock in one order."""
    if not skipped:
        return InsertOutcome()
    skipped.sort(key=lambda s: s[0].url)
    pairs = {(rule, u.pattern[:250]): u.url for u, rule in reversed(skipped)}  # first example per pair
    _lock_skip_pairs(audit_id, sorted(pairs))
    seen_pairs = set()
    for rule in {r for r, _ in pairs}:
        patterns = [p for r, p in pairs if r == rule]
        for part in batched(patterns):
            seen_pairs.update(
                SkippedURL.objects.filter(audit_id=audit_id, rule=rule, pattern__in=part)
                .values_list("rule", "pattern")
                .distinct()
            )
    before = SkippedURL.objects.filter(audit_id=audit_id).count() if connection.vendor != "postgresql" else None
    rows = [SkippedURL(audit_id=audit_id, url=u.url, rule=rule, pattern=u.pattern[:250]) for u, rule in skipped]
    if before is None:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {SkippedURL._meta.db_table} (audit_id, url, rule, pattern)
                SELECT %s, t.url, t.rule, t.pattern FROM unnest(%s::text[], %s::text[], %s::text[])
                     AS t(url, rule, pattern)
                ON CONFLICT (audit_id, url) DO NOTHING
                """,
                [audit_id, [r.url for r in rows], [r.rule for r in rows], [r.pattern for r in rows]],
            )
            added = cursor.rowcount
    else:
        SkippedURL.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
        added = SkippedURL.objects.filter(audit_id=audit_id).count() - before
    first = tuple(
        SkipFirst(rule, pattern, url)
        for (rule, pattern), url in sorted(pairs.items())
        if (rule, pattern) not in seen_pairs
    )
    return InsertOutcome(added, first)


def _lock_skip_pairs(audit_id, pairs: list[tuple[str, str]]) -> None:
    """Serialise the batches that skip URLs under the same (rule, shape) until they commit: a transaction-scoped
    advisory lock per pair, taken in sorted order, so the second batch looks for earlier skips only after the
    first committed its own and the `urls_skipped` event of a pair is written once, not once per batch that raced
    to it. Only batches that skip something take one; each is taken after the batch's frontier inserts, so it
    never waits while holding what another batch waits for."""
    if connection.vendor != "postgresql" or not pairs:
        return
    keys = [
        int.from_bytes(
            hashlib.blake2b(f"{audit_id}|{rule}|{pattern}".encode(), digest_size=8).digest(), "big", signed=True
        )
        for rule, pattern in pairs
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(k, n) ORDER BY n", [keys]
        )
