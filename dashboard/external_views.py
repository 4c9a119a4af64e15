"""The dashboard's External screen: an audit's external link targets (what asking each once answered) with counts
per outcome as filters, keyset pages, one target's linking pages with their anchors, and the targets' exports.
Reads through audits.selectors.external; like every audit screen, scoped to the signed-in user's account."""

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audits import exports
from audits.models import Audit, ExternalLink
from audits.selectors import external as external_reads
from audits.selectors import pagination
from config.inputs import text_problem
from dashboard import selectors as dashboard
from dashboard.retention import summarised_screen
from dashboard.views import dashboard_view

Outcome = ExternalLink.Outcome

# How each outcome looks (a badge class of static/sitewarden.css): working, broken, or not known.
OUTCOME_TONES = {
    Outcome.OK: "status-completed",
    Outcome.REDIRECTED: "status-completed",
    Outcome.UNVERIFIED: "status-cancelled",
    Outcome.REFUSED: "status-cancelled",
    Outcome.UNCHECKED: "status-cancelled",
}
PROBLEM_TONE = "status-failed"
URL_CONTAINS_MAX_CHARS = 500  # the search box's bound, as the pages grid's
HOST_MAX_CHARS = 255  # ExternalLink.host
OUTCOME_MAX_CHARS = 40  # longer than any ExternalLink.Outcome value

EXPORTS = {
    ("external-links", "csv"): (exports.external_links_csv_rows, exports.CSV_CONTENT_TYPE),
    ("external-links", "json"): (exports.external_links_json_chunks, exports.JSON_CONTENT_TYPE),
    ("external-link-pages", "csv"): (exports.external_link_pages_csv_rows, exports.CSV_CONTENT_TYPE),
    ("external-link-pages", "json"): (exports.external_link_pages_json_chunks, exports.JSON_CONTENT_TYPE),
}


def outcome_tone(outcome: str) -> str:
    return OUTCOME_TONES.get(outcome, PROBLEM_TONE)


def _audit(request, audit_id) -> Audit:
    return dashboard.audit_for_account(account=request.account, audit_id=audit_id)


def _text(request, name: str, max_chars: int) -> tuple[str, bool]:
    """A text filter from ?query, bounded, and whether it was refused: a NUL (PostgreSQL refuses it: a 500) or a
    lone surrogate is no part of any URL, so such a value filters nothing and the screen says so."""
    value = request.GET.get(name, "").strip()[:max_chars]
    return ("", True) if text_problem(value) else (value, False)


def _filters(request) -> tuple[dict, bool]:
    """The list's filters from ?query, each bounded (an unknown outcome is kept so the screen can say so), and
    whether a value was left out."""
    host, host_refused = _text(request, "host", HOST_MAX_CHARS)
    url_contains, url_refused = _text(request, "q", URL_CONTAINS_MAX_CHARS)
    outcome, outcome_refused = _text(request, "outcome", OUTCOME_MAX_CHARS)
    filters = {
        "outcome": outcome,
        "problems": request.GET.get("problems") in ("1", "true", "on"),
        "host": host,
        "url_contains": url_contains,
    }
    return filters, host_refused or url_refused or outcome_refused


@require_GET
@dashboard_view
def audit_external(request, audit_id):
    """The audit's external targets: counts per outcome (each a filter), a search by URL and host, a sort, and
    the targets a screen at a time, each with its linking pages' count leading to them."""
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        return summarised_screen(
            request, audit, what="External links", tab="external", url_name="audits:audit-external"
        )
    filters, refused = _filters(request)
    sort = external_reads.external_sort_key(request.GET.get("sort"))
    counts = external_reads.external_counts(audit=audit)
    links = external_reads.external_link_filter(audit=audit, **filters)
    filtered = any(filters.values())
    targets = pagination.keyset_paginate(
        external_reads.external_link_list(links, sort=sort),
        columns=external_reads.external_keyset_columns(sort),
        cursor=request.GET.get("cursor"),
        tag=external_reads.external_cursor_tag(audit.id, sort),
        per_page=external_reads.EXTERNAL_PER_PAGE,
        total=links.count() if filtered else counts.total,
    )
    for link in targets:
        link.tone = outcome_tone(link.outcome)
    context = {
        "audit": audit,
        "tab": "external",
        "checking_on": external_reads.external_checking_on(audit=audit),
        "counts": counts,
        "shown_counts": [row for row in counts.by_outcome if row.count],
        "targets": targets,
        "filters": filters,
        "filtered": filtered,
        "refused": refused,
        "unknown_outcome": bool(filters["outcome"]) and not external_reads.external_outcome_valid(filters["outcome"]),
        "sort": sort,
        "sort_choices": external_reads.EXTERNAL_SORT_LABELS.items(),
    }
    return render(request, "dashboard/external.html", context)


@require_GET
@dashboard_view
def audit_external_link(request, audit_id, link_id):
    """One external target: what asking it answered, and the crawled pages linking to it with their anchors."""
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        return summarised_screen(
            request, audit, what="External links", tab="external", url_name="audits:audit-external", status=410
        )
    link = external_reads.external_link_get(audit=audit, link_id=link_id)
    if link is None:
        raise Http404("No such external link in this audit")
    link.tone = outcome_tone(link.outcome)
    pages = pagination.keyset_paginate(
        external_reads.external_linking_pages(audit=audit, url=link.url),
        columns=external_reads.LINKING_PAGES_KEYSET,
        cursor=request.GET.get("cursor"),
        tag=external_reads.external_linking_cursor_tag(link.id),
        per_page=external_reads.LINKING_PAGES_PER_PAGE,
        total=external_reads.external_linking_pages_count(audit=audit, url=link.url),
    )
    context = {"audit": audit, "tab": "external", "link": link, "pages": pages}
    return render(request, "dashboard/external_link.html", context)


@require_GET
@dashboard_view
def audit_external_export(request, audit_id, what, fmt):
    """The audit's external targets (`external-links`) or their linking pages (`external-link-pages`) as CSV or
    JSON, streamed."""
    audit = _audit(request, audit_id)
    if audit.summarised_at is not None:
        return summarised_screen(
            request, audit, what="External links", tab="external", url_name="audits:audit-external", status=410
        )
    if (what, fmt) not in EXPORTS:
        raise Http404("No such export")
    chunks, content_type = EXPORTS[(what, fmt)]
    response = StreamingHttpResponse(chunks(audit), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{exports.export_filename(audit, what, fmt)}"'
    response["X-Accel-Buffering"] = "no"
    return response
