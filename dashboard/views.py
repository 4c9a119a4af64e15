"""The dashboard: server-rendered pages. Views are thin: they scope to the user's account, call a
service (audits.services) or a selector (audits.selectors, dashboard.selectors for the screens' own view models)
and render. This module holds what every screen shares (`dashboard_view`, the `?segment=` helpers) and an
audit's own screens (start, follow, cancel, delete, events, comparison, exports); its Issues tab is in
dashboard.issue_views, its pages, structure and performance screens in dashboard.page_views, the project screens
in dashboard.project_views, API tokens in dashboard.token_views, webhooks in dashboard.webhooks_views, segments
in dashboard.segments, sharing and the report in dashboard.share."""

import re
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import connection, transaction
from django.http import FileResponse, Http404, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.services import account_get_or_create_for_user
from audits import comparison, exports, services
from audits.checks.score import SCORE_FORMULA_WORDS
from audits.errors import AuditRefused
from audits.models import Audit
from audits.segments import SEGMENT_PARAM, SegmentChoice, UnknownSegment, resolve_segment, segment_choices
from audits.selectors import changes as change_reads
from audits.selectors.audits import audit_urls_skipped
from audits.selectors.pagination import CursorInvalid
from audits.selectors.retention import audit_summarised_message, comparison_kept, comparison_rows_kept
from audits.services import audit_cancel, audit_delete, audit_start, audit_status_refresh
from dashboard import selectors as dashboard
from dashboard.forms import AuditStartForm
from dashboard.live import live_progress
from dashboard.retention import summarised_context, summarised_screen


def dashboard_view(view):
    """Signed-in users only; `request.account` is theirs. (The CSP header is config.middleware's.)"""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        request.account = account_get_or_create_for_user(user=request.user)
        try:
            return view(request, *args, **kwargs)
        except CursorInvalid as exc:
            return _first_page(request, exc)
        except UnknownSegment as exc:
            return _unknown_segment(request, exc)

    return wrapper


def _unknown_segment(request, exc: UnknownSegment):
    """A `?segment=` naming no segment of the audit's project: said on the screen (400), never shown as the whole
    site, with the picker to choose one that exists."""
    audit = getattr(request, "segment_audit", None)
    context = {"audit": audit, "tab": "", "segment_error": exc.message, "segment_filter": True}
    return render(request, "dashboard/segment_unknown.html", context, status=400)


def request_segment(request, audit: Audit) -> SegmentChoice | None:
    """The segment `?segment=` names (audits.segments), None without one; UnknownSegment for anything else."""
    request.segment_audit = audit
    return resolve_segment(audit=audit, param=request.GET.get(SEGMENT_PARAM))


def _segment_context(segment: SegmentChoice | None) -> dict:
    """What the audit screens' segment picker and their links need."""
    return {"segment": segment, "segment_filter": True}


def segment_query_string(segment: SegmentChoice | None) -> str:
    return f"?{urlencode({SEGMENT_PARAM: segment.key})}" if segment is not None else ""


def _segment_suffix(segment: SegmentChoice | None) -> str:
    """`-segment-blog` in an export's file name (empty for the whole site)."""
    if segment is None:
        return ""
    return "-segment-" + (re.sub(r"[^A-Za-z0-9]+", "-", segment.name).strip("-")[:40] or "other")


def _issues_q(segment: SegmentChoice | None) -> dict:
    return {"issues_q": segment.issues_q} if segment is not None else {}


def _pages_q(segment: SegmentChoice | None) -> dict:
    return {"pages_q": segment.pages_q} if segment is not None else {}


def _first_page(request, exc: CursorInvalid):
    """A list's cursor this server did not give out for it (altered, from another audit or sort, or signed
    before a key rotation): back to the list's first page with the same filters and sort, and a note. A stale
    bookmark should land on the list the person asked for rather than on an error page, and the address then
    says what is shown."""
    query = request.GET.copy()
    query.pop(exc.param, None)
    messages.info(request, "That list position is no longer valid: showing the list from its first page.")
    return redirect(f"{request.path}?{query.urlencode()}" if query else request.path)


def _audit(request, audit_id) -> Audit:
    return dashboard.audit_for_account(account=request.account, audit_id=audit_id)


