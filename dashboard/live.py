"""What the live block says about an audit, running or finished, in words that stay true.

- During discovery and the crawl: "n crawled of m found so far (page budget b)", m the URLs known (crawled or
  queued: `audit.pages_total`, which grows with every persisted batch) up to the page budget, and a bar that is
  never full while the crawl runs (audits.selectors.audits.crawl_bar); a completed audit shows the pages crawled.
- During the Lighthouse phase: "n of m runs" (stored LighthouseResult rows against the planned sample).
- A failed or cancelled audit says where it stopped: the phase (for a cancel, the last phase it entered,
  read from its event log), the pages done, and the error in words.
"""

from dataclasses import dataclass

from django.core.cache import cache

from audits.models import Audit, AuditEvent, LighthouseResult
from audits.selectors import audits as audit_reads
from audits.services import lighthouse_runs_planned

# The planned Lighthouse sample is fixed once the phase starts (the crawl is over); computing it streams
# pages, so one answer is kept per audit for the phase's length instead of recomputing it every 2 s poll.
LIGHTHOUSE_PLAN_CACHE_S = 15 * 60


@dataclass(frozen=True)
class LighthouseProgress:
    done: int
    planned: int

    @property
    def percent(self) -> int:
        return min(100, int(100 * self.done / self.planned)) if self.planned else 0


def lighthouse_planned_runs(*, audit: Audit) -> int:
    key = f"sitewarden:lighthouse-plan:{audit.id}"
    planned = cache.get(key)
    if planned is None:
        planned = lighthouse_runs_planned(audit=audit)
        cache.set(key, planned, LIGHTHOUSE_PLAN_CACHE_S)
    return planned


def lighthouse_progress(*, audit: Audit) -> LighthouseProgress | None:
    """n of m Lighthouse runs while the phase runs; None in any other phase."""
    if audit.is_finished or audit.current_phase != Audit.Phase.LIGHTHOUSE:
        return None
    done = LighthouseResult.objects.filter(audit=audit).count()
    planned = lighthouse_planned_runs(audit=audit)
    return LighthouseProgress(done=done, planned=max(planned, done))


def stopped_phase(*, audit: Audit) -> str:
    """The phase a failed or cancelled audit was in when it ended ('' for a running or completed one)."""
    if audit.status == Audit.Status.FAILED:
        return audit.failed_phase or ""
    if audit.status != Audit.Status.CANCELLED:
        return ""
    phases = (
        AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.PHASE)
        .order_by("-created_at", "-id")
        .values_list("data", flat=True)
    )
    for data in phases[:1]:
        return (data or {}).get("phase", "")
    return Audit.Phase.DISCOVERY  # cancelled before any phase event: it never left discovery


def phase_steps(*, audit: Audit, stopped: str) -> list[audit_reads.PhaseStep]:
    """The stepper; a cancelled audit shows the phases it finished as done and the one it stopped in."""
    steps = audit_reads.phase_steps(audit)
    if audit.status != Audit.Status.CANCELLED or stopped not in audit_reads.PHASES:
        return steps
    order = list(audit_reads.PHASES)
    reached = order.index(stopped)
    out = []
    for step in steps:
        if step.state == "skipped":
            out.append(step)
            continue
        index = order.index(step.phase)
        state = "done" if index < reached else "stopped" if index == reached else "todo"
        out.append(audit_reads.PhaseStep(step.phase, step.label, state))
    return out


def live_progress(*, audit: Audit) -> dict:
    """audit_progress plus the words that keep it honest (see the module docstring)."""
    progress = audit_reads.audit_progress(audit=audit)
    stopped = stopped_phase(audit=audit)
    bar = progress["bar"]
    progress.update(
        steps=phase_steps(audit=audit, stopped=stopped),
        growing=bar.running and not bar.at_budget,
        at_limit=bar.running and bar.at_budget,
        lighthouse=lighthouse_progress(audit=audit),
        stopped_phase=stopped,
        stopped_label=audit_reads.PHASE_LABELS.get(stopped, stopped),
    )
    return progress
