"""Sharing an audit's report: the owner's page to make and revoke read-only links, the public report a link
opens (no account; nothing but that report is reachable through it), and the report as a PDF for both."""

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audits.errors import AuditRefused
from audits.models import Audit, ShareLink
from audits.sharing import SHARE_EXPIRY_DAYS, share_link_create, share_link_resolve, share_link_revoke
from audits.sharing import share_links_for_audit as links_for_audit
from dashboard import pdf
from dashboard.report import report_summary
from dashboard.selectors import audit_for_account
from dashboard.views import dashboard_view

CREATED_SESSION_KEY = "share_link_created"  # the new link's plaintext, shown once after the redirect
PUBLIC_HEADERS = {
    "X-Robots-Tag": "noindex, nofollow, noarchive",
    "Referrer-Policy": "no-referrer",  # the token is in the URL: it goes nowhere else
}


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
    context = {
        "report": report_summary(audit=audit),
        "pdf_url": reverse("audits:audit-report-pdf", args=[audit.id]),
        "preview": True,
    }
    return render(request, "dashboard/share/public.html", context)


@require_GET
@dashboard_view
def audit_report_pdf(request, audit_id):
    return _pdf_response(_finished(_audit(request, audit_id)))


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
    audit, link = _shared_audit(token)
    context = {
        "report": report_summary(audit=audit),
        "pdf_url": reverse("shared-report-pdf", args=[token]),
        "expires_at": link.expires_at,
    }
    return _public(render(request, "dashboard/share/public.html", context))


@never_cache
@require_GET
def shared_report_pdf(request, token):
    audit, _ = _shared_audit(token)
    return _public(_pdf_response(audit))


# --- shared ---------------------------------------------------------------------------------------------------


def _finished(audit: Audit) -> Audit:
    if not audit.is_finished:
        raise Http404("The report exists once the audit has ended")
    return audit


def _pdf_response(audit: Audit) -> HttpResponse:
    try:
        body = pdf.report_pdf(report_summary(audit=audit))
    except pdf.PdfUnavailable as exc:
        response = HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "60"
        return response
    name = f"sitewarden-{slugify(audit.project.name) or 'report'}-{audit.created_at:%Y-%m-%d}.pdf"
    response = HttpResponse(body, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
