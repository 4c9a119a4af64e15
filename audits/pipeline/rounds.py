"""Stage 3, crawl rounds: each round is a chord of K chunks whose body plans the next round (the order:
pipeline.flow). `round_plan` splits the remaining page budget into at most K chunks (quotas never overshoot max
pages) that keep claiming while the frontier has work, so a round is not a depth layer;
`round_advance` moves the round counter once, so a duplicated round-done message finds it moved and stops.

Nobody waits on a lost chord: the round's chunks are rows (scratchpad.CrawlChunk), the last chunk to finish
closes the round itself (`round_close_if_done`), and `reconcile.round_heal` (the heal sweep, the reconciler)
re-sends a chunk whose run died or whose message was lost, and closes a round whose callback never ran."""

import math
import re
from dataclasses import dataclass

from django.conf import settings

from audits.limits import CHUNK_TARGET_PAGES, LEASE_WAIT_MAX_S
from audits.models import Audit
from audits.pipeline.politeness import politeness_stopped
from scratchpad.models import CrawlChunk
from scratchpad.selectors import chunks_of_round, frontier_work

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


_ROUND_IN_KEY = re.compile(r":r(\d+):c\d+$")  # the shape chunk_task_id writes


def chunk_round_no(lease_key: str) -> int:
    """The crawl round a chunk's lease key names (0 for a key of another shape). Only for a chunk message sent
    by an older version, which did not pass its round: the round travels as an argument now."""
    match = _ROUND_IN_KEY.search(lease_key)
    return int(match.group(1)) if match else 0


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
    work = frontier_work(audit_id=audit_id)
    if not work.claimable_linked and work.leased_live:
        # Sitemap-only URLs wait for the link crawl (see frontier_claim), and a dead chunk's live leases
        # come back when they expire: plan again later instead of spinning on empty rounds.
        return RoundPlan(round_no, [], wait_s=LEASE_WAIT_MAX_S)
    # The frontier's done URLs are the audit's pages: a batch marks them and counts them in pages_crawled in one
    # transaction. Read after the leases, so a batch committing in between is counted twice (a smaller budget),
    # never missed.
    done = Audit.objects.filter(id=audit_id).values_list("pages_crawled", flat=True).first() or 0
    budget = max(audit.max_pages - done - work.leased_live, 0)
    # Chunks take link-discovered URLs first (see frontier_claim): plan while any URL is claimable.
    if not work.claimable or budget <= 0:
        if work.leased_live and done < audit.max_pages:
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
        pages_done=done,
    )


def round_close_if_done(*, audit_id, round_no: int) -> bool:
    """Move past round `round_no` when every one of its chunks is done (the caller then dispatches the next
    round). The chord's callback does the same; the compare-and-set on the round lets only one of them on."""
    chunks = chunks_of_round(audit_id=audit_id, round_no=round_no)
    if not chunks or any(c.state != CrawlChunk.State.DONE for c in chunks):
        return False
    return round_advance(audit_id=audit_id, from_round=round_no)
