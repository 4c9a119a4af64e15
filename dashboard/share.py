"""Sharing an audit's report: the owner's page to make and revoke read-only links, the public report a link
opens (no account; nothing but that report is reachable through it), and the report as a PDF for both.

The PDF is printed by a worker once per report and served from storage (audits.report_pdfs, dashboard.pdf): a
request never waits for Chromium; until the PDF is ready it gets a page that reloads itself (202, Retry-After).
The report page and the PDF are rate-limited per link and per client (dashboard.throttling: 429, Retry-After)."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audits.errors import AuditRefused
from audits.models import Audit, ReportPdf, ShareLink
from audits.report_pdfs import (
    PDF_FAILED_RETRY_S,
    report_pdf_get,
    report_pdf_open,
    report_pdf_printing,
    report_pdf_request,
)
from audits.segments import SEGMENT_PARAM, SegmentChoice, UnknownSegment, resolve_segment
from audits.selectors.reports import report_segments
from audits.services import SHARE_EXPIRY_DAYS, share_link_create, share_link_resolve, share_link_revoke
from audits.services import share_links_for_audit as links_for_audit
from dashboard import pdf
from dashboard.report import report_summary
from dashboard.selectors import audit_for_account
from dashboard.throttling import client_ident, first_refusal
from dashboard.views import dashboard_view, request_segment, segment_query_string

CREATED_SESSION_KEY = "share_link_created"  # the new link's plaintext, shown once after the redirect
PUBLIC_HEADERS = {
    "X-Robots-Tag": "noindex, nofollow, noarchive",
    "Referrer-Policy": "no-referrer",  # the token is in the URL: it goes nowhere else
}
PDF_PREPARING_RETRY_S = 5  # the "being prepared" page reloads after this long (a print takes a few seconds)


class ShareLinkForm(forms.Form):
    label = forms.CharField(
        max_length=100, required=False, label="For (optional)", help_text="Who the link is for, to tell links apart"
    )
    expires_in_days = forms.TypedChoiceField(
        label="Expires",
        choices=[("", "Never (until revoked)")]
        + [(str(d), f"After {d} day{'s' if d > 1 else ''}") for d in SHARE_EXPIRY_DAYS],
        coerce=int,
        empty_value=None,
        required=False,
        initial="30",
    )


def _audit(request, audit_id) -> Audit:
    return audit_for_account(account=request.account, audit_id=audit_id)


def _link_state(link: ShareLink, now) -> str:
    if link.revoked_at:
        return "revoked"
    if link.expires_at and link.expires_at <= now:
        return "expired"
    if not getattr(link, "creator_has_access", True):  # audits.sharing: its maker left the account
        return "maker lost access"
    return "active"


# --- the owner's side --------------------------------------------------------------------------------------


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def audit_share(request, audit_id):
    audit = _audit(request, audit_id)
    form = ShareLinkForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                link, token = share_link_create(
                    audit=audit,
                    created_by=request.user,
                    expires_in_days=form.cleaned_data["expires_in_days"],
                    label=form.cleaned_data["label"],
                )
            except AuditRefused as exc:
                form.add_error(None, exc.message)
            else:
                # Post/redirect/get: a reload shows the link again instead of making a second one.
                request.session[CREATED_SESSION_KEY] = {"id": link.id, "token": token}
                return redirect("audits:audit-share", audit_id=audit.id)
    created = None
    just_made = request.session.pop(CREATED_SESSION_KEY, None) if request.method == "GET" else None
    now = timezone.now()
    links = list(links_for_audit(audit=audit))
    for link in links:
        link.state = _link_state(link, now)
        if just_made and link.id == just_made["id"]:
            url = request.build_absolute_uri(reverse("shared-report", args=[just_made["token"]]))
            created = {"url": url, "label": link.label}
    context = {"audit": audit, "tab": "share", "form": form, "links": links, "created": created}
    return render(request, "dashboard/share/manage.html", context, status=status)


@require_POST
@dashboard_view
def audit_share_revoke(request, audit_id, link_id):
    audit = _audit(request, audit_id)
    link = ShareLink.objects.filter(audit=audit, id=link_id).first()
    if link is None:
        raise Http404("No such link")
    if share_link_revoke(link=link):
        messages.success(request, "Link revoked: it shows nothing from now on.")
    return redirect("audits:audit-share", audit_id=audit.id)


@require_GET
@dashboard_view
def audit_report_preview(request, audit_id):
    """The report exactly as a share link shows it, for the owner to check before sending one."""
    audit = _finished(_audit(request, audit_id))
    segment = request_segment(request, audit)
    context = {
        "report": report_summary(audit=audit, segment=segment),
        "pdf_url": reverse("audits:audit-report-pdf", args=[audit.id]) + segment_query_string(segment),
        "preview": True,
        "sections": _section_links(audit, reverse("audits:audit-report-preview", args=[audit.id]), segment),
    }
    return render(request, "dashboard/share/public.html", context)


@require_GET
@dashboard_view
def audit_report_pdf(request, audit_id):
    audit = _audit(request, audit_id)
    segment = request_segment(request, audit)
    back_url = reverse("audits:audit-report-preview", args=[audit.id]) + segment_query_string(segment)
    wait = first_refusal(("report_pdf:client", client_ident(request), settings.REPORT_PDF_RATE_PER_CLIENT))
    if wait is not None:
        return _too_many(request, wait, back_url=back_url)
    return _pdf_response(request, audit, back_url=back_url, segment=segment)


# --- the public side: what a link opens --------------------------------------------------------------------


def _shared_audit(token: str) -> tuple[Audit, ShareLink]:
    link = share_link_resolve(token=token)
    if link is None:
        raise Http404("No such report")  # unknown, revoked and expired alike
    return link.audit, link


def _public(response: HttpResponse) -> HttpResponse:
    for name, value in PUBLIC_HEADERS.items():
        response[name] = value
    return response


@never_cache
@require_GET
def shared_report(request, token):
    if (
        wait := first_refusal(("shared_report:addr", client_ident(request), settings.SHARED_REPORT_RATE_PER_ADDRESS))
    ) is not None:
        return _public(_too_many(request, wait))
    audit, link = _shared_audit(token)
    if (wait := first_refusal(("shared_report:link", str(link.id), settings.SHARED_REPORT_RATE_PER_LINK))) is not None:
        return _public(_too_many(request, wait))
    try:
        segment = resolve_segment(audit=audit, param=request.GET.get(SEGMENT_PARAM))
    except UnknownSegment as exc:
        return _public(_unknown_section(request, exc, back_url=reverse("shared-report", args=[token])))
    context = {
        "report": report_summary(audit=audit, segment=segment),
        "pdf_url": reverse("shared-report-pdf", args=[token]) + segment_query_string(segment),
        "expires_at": link.expires_at,
        "sections": _section_links(audit, reverse("shared-report", args=[token]), segment),
    }
    return _public(render(request, "dashboard/share/public.html", context))


@never_cache
@require_GET
def shared_report_pdf(request, token):
    back_url = reverse("shared-report", args=[token])
    if (
        wait := first_refusal(("report_pdf:client", client_ident(request), settings.REPORT_PDF_RATE_PER_CLIENT))
    ) is not None:
        return _public(_too_many(request, wait, back_url=back_url))
    audit, link = _shared_audit(token)
    if (wait := first_refusal(("report_pdf:link", str(link.id), settings.REPORT_PDF_RATE_PER_LINK))) is not None:
        return _public(_too_many(request, wait, back_url=back_url))
    try:
        segment = resolve_segment(audit=audit, param=request.GET.get(SEGMENT_PARAM))
    except UnknownSegment as exc:
        return _public(_unknown_section(request, exc, back_url=back_url))
    return _public(_pdf_response(request, audit, back_url=back_url + segment_query_string(segment), segment=segment))


# --- shared ---------------------------------------------------------------------------------------------------


def _finished(audit: Audit) -> Audit:
    if not audit.is_finished:
        raise Http404("The report exists once the audit has ended")
    return audit


def _wait_page(request, *, status: int, title: str, message: str, retry_after_s: int | None, back_url: str | None):
    """A small page instead of the PDF: why not now, and (with Retry-After) a reload when it may be there."""
    context = {"title": title, "message": message, "retry_after_s": retry_after_s, "back_url": back_url}
    response = render(request, "dashboard/share/wait.html", context, status=status)
    if retry_after_s:
        response["Retry-After"] = str(retry_after_s)
    return response


def _too_many(request, retry_after_s: int, *, back_url: str | None = None) -> HttpResponse:
    return _wait_page(
        request,
        status=429,
        title="Too many requests",
        message="This report has been asked for too often in a short time.",
        retry_after_s=retry_after_s,
        back_url=back_url,
    )


def _unknown_section(request, exc: UnknownSegment, *, back_url: str) -> HttpResponse:
    """A shared report asked for a segment its project does not have (any more): said, 400, never the whole site
    under the segment's name."""
    return _wait_page(
        request, status=400, title="Unknown section", message=exc.message, retry_after_s=None, back_url=back_url
    )