# --- starting and following an audit -------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@dashboard_view
def audit_new(request, project_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    initial = {
        "start_url": project.base_url,
        "max_pages": project.max_pages,
        "include_patterns": project.include_patterns,
        "exclude_patterns": project.exclude_patterns,
    }
    form = AuditStartForm(request.POST or None, request.FILES or None, initial=initial)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                # Patterns are project settings: saved with the start, rolled back with a refusal.
                with transaction.atomic():
                    services.project_update(
                        project=project,
                        include_patterns=data["include_patterns"],
                        exclude_patterns=data["exclude_patterns"],
                    )
                    audit = audit_start(
                        project=project,
                        start_url=data["start_url"] if data["mode"] == "crawl" else None,
                        max_pages=data["max_pages"] if data["mode"] != "list" else None,  # a list: its length
                        lighthouse=data["lighthouse"],
                        urls=data["urls"],
                        sitemap_url=data["sitemap_url"] if data["mode"] == "sitemap" else None,
                    )
            except AuditRefused as exc:
                project.refresh_from_db()
                form.add_refusal(exc)
            else:
                return redirect("audits:audit-detail", audit_id=audit.id)
    return render(request, "dashboard/audit_start.html", {"form": form, "project": project}, status=status)


def _live_context(audit: Audit, segment: SegmentChoice | None = None) -> dict:
    context = {"audit": audit, "progress": live_progress(audit=audit), **_segment_context(segment)}
    if not audit.is_finished:
        context["urls_skipped"] = audit_urls_skipped(audit=audit)
    else:
        choices = segment_choices(audit=audit)  # the Segments table's and the picker's
        context["segment_choices"] = choices
        data = dashboard.overview(audit=audit, segment=segment, choices=choices)
        context.update(
            urls_skipped=audit_urls_skipped(audit=audit, issue_types=data["issue_types"]),
            overview=data,
            severity_counts=data["severity_counts"],
            charts=dashboard.overview_charts(
                audit=audit,
                data=data,
                pages_url=reverse("audits:audit-pages", args=[audit.id]) + segment_query_string(segment),
                audit_url=lambda audit_id: reverse("audits:audit-detail", args=[audit_id]),
            ),
            health_formula=SCORE_FORMULA_WORDS,
            **summarised_context(audit),
        )
    return context


@require_GET
@dashboard_view
def audit_detail(request, audit_id):
    audit = audit_status_refresh(audit_id=_audit(request, audit_id).id)  # a stuck audit is judged on sight
    # A summarised audit's pages are gone: only the whole site's stored figures can be read.
    segment = request_segment(request, audit) if audit.is_finished and not audit.summarised_at else None
    return render(request, "dashboard/audit_detail.html", {**_live_context(audit, segment), "tab": "overview"})


@never_cache
@require_GET
@dashboard_view
def audit_live(request, audit_id):
    """The live block alone, polled every 2 s by static/sitewarden/live.js while the audit runs."""
    audit = audit_status_refresh(audit_id=_audit(request, audit_id).id)
    return render(request, "dashboard/_live.html", _live_context(audit))


@require_http_methods(["GET", "POST"])
@dashboard_view
def audit_cancel_view(request, audit_id):
    """GET asks for confirmation (a page of its own, so it works without script); POST cancels."""
    audit = _audit(request, audit_id)
    if request.method == "GET":
        if audit.is_finished:
            return redirect("audits:audit-detail", audit_id=audit.id)
        return render(request, "dashboard/audit_cancel.html", {"audit": audit, "progress": live_progress(audit=audit)})
    if audit_cancel(audit=audit):
        messages.success(request, "Audit cancelled. The pages crawled so far are kept.")
    else:
        messages.info(request, "The audit had already ended.")
    return redirect("audits:audit-detail", audit_id=audit.id)


@require_POST
@dashboard_view
def audit_delete_view(request, audit_id):
    audit = _audit(request, audit_id)
    project_id = audit.project_id
    audit_delete(audit=audit)
    messages.success(request, "Audit deleted.")
    return redirect("audits:project-detail", project_id=project_id)


# --- the audit's log, comparison and exports --------------------------------------------------------------


@require_GET
@dashboard_view
def audit_events(request, audit_id):
    audit = _audit(request, audit_id)
    events = dashboard.paginate(dashboard.audit_events(audit=audit), request.GET.get("page"), dashboard.EVENTS_PER_PAGE)
    return render(request, "dashboard/events.html", {"audit": audit, "tab": "events", "events": events})


@require_GET
@dashboard_view
def audit_compare(request, audit_id):
    audit = _audit(request, audit_id)
    segment = request_segment(request, audit)
    issues_q = segment.issues_q if segment is not None else None
    chosen = request.GET.get("base")
    previous = comparison.comparison_baseline(audit=audit, base_id=chosen)
    if chosen and previous is None:
        raise Http404("No such audit to compare with")
    context = {
        "audit": audit,
        "tab": "compare",
        "previous": previous,
        "choices": comparison.baseline_choices(audit=audit),
        "rows": [],
        "listing": None,
        **_segment_context(segment),
    }
    pruned = next((a for a in (audit, previous) if a is not None and a.summarised_at is not None), None)
    if pruned is not None and previous is not None:
        # Retention pruned one of them: the counts stored for the pair (whole site), and no URL behind them.
        rows = comparison_rows_kept(audit=audit, base=previous) if segment is None else None
        kept = comparison_kept(audit=audit, base=previous) if rows is not None else None
        context.update(
            rows=rows or [],
            rows_kept=rows is not None,
            pages=kept["pages"] if kept else None,
            pair_summarised=audit_summarised_message(
                pruned,
                subject=f"The audit of {pruned.created_at:%Y-%m-%d %H:%M}" if pruned is previous else "This audit",
            ),
            settings_differ=comparison.settings_differences(audit=audit, previous=previous),
        )
        kind, issue_type = request.GET.get("kind"), request.GET.get("type")
        if kind in comparison.COMPARE_KINDS and issue_type:
            context["listing"] = {"kind": kind, "spec": comparison.check_spec(issue_type), "gone": True}
    elif previous is not None:
        context["rows"] = comparison.comparison_summary(audit=audit, previous=previous, issues_q=issues_q)
        context["pages"] = comparison.comparison_pages(
            audit=audit, previous=previous, pages_q=segment.pages_q if segment is not None else None
        )
        context["settings_differ"] = comparison.settings_differences(audit=audit, previous=previous)
        if previous.id == audit.baseline_id:  # the Changes view's baseline: its per-URL changes, counted per field
            context["change_counts"] = change_reads.change_counts(audit=audit, segment=segment)
        kind, issue_type = request.GET.get("kind"), request.GET.get("type")
        if kind in comparison.COMPARE_KINDS and issue_type:
            issues = comparison.comparison_issues(
                audit=audit, previous=previous, kind=kind, issue_type=issue_type, issues_q=issues_q
            )
            context["listing"] = {
                "kind": kind,
                "spec": comparison.check_spec(issue_type),
                "issues": dashboard.paginate(issues, request.GET.get("page")),
            }
    return render(request, "dashboard/compare.html", context)


EXPORTS = {
    ("issues", "csv"): (exports.issues_csv_rows, exports.CSV_CONTENT_TYPE),
    ("issues", "json"): (exports.issues_json_chunks, exports.JSON_CONTENT_TYPE),
    ("pages", "csv"): (exports.pages_csv_rows, exports.CSV_CONTENT_TYPE),
    ("pages", "json"): (exports.pages_json_chunks, exports.JSON_CONTENT_TYPE),
}


@require_GET
@dashboard_view
def audit_export(request, audit_id, what, fmt):
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        title = "Issues" if what == "issues" else "Pages"
        return summarised_screen(request, audit, what=title, tab="overview", status=410)
    segment = request_segment(request, audit)
    filename = exports.export_filename(audit, what + _segment_suffix(segment), fmt)
    if (what, fmt) == ("issues", "xlsx"):
        return FileResponse(
            exports.issues_xlsx_file(audit, segment_name=segment.name if segment else "", **_issues_q(segment)),
            as_attachment=True,
            filename=filename,
            content_type=exports.XLSX_CONTENT_TYPE,
        )
    if (what, fmt) not in EXPORTS:
        raise Http404("No such export")
    chunks, content_type = EXPORTS[(what, fmt)]
    restriction = _issues_q(segment) if what == "issues" else _pages_q(segment)
    response = StreamingHttpResponse(chunks(audit, **restriction), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Accel-Buffering"] = "no"  # let a proxy pass the stream through as it comes
    return response


def healthz(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
