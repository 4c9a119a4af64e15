"""The whole pipeline in this process, with the same stage functions the tasks call and the same order
(pipeline.flow): the CLI's runner on the embedded default (no worker needed). Where the tasks send a step, this
runs it: a round's chunks one after the other, a re-plan after a short sleep."""

import time

from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.finalize import audit_finalize, audit_lighthouse
from audits.pipeline.flow import Step, StepKind, next_after_discovery, next_after_lighthouse, next_after_round
from audits.pipeline.lifecycle import audit_fail, classify_failure
from audits.pipeline.statistics import crawl_statistics_refresh_if_stale

INLINE_WAIT_MAX_S = 5  # an in-process runner re-plans sooner than a worker would: nothing else is queued
CRAWL_STEPS = frozenset({StepKind.CRAWL_ROUND, StepKind.REPLAN})


def _crawl_inline(audit_id: str) -> Step | None:
    """Discovery and every crawl round; the step after the crawl (Lighthouse, finalize or stop), None when
    discovery ended the audit."""
    if not audit_discover(audit_id=audit_id):
        return None
    step = next_after_discovery(audit_id=audit_id, discovered=True)
    while step.kind in CRAWL_STEPS:
        if step.kind == StepKind.REPLAN:
            time.sleep(min(step.wait_s, INLINE_WAIT_MAX_S))
        crawl_statistics_refresh_if_stale()
        for key, quota in step.chunks:
            crawl_chunk_run(audit_id=audit_id, lease_key=key, quota=quota, round_no=step.round_no)
        step = next_after_round(audit_id=audit_id, round_no=step.round_no)
    return step


def pipeline_crawl_inline(audit_id) -> bool:
    """Discovery and every crawl round in this process, stopping before Lighthouse and finalize (tests read
    the crawl-time state there). False when discovery ended the audit."""
    return _crawl_inline(str(audit_id)) is not None


def pipeline_run_inline(audit_id) -> None:
    """Run the whole pipeline in this process with the same services the tasks call."""
    audit_id = str(audit_id)
    try:
        step = _crawl_inline(audit_id)
        if step is not None and step.kind == StepKind.LIGHTHOUSE:
            step = next_after_lighthouse(ran=audit_lighthouse(audit_id=audit_id))
        if step is not None and step.kind == StepKind.FINALIZE:
            audit_finalize(audit_id=audit_id)
    except BaseException as exc:
        audit_fail(audit_id=audit_id, code=classify_failure(exc), detail=f"{type(exc).__name__}: {exc}")
        raise
