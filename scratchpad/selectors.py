"""Reads of the crawl state."""

from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from scratchpad.models import Frontier

State = Frontier.State


@dataclass(frozen=True)
class FrontierStats:
    total: int
    pending: int  # claimable now: pending, or leased with an expired lease
    leased_live: int
    done: int


def frontier_stats(*, audit_id) -> FrontierStats:
    now = timezone.now()
    row = Frontier.objects.filter(audit_id=audit_id).aggregate(
        total=Count("id"),
        pending=Count("id", filter=Q(state=State.PENDING) | Q(state=State.LEASED, leased_until__lt=now)),
        leased_live=Count("id", filter=Q(state=State.LEASED, leased_until__gte=now)),
        done=Count("id", filter=Q(state=State.DONE)),
    )
    return FrontierStats(**row)
