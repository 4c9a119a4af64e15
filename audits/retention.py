"""Retention (issue 28): old audits keep their summary, score, issue counts by type and changes, and lose their
page-level rows, so scheduled audits of a large site do not grow the database by a gigabyte a run for ever.

A write module beneath the front door (like audits.projects): the faces reach it through audits.services, the
hourly `audits.prune_history` task (audits.tasks) calls `audits_prune`.

What a project keeps whole: its newest N completed audits (`Project.keep_page_rows`, empty: the instance's
SITEWARDEN_KEEP_PAGE_ROWS; never fewer than one; fix checks, `Audit.verifies`, take no place among them: one goes
with the audit it verifies, whose issue rows its verdict is read beside), every running audit, and — whatever their
age —
  - an audit a running audit measures its changes against (`baseline`) or re-checks (`verifies`): its finalize
    reads the rows; so is the baseline of an audit that completed within PRUNE_SETTLE_S (its alerts are sent
    after it is final and may read them);
  - an audit a live share link points to: a consultant who sent a client a report link expects the client to
    keep seeing what was sent (its examples and page lists) until the link is revoked or expires; then it is
    pruned like the others.
Every other completed, failed or cancelled audit older than the project's N-th newest completed one is pruned:
`Audit.summarised_at` is set, then its Page, PageCounts, Issue (page-level and site-wide), LinkEdge, ExternalLink,
AgentFetch and LighthouseResult rows (and the Lighthouse report files) are deleted, then
`stats["retention"]["pruned_at"]` says the rows are all gone. Its PageChange rows, events, score and stats stay, and
so do its share links, credits and PDFs. summarised_at is set first, in the transaction that checks the
protections once more with the audit row locked: from then on every reader that refuses a summarised audit (a new
audit's or a later baseline, audits.pipeline.start.baseline_checked; the changes' recompute; the screens) refuses
it, so none reads the rows while they go. An audit summarised but not yet pruned (a prune killed mid-way) is
resumed by the next run.

Before anything is deleted, what the screens read without page rows is made sure of, in one transaction
(`summary_keep`): the stored figures of audits.stats (counted now when missing, e.g. a failed audit's), and the
comparisons that need this audit's issue rows — this audit against its baseline, and each audit measured against
this one — are stored on the newer audit of each pair as `stats["comparisons"][<base id>]` (counts per issue type,
pages in both, the new issue rows per type of the overview). `stats["retention"]["kept_at"]` marks it done, so a
prune killed half-way never recounts from half-deleted rows.

Deleting is gentle on a crawl running meanwhile: one table at a time, at most PRUNE_BATCH_ROWS rows a transaction,
each batch found by a keyset range through the table's (audit, …) index (never a scan, never one long
transaction holding locks or a snapshot that stops vacuum), a pause after each batch at least as long as the batch
took, four times as long while an audit runs (the prune uses at most about half of one connection's time and I/O,
a fifth beside a crawl). Each batch commits: a prune killed
mid-way resumes where it stopped on the next run (the rows already gone are simply not found again). One prune runs
at a time (a PostgreSQL advisory lock).
"""

import logging
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from audits.checks.score import pages_without_errors_count, score_breakdown_from
from audits.comparison import comparison_counts
from audits.models import (
    AgentFetch,
    Audit,
    ExternalLink,
    Issue,
    LighthouseResult,
    Page,
    PageCounts,
    Project,
    ShareLink,
)
from audits.selectors.audits import previous_audit
from audits.selectors.retention import keep_page_rows_for
from audits.stats import audit_stats_count
from scratchpad.models import LinkEdge

logger = logging.getLogger(__name__)

PRUNE_BATCH_ROWS = 5_000  # rows deleted per transaction, at most
PRUNE_PAUSE_MIN_S = 0.05  # pause after each batch, at least ...
PRUNE_PAUSE_FACTOR = 1.0  # ... and at least this many times as long as the batch took
# ... or this many times while an audit runs: a batch's DELETE is PostgreSQL's CPU, which the crawl shares. At 1.0
# (half a core) a 10,000-page crawl beside a 100,000-page prune took 1.16 times as long on 2 cores (bench.retention);
# at 4.0 the prune takes a fifth of a core's time and about five times as long.
PRUNE_PAUSE_FACTOR_WHILE_AUDITING = 4.0
PRUNE_RUN_BUDGET_S = 45 * 60  # one run stops starting batches after this long; the next hourly run goes on
PRUNE_SETTLE_S = 60 * 60  # the baseline of an audit completed this recently is kept whole (its alerts may read it)
PRUNE_EVERY_CRON_MINUTE = "17"  # hourly, at a minute the 15-minute watchdog does not take
PRUNE_EXPIRES_S = 50 * 60  # a run not started within 50 minutes is dropped: the next one is due
RETENTION_NAME = "sitewarden-prune-history"
PRUNE_LOCK_KEY = 0x5172_2800  # pg_try_advisory_lock key: one prune at a time on the instance

