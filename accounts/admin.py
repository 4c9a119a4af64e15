"""The operators' admin for plans, accounts (with their credit ledger) and API tokens.

API tokens are created and revoked with accounts.tokens: the plaintext is shown once, in a message. Scope and
expiry are chosen when a token is made and never changed afterwards (make a new token instead).
"""

from django import forms
from django.contrib import admin, messages

from accounts.branding import colour_check, logo_check, report_branding_save
from accounts.models import Account, ApiToken, CreditEntry, Membership, Plan, ReportBranding
from accounts.selectors import credits_used_this_month
from accounts.tokens import token_create, token_expiry_check, token_revoke
from audits.errors import AuditRefused
from config.admin import INLINE_ROWS, ReadOnlyAdmin, ReadOnlyInline

# --- accounts, plans, credits ----------------------------------------------------------------------------


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ("name", "pages_per_audit", "running_audits", "monthly_units")


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ("user",)


class CreditEntryInline(ReadOnlyInline):
    model = CreditEntry
    fields = ("created_at", "kind", "units", "audit_ref")
    readonly_fields = fields
    ordering = ("-created_at",)
    show_change_link = False
    verbose_name_plural = f"credit ledger (latest {INLINE_ROWS})"


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("name", "plan", "pages_per_audit", "running_audits", "monthly_units", "units_used", "created_at")
    list_select_related = ("plan",)
    search_fields = ("name",)
    readonly_fields = ("units_used",)
    inlines = [MembershipInline, CreditEntryInline]

    @admin.display(description="pages per audit")
    def pages_per_audit(self, obj):
        return obj.plan.pages_per_audit

    @admin.display(description="running audits")
    def running_audits(self, obj):
        return obj.plan.running_audits

    @admin.display(description="monthly units")
    def monthly_units(self, obj):
        return obj.plan.monthly_units

    @admin.display(description="units used this month")
    def units_used(self, obj):
        return credits_used_this_month(obj) if obj.pk else 0


@admin.register(CreditEntry)
class CreditEntryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "account", "kind", "units", "audit_ref")
    list_filter = ("kind", "account")
    search_fields = ("=audit_ref",)

    def has_delete_permission(self, request, obj=None):
        return False  # the ledger is append-only


# --- tokens ---------------------------------------------------------------------------------------------


class ApiTokenAddForm(forms.ModelForm):
    expires_on = forms.DateField(
        required=False, help_text="The token stops working at the start of this day (UTC). Empty: until revoked."
    )

    class Meta:
        model = ApiToken
        fields = ("user", "name", "scope")

    def clean_expires_on(self):
        expires_on = self.cleaned_data["expires_on"]
        try:
            token_expiry_check(expires_on)
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None
        return expires_on


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "scope", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("scope", "revoked_at")
    search_fields = ("name", "prefix", "user__username")
    list_select_related = ("user",)
    raw_id_fields = ("user",)
    actions = ["revoke"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiTokenAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("user", "name", "scope", "expires_on")
        return ("user", "account", "name", "scope", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("user", "account", "scope", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at")

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name"])
            return
        token, plaintext = token_create(
            user=obj.user, name=obj.name, scope=obj.scope, expires_on=form.cleaned_data.get("expires_on")
        )
        obj.pk, obj.prefix, obj.token_hash, obj.created_at = token.pk, token.prefix, token.token_hash, token.created_at
        obj.account_id, obj.expires_at = token.account_id, token.expires_at
        self.message_user(
            request,
            f"API token for {obj.user}: {plaintext} — copy it now, it is stored hashed and never shown again.",
            messages.WARNING,
        )

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        revoked = sum(token_revoke(token=token) for token in queryset)
        self.message_user(request, f"{revoked} token(s) revoked.", messages.SUCCESS)


# --- report branding -------------------------------------------------------------------------------------------


class ReportBrandingAdminForm(forms.ModelForm):
    """The admin's branding form: every value goes through accounts.branding.report_branding_save (the one write
    path), which checks the colour and recognises the logo by its bytes."""

    logo_upload = forms.FileField(required=False, label="Logo", help_text="PNG or JPEG, at most 512 KB")
    remove_logo = forms.BooleanField(required=False)

    class Meta:
        model = ReportBranding
        fields = ("account", "name", "contact", "accent_color", "paper_size")

    # Checked here so an error shows beside its field; saved for real (and checked again) in save_model.
    def clean_accent_color(self):
        try:
            return colour_check(self.cleaned_data.get("accent_color", ""))
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message) from exc

    def clean_logo_upload(self):
        upload = self.cleaned_data.get("logo_upload")
        if not upload:
            return None
        data = upload.read()
        try:
            logo_check(data)
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(ReportBranding)
class ReportBrandingAdmin(admin.ModelAdmin):
    form = ReportBrandingAdminForm
    list_display = ("account", "name", "accent_color", "paper_size", "has_logo", "updated_at")
    list_select_related = ("account",)
    search_fields = ("account__name", "name")
    raw_id_fields = ("account",)

    def get_readonly_fields(self, request, obj=None):
        return ("account",) if obj is not None else ()  # a branding stays with its account

    @admin.display(boolean=True, description="logo")
    def has_logo(self, obj):
        return bool(obj.logo_type)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        saved = report_branding_save(
            account=data.get("account") or obj.account,
            name=data.get("name", ""),
            contact=data.get("contact", ""),
            accent_color=data["accent_color"],
            paper_size=data["paper_size"],
            logo=data.get("logo_upload"),
            remove_logo=data.get("remove_logo", False),
        )
        obj.pk = saved.pk
