"""Writes to the crawl state: lease URLs to a chunk, give back what it did not do, record what it did.

Claiming follows the lease invariants in docs/ARCHITECTURE.md: a short transaction picks rows with
SELECT ... FOR UPDATE SKIP LOCKED, marks them leased under the chunk's key and commits before any I/O.
The same key gets the same URLs back; an expired lease is claimable by anyone.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from scratchpad.limits import (
    LINKS_STORED_PER_PAGE,
    MAX_CAREFUL_STARTS_PER_URL,
    MAX_HANDOUTS_PER_URL,
    NEW_URLS_PER_BATCH,
    SQL_IN_BATCH,
)
from scratchpad.models import Frontier, LinkEdge

State = Frontier.State


@dataclass(frozen=True)
class ClaimedURL:
    id: int
    url: str
    depth: int | None
    in_sitemap: bool
    redirect_hops: int
    handouts: int
    starts: int = 0

    @property
    def exhausted(self) -> bool:
        """Handed out too often without being finished (its chunk kept dying): do not fetch again."""
        return self.handouts > MAX_HANDOUTS_PER_URL

    @property
    def suspect(self) -> bool:
        """Handed out before and never finished: the chunk that held it may have died because of it."""
        return self.handouts > 1


@dataclass(frozen=True)
class NewURL:
    url: str
    depth: int | None
    source: str
    in_sitemap: bool = False
    redirect_hops: int = 0


@dataclass(frozen=True)
class Edge:
    source_page_id: object
    target_url: str
    anchor_text: str
    nofollow: bool
    internal: bool


def _claimable(audit_id, now):
    return Frontier.objects.filter(audit_id=audit_id).filter(
        Q(state=State.PENDING) | Q(state=State.LEASED, leased_until__lt=now)
    )


def _claim_order():
    # Link-discovered before sitemap-only (depth NULL), shallow first, then discovery order.
    return (F("depth").asc(nulls_last=True), "id")


def frontier_claim(*, audit_id, lease_key: str, limit: int, lease_s: int) -> list[ClaimedURL]:
    """Lease up to `limit` URLs to `lease_key`; a retry with the same key gets its unfinished URLs back."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            Frontier.objects.select_for_update()
            .filter(audit_id=audit_id, state=State.LEASED, lease_key=lease_key)
            .order_by(*_claim_order())
            .values_list("id", flat=True)
        )
        if not rows and limit > 0:
            # Sitemap-only URLs wait until no link-discovered URL is left: the link crawl may still find
            # them (giving them a depth), and a small page budget goes to what the site links first.
            claimable = _claimable(audit_id, now).select_for_update(skip_locked=True).order_by(*_claim_order())
            rows = list(claimable.filter(depth__isnull=False).values_list("id", flat=True)[:limit])
            linked_left = Frontier.objects.filter(audit_id=audit_id, depth__isnull=False).exclude(state=State.DONE)
            if not rows and not linked_left.exists():
                rows = list(claimable.values_list("id", flat=True)[:limit])
        if not rows:
            return []
        Frontier.objects.filter(id__in=rows).update(
            state=State.LEASED,
            lease_key=lease_key,
            leased_until=now + timedelta(seconds=lease_s),
            attempts=F("attempts") + 1,
        )
        claimed = Frontier.objects.filter(id__in=rows).order_by(*_claim_order())
        return [
            ClaimedURL(r.id, r.url, r.depth, r.in_sitemap, r.redirect_hops, r.attempts, r.starts)
            for r in claimed.only("id", "url", "depth", "in_sitemap", "redirect_hops", "attempts", "starts")
        ]


def frontier_mark_started(*, audit_id, lease_key: str, frontier_id: int) -> int:
    """Count a careful (one-at-a-time) fetch start, committed before the fetch; returns the new count."""
    Frontier.objects.filter(id=frontier_id, audit_id=audit_id, lease_key=lease_key).update(starts=F("starts") + 1)
    return Frontier.objects.filter(id=frontier_id).values_list("starts", flat=True).first() or 0


def frontier_start_allowed(starts: int) -> bool:
    return starts <= MAX_CAREFUL_STARTS_PER_URL