FINISHED = (Audit.Status.COMPLETED, Audit.Status.FAILED, Audit.Status.CANCELLED)


@dataclass(frozen=True)
class PrunedTable:
    """A page-level table and the keyset its (audit, …) index gives: batches are ranges of `keyset[0]`."""

    model: type[models.Model]
    keyset: tuple[str, ...]


# In this order: the rows that point at a page go before the pages (no cascade to collect at the end).
PRUNED_TABLES = (
    PrunedTable(LighthouseResult, ("id",)),  # its index on audit_id; tens of rows an audit
    PrunedTable(Issue, ("type", "page_url", "id")),  # issue_audit_type_url_id
    PrunedTable(LinkEdge, ("target_url",)),  # linkedge_audit_target
    PrunedTable(ExternalLink, ("url",)),  # externallink_unique_url_per_audit
    PrunedTable(AgentFetch, ("url", "agent")),  # agentfetch_unique_url_agent_per_audit
    PrunedTable(PageCounts, ("issues", "url_rank")),  # pagecounts_issues_asc; before the pages its rows point to
    PrunedTable(Page, ("url",)),  # page_unique_url_per_audit
)


@dataclass
class PruneResult:
    """What one run did: audits summarised, rows deleted per table, whether it stopped before the end."""

    audits: list = field(default_factory=list)
    rows: dict = field(default_factory=dict)
    batches: int = 0
    stopped: str = ""  # "budget" | "locked" | "" (everything due was pruned)


def audits_protected(*, project_id) -> set:
    """Ids of the project's finished audits kept whole whatever their age (the module docstring says why)."""
    now = timezone.now()
    recent = Audit.objects.filter(project_id=project_id).filter(
        Q(status=Audit.Status.RUNNING)
        | Q(status=Audit.Status.COMPLETED, completed_at__gte=now - timedelta(seconds=PRUNE_SETTLE_S))
    )
    protected = set()
    for audit in recent:
        protected.update(i for i in (audit.baseline_id, audit.verifies_id) if i is not None)
        if audit.baseline_id is None and audit.status == Audit.Status.COMPLETED:
            before = previous_audit(audit=audit)
            if before is not None:
                protected.add(before.id)
    shared = ShareLink.objects.filter(audit__project_id=project_id, revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )
    protected.update(shared.values_list("audit_id", flat=True))
    return protected


def audits_due(*, project: Project) -> list[Audit]:
    """The project's audits to prune now, oldest first: finished, not summarised, older than its N-th newest
    completed audit, not protected."""
    keep = keep_page_rows_for(project)
    own = Audit.objects.filter(project=project, verifies__isnull=True)  # fix checks take no place in the window
    kept = list(
        own.filter(status=Audit.Status.COMPLETED).order_by("-created_at").values_list("created_at", flat=True)[:keep]
    )
    if len(kept) < keep:
        return []
    due = list(own.filter(status__in=FINISHED, summarised_at__isnull=True, created_at__lt=kept[-1]))
    # A fix check's verdict is read from its own rows and its original's issue rows (audits.selectors.verification):
    # it goes with its original, and stays whole while the original does.
    due += Audit.objects.filter(project=project, status__in=FINISHED, summarised_at__isnull=True).filter(
        Q(verifies__in=[a.id for a in due]) | Q(verifies__summarised_at__isnull=False)
    )
    protected = audits_protected(project_id=project.id)
    # Summarised by a prune that was stopped before its last batch: resumed whatever its age or protection now.
    stopped = Audit.objects.filter(
        project=project, summarised_at__isnull=False, stats__retention__pruned_at__isnull=True
    )
    return sorted([a for a in due if a.id not in protected] + list(stopped), key=lambda a: (a.created_at, str(a.id)))


