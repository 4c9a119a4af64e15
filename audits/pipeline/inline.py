"""The whole pipeline in this process, with the same stage functions the tasks call: the CLI's runner on
the embedded default (no worker needed)."""

import time

from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.finalize import audit_finalize, audit_lighthouse
from audits.pipeline.lifecycle import audit_fail, classify_failure
from audits.pipeline.rounds import round_advance, round_plan
from audits.pipeline.statistics import crawl_statistics_refresh_if_stale

INLINE_WAIT_MAX_S = 5  # an in-process runner re-plans sooner than a worker would: nothing else is queued


def pipeline_crawl_inline(audit_id) -> bool:
    """Discovery and every crawl round in this process, stopping before Lighthouse and finalize (tests read
    the crawl-time state there). False when discovery ended the audit."""
    audit_id = str(audit_id)
    if not audit_discover(audit_id=audit_id):
        return False
    round_no = 0
    while round_advance(audit_id=audit_id, from_round=round_no):
        round_no += 1
        plan = round_plan(audit_id=audit_id, round_no=round_no)
        if plan is None:
            break
        if not plan.chunks:
            time.sleep(min(plan.wait_s, INLINE_WAIT_MAX_S))
        crawl_statistics_refresh_if_stale()
        for key, quota in plan.chunks:
            crawl_chunk_run(audit_id=audit_id, lease_key=key, quota=quota)
    return True


def pipeline_run_inline(audit_id) -> None:
    """Run the whole pipeline in this process with the same services the tasks call."""
    audit_id = str(audit_id)
    try:
        if pipeline_crawl_inline(audit_id) and audit_lighthouse(audit_id=audit_id):
            audit_finalize(audit_id=audit_id)
    except BaseException as exc:
        audit_fail(audit_id=audit_id, code=classify_failure(exc), detail=f"{type(exc).__name__}: {exc}")
        raise
