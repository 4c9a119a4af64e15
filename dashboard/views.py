"""The dashboard: server-rendered pages. Views are thin: they scope to the user's account, call a
service (audits.services) or a selector (audits.selectors, dashboard.selectors for the screens' own view models)
and render. This module holds what every screen shares (`dashboard_view`, the `?segment=` helpers) and an
audit's screens; the project screens are in dashboard.project_views, API tokens in dashboard.token_views, webhooks
in dashboard.webhooks_views, segments in dashboard.segments, sharing and the report in dashboard.share."""

import re
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import connection, transaction
from django.http import FileResponse, Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.services import account_get_or_create_for_user
from audits import comparison, exports, services
from audits.checks.registry import CATEGORIES, CHECKS_BY_TYPE, SEVERITIES
from audits.checks.render import render_comparison
from audits.checks.score import SCORE_FORMULA_WORDS
from audits.errors import AuditRefused
from audits.models import Audit
from audits.segments import SEGMENT_PARAM, SegmentChoice, UnknownSegment, resolve_segment, segment_choices
from audits.selectors import audits as audit_reads
from audits.selectors import changes as change_reads
from audits.selectors import issues as issue_reads
from audits.selectors import links as link_reads
from audits.selectors import pages as page_reads
from audits.selectors import pagination
from audits.selectors.audits import audit_urls_skipped
from audits.selectors.pagination import CursorInvalid
from audits.selectors.retention import audit_summarised_message, comparison_kept, comparison_rows_kept
from audits.services import (
    ReportRenderFailed,
    audit_cancel,
    audit_delete,
    audit_start,
    audit_status_refresh,
    lighthouse_report_render,
)
from dashboard import pages as page_screens
from dashboard import selectors as dashboard
from dashboard.forms import AuditStartForm, PageFilterForm
from dashboard.live import live_progress
from dashboard.retention import summarised_context, summarised_screen
from dashboard.structure import site_structure


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


# --- results ------------------------------------------------------------------------------------------------


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


def _pages_form(request, audit, issue_types=None) -> PageFilterForm:
    if issue_types is None:
        issue_types, _site_wide = page_reads.page_issue_types(audit=audit)
    return PageFilterForm(
        request.GET or None,
        issue_types=[(c.type, c.label) for c in issue_types],
        extra_columns=page_screens.extractor_columns(audit=audit),
    )


def _filtered_pages(audit, form: PageFilterForm, segment: SegmentChoice | None):
    """The grid's pages for the form's filters and the segment; none at all when a filter is unknown (the screen
    says which)."""
    pages = page_reads.page_filter(audit=audit, **form.filters(), segment=segment)
    return pages if form.filters_known() else pages.none()


@require_GET
@dashboard_view
def audit_pages(request, audit_id):
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        return summarised_screen(request, audit, what="Pages", tab="pages", url_name="audits:audit-pages")
    issue_types, site_wide = page_reads.page_issue_types(audit=audit)
    form = _pages_form(request, audit, issue_types)
    view = form.page_view
    cookie = page_screens.COLS_COOKIE_PREFIX + view.key
    chosen = form.chosen_columns()
    if chosen is None and request.COOKIES.get(cookie):
        chosen = request.COOKIES[cookie].split(".")
    columns = page_screens.columns_for(view, chosen, page_screens.extractor_columns(audit=audit))
    sort = form.sort_key()
    filters = form.filters()
    segment = request_segment(request, audit)
    pages = _filtered_pages(audit, form, segment)
    # Keyset pages (a seek, however deep) and no COUNT(*) over the whole audit: the stored counter says it.
    narrow = page_screens.page_filters_narrow(filters) or not form.filters_known() or segment is not None
    context = {
        "audit": audit,
        "tab": "pages",
        "form": form,
        "view": view,
        "views": page_reads.VIEWS.values(),
        "columns": columns,
        "column_keys": [c.key for c in columns],
        "pages": pagination.keyset_paginate(
            page_reads.page_list(
                pages=pages, columns=columns, sort=sort, counted=page_reads.page_counts_stored(audit=audit)
            ),
            columns=page_reads.page_keyset_columns(sort),
            cursor=request.GET.get("cursor"),
            tag=page_reads.grid_cursor_tag(audit.id, sort),
            total=pages.count() if narrow else audit.pages_crawled,
            total_is_estimate=not narrow and audit.status == audit.Status.RUNNING,
            keys_first=True,  # most sorts have no index: the whole audit is sorted on its keys alone
        ),
        "sort": sort,
        "sort_caption": page_screens.sort_caption(sort),
        "unknown": form.unknown_values(),
        "site_wide_types": site_wide,
        "issue_choice": next((c for c in issue_types if c.type == filters["issue_type"]), None),
        "folder": page_reads.folder_prefix(audit=audit, folder=filters["folder"]) if filters["folder"] else "",
        **_segment_context(segment),
    }
    response = render(request, "dashboard/pages.html", context)
    if form.chosen_columns() is not None:  # remember the chooser's ticks for this view
        value = ".".join(c.key for c in columns[1:])
        response.set_cookie(cookie, value, max_age=page_screens.COLS_COOKIE_MAX_AGE_S, samesite="Lax", httponly=True)
    return response