def _stats_complete(audit: Audit) -> dict:
    """The audit's stats with every figure the screens read from them: stored by finalize for a completed audit
    (counted now when missing), counted now for a failed or cancelled one. A stored score of an older formula stays
    as it is, beside the audit's health_score of that formula: re-scoring needs only the stored issue_types and
    pages without errors (audits.checks.score.score_breakdown_from), not the rows."""
    stats = dict(audit.stats or {})
    if audit.status == Audit.Status.COMPLETED and {"issue_types", "bars", "score"} <= set(stats):
        return stats
    counted = audit_stats_count(audit_id=audit.id)
    _pages, clean = pages_without_errors_count(Page.objects.filter(audit_id=audit.id))
    breakdown = score_breakdown_from(
        audit=audit, rows=counted["issue_types"], pages=counted["pages"], pages_without_errors=clean
    )
    return {**stats, **counted, "score": breakdown.as_stats()}


def _measured_against(audit: Audit) -> Audit | None:
    """The audit this one is compared with by default: its baseline, else the previous completed audit."""
    if audit.baseline_id is not None:
        return Audit.objects.filter(id=audit.baseline_id).first()
    return previous_audit(audit=audit)


def _comparison_store(*, newer_id, base: Audit, counts: dict) -> None:
    newer = Audit.objects.select_for_update().get(id=newer_id)
    stats = dict(newer.stats or {})
    stats["comparisons"] = {**(stats.get("comparisons") or {}), str(base.id): counts}
    Audit.objects.filter(id=newer_id).update(stats=stats)


def summary_keep(*, audit: Audit) -> bool:
    """Store what the screens need of `audit` once its page-level rows are gone and mark it summarised (module
    docstring), once; False (nothing written) when the audit became protected meanwhile."""
    if audit.summarised_at is not None:
        return True
    stats = _stats_complete(audit)
    pairs = []  # (newer audit id, base, counts)
    base = _measured_against(audit) if audit.verifies_id is None else None  # a fix check is compared with none
    if base is not None and base.summarised_at is None and base.id != audit.id:
        pairs.append((audit.id, base, comparison_counts(audit=audit, base=base)))
    if audit.status == Audit.Status.COMPLETED:
        later = Audit.objects.filter(project_id=audit.project_id, status=Audit.Status.COMPLETED, verifies__isnull=True)
        newer = list(later.filter(baseline_id=audit.id, summarised_at__isnull=True).exclude(id=audit.id))
        following = later.filter(created_at__gt=audit.created_at).order_by("created_at").first()
        if following is not None and following.baseline_id is None and following.summarised_at is None:
            newer.append(following)  # its default baseline is this audit (audits.selectors.audits.previous_audit)
        for each in newer:
            pairs.append((each.id, audit, comparison_counts(audit=each, base=audit)))
    with transaction.atomic():
        Audit.objects.select_for_update().filter(id=audit.id).first()
        if audit.id in audits_protected(project_id=audit.project_id):  # e.g. chosen as a new audit's baseline
            return False
        for newer_id, pair_base, counts in pairs:
            if newer_id == audit.id:
                stats["comparisons"] = {**(stats.get("comparisons") or {}), str(pair_base.id): counts}
            else:
                _comparison_store(newer_id=newer_id, base=pair_base, counts=counts)
        now = timezone.now()
        stats["retention"] = {"kept_at": now.isoformat()}
        Audit.objects.filter(id=audit.id, summarised_at__isnull=True).update(stats=stats, summarised_at=now)
    audit.stats, audit.summarised_at = stats, now
    return True


def _batch_delete(*, audit_id, table: PrunedTable, start, batch_rows: int) -> tuple[int, object]:
    """Delete the next batch (≤ batch_rows rows) of the audit's rows of `table` from `start` on (the keyset's first
    column), in its own transaction; (rows deleted, where the next batch starts; None: the table is done)."""
    first = table.keyset[0]
    rows = table.model.objects.filter(audit_id=audit_id)
    if start is not None:
        rows = rows.filter(**{f"{first}__gte": start})  # ties with `start` that are left are found again
    with transaction.atomic():
        batch = list(rows.order_by(*table.keyset).values_list("pk", first)[:batch_rows])
        if not batch:
            return 0, None
        if table.model is LighthouseResult:
            _reports_delete(pk for pk, _ in batch)
        deleted = _delete_by_pk(table.model, [pk for pk, _ in batch])
    return deleted, batch[-1][1]


def _delete_by_pk(model: type[models.Model], pks: list) -> int:
    """DELETE … WHERE pk IN (…): one statement, no row loaded. QuerySet.delete() would load every Page of the batch
    (all its columns) to collect the cascades, which PRUNED_TABLES' order has already emptied."""
    quote = connection.ops.quote_name
    pk = model._meta.pk
    values = [pk.get_db_prep_value(value, connection) for value in pks]
    placeholders = ", ".join(["%s"] * len(values))
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {quote(model._meta.db_table)} WHERE {quote(pk.column)} IN ({placeholders})", values
        )
        return cursor.rowcount


