"""The "Report branding" screen: how the account's client reports (the shared page and its PDF) present it — name and
contact line on the cover, logo, accent colour, paper size. The form shows errors beside their fields; the one write
path is accounts.branding.report_branding_save, which checks everything again.

Every member of the account may change it: accounts have no roles (accounts.models.Membership is a plain link)."""

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.branding import LOGO_MAX_BYTES, branding_for_account, colour_check, logo_check, report_branding_save
from accounts.models import ReportBranding
from audits.errors import AuditRefused
from audits.models import Audit
from dashboard.views import dashboard_view


class ReportBrandingForm(forms.Form):
    name = forms.CharField(
        max_length=120,
        required=False,
        label="Prepared by",
        help_text="Your or your agency's name, on the report's cover. Empty: “Sitewarden”.",
    )
    contact = forms.CharField(
        max_length=200,
        required=False,
        label="Contact line",
        help_text="Under the name on the cover, e.g. a person, an e-mail address and a phone number.",
    )
    accent_color = forms.CharField(
        max_length=7,
        label="Accent colour",
        help_text="The cover's band and the headings. Text on it is set black or white, whichever reads better.",
        widget=forms.TextInput(attrs={"type": "color"}),
    )
    logo = forms.FileField(
        required=False,
        label="Logo",
        help_text=f"PNG or JPEG, at most {LOGO_MAX_BYTES // 1024} KB. SVG is not accepted.",
        widget=forms.FileInput(attrs={"accept": "image/png,image/jpeg"}),
    )
    remove_logo = forms.BooleanField(required=False, label="Remove the current logo")
    paper_size = forms.ChoiceField(
        label="PDF paper size", choices=ReportBranding.PaperSize.choices, widget=forms.RadioSelect
    )

    def clean_accent_color(self):
        try:
            return colour_check(self.cleaned_data["accent_color"])
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message) from exc

    def clean_logo(self):
        upload = self.cleaned_data.get("logo")
        if not upload:
            return None
        data = upload.read(LOGO_MAX_BYTES + 1)  # never more than one byte past the limit into memory
        if (upload.size or 0) > LOGO_MAX_BYTES or len(data) > LOGO_MAX_BYTES:
            raise forms.ValidationError(
                f"The logo is {max(upload.size or 0, len(data)) // 1024} KB; at most {LOGO_MAX_BYTES // 1024} KB."
            )
        try:
            logo_check(data)
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message) from exc
        return data


def _latest_finished_audit(account) -> Audit | None:
    """The audit the preview link opens: the account's newest ended one."""
    return (
        Audit.objects.filter(project__account=account)
        .exclude(status=Audit.Status.RUNNING)
        .order_by("-created_at")
        .first()
    )


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def report_branding(request):
    account = request.account
    current = branding_for_account(account_id=account.id)
    initial = {
        "name": current.name if current.is_set and current.name != "Sitewarden" else "",
        "contact": current.contact,
        "accent_color": current.accent,
        "paper_size": current.paper_size,
    }
    form = ReportBrandingForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            report_branding_save(
                account=account,
                name=data["name"],
                contact=data["contact"],
                accent_color=data["accent_color"],
                paper_size=data["paper_size"],
                logo=data["logo"],
                remove_logo=data["remove_logo"],
            )
        except AuditRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, "Report branding saved: reports and their PDFs use it from now on.")
            return redirect("audits:report-branding")
    latest = _latest_finished_audit(account)
    context = {
        "form": form,
        "branding": current,
        "preview_url": reverse("audits:audit-report-preview", args=[latest.id]) if latest else None,
    }
    return render(request, "dashboard/branding.html", context, status=400 if form.errors else 200)
