"""The pipeline's order, written once: after discovery, after a chunk, after a round and after Lighthouse, what
comes next, as data (a Step). The Celery tasks send a step (`step_send`: a chord of chunks or one message, through
audits.dispatch); the in-process runner (pipeline.inline) runs it.

Each `next_after_*` moves the audit's round counter at most once (a compare-and-set, rounds.round_advance), so
of two messages that end the same step (a chord's callback and the round's last chunk, a duplicate) only one
goes on; the other is told STOP.
"""

from dataclasses import dataclass
from enum import StrEnum

from audits import dispatch
from audits.limits import finalize_time_limit_s
from audits.models import Audit
from audits.pipeline.rounds import RoundPlan, round_advance, round_close_if_done, round_plan
from audits.pipeline.statistics import crawl_statistics_refresh_if_stale
from scratchpad.services import chunk_register


class StepKind(StrEnum):
    CRAWL_ROUND = "crawl_round"  # crawl round `round_no`: its chunks (lease key, quota)
    REPLAN = "replan"  # nothing claimable now but live leases may come back: end round `round_no` after `wait_s`
    LIGHTHOUSE = "lighthouse"  # the crawl is over and the audit asked for Lighthouse
    FINALIZE = "finalize"  # the crawl (and Lighthouse) is over
    STOP = "stop"  # nothing for this caller: the audit ended, or another message already went on


@dataclass(frozen=True)
class Step:
    kind: StepKind
    round_no: int = 0
    chunks: tuple[tuple[str, int], ...] = ()
    wait_s: float = 0.0
    pages_done: int = 0  # how far the audit has got: its chunks' priority (dispatch.chunk_urgency)


STOP = Step(StepKind.STOP)
FINALIZE = Step(StepKind.FINALIZE)
LIGHTHOUSE = Step(StepKind.LIGHTHOUSE)


def step_after_plan(plan: RoundPlan | None, *, lighthouse: bool) -> Step:
    """What a round's plan means. No plan: the crawl is over, so Lighthouse when the audit asked for it, else
    finalize at once (a hop through a step with nothing to do costs a message and a worker's turn)."""
    if plan is None:
        return LIGHTHOUSE if lighthouse else FINALIZE
    if not plan.chunks:
        return Step(StepKind.REPLAN, round_no=plan.round_no, wait_s=plan.wait_s)
    return Step(StepKind.CRAWL_ROUND, round_no=plan.round_no, chunks=tuple(plan.chunks), pages_done=plan.pages_done)


def round_step(*, audit_id, round_no: int) -> Step:
    """Plan round `round_no` (rounds.round_plan): its chunks, a re-plan later, or the step after the crawl."""
    plan = round_plan(audit_id=audit_id, round_no=round_no)
    lighthouse = plan is None and bool(
        Audit.objects.filter(id=audit_id).values_list("config__lighthouse", flat=True).first()
    )
    return step_after_plan(plan, lighthouse=lighthouse)


def next_after_discovery(*, audit_id, discovered: bool) -> Step:
    """Discovery done (`discovered`: it seeded the frontier and the audit runs on): crawl round 1."""
    if discovered and round_advance(audit_id=audit_id, from_round=0):
        return round_step(audit_id=audit_id, round_no=1)
    return STOP


def next_after_chunk(*, audit_id, round_no: int, outcome: dict) -> Step:
    """A chunk of round `round_no` ran: the last one of its round to be done closes the round and plans the
    next, so a lost chord callback (or a re-sent chunk, which no chord waits for) costs nothing."""
    if outcome.get("done") and round_close_if_done(audit_id=audit_id, round_no=round_no):
        return round_step(audit_id=audit_id, round_no=round_no + 1)
    return STOP


def next_after_round(*, audit_id, round_no: int) -> Step:
    """Round `round_no` ended (every chunk ran, or its re-plan wait is over): the next round."""
    if round_advance(audit_id=audit_id, from_round=round_no):
        return round_step(audit_id=audit_id, round_no=round_no + 1)
    return STOP


def next_after_lighthouse(*, ran: bool) -> Step:
    """The Lighthouse step ran (`ran`: False when the audit had ended): finalize."""
    return FINALIZE if ran else STOP


def step_send(*, audit_id: str, step: Step) -> None:
    """Send a step to the workers (after commit): a round as a chord of chunks (registered first), a re-plan as a
    round's end sent `wait_s` later, Lighthouse or finalize as one message. STOP sends nothing."""
    if step.kind == StepKind.CRAWL_ROUND:
        chunks = list(step.chunks)
        chunk_register(audit_id=audit_id, round_no=step.round_no, chunks=chunks)
        dispatch.round_send(audit_id=audit_id, round_no=step.round_no, chunks=chunks, pages_done=step.pages_done)
        # After the send: the round's chunks start on the other slots while this one samples what they query.
        crawl_statistics_refresh_if_stale()
    elif step.kind == StepKind.REPLAN:
        dispatch.task_send(dispatch.CRAWL_ROUND_DONE, [], audit_id, step.round_no, countdown=step.wait_s)
    elif step.kind == StepKind.LIGHTHOUSE:
        dispatch.task_send(dispatch.LIGHTHOUSE, audit_id)
    elif step.kind == StepKind.FINALIZE:
        # With its own hard time limit, which grows with the audit's pages (the task's declared one fits a small audit).
        pages = Audit.objects.filter(id=audit_id).values_list("pages_crawled", flat=True).first() or 0
        dispatch.task_send(dispatch.FINALIZE, audit_id, time_limit=finalize_time_limit_s(pages))
