"""The dashboard's Changes screen: what changed on each URL between an audit and its baseline (audits.selectors.changes,
rows written at finalize), with the counts per field as filters, filters by field, direction and segment, keyset
pages, the baseline named and another one to pick (audits.services.audit_baseline_set), and the changes' exports.
Like every audit screen, scoped to the signed-in user's account."""

from django.contrib import messages
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from audits import exports, services
from audits.errors import AuditRefused
from audits.models import Audit, PageChange
from audits.selectors import changes as change_reads
from audits.selectors import pagination
from config.inputs import text_problem
from dashboard import selectors as dashboard
from dashboard.views import _segment_suffix, dashboard_view, request_segment

Field = PageChange.Field
Direction = PageChange.Direction

FILTER_MAX_CHARS = 40  # longer than any field or direction value
# How a direction reads beside a field, where the plain word would say less (a page's indexability "up").
DIRECTION_WORDS = {
    (Field.INDEXABILITY, Direction.UP): "became indexable",
    (Field.INDEXABILITY, Direction.DOWN): "became non-indexable",
    (Field.ADDED, Direction.ADDED): "new URL",
    (Field.REMOVED, Direction.REMOVED): "URL gone",
}
DIRECTION_TONES = {  # a badge class of static/sitewarden.css
    Direction.ADDED: "status-completed",
    Direction.UP: "status-completed",
    Direction.REMOVED: "status-failed",
    Direction.DOWN: "status-failed",
    Direction.CHANGED: "status-running",
}
# Values shown as code (a robots.txt line, a URL keeps its characters), the rest as text.
CODE_FIELDS = frozenset({Field.ROBOTS_TXT, Field.ROBOTS, Field.STRUCTURED_DATA, Field.HREFLANG})
URL_FIELDS = frozenset({Field.CANONICAL, Field.REDIRECT})

EXPORTS = {
    "csv": (exports.changes_csv_rows, exports.CSV_CONTENT_TYPE),
    "json": (exports.changes_json_chunks, exports.JSON_CONTENT_TYPE),
}


def direction_words(field: str, direction: str) -> str:
    return DIRECTION_WORDS.get((field, direction), change_reads.DIRECTION_LABELS.get(direction, direction))


def _audit(request, audit_id) -> Audit:
    return dashboard.audit_for_account(account=request.account, audit_id=audit_id)


def _choice(request, name: str) -> tuple[str, bool]:
    """A field or direction from ?query, bounded, and whether it was refused (a NUL or lone surrogate names
    nothing: left out, and the screen says so)."""
    value = request.GET.get(name, "").strip()[:FILTER_MAX_CHARS]
    return ("", True) if text_problem(value) else (value, False)


def _filters(request) -> tuple[dict, bool]:
    field, field_refused = _choice(request, "field")
    direction, direction_refused = _choice(request, "direction")
    return {"field": field, "direction": direction}, field_refused or direction_refused


@require_GET
@dashboard_view
def audit_changes(request, audit_id):
    """The audit's changes against its baseline: the counts per field (each a filter), filters by field, direction
    and segment, and the rows a screen at a time, each URL leading to its page."""
    audit = _audit(request, audit_id)
    segment = request_segment(request, audit) if audit.is_finished else None
    filters, refused = _filters(request)
    counts = change_reads.change_counts(audit=audit, segment=segment)
    whole = counts if segment is None else change_reads.change_counts(audit=audit)
    status = change_reads.changes_status(audit=audit, total=whole.total)
    rows = change_reads.change_list(audit=audit, segment=segment, **filters)
    filtered = any(filters.values())
    changes = pagination.keyset_paginate(
        rows,
        columns=change_reads.CHANGE_KEYSET,
        cursor=request.GET.get("cursor"),
        tag=change_reads.change_cursor_tag(audit.id),
        per_page=change_reads.CHANGES_PER_PAGE,
        total=change_reads.change_total(counts, audit=audit, segment=segment, **filters),
    )
    changes.object_list = change_reads.changes_with_pages(changes.object_list)
    for row in changes.object_list:
        row.words = direction_words(row.field, row.direction)
        row.tone = DIRECTION_TONES.get(row.direction, "")
        row.as_code = row.field in CODE_FIELDS
        row.as_url = row.field in URL_FIELDS
    context = {
        "audit": audit,
        "tab": "changes",
        "status": status,
        "state": status.state,
        "states": change_reads.ChangesState,
        "baseline": status.baseline,
        # A summarised audit (retention pruned its pages) keeps its changes as they were measured.
        "choices": change_reads.change_baseline_choices(audit=audit)
        if audit.status == Audit.Status.COMPLETED and audit.summarised_at is None
        else [],
        "counts": counts,
        "whole_total": whole.total,
        "changes": changes,
        "filters": filters,
        "filtered": filtered,
        "refused": refused,
        "unknown_field": bool(filters["field"]) and not change_reads.change_field_valid(filters["field"]),
        "unknown_direction": bool(filters["direction"])
        and not change_reads.change_direction_valid(filters["direction"]),
        "field_choices": Field.choices,
        "direction_choices": [(value, change_reads.DIRECTION_LABELS[value]) for value in Direction.values],
        "export_query": request.GET.urlencode(),
        "segment": segment,
        "segment_filter": True,
    }
    return render(request, "dashboard/changes.html", context)


@require_POST
@dashboard_view
def audit_changes_baseline(request, audit_id):
    """Measure the audit's changes against another completed audit of its project: audits.services.audit_baseline_set
    judges the choice (an audit of this project, completed, with its pages) and has the changes computed again."""
    audit = _audit(request, audit_id)
    target = reverse("audits:audit-changes", args=[audit.id])
    chosen = request.POST.get("baseline", "").strip()[:FILTER_MAX_CHARS]
    if not chosen:
        messages.error(request, "Choose a completed audit of this project as the baseline.")
        return redirect(target)
    try:
        audit = services.audit_baseline_set(audit=audit, baseline=chosen)
    except AuditRefused as exc:
        messages.error(request, exc.message)
    else:
        when = audit.baseline.created_at.strftime("%Y-%m-%d %H:%M")
        messages.success(request, f"The changes are being measured again, against the audit of {when} UTC.")
    return redirect(target)


@require_GET
@dashboard_view
def audit_changes_export(request, audit_id, fmt):
    """The audit's changes (the screen's filters and segment, every row of them) as CSV or JSON, streamed."""
    audit = _audit(request, audit_id)
    if fmt not in EXPORTS:
        raise Http404("No such export")
    segment = request_segment(request, audit)
    filters, _refused = _filters(request)
    chunks, content_type = EXPORTS[fmt]
    response = StreamingHttpResponse(chunks(audit, segment=segment, **filters), content_type=content_type)
    name = "changes" + (f"-{filters['field']}" if change_reads.change_field_valid(filters["field"]) else "")
    filename = exports.export_filename(audit, name + _segment_suffix(segment), fmt)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Accel-Buffering"] = "no"
    return response