def _reports_delete(ids) -> None:
    """The Lighthouse report files of these results (under MEDIA_ROOT): the rows say where."""
    media = Path(settings.MEDIA_ROOT)
    for path in (
        LighthouseResult.objects.filter(pk__in=list(ids)).exclude(report_path="").values_list("report_path", flat=True)
    ):
        (media / path).unlink(missing_ok=True)


def prune_pause_factor() -> float:
    """How much longer than the batch it follows the pause is: longer while any audit runs (one indexed EXISTS)."""
    auditing = Audit.objects.filter(status=Audit.Status.RUNNING).exists()
    return PRUNE_PAUSE_FACTOR_WHILE_AUDITING if auditing else PRUNE_PAUSE_FACTOR


def audit_prune(
    *,
    audit: Audit,
    batch_rows: int = PRUNE_BATCH_ROWS,
    deadline: float | None = None,
    result: PruneResult | None = None,
) -> PruneResult:
    """Prune one audit's page-level rows (module docstring): keep its summary and mark it summarised first, then
    delete table by table in bounded batches, then mark it pruned. Stops between batches when `deadline`
    (time.monotonic()) has passed; what is done stays done, and the next run resumes it."""
    result = result or PruneResult()
    audit.refresh_from_db()
    if audit.status not in FINISHED or ((audit.stats or {}).get("retention") or {}).get("pruned_at"):
        return result
    if not summary_keep(audit=audit):
        result.stopped = "protected"
        return result
    for table in PRUNED_TABLES:
        start = None
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                result.stopped = "budget"
                return result
            began = time.monotonic()
            deleted, start = _batch_delete(audit_id=audit.id, table=table, start=start, batch_rows=batch_rows)
            label = table.model._meta.label
            result.rows[label] = result.rows.get(label, 0) + deleted
            if start is None:
                break
            result.batches += 1
            time.sleep(max(PRUNE_PAUSE_MIN_S, prune_pause_factor() * (time.monotonic() - began)))
    with transaction.atomic():
        stats = Audit.objects.select_for_update().values_list("stats", flat=True).get(id=audit.id) or {}
        stats["retention"] = {**(stats.get("retention") or {}), "pruned_at": timezone.now().isoformat()}
        Audit.objects.filter(id=audit.id).update(stats=stats)
    audit.refresh_from_db(fields=["stats", "summarised_at"])
    result.audits.append(audit.id)
    logger.info("audit summarised", extra={"audit_id": str(audit.id), "rows": result.rows})
    return result


def audits_prune(
    *, project: Project | None = None, batch_rows: int = PRUNE_BATCH_ROWS, budget_s: float | None = None
) -> PruneResult:
    """Prune every audit due (of one project, or of all), oldest first, within `budget_s` seconds; one run at a
    time on PostgreSQL (a second one returns at once, stopped "locked")."""
    result = PruneResult()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    with _prune_lock() as held:
        if not held:
            result.stopped = "locked"
            return result
        projects = [project] if project is not None else Project.objects.order_by("id")
        for each in projects:
            for audit in audits_due(project=each):
                audit_prune(audit=audit, batch_rows=batch_rows, deadline=deadline, result=result)
                if result.stopped == "budget":
                    return result
                result.stopped = ""  # one audit became protected: go on with the next
    return result


class _prune_lock:
    """A session-level advisory lock on PostgreSQL (released when the connection closes, so a killed worker does
    not hold it); nothing elsewhere."""

    def __enter__(self) -> bool:
        self.held = True
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [PRUNE_LOCK_KEY])
                self.held = bool(cursor.fetchone()[0])
        return self.held

    def __exit__(self, *exc) -> None:
        if self.held and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [PRUNE_LOCK_KEY])


def retention_install() -> PeriodicTask:
    """Create or repair the hourly prune's periodic task (idempotent; `manage.py install_watchdog` calls it beside
    the watchdog's and the heal sweep's)."""
    hourly, _ = CrontabSchedule.objects.get_or_create(
        minute=PRUNE_EVERY_CRON_MINUTE, hour="*", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    task, _ = PeriodicTask.objects.update_or_create(
        name=RETENTION_NAME,
        defaults={
            "task": "audits.prune_history",
            "crontab": hourly,
            "interval": None,
            "args": "[]",
            "enabled": True,
            "expire_seconds": PRUNE_EXPIRES_S,
        },
    )
    return task
