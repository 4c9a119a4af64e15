"""Stage 3, crawl rounds: each round is a chord of K chunks whose body plans the next round. `round_plan`
splits the remaining page budget into at most K chunks (quotas never overshoot max pages) that keep claiming
while the frontier has work, so a round is not a depth layer;
`round_advance` moves the round counter once, so a duplicated round-done message finds it moved and stops.

Nobody waits on a lost chord: the round's chunks are rows (scratchpad.CrawlChunk), the last chunk to finish
closes the round itself (`round_close_if_done`), and `round_heal` (the heal sweep, the reconciler) re-sends
a chunk whose run died or whose message was lost, and closes a round whose callback never ran."""

import logging
import math
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from audits import dispatch
from audits.limits import CHUNK_TARGET_PAGES, LEASE_WAIT_MAX_S
from audits.models import Audit
from audits.pipeline.politeness import politeness_stopped
from audits.pipeline.statistics import crawl_statistics_refresh_if_stale
from scratchpad.models import CrawlChunk
from scratchpad.selectors import chunks_of_round, frontier_stats
from scratchpad.services import chunk_mark_resent, chunk_register

logger = logging.getLogger(__name__)

Status = Audit.Status


@dataclass(frozen=True)
class RoundPlan:
    round_no: int
    chunks: list[tuple[str, int]]  # (lease key, quota)
    wait_s: float = 0.0  # > 0: nothing claimable now but live leases may come back; plan again later
    pages_done: int = 0  # how far the audit has got: its chunks' priority (dispatch.chunk_urgency)


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
    """Split the remaining page budget into at most K chunks while any URL is claimable; None when the crawl
    is over."""
    audit = Audit.objects.filter(id=audit_id, status=Status.RUNNING).first()
    if audit is None or politeness_stopped(audit_id):
        return None  # finished elsewhere, or the site kept rate-limiting: finalize with what we have
    stats = frontier_stats(audit_id=audit_id)
    # The URLs known so far (queued or crawled, beyond the page budget too; the bars cap it by the budget).
    Audit.objects.filter(id=audit_id).update(pages_total=stats.total)
    if not stats.pending_linked and stats.leased_live:
        # Sitemap-only URLs wait for the link crawl (see frontier_claim), and a dead chunk's live leases
        # come back when they expire: plan again later instead of spinning on empty rounds.
        return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
    budget = max(audit.max_pages - stats.done - stats.leased_live, 0)
    # Chunks take link-discovered URLs first (see frontier_claim): plan while any URL is claimable.
    if min(stats.pending_linked or stats.pending, budget) <= 0:
        if stats.leased_live and stats.done < audit.max_pages:
            return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
        return None
    # Sized by the page budget, not by what is claimable now: chunks keep claiming in slices what the round's
    # pages discover (no barrier between depth layers; finalize computes exact depths), and the quotas add up
    # to at most the budget, so the limit is never overshot.
    max_chunks = max(1, settings.CRAWL_CHUNKS_PER_ROUND)
    count = min(max_chunks, math.ceil(budget / CHUNK_TARGET_PAGES))
    planned = min(budget, count * CHUNK_TARGET_PAGES)
    quotas = [planned // count + (1 if i < planned % count else 0) for i in range(count)]
    return RoundPlan(
        round_no,
        [(chunk_task_id(audit_id, round_no, i), q) for i, q in enumerate(quotas) if q > 0],
        pages_done=stats.done,
    )


def round_dispatch(*, audit_id: str, round_no: int) -> None:
    """Plan round `round_no` and send it (after commit): its chord of chunks, a later re-plan when only
    live leases are left, or when the crawl is over the Lighthouse step (finalize at once when the audit
    runs no Lighthouse: a hop through a step with nothing to do costs a message and a worker's turn)."""
    plan = round_plan(audit_id=audit_id, round_no=round_no)
    if plan is None:
        lighthouse = Audit.objects.filter(id=audit_id).values_list("config__lighthouse", flat=True).first()
        dispatch.task_send(dispatch.LIGHTHOUSE if lighthouse else dispatch.FINALIZE, audit_id)
    elif not plan.chunks:
        dispatch.task_send(dispatch.CRAWL_ROUND_DONE, [], audit_id, round_no, countdown=plan.wait_s)
    else:
        chunk_register(audit_id=audit_id, round_no=round_no, chunks=plan.chunks)
        dispatch.round_send(audit_id=audit_id, round_no=round_no, chunks=plan.chunks, pages_done=plan.pages_done)
        # After the send: the round's chunks start on the other slots while this one samples what they query.
        crawl_statistics_refresh_if_stale()


def round_close_if_done(*, audit_id, round_no: int) -> bool:
    """Move past round `round_no` when every one of its chunks is done (the caller then dispatches the next
    round). The chord's callback does the same; the compare-and-set on the round lets only one of them on."""
    chunks = chunks_of_round(audit_id=audit_id, round_no=round_no)
    if not chunks or any(c.state != CrawlChunk.State.DONE for c in chunks):
        return False
    return round_advance(audit_id=audit_id, from_round=round_no)


@dataclass(frozen=True)
class Heal:
    action: str  # none | advanced | resent
    detail: str = ""
    data: dict = field(default_factory=dict)  # for the event log's sentence: round, chunks, lease_s, reason


def round_heal(*, audit: Audit) -> Heal:
    """Unstick the current crawl round of a running audit without waiting for silence: close it when its
    chunks all finished but its callback never ran; re-send (same lease key) each chunk whose run stopped
    renewing its lease, or whose message has waited a whole lease without being taken (lost, or in a long
    queue: a duplicate is skipped by the chunk itself). A round without chunks (a wait before re-planning)
    whose re-plan message was lost is planned again once it is a lease overdue and no lease is live."""
    if audit.status != Audit.Status.RUNNING or audit.current_phase != Audit.Phase.CRAWLING or audit.crawl_round < 1:
        return Heal("none")
    audit_id, round_no = str(audit.id), audit.crawl_round
    lease = timedelta(seconds=settings.CRAWL_LEASE_DURATION_S)
    now = timezone.now()
    chunks = chunks_of_round(audit_id=audit_id, round_no=round_no)
    if not chunks:
        quiet_since = audit.last_progress_at or audit.started_at or audit.created_at
        overdue = now - quiet_since > timedelta(seconds=LEASE_WAIT_MAX_S) + lease
        if (
            overdue
            and not frontier_stats(audit_id=audit_id).leased_live
            and round_advance(audit_id=audit_id, from_round=round_no)
        ):
            round_dispatch(audit_id=audit_id, round_no=round_no + 1)
            return Heal(
                "advanced",
                f"round {round_no} had no chunk and its re-plan never came",
                {"round": round_no, "reason": "replan_lost"},
            )
        return Heal("none")
    if all(c.state == CrawlChunk.State.DONE for c in chunks):
        if round_advance(audit_id=audit_id, from_round=round_no):
            round_dispatch(audit_id=audit_id, round_no=round_no + 1)
            return Heal(
                "advanced",
                f"round {round_no}: every chunk done, its callback never ran",
                {"round": round_no, "reason": "callback_lost"},
            )
        return Heal("none")
    resent = []
    for chunk in chunks:
        # Not sent (or re-sent) within the last lease either, so a re-send that waits in a queue is not repeated.
        quiet = now - chunk.sent_at > lease
        dead = chunk.state == CrawlChunk.State.RUNNING and (chunk.renewed_at is None or now - chunk.renewed_at > lease)
        lost = chunk.state == CrawlChunk.State.QUEUED
        if quiet and (dead or lost) and chunk_mark_resent(chunk=chunk):
            urgency = dispatch.chunk_urgency(round_no=round_no, pages_done=audit.pages_crawled)
            dispatch.task_send(
                dispatch.CRAWL_CHUNK, audit_id, chunk.lease_key, chunk.quota, task_id=chunk.lease_key, urgency=urgency
            )
            resent.append(chunk.lease_key)
    if resent:
        logger.info("crawl chunks re-sent", extra={"audit_id": audit_id, "lease_keys": resent})
        return Heal(
            "resent",
            f"round {round_no}: re-sent {len(resent)} chunk(s) whose run stopped renewing",
            {"round": round_no, "chunks": len(resent), "lease_s": settings.CRAWL_LEASE_DURATION_S},
        )
    return Heal("none")
