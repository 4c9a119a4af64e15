"""Reads of the crawl state."""

from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from scratchpad.models import CrawlChunk, Frontier

State = Frontier.State


@dataclass(frozen=True)
class FrontierStats:
    total: int
    pending: int  # claimable now: pending, or leased with an expired lease
    pending_linked: int  # of those, found by links (depth known): claimed before sitemap-only URLs
    leased_live: int
    done: int


def frontier_stats(*, audit_id) -> FrontierStats:
    now = timezone.now()
    claimable = Q(state=State.PENDING) | Q(state=State.LEASED, leased_until__lt=now)
    row = Frontier.objects.filter(audit_id=audit_id).aggregate(
        total=Count("id"),
        pending=Count("id", filter=claimable),
        pending_linked=Count("id", filter=claimable & Q(depth__isnull=False)),
        leased_live=Count("id", filter=Q(state=State.LEASED, leased_until__gte=now)),
        done=Count("id", filter=Q(state=State.DONE)),
    )
    return FrontierStats(**row)


def frontier_others_working(*, audit_id, lease_key: str) -> bool:
    """Whether another chunk holds live leases of the audit: it may still discover URLs for an idle chunk."""
    live = Frontier.objects.filter(audit_id=audit_id, state=State.LEASED, leased_until__gte=timezone.now())
    return live.exclude(lease_key=lease_key).exists()


def chunks_of_round(*, audit_id, round_no: int) -> list[CrawlChunk]:
    """The chunks registered for one crawl round of an audit."""
    return list(CrawlChunk.objects.filter(audit_id=audit_id, round_no=round_no).order_by("lease_key"))