def frontier_release(*, audit_id, lease_key: str, ids: list[int]) -> int:
    """Give unattempted URLs back: pending again, and the hand-out does not count against them."""
    released = 0
    for part in _batched(ids):
        released += Frontier.objects.filter(
            audit_id=audit_id, id__in=part, state=State.LEASED, lease_key=lease_key
        ).update(
            state=State.PENDING,
            lease_key="",
            leased_until=None,
            attempts=F("attempts") - 1,
        )
    return released


def frontier_release_all(*, audit_id) -> int:
    """Give back every lease of the audit (cancel): nobody is working on them any more."""
    return Frontier.objects.filter(audit_id=audit_id, state=State.LEASED).update(
        state=State.PENDING, lease_key="", leased_until=None
    )


def frontier_seed(*, audit_id, urls: list[NewURL]) -> None:
    """Insert URLs that are not known yet; mark known ones as in the sitemap where they are. Idempotent."""
    with transaction.atomic():
        _insert_new(audit_id, urls)


def frontier_record_batch(
    *, audit_id, lease_key: str, done_ids: list[int], discovered: list[NewURL], edges: list[Edge]
) -> int:
    """Finish a persisted batch: its URLs done, their links stored, new URLs queued.

    Returns how many URLs moved from leased to done under this key, so a replayed batch counts zero.
    Call inside the transaction that upserts the batch's pages.
    """
    finished = 0
    for part in _batched(done_ids):
        finished += Frontier.objects.filter(
            audit_id=audit_id, id__in=part, state=State.LEASED, lease_key=lease_key
        ).update(state=State.DONE, leased_until=None)
    _replace_edges(audit_id, edges)
    _insert_new(audit_id, discovered[:NEW_URLS_PER_BATCH])
    return finished


def frontier_finish_exhausted(*, audit_id, lease_key: str, ids: list[int]) -> int:
    return frontier_record_batch(audit_id=audit_id, lease_key=lease_key, done_ids=ids, discovered=[], edges=[])


def frontier_purge(*, audit_id) -> int:
    """Drop the audit's frontier once the crawl is over; link edges stay (they are the link graph)."""
    deleted, _ = Frontier.objects.filter(audit_id=audit_id).delete()
    return deleted


def _replace_edges(audit_id, edges: list[Edge]) -> None:
    # Delete-then-insert per source page keeps a replayed batch from duplicating edges.
    by_source: dict = {}
    for edge in edges:
        kept = by_source.setdefault(edge.source_page_id, [])
        if len(kept) < LINKS_STORED_PER_PAGE:
            kept.append(edge)
    if not by_source:
        return
    LinkEdge.objects.filter(audit_id=audit_id, source_page_id__in=list(by_source)).delete()
    LinkEdge.objects.bulk_create(
        [
            LinkEdge(
                audit_id=audit_id,
                source_page_id=e.source_page_id,
                target_url=e.target_url,
                anchor_text=e.anchor_text[:200],
                nofollow=e.nofollow,
                internal=e.internal,
            )
            for kept in by_source.values()
            for e in kept
        ],
        batch_size=1000,
    )


def _insert_new(audit_id, urls: list[NewURL]) -> None:
    if not urls:
        return
    unique: dict[str, NewURL] = {}
    for new in urls:
        seen = unique.get(new.url)
        if seen is None or _shallower(new, seen):
            unique[new.url] = new
    Frontier.objects.bulk_create(
        [
            Frontier(
                audit_id=audit_id,
                url=u.url,
                depth=u.depth,
                source=u.source,
                in_sitemap=u.in_sitemap,
                redirect_hops=u.redirect_hops,
            )
            for u in unique.values()
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    # Known rows learn what the new sighting adds: a link depth for a sitemap-only URL, the sitemap flag.
    by_depth: dict[int, list[str]] = {}
    for u in unique.values():
        if u.depth is not None:
            by_depth.setdefault(u.depth, []).append(u.url)
    for depth, depth_urls in by_depth.items():
        for part in _batched(depth_urls):
            Frontier.objects.filter(audit_id=audit_id, depth__isnull=True, url__in=part).update(depth=depth)
    sitemap_urls = [u.url for u in unique.values() if u.in_sitemap]
    for part in _batched(sitemap_urls):
        Frontier.objects.filter(audit_id=audit_id, in_sitemap=False, url__in=part).update(in_sitemap=True)


def _shallower(a: NewURL, b: NewURL) -> bool:
    if a.depth is None:
        return False
    return b.depth is None or a.depth < b.depth


def _batched(items: list, size: int = SQL_IN_BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]
