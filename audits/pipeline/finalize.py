"""Stages 5 and 6: the optional Lighthouse step (it never fails the audit), then finalize: exact click depths
(pipeline.depth), site checks over the whole crawl, the changes against the baseline (pipeline.changes), health
score, completion (credits settled, event, signal, the frontier dropped)."""

import logging
import time
from contextlib import contextmanager

from audits.checks.score import SCORE_FORMULA_VERSION, pages_without_errors_count, score_breakdown_from
from audits.checks.site import run_site_checks
from audits.comparison import comparisons_count
from audits.fencing import FinalizeRun, FinalizeSuperseded, finalize_hold
from audits.limits import finalize_time_limit_s
from audits.models import Audit, Page, PageCounts
from audits.pipeline.bots import bots_judge
from audits.pipeline.changes import changes_store
from audits.pipeline.depth import page_depths_store
from audits.pipeline.external import external_links_judge
from audits.pipeline.images import images_judge
from audits.pipeline.lifecycle import audit_complete, audit_set_phase, finalize_claim
from audits.pipeline.lighthouse import lighthouse_run_for_audit
from audits.pipeline.page_totals import page_counts_store
from audits.pipeline.resources import resources_judge
from audits.pipeline.statistics import planner_statistics_refresh
from audits.stats import audit_stats_count
from config.memory import heap_trim

logger = logging.getLogger(__name__)
Status = Audit.Status
Phase = Audit.Phase


def audit_lighthouse(*, audit_id) -> bool:
    """The optional Lighthouse phase; it never fails the audit. False when the audit ended or left the phase."""
    audit = Audit.objects.filter(id=audit_id, status=Status.RUNNING).first()
    if audit is None:
        return False
    if not audit.config.get("lighthouse"):
        return True
    # From the crawl, or this phase itself (a message handed out again); never back from finalize.
    if not audit_set_phase(audit_id=audit_id, phase=Phase.LIGHTHOUSE, from_phases=(Phase.CRAWLING, Phase.LIGHTHOUSE)):
        return False
    # Fenced on the phase: a twin of this run (its message handed out again) that finished first moved the audit
    # on to finalize, and this one then writes nothing and sends no second finalize.
    return lighthouse_run_for_audit(audit=audit, phase=Phase.LIGHTHOUSE)


class StageClock:
    """Seconds spent in each named stage (a stage entered twice adds up); audits.events.FINALIZE_STAGES names them.
    Given the run of finalize, a stage is entered only while the run holds the audit (audits.fencing)."""

    def __init__(self, run: FinalizeRun | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.run = run

    @contextmanager
    def __call__(self, stage: str):
        finalize_hold(self.run)
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.monotonic() - started

    def rounded(self) -> dict[str, float]:
        """To the tenth of a second, as the event stores them."""
        return {stage: round(seconds, 1) for stage, seconds in self.seconds.items()}


def audit_finalize(*, audit_id, time_limit_s: int | None = None) -> bool:
    """Site checks, health score, completion and scratchpad clean-up. Idempotent, and fenced: a run of it that a
    later run took over writes nothing more (audits.fencing) and returns False, as it does when the audit ended.
    The completed event stores the seconds each stage took (`finalize_stages_s`) and the time limit the run had
    (`finalize_time_limit_s`): the task's, or in one process (None, nothing enforces one) what a worker's message
    would carry for the audit's pages. That is what an operator reads when a large audit's last phase is slow."""
    started = time.monotonic()  # the time limit counts from here: the external link pass keeps within it
    run = finalize_claim(audit_id=audit_id)
    if run is None:
        return False
    try:
        return _finalize(run, started=started, time_limit_s=time_limit_s)
    except FinalizeSuperseded:
        logger.info("finalize run %s of audit %s stopped: a later run took the audit over, or it ended",
                    run.generation, audit_id)  # fmt: skip
        return False


def _finalize(run: FinalizeRun, *, started: float, time_limit_s: int | None) -> bool:
    audit_id = run.audit_id
    audit = Audit.objects.get(id=audit_id)
    if time_limit_s is None:
        time_limit_s = finalize_time_limit_s(audit.pages_crawled)
    deadline = started + time_limit_s
    stage = StageClock(run)
    # Statistics gathered before this audit's rows existed make PostgreSQL expect ~1 link edge and pick a nested
    # loop that compares every edge with every page (a 2,000-page finalize went from 0.6 s to 72 s).
    with stage("statistics"):
        planner_statistics_refresh()
    # Exact depths before the site checks: the orphan check reads Page.depth, and chunks claim without a
    # barrier between depth layers, so the depth a page was crawled at is only an upper bound.
    with stage("depths"):
        page_depths_store(audit_id=audit_id, run=run)
    # Finalize is one task (trimmed after it, config.celery): between its passes glibc would keep what each freed
    # for the next (its numpy arrays under 32 MiB come from the heap). On the 300,000-page scale audit the site
    # checks left the worker 23 MiB over their start; trimmed, 3.
    heap_trim()
    with stage("site_checks"):
        run_site_checks(audit, run=run)
    heap_trim()
    with stage("images"):
        images_judge(audit, run=run)  # the image pass: asks the site, then its checks' issues
    with stage("bots"):
        bots_judge(audit, run=run)  # what each search and AI crawler may fetch and is served; llms.txt
    with stage("resources"):
        resources_judge(audit, run=run)  # the resource pass: scripts, stylesheets, fonts, icons asked once, then issues
    # Last of the passes that ask the network: its budget is cut to what finalize's time limit leaves after them.
    with stage("external_links"):
        external_links_judge(audit, finalize_deadline=deadline, run=run)  # asks other sites, then issues
    heap_trim()
    with stage("page_counts"):
        page_counts_store(audit_id=audit_id, run=run)  # inlinks and issues per page: the pages grid sorts by them
        # Statistics taken before this audit's counts existed say it has none: the grid's sorts on them would then
        # expect no row and sort the whole audit instead of reading their index (15 ms -> 170 ms a deep page).
        planner_statistics_refresh(PageCounts)
    with stage("changes"):
        # After the counts (inlinks are a compared field) and before the figures (they count the changes per field).
        changes_store(audit, run=run)  # what changed on each URL since the baseline (the project's previous audit)
    with stage("figures"):
        # The completed audit's pages and issues no longer change: its screens read these figures instead of
        # aggregating them on every request.
        stats = audit_stats_count(audit_id=audit_id)
        stats["comparisons"] = comparisons_count(audit=audit)  # against the default baseline: the Compare tab, "new"
        _pages, clean = pages_without_errors_count(Page.objects.filter(audit_id=audit_id))
        score = score_breakdown_from(
            audit=audit, rows=stats["issue_types"], pages=stats["pages"], pages_without_errors=clean
        )
        stats["score"] = score.as_stats()
    return audit_complete(  # drops the frontier
        audit_id=audit_id,
        run=run,
        event_data={"finalize_stages_s": stage.rounded(), "finalize_time_limit_s": time_limit_s},
        pages_crawled=stats["pages"],
        health_score=score.score,
        score_formula=SCORE_FORMULA_VERSION,
        stats=stats,
    )
