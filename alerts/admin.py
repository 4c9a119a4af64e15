"""The operators' admin for alerts: rules and channels (saved through alerts.services, so a channel's target meets
the same checks as the dashboard's), the outbox of deliveries (read-only, with "send again") and notifications."""

from django import forms
from django.contrib import admin, messages

from alerts.models import AlertChannel, AlertDelivery, AlertRule, Notification
from alerts.services import alert_delivery_resend, alert_rules_set
from alerts.services.channels import (
    alert_channel_create,
    alert_channel_target_checked,
    alert_channel_update,
    alert_channel_validate,
)
from audits.errors import AuditRefused
from config.admin import INLINE_ROWS, ReadOnlyAdmin, ReadOnlyInline


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ("project", "kind", "enabled", "threshold")
    list_filter = ("kind", "enabled")
    search_fields = ("project__name",)
    raw_id_fields = ("project",)
    readonly_fields = ("project", "kind", "created_at")

    def has_add_permission(self, request):
        return False  # every project has each kind from its creation

    def save_model(self, request, obj, form, change):
        try:
            alert_rules_set(project=obj.project, rules={obj.kind: {"enabled": obj.enabled, "threshold": obj.threshold}})
        except AuditRefused as exc:
            self.message_user(request, exc.message, messages.ERROR)


class AlertChannelForm(forms.ModelForm):
    class Meta:
        model = AlertChannel
        fields = ("project", "kind", "target", "enabled")

    def clean(self):
        """The service's rules, without a write (the admin saves after its inlines are valid too)."""
        cleaned = super().clean()
        target = cleaned.get("target", "")
        try:
            if self.instance.pk:
                cleaned["target"] = alert_channel_target_checked(kind=self.instance.kind, target=target)
            elif cleaned.get("project") is not None and cleaned.get("kind"):
                cleaned["target"] = alert_channel_validate(
                    project=cleaned["project"], kind=cleaned["kind"], target=target
                )
        except AuditRefused as exc:
            raise forms.ValidationError({exc.field if exc.field in self.fields else None: exc.message}) from exc
        return cleaned


class AlertDeliveryInline(ReadOnlyInline):
    model = AlertDelivery
    fields = ("created_at", "audit_ref", "status", "attempts", "next_attempt_at", "last_error")
    readonly_fields = fields
    ordering = ("-created_at",)
    verbose_name_plural = f"deliveries (latest {INLINE_ROWS})"


@admin.register(AlertChannel)
class AlertChannelAdmin(admin.ModelAdmin):
    form = AlertChannelForm
    list_display = ("project", "kind", "enabled", "created_at")
    list_filter = ("kind", "enabled")
    search_fields = ("project__name",)
    raw_id_fields = ("project",)
    inlines = [AlertDeliveryInline]

    def get_readonly_fields(self, request, obj=None):
        return ("project", "kind") if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            alert_channel_update(channel=obj, target=obj.target, enabled=obj.enabled)
            return
        saved = alert_channel_create(project=obj.project, kind=obj.kind, target=obj.target, enabled=obj.enabled)
        obj.pk, obj.created_at = saved.pk, saved.created_at


@admin.register(AlertDelivery)
class AlertDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "channel", "audit_ref", "status", "attempts", "next_attempt_at", "last_error")
    list_filter = ("status", "channel__kind")
    search_fields = ("=audit_ref", "channel__project__name")
    list_select_related = ("channel", "channel__project")
    actions = ["send_again"]

    @admin.action(description="Send again (fresh attempts)")
    def send_again(self, request, queryset):
        for delivery in queryset:
            alert_delivery_resend(delivery=delivery)
        self.message_user(request, f"{queryset.count()} alert delivery(ies) queued again.", messages.SUCCESS)


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "project", "title", "read_at")
    list_filter = ("read_at",)
    search_fields = ("=audit_ref", "user__username", "title")
    list_select_related = ("user", "project")