def _section_links(audit: Audit, base_url: str, segment: SegmentChoice | None) -> list[dict]:
    """The whole site and each segment of it with pages (audits.selectors.reports.report_segments), as links to the
    shared report read for it."""
    rows = [{"name": "Whole site", "url": base_url, "current": segment is None}]
    rows += [
        {
            "name": row["label"],
            "url": base_url + segment_query_string(row["choice"]),
            "current": segment is not None and segment.key == row["choice"].key,
        }
        for row in report_segments(audit=audit)
    ]
    return rows if len(rows) > 1 else []


def _pdf_response(request, audit: Audit, *, back_url: str, segment: SegmentChoice | None = None) -> HttpResponse:
    """The stored PDF of what the report shows now; or, while a worker prints it, a page that reloads itself.
    A running audit has no PDF yet (its figures still move): refused, 409."""
    if not audit.is_finished:
        return _wait_page(
            request,
            status=409,
            title="Not yet",
            message="This audit is still running: its report can be printed once it has ended.",
            retry_after_s=None,
            back_url=None,
        )
    key = "" if segment is None else segment.key
    if report_pdf_printing(audit=audit, segment=key):
        return _preparing(request, back_url=back_url)
    fingerprint = pdf.html_fingerprint(pdf.report_html(report_summary(audit=audit, segment=segment)))
    stored = report_pdf_get(audit=audit, fingerprint=fingerprint) or report_pdf_request(
        audit=audit, fingerprint=fingerprint, segment=key
    )
    if stored.status == ReportPdf.Status.READY:
        part = f"-{slugify(segment.name)}" if segment is not None and slugify(segment.name) else ""
        name = f"sitewarden-{slugify(audit.project.name) or 'report'}{part}-{audit.created_at:%Y-%m-%d}.pdf"
        return FileResponse(report_pdf_open(stored), as_attachment=True, filename=name, content_type="application/pdf")
    if stored.status == ReportPdf.Status.FAILED:
        return _wait_page(
            request,
            status=503,
            title="The PDF could not be made",
            message=stored.error or "Chromium could not print the report.",
            retry_after_s=PDF_FAILED_RETRY_S,
            back_url=back_url,
        )
    return _preparing(request, back_url=back_url)


def _preparing(request, *, back_url: str) -> HttpResponse:
    return _wait_page(
        request,
        status=202,
        title="The PDF is being prepared",
        message="The report is being printed to PDF; the download starts by itself once it is ready.",
        retry_after_s=PDF_PREPARING_RETRY_S,
        back_url=back_url,
    )
