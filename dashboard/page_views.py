"""The dashboard's page screens of an audit: the pages grid (views, filters, sorts, the column chooser) and its
exports, one page with its findings, inlinks and outlinks, the Structure tab's folder tree and the Performance
tab with its stored Lighthouse reports (JSON, and Lighthouse's own HTML under a sandbox). Like every audit
screen, scoped to the signed-in user's account."""

from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audits import exports
from audits.checks.render import render_comparison
from audits.segments import SegmentChoice
from audits.selectors import links as link_reads
from audits.selectors import pages as page_reads
from audits.selectors import pagination
from audits.services import ReportRenderFailed, lighthouse_report_render
from audits.stats import page_status_total
from dashboard import pages as page_screens
from dashboard.forms import PageFilterForm
from dashboard.retention import summarised_screen
from dashboard.structure import site_structure
from dashboard.views import _audit, _segment_context, _segment_suffix, dashboard_view, request_segment


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


def _grid_total(audit, pages, filters: dict, *, narrow: bool, whole_site: bool) -> int:
    """The grid's size without a COUNT(*) where it is known: unfiltered, the audit's counter; filtered by a status
    alone over the whole site, the pages finalize counted per code (audits.stats.page_status_total)."""
    if not narrow:
        return audit.pages_crawled
    if whole_site and page_screens.page_filters_status_only(filters):
        stored = page_status_total(audit=audit, status=filters["status"])
        if stored is not None:
            return stored
    return pages.count()


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
    counted = link_reads.page_counts_stored(audit=audit)
    # Unfiltered, a counted audit's grid is sorted on its narrow counts rows (no index serves most sorts).
    keys = page_reads.page_sort_keys(audit=audit, view=view.key, sort=sort) if counted and not narrow else None
    context = {
        "audit": audit,
        "tab": "pages",
        "form": form,
        "view": view,
        "views": page_reads.VIEWS.values(),
        "columns": columns,
        "column_keys": [c.key for c in columns],
        "pages": pagination.keyset_paginate(
            page_reads.page_list(pages=pages, columns=columns, sort=sort, counted=counted),
            columns=page_reads.page_keyset_columns(sort, counted),
            cursor=request.GET.get("cursor"),
            tag=page_reads.grid_cursor_tag(audit.id, sort),
            total=_grid_total(audit, pages, filters, narrow=narrow, whole_site=segment is None),
            total_is_estimate=not narrow and audit.status == audit.Status.RUNNING,
            keys_first=True,  # most sorts have no index: the whole audit is sorted on its keys alone
            keys=keys,
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
        pages=pages, sort=form.sort_key(), counted=link_reads.page_counts_stored(audit=audit)
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
