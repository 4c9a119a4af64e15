"""Stage 3, crawl rounds: each round is a chord of K chunks whose body plans the next round. `round_plan`
splits what is claimable within the page budget into at most K chunks (quotas never overshoot max pages);
`round_advance` moves the round counter once, so a duplicated round-done message finds it moved and stops."""

import math
from dataclasses import dataclass

from django.conf import settings

from audits import dispatch
from audits.limits import CHUNK_TARGET_PAGES, LEASE_WAIT_MAX_S, PERSIST_BATCH_PAGES
from audits.models import Audit
from audits.pipeline.politeness import politeness_stopped
from scratchpad.selectors import frontier_stats

Status = Audit.Status


@dataclass(frozen=True)
class RoundPlan:
    round_no: int
    chunks: list[tuple[str, int]]  # (lease key, quota)
    wait_s: float = 0.0  # > 0: nothing claimable now but live leases may come back; plan again later


def chunk_task_id(audit_id, round_no: int, index: int) -> str:
    """A chunk's task id is its lease key: a cancel can revoke a round without having stored ids."""
    return f"{audit_id}:r{round_no}:c{index}"


def round_advance(*, audit_id, from_round: int) -> bool:
    """Move the audit's round counter once: a duplicated round-done message finds it moved and stops."""
    return bool(
        Audit.objects.filter(id=audit_id, status=Status.RUNNING, crawl_round=from_round).update(
            crawl_round=from_round + 1
        )
    )


def round_plan(*, audit_id, round_no: int) -> RoundPlan | None:
    """Split what is claimable within the page budget into at most K chunks; None when the crawl is over."""
    audit = Audit.objects.filter(id=audit_id, status=Status.RUNNING).first()
    if audit is None or politeness_stopped(audit_id):
        return None  # finished elsewhere, or the site kept rate-limiting: finalize with what we have
    stats = frontier_stats(audit_id=audit_id)
    Audit.objects.filter(id=audit_id).update(pages_total=min(stats.total, audit.max_pages))
    if not stats.pending_linked and stats.leased_live:
        # Sitemap-only URLs wait for the link crawl (see frontier_claim), and a dead chunk's live leases
        # come back when they expire: plan again later instead of spinning on empty rounds.
        return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
    budget = audit.max_pages - stats.done - stats.leased_live
    # Chunks take link-discovered URLs first (see frontier_claim): plan for those while there are any.
    claimable = min(stats.pending_linked or stats.pending, max(budget, 0))
    if claimable <= 0:
        if stats.leased_live and stats.done < audit.max_pages:
            return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
        return None
    max_chunks = max(1, settings.CRAWL_CHUNKS_PER_ROUND)
    count = min(max_chunks, math.ceil(claimable / PERSIST_BATCH_PAGES))
    claimable = min(claimable, count * CHUNK_TARGET_PAGES)
    quotas = [claimable // count + (1 if i < claimable % count else 0) for i in range(count)]
    return RoundPlan(round_no, [(chunk_task_id(audit_id, round_no, i), q) for i, q in enumerate(quotas) if q > 0])


def round_dispatch(*, audit_id: str, round_no: int) -> None:
    """Plan round `round_no` and send it (after commit): its chord of chunks, a later re-plan when only
    live leases are left, or the Lighthouse step when the crawl is over."""
    plan = round_plan(audit_id=audit_id, round_no=round_no)
    if plan is None:
        dispatch.task_send(dispatch.LIGHTHOUSE, audit_id)
    elif not plan.chunks:
        dispatch.task_send(dispatch.CRAWL_ROUND_DONE, [], audit_id, round_no, countdown=plan.wait_s)
    else:
        dispatch.round_send(audit_id=audit_id, round_no=round_no, chunks=plan.chunks)
