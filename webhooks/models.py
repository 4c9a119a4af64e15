"""A project's webhooks and the log of what was sent to them.

The tables keep their names from when these models lived in `audits` (moved with
SeparateDatabaseAndState, nothing renamed).
"""

import uuid

from django.db import models


class Webhook(models.Model):
    """Where a project's audit-finished notifications go; each POST is signed with the secret."""

    project = models.ForeignKey("audits.Project", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2048)
    secret = models.CharField(max_length=128, help_text="HMAC-SHA256 key; shown once when generated")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "audits_webhook"
        ordering = ["created_at", "id"]

    def __str__(self):
        return self.url


class WebhookDelivery(models.Model):
    """One event sent to one webhook, with its retry log. Unique per (webhook, event, audit)."""

    class Status(models.TextChoices):
        PENDING = "pending"  # queued or waiting for a retry
        SUCCEEDED = "succeeded"
        FAILED = "failed"  # gave up: attempts exhausted, refused address, or a 4xx answer

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    audit = models.ForeignKey("audits.Audit", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    audit_ref = models.UUIDField(help_text="The audit's id, kept when the audit is deleted")
    event = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_response_code = models.IntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "audits_webhookdelivery"
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["webhook", "event", "audit_ref"], name="webhook_delivery_unique_event")
        ]
        indexes = [models.Index(fields=["webhook", "created_at"], name="webhook_delivery_created")]

    def __str__(self):
        return f"{self.event} -> {self.webhook_id} ({self.status})"
