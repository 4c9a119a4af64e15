"""Input parsing and output shapes. No business rules here: services decide, serializers translate."""

import re

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from audits.checks.registry import CHECKS_BY_TYPE
from audits.limits import MAX_PAGES_CEILING
from audits.models import Audit, Issue, Page, Project, Schedule, Webhook, WebhookDelivery
from crawler.urls import InvalidURL, validate_start_url

PATTERNS_MAX = 50
PATTERN_CHARS = 500


def _patterns_field(help_text: str):
    return serializers.ListField(
        child=serializers.CharField(max_length=PATTERN_CHARS),
        max_length=PATTERNS_MAX,
        required=False,
        help_text=help_text,
    )


class ProjectSerializer(serializers.ModelSerializer):
    include_patterns = _patterns_field("Regular expressions; a URL must match one")
    exclude_patterns = _patterns_field("Regular expressions; a match skips the URL")
    query_keep_keys = serializers.ListField(
        child=serializers.CharField(max_length=100), max_length=PATTERNS_MAX, required=False
    )
    max_pages = serializers.IntegerField(min_value=1, max_value=MAX_PAGES_CEILING, required=False)
    auth_password = serializers.CharField(
        max_length=200, required=False, allow_blank=True, write_only=True, help_text="Write-only: never shown back"
    )
    has_auth_password = serializers.SerializerMethodField()
    max_concurrency = serializers.IntegerField(min_value=1, max_value=64, required=False)
    min_request_interval_ms = serializers.IntegerField(min_value=0, max_value=60_000, required=False)
    render_budget_pages = serializers.IntegerField(min_value=0, max_value=MAX_PAGES_CEILING, required=False)
    max_depth = serializers.IntegerField(min_value=0, max_value=1000, required=False, allow_null=True)
    max_urls_per_pattern = serializers.IntegerField(min_value=1, max_value=MAX_PAGES_CEILING, required=False)

    class Meta:
        model = Project
        fields = [
            "id", "name", "base_url", "max_pages", "include_patterns", "exclude_patterns", "user_agent",
            "auth_username", "auth_password", "has_auth_password", "follow_nofollow", "crawl_subdomains",
            "render_js", "render_budget_pages", "max_depth", "max_urls_per_pattern", "query_policy",
            "query_keep_keys", "min_request_interval_ms", "max_concurrency", "created_at",
        ]  # fmt: skip
        read_only_fields = ["id", "created_at"]

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_has_auth_password(self, obj) -> bool:
        return bool(obj.auth_password)

    def validate_base_url(self, value):
        try:
            return validate_start_url(value, allow_private=settings.ALLOW_PRIVATE_TARGETS)
        except InvalidURL as exc:
            raise serializers.ValidationError(str(exc), code=exc.code) from exc

    def _regexes(self, value):
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise serializers.ValidationError(f"{pattern!r} is not a regular expression: {exc}") from exc
        return value

    validate_include_patterns = _regexes
    validate_exclude_patterns = _regexes


class AuditSerializer(serializers.ModelSerializer):
    class Meta:
        model = Audit
        fields = [
            "id", "project", "start_url", "site_url", "status", "current_phase", "scheduled", "config",
            "pages_crawled", "pages_total", "crawl_round", "revivals", "health_score", "error_code",
            "error_detail", "failed_phase", "reconciled_by", "lighthouse_note", "created_at", "started_at",
            "completed_at", "last_progress_at",
        ]  # fmt: skip
        read_only_fields = fields


class AuditDetailSerializer(AuditSerializer):
    issues_by_type = serializers.SerializerMethodField(help_text="Counts per issue type; null while running")

    class Meta(AuditSerializer.Meta):
        fields = [*AuditSerializer.Meta.fields, "issues_by_type"]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.IntegerField(), allow_null=True))
    def get_issues_by_type(self, obj):
        return self.context.get("issues_by_type")


class AuditStartSerializer(serializers.Serializer):
    start_url = serializers.CharField(
        required=False, allow_blank=True, max_length=4096, help_text="Default (also when empty): the project's base URL"
    )
    max_pages = serializers.IntegerField(required=False, help_text="Default: the project's max pages")
    lighthouse = serializers.BooleanField(required=False, default=False)