@require_GET
@dashboard_view
def audit_pages_export(request, audit_id, fmt):
    """The pages on screen (same view, filters and sort, every page of them) as CSV or JSON."""
    audit = _audit(request, audit_id)
    if fmt not in ("csv", "json"):
        raise Http404("No such export")
    if audit.summarised_at is not None:
        return summarised_screen(request, audit, what="Pages", tab="pages", url_name="audits:audit-pages", status=410)
    form = _pages_form(request, audit)
    segment = request_segment(request, audit)
    pages = _filtered_pages(audit, form, segment)
    rows = page_reads.page_export_queryset(
        pages=pages, sort=form.sort_key(), counted=page_reads.page_counts_stored(audit=audit)
    )
    chunks = exports.pages_csv_rows if fmt == "csv" else exports.pages_json_chunks
    content_type = exports.CSV_CONTENT_TYPE if fmt == "csv" else exports.JSON_CONTENT_TYPE
    response = StreamingHttpResponse(chunks(audit, pages=rows), content_type=content_type)
    name = "pages" if form.page_view.key == page_reads.DEFAULT_VIEW else f"pages-{form.page_view.key}"
    name += _segment_suffix(segment)
    response["Content-Disposition"] = f'attachment; filename="{exports.export_filename(audit, name, fmt)}"'
    response["X-Accel-Buffering"] = "no"
    return response


def _links_page(request, page, links, columns, param: str, *, total: int | None = None):
    """Keyset pages of a page's inlinks or outlinks (a hub of a 100,000-page site has 100,000 inlinks); the
    count is exact: an index count on (audit, target_url) or on source_page."""
    total = links.order_by().count() if total is None else total
    return pagination.keyset_paginate(
        links,
        columns=columns,
        cursor=request.GET.get(param),
        tag=link_reads.links_cursor_tag(page.id, param),
        param=param,
        per_page=link_reads.LINKS_PER_PAGE,
        total=total,
    )


@require_GET
@dashboard_view
def page_detail(request, audit_id, page_id):
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        return summarised_screen(request, audit, what="Pages", tab="pages", url_name="audits:audit-pages", status=410)
    page = page_reads.page_for_audit(audit=audit, page_id=page_id)
    inlinks = link_reads.page_inlinks_summary(page=page)
    context = {
        "audit": audit,
        "tab": "pages",
        "page": page,
        "groups": page_reads.page_issue_groups(page=page),
        "serp": page_screens.serp_preview(page),
        "outline": page_screens.heading_outline(page),
        "headers": page_screens.response_headers(page),
        "fields": page_screens.page_fields(page),
        "render_rows": render_comparison(page),  # the HTML as served beside the rendered page (Issue 27 render)
        "inlinks_summary": inlinks,
        "how_found": page_reads.page_how_found(page=page),
        "inlinks": _links_page(
            request,
            page,
            link_reads.page_inlinks(page=page),
            link_reads.INLINK_KEYSET,
            "in",
            total=inlinks.pages,
        ),
        "outlinks": _links_page(request, page, link_reads.page_outlinks(page=page), link_reads.OUTLINK_KEYSET, "out"),
    }
    return render(request, "dashboard/page_detail.html", context)


@require_GET
@dashboard_view
def audit_structure(request, audit_id):
    """The folder tree of the audit's pages, each folder a filter of the pages grid."""
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        return summarised_screen(request, audit, what="Folders", tab="structure", url_name="audits:audit-structure")
    context = {"audit": audit, "tab": "structure", "structure": site_structure(audit=audit)}
    return render(request, "dashboard/structure.html", context)


@require_GET
@dashboard_view
def audit_performance(request, audit_id):
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        what = "Lighthouse results"
        return summarised_screen(request, audit, what=what, tab="performance", url_name="audits:audit-performance")
    sampled = page_screens.lighthouse_pages(audit=audit)
    context = {
        "audit": audit,
        "tab": "performance",
        "sampled": sampled,
        "comparison": page_screens.lighthouse_comparison(sampled),
        "vitals": page_screens.VITALS,
    }
    return render(request, "dashboard/performance.html", context)


@require_GET
@dashboard_view
def lighthouse_report(request, audit_id, result_id):
    """A stored Lighthouse report, served only to the audit's account (never as public media)."""
    audit = _audit(request, audit_id)
    result, path = page_screens.lighthouse_report_path(audit=audit, result_id=result_id)
    filename = f"lighthouse-{result.strategy}-{result.id}.json"
    return FileResponse(path.open("rb"), content_type="application/json", filename=filename)


# Lighthouse's HTML report is its own page (inline scripts and styles): served under a sandbox without
# allow-same-origin, so it runs in an opaque origin and can read nothing of the dashboard (cookies, other pages),
# may load nothing from the network, and may be framed only by the dashboard itself.
LIGHTHOUSE_HTML_CSP = (
    "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox allow-downloads; default-src 'none'; "
    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)


@require_GET
@dashboard_view
def lighthouse_report_html(request, audit_id, result_id):
    """A stored Lighthouse report as Lighthouse's own HTML report, isolated under LIGHTHOUSE_HTML_CSP."""
    audit = _audit(request, audit_id)
    _result, path = page_screens.lighthouse_report_path(audit=audit, result_id=result_id)
    try:
        html_path = lighthouse_report_render(json_path=path)
    except ReportRenderFailed as exc:
        return HttpResponse(
            f"The HTML report could not be made: {exc}", status=503, content_type="text/plain; charset=utf-8"
        )
    response = FileResponse(html_path.open("rb"), content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = LIGHTHOUSE_HTML_CSP
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cross-Origin-Opener-Policy"] = "same-origin"
    return response


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
