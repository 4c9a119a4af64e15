"""The operators' admin for webhooks and their deliveries; saved with webhooks.services (the SSRF policy
applies; the signing secret is shown once, in a message)."""

from django import forms
from django.contrib import admin, messages

from audits.errors import AuditRefused
from audits.services import url_checked
from config.admin import INLINE_ROWS, URL_FIELDS_HTTPS, ReadOnlyAdmin, ReadOnlyInline
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import webhook_create, webhook_delivery_resend, webhook_update


class WebhookForm(forms.ModelForm):
    url = forms.URLField(max_length=2048, assume_scheme="https")

    class Meta:
        model = Webhook
        fields = ("project", "url", "enabled")

    def clean_url(self):
        try:
            return url_checked(self.cleaned_data["url"], field="url")
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from exc


class DeliveryInline(ReadOnlyInline):
    model = WebhookDelivery
    fields = ("created_at", "event", "audit_ref", "status", "attempts", "last_response_code", "last_error")
    readonly_fields = fields
    ordering = ("-created_at",)
    verbose_name_plural = f"deliveries (latest {INLINE_ROWS})"


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    formfield_overrides = URL_FIELDS_HTTPS
    form = WebhookForm
    list_display = ("url", "project", "enabled", "created_at")
    list_filter = ("enabled",)
    search_fields = ("url", "project__name")
    raw_id_fields = ("project",)
    inlines = [DeliveryInline]

    def get_readonly_fields(self, request, obj=None):
        return ("project",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            webhook_update(webhook=obj, url=obj.url, enabled=obj.enabled)
            return
        webhook = webhook_create(project=obj.project, url=obj.url, enabled=obj.enabled)
        obj.pk, obj.secret, obj.created_at = webhook.pk, webhook.secret, webhook.created_at
        self.message_user(
            request,
            f"Signing secret of this webhook: {webhook.secret} (give it to the receiver; it is not shown again).",
            messages.WARNING,
        )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "webhook", "event", "audit_ref", "status", "attempts", "last_response_code")
    list_filter = ("status", "event")
    search_fields = ("=audit_ref", "webhook__url")
    list_select_related = ("webhook",)
    actions = ["send_again"]

    @admin.action(description="Send again (fresh attempts)")
    def send_again(self, request, queryset):
        for delivery in queryset:
            webhook_delivery_resend(delivery=delivery)
        self.message_user(request, f"{queryset.count()} delivery(ies) queued again.", messages.SUCCESS)