class IssueSerializer(serializers.ModelSerializer):
    title = serializers.SerializerMethodField()

    class Meta:
        model = Issue
        fields = ["id", "type", "title", "severity", "page", "page_url", "details", "created_at"]
        read_only_fields = fields

    def get_title(self, obj) -> str:
        spec = CHECKS_BY_TYPE.get(obj.type)
        return spec.title if spec else obj.type


class IssueSummarySerializer(serializers.Serializer):
    type = serializers.CharField()
    title = serializers.CharField()
    scope = serializers.CharField(allow_null=True)
    severity = serializers.CharField()
    count = serializers.IntegerField()


PAGE_LIST_FIELDS = [
    "id", "url", "status_code", "fetch_class", "fetch_error", "content_type", "bytes", "truncated",
    "response_time_ms", "depth", "in_sitemap", "title", "is_indexable", "word_count", "internal_links",
    "external_links", "redirect_url", "canonical_url", "fetched_at",
]  # fmt: skip


class PageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Page
        fields = PAGE_LIST_FIELDS
        read_only_fields = fields


class OutlinkSerializer(serializers.Serializer):
    target_url = serializers.CharField()
    anchor_text = serializers.CharField()
    nofollow = serializers.BooleanField()
    internal = serializers.BooleanField()


class InlinkSerializer(serializers.Serializer):
    source_page = serializers.UUIDField(source="source_page_id")
    source_url = serializers.CharField(source="source_page__url")
    anchor_text = serializers.CharField()
    nofollow = serializers.BooleanField()


class PageIssueSerializer(serializers.ModelSerializer):
    class Meta:
        model = Issue
        fields = ["id", "type", "severity", "details"]
        read_only_fields = fields


class PageDetailSerializer(serializers.ModelSerializer):
    """A page with its issues and links; the view puts selectors.page_links() on `page.link_data`."""

    issues = PageIssueSerializer(many=True, read_only=True)
    inlinks_count = serializers.IntegerField(source="link_data.inlinks_count", read_only=True)
    inlinks = InlinkSerializer(
        source="link_data.inlinks", many=True, read_only=True, help_text="At most 500; inlinks_count is exact"
    )
    outlinks_count = serializers.IntegerField(source="link_data.outlinks_count", read_only=True)
    outlinks = OutlinkSerializer(
        source="link_data.outlinks", many=True, read_only=True, help_text="At most 500; outlinks_count is exact"
    )

    class Meta:
        model = Page
        exclude = ["audit"]
        read_only_fields = [f.name for f in Page._meta.fields]


class ComparisonRowSerializer(serializers.Serializer):
    type = serializers.CharField()
    severity = serializers.CharField(help_text="The type's default severity")
    new = serializers.IntegerField()
    fixed = serializers.IntegerField()
    persisting = serializers.IntegerField()


class ComparisonTotalsSerializer(serializers.Serializer):
    new = serializers.IntegerField()
    fixed = serializers.IntegerField()
    persisting = serializers.IntegerField()


class ComparisonSerializer(serializers.Serializer):
    audit = serializers.UUIDField()
    base = serializers.UUIDField()
    totals = ComparisonTotalsSerializer()
    by_type = ComparisonRowSerializer(many=True)


class ScheduleSerializer(serializers.ModelSerializer):
    cron = serializers.CharField(
        max_length=120, required=False, allow_blank=True, help_text="Five fields, UTC; only read for kind=cron"
    )
    enabled = serializers.BooleanField(required=False, default=True)

    class Meta:
        model = Schedule
        fields = ["kind", "cron", "enabled", "created_at"]
        read_only_fields = ["created_at"]


class WebhookSerializer(serializers.ModelSerializer):
    url = serializers.CharField(max_length=2048)
    secret = serializers.CharField(
        max_length=128, required=False, write_only=True, help_text="Empty on create: one is generated"
    )

    class Meta:
        model = Webhook
        fields = ["id", "project", "url", "secret", "enabled", "created_at"]
        read_only_fields = ["id", "project", "created_at"]


class WebhookCreatedSerializer(serializers.ModelSerializer):
    """The create answer: the only time the secret is shown."""

    class Meta:
        model = Webhook
        fields = ["id", "project", "url", "secret", "enabled", "created_at"]
        read_only_fields = fields


class WebhookDeliverySerializer(serializers.ModelSerializer):
    audit = serializers.UUIDField(source="audit_ref", read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id", "event", "audit", "status", "attempts", "last_response_code", "last_error", "payload",
            "created_at", "last_attempt_at", "delivered_at",
        ]  # fmt: skip
        read_only_fields = fields
