"""An audit's report as Markdown (the `sitewarden://audits/{id}/report.md` resource): what a person would
paste into a ticket. The numbers are the shared report's (audits.selectors.reports, which dashboard.report reads)
and the priority order is the one rule of audits.priority, so the assistant, the dashboard, the share page and the
PDF say the same thing."""

from audits.checks.score import SCORE_FORMULA_WORDS, score_breakdown
from audits.models import Audit
from audits.priority import PRIORITY_RULE
from audits.selectors.audits import error_explanation
from audits.selectors.reports import report_figures

REPORT_URI = "sitewarden://audits/{audit_id}/report.md"  # the resource assistants.server serves this report at


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def audit_report_markdown(*, audit: Audit) -> str:
    data = report_figures(audit=audit)
    counts = data["severity_counts"]
    score = data["score"] if data["score"] is not None else "—"
    breakdown = score_breakdown(audit=audit) if audit.health_score is not None else None
    lines = [
        f"# Audit of {data['project_name']}",
        "",
        f"- Start URL: {audit.start_url}",
        f"- Status: {audit.status}" + ("" if audit.is_finished else f" ({audit.current_phase})"),
        f"- Started: {audit.created_at:%Y-%m-%d %H:%M} UTC"
        + (f", finished {audit.completed_at:%Y-%m-%d %H:%M} UTC" if audit.completed_at else ""),
        f"- Pages crawled: {data['pages']}",
        f"- Health score: {breakdown.words if breakdown else f'{score} / 100'}",
        f"- How the score is calculated: {SCORE_FORMULA_WORDS}",
        f"- Issues: {counts['critical']} critical, {counts['warning']} warnings, {counts['info']} notices",
        "",
    ]
    if audit.status == Audit.Status.FAILED:
        lines += [f"**Failed ({audit.error_code}):** {error_explanation(audit.error_code)}", ""]
    if data["partial"]:
        lines += ["_The audit did not complete: these are the findings so far._", ""]
    if not data["top_issues"]:
        return "\n".join([*lines, "No issues found.", ""])
    lines += [
        "## Top issues by priority",
        "",
        f"_{PRIORITY_RULE}_",
        "",
        "| # | severity | issue | pages | what it means | how to fix |",
        "|---|---|---|---|---|---|",
    ]
    for n, t in enumerate(data["top_issues"], 1):
        where = "site-wide" if t.site_wide else f"{t.pages} ({t.percent:g} %)"
        lines.append(
            f"| {n} | {t.severity} | {_cell(t.spec.title)} (`{t.type}`) | {where} | {_cell(t.spec.explanation)} "
            f"| {_cell(t.spec.how_to_fix)} |"
        )
    lines += ["", "The list_issues and issue_evidence tools have every finding of a type.", ""]
    return "\n".join(lines)
