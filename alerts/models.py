"""What a project is alerted about after each audit, where alerts go, the outbox of their deliveries and the
in-app notifications (alerts/services.py decides and sends)."""

import uuid

from django.conf import settings
from django.db import models

from audits.secrets import EncryptedTextField


class AlertRule(models.Model):
    """One condition that, true of an audit against its baseline, makes an alert. A new project gets every kind,
    switched on, with its default threshold."""

    class Kind(models.TextChoices):
        BECAME_NON_INDEXABLE = "became-non-indexable", "An indexable page became non-indexable"
        BECAME_BROKEN = "became-broken", "A page became broken (4xx or 5xx)"
        BECAME_REDIRECT = "became-redirect", "A page now redirects"
        NEW_CRITICAL = "new-critical", "A new critical issue type"
        SCORE_DROP = "score-drop", "The health score dropped"
        ROBOTS_BLOCKS = "robots-blocks", "robots.txt now blocks URLs it allowed"
        PAGES_CHANGED = "pages-changed", "The number of crawled pages changed"

    project = models.ForeignKey("audits.Project", on_delete=models.CASCADE, related_name="alert_rules")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    threshold = models.PositiveIntegerField(
        null=True, blank=True, help_text="Score points (score-drop) or percent (pages-changed); empty: the default"
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "kind"]
        constraints = [models.UniqueConstraint(fields=["project", "kind"], name="alert_rule_unique_kind")]

    def __str__(self):
        return f"{self.project}: {self.kind}"


class AlertChannel(models.Model):
    """Where a project's alerts go."""

    class Kind(models.TextChoices):
        EMAIL = "email", "E-mail"
        SLACK = "slack", "Slack (incoming webhook)"
        TEAMS = "teams", "Microsoft Teams (incoming webhook)"
        WEBHOOK = "webhook", "The project's signed webhooks"

    project = models.ForeignKey("audits.Project", on_delete=models.CASCADE, related_name="alert_channels")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    target = EncryptedTextField(
        blank=True,
        help_text="E-mail: addresses, comma-separated (empty: the account's members); Slack, Teams: the incoming "
        "webhook URL (a secret); webhook: empty",
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "created_at", "id"]

    def __str__(self):
        return f"{self.project}: {self.kind}"


class AlertDelivery(models.Model):
    """The outbox: one alert of one audit for one channel, written in the transaction that decides it, sent after,
    retried with backoff. Unique per (channel, audit), so an audit alerts each channel once."""

    class Status(models.TextChoices):
        PENDING = "pending"  # written, or waiting for a retry
        SENDING = "sending"  # claimed by a worker until `lease_until`; a dead worker's claim expires
        SUCCEEDED = "succeeded"
        FAILED = "failed"  # gave up: attempts exhausted or refused for good

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="deliveries")
    audit = models.ForeignKey("audits.Audit", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    audit_ref = models.UUIDField(help_text="The audit's id, kept when the audit is deleted")
    payload = models.JSONField(default=dict, help_text="What the alert says: subject, findings, example URLs, link")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "alert deliveries"
        constraints = [models.UniqueConstraint(fields=["channel", "audit_ref"], name="alert_delivery_unique_audit")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="alert_delivery_due")]

    def __str__(self):
        return f"{self.channel} {self.audit_ref} ({self.status})"


class Notification(models.Model):
    """An alert as the dashboard shows it to one person, until they read it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    project = models.ForeignKey("audits.Project", on_delete=models.CASCADE, related_name="+")
    audit = models.ForeignKey("audits.Audit", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    audit_ref = models.UUIDField()
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    link = models.CharField(max_length=500, blank=True, help_text="The dashboard path it points to")
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["user", "audit_ref"], name="notification_unique_audit_per_user")]
        indexes = [models.Index(fields=["user", "read_at", "created_at"], name="notification_user_unread")]

    def __str__(self):
        return self.title
