"""Who may use what: plans, accounts, memberships, the credit ledger and API tokens.

The tables keep their names from when these models lived in `audits` (moved with
SeparateDatabaseAndState, nothing renamed).
"""

from django.conf import settings
from django.db import models


class Plan(models.Model):
    """What an account may use: pages per audit, audits running at once, capacity units per month."""

    name = models.CharField(max_length=100, unique=True)
    pages_per_audit = models.PositiveIntegerField(default=10_000)
    running_audits = models.PositiveIntegerField(default=3)
    monthly_units = models.PositiveIntegerField(default=100_000, help_text="Capacity units (pages) per month")

    class Meta:
        db_table = "audits_plan"

    def __str__(self):
        return self.name


class Account(models.Model):
    """Owns projects and users; every object a person sees is scoped to their account."""

    name = models.CharField(max_length=200)
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="accounts")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "audits_account"

    def __str__(self):
        return self.name


class Membership(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        db_table = "audits_membership"

    def __str__(self):
        return f"{self.user} @ {self.account}"


class CreditEntry(models.Model):
    """Credits ledger: reserve at start, charge what was crawled at completion, release the reservation
    when the audit ends. One entry per (audit, kind), so no retry charges twice."""

    class Kind(models.TextChoices):
        RESERVE = "reserve"
        CHARGE = "charge"
        RELEASE = "release"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="credit_entries")
    audit = models.ForeignKey("audits.Audit", on_delete=models.SET_NULL, null=True, blank=True, related_name="credits")
    audit_ref = models.UUIDField(help_text="The audit's id, kept when the audit is deleted")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    units = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "audits_creditentry"
        constraints = [models.UniqueConstraint(fields=["audit_ref", "kind"], name="credit_unique_kind_per_audit")]
        indexes = [models.Index(fields=["account", "created_at"], name="credit_account_created")]
        verbose_name_plural = "credit entries"

    def __str__(self):
        return f"{self.kind} {self.units} ({self.audit_ref})"


class ApiToken(models.Model):
    """A per-user API token. Only its sha256 is stored; the plaintext is shown once, at creation.

    `prefix` (the first characters of the plaintext) finds the row without scanning; the hash decides.
    """

    class Scope(models.TextChoices):
        READ = "read", "Read only"
        FULL = "full", "Full access"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    # The account the token was granted in: it stops working when its user leaves that account.
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens", editable=False
    )
    name = models.CharField(max_length=100)
    scope = models.CharField(
        max_length=8,
        choices=Scope.choices,
        default=Scope.FULL,
        help_text="Read only: reads, never a write (no start, cancel, create, change or delete).",
    )
    prefix = models.CharField(max_length=16, db_index=True, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False, help_text="sha256 hex of the token")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: until revoked")
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "audits_apitoken"
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def read_only(self) -> bool:
        return self.scope != self.Scope.FULL


class ReportBranding(models.Model):
    """How an account's client reports (the shared page and its PDF) present it: the name and contact line on the
    cover, a logo, an accent colour and the PDF's paper size. Written through accounts.branding only."""

    class PaperSize(models.TextChoices):
        A4 = "A4", "A4"
        LETTER = "Letter", "US Letter"

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="report_branding")
    name = models.CharField(max_length=120, blank=True, help_text="Who prepared the report, on its cover")
    contact = models.CharField(max_length=200, blank=True, help_text="A contact line under the name")
    accent_color = models.CharField(max_length=7, default="#1f4e79", help_text="#rrggbb")
    # The logo's bytes (PNG or JPEG, at most accounts.branding.LOGO_MAX_BYTES): embedded in the report as a data:
    # URI, because the PDF's printer fetches nothing, so a new logo is a new report fingerprint.
    logo = models.BinaryField(blank=True, default=b"", editable=False)
    logo_type = models.CharField(max_length=16, blank=True, editable=False, help_text="image/png or image/jpeg")
    paper_size = models.CharField(max_length=8, choices=PaperSize.choices, default=PaperSize.A4)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(accent_color__regex=r"^#[0-9a-f]{6}$"), name="branding_accent_color_hex"
            ),
            models.CheckConstraint(
                condition=models.Q(logo_type__in=["", "image/png", "image/jpeg"]), name="branding_logo_type_known"
            ),
        ]

    def __str__(self):
        return f"Report branding of {self.account}"
