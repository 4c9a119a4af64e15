"""The dashboard's Issues tab: an audit's issue types as a sortable, filtered table, one type's evidence in named
columns (or grouped by target URL) and its exports. Like every audit screen, scoped to the signed-in user's
account and read for the `?segment=` it names."""

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audits import exports
from audits.checks.registry import CATEGORIES, CHECKS_BY_TYPE, SEVERITIES
from audits.selectors import audits as audit_reads
from audits.selectors import issues as issue_reads
from dashboard import selectors as dashboard
from dashboard.retention import summarised_screen
from dashboard.views import _audit, _issues_q, _segment_context, _segment_suffix, dashboard_view, request_segment


@require_GET
@dashboard_view
def audit_issues(request, audit_id):
    """The issue types as a table: sortable, filtered by severity and category (all in ?query)."""
    audit = _audit(request, audit_id)
    segment = request_segment(request, audit)
    previous = audit_reads.previous_audit(audit=audit)
    everything = issue_reads.issue_summary_for_segment(audit=audit, segment=segment, previous=previous)
    severity = request.GET.get("severity", "")
    category = request.GET.get("category", "")
    sort = request.GET.get("sort", "-priority")
    if sort.lstrip("-") not in dashboard.ISSUE_SORTS:
        sort = "-priority"
    rows = dashboard.filter_issue_summary(
        everything,
        severity=severity if severity in SEVERITIES else "",
        category=category if category in CATEGORIES else "",
    )
    context = {
        "audit": audit,
        "tab": "issues",
        "rows": dashboard.sort_issue_summary(rows, sort),
        "total_types": len(everything),
        "previous": previous,
        "sort": sort,
        "severity": severity,
        "category": category,
        "severities": SEVERITIES,
        "categories": CATEGORIES,
        "severity_counts": issue_reads.issues_by_severity(audit=audit, **_issues_q(segment)),
        "priority_rule": dashboard.PRIORITY_RULE,
        "sort_choices": dashboard.ISSUE_SORT_CHOICES,
        **_segment_context(segment),
    }
    return render(request, "dashboard/issues.html", context)


@require_GET
@dashboard_view
def audit_issue_type(request, audit_id, issue_type):
    """One issue type: what it means, how to fix it, and its evidence in named columns (paginated)."""
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        count = issue_reads.issues_by_type(audit=audit).get(issue_type)
        if count is None:
            raise Http404("No issues of this type")
        spec = dashboard.check_spec(issue_type)
        return summarised_screen(
            request, audit, what="Affected URLs", tab="issues", spec=spec, count=count,
            url_name="audits:audit-issue-type", url_args=[issue_type],
        )  # fmt: skip
    segment = request_segment(request, audit)
    evidence = dashboard.evidence_page(
        audit=audit, issue_type=issue_type, number=request.GET.get("page"), segment=segment
    )
    if not evidence["issues"].paginator.count and segment is None:
        raise Http404("No issues of this type")
    by_target = None
    if request.GET.get("view") == "targets":  # a link type's rows grouped by target URL
        by_target = dashboard.evidence_by_target_page(
            audit=audit, issue_type=issue_type, number=request.GET.get("page"), segment=segment
        )
    summary = next(
        (r for r in issue_reads.issue_summary_for_segment(audit=audit, segment=segment) if r.type == issue_type),
        None,
    )
    context = {
        "audit": audit,
        "tab": "issues",
        "spec": dashboard.check_spec(issue_type),
        "evidence": evidence,
        "issues": evidence["issues"],
        "summary": summary,
        "groupable": issue_type in dashboard.LINK_TYPES,
        "by_target": by_target,
        **_segment_context(segment),
    }
    return render(request, "dashboard/issue_type.html", context)


ISSUE_TYPE_EXPORTS = {
    "csv": (exports.issue_type_csv_rows, exports.CSV_CONTENT_TYPE),
    "json": (exports.issue_type_json_chunks, exports.JSON_CONTENT_TYPE),
}


@require_GET
@dashboard_view
def audit_issue_type_export(request, audit_id, issue_type, fmt):
    """One issue type's evidence as CSV or JSON: the columns of its table on screen, streamed."""
    audit = _audit(request, audit_id)
    if fmt not in ISSUE_TYPE_EXPORTS or issue_type not in CHECKS_BY_TYPE:
        raise Http404("No such export")
    if audit.summarised_at is not None:
        return summarised_screen(request, audit, what="Affected URLs", tab="issues", status=410)
    segment = request_segment(request, audit)
    chunks, content_type = ISSUE_TYPE_EXPORTS[fmt]
    response = StreamingHttpResponse(chunks(audit, issue_type, **_issues_q(segment)), content_type=content_type)
    filename = exports.export_filename(audit, f"issues-{issue_type}{_segment_suffix(segment)}", fmt)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Accel-Buffering"] = "no"
    return response
