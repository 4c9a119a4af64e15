"""Input parsing and output shapes. No business rules here: services decide, serializers translate.

Projects, audits, comparisons, schedules, webhooks, segments, fix verifications and the release gate; the shapes of
an audit's results (issues, pages, links, changes, bot fetches) are api.result_serializers."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from audits.checks.score import score_breakdown_stored
from audits.extraction import MAX_EXTRACTORS
from audits.limits import MAX_LIST_URLS
from audits.models import Audit, Project, Schedule, Segment
from audits.services import MAX_PATTERNS, NUMBER_BOUNDS, PATTERN_MAX_CHARS, PROJECT_NAME_MAX_CHARS
from webhooks.models import Webhook, WebhookDelivery


def _patterns_field(help_text: str):
    return serializers.ListField(
        child=serializers.CharField(trim_whitespace=False), required=False, help_text=help_text
    )


def _number_field(name: str, **kwargs):
    low, high = NUMBER_BOUNDS[name]
    kwargs.setdefault("help_text", f"{low} to {high}")
    return serializers.IntegerField(required=False, **kwargs)


class ProjectSerializer(serializers.ModelSerializer):
    """Parses a project's fields; audits.projects judges them (limits, URL policy, patterns), so the API,
    the dashboard, the admin and the CLI refuse the same things."""

    name = serializers.CharField(help_text=f"Unique in the account; at most {PROJECT_NAME_MAX_CHARS} characters")
    base_url = serializers.CharField(help_text="http(s) address where audits start by default")
    include_patterns = _patterns_field(
        f"Regular expressions (RE2 syntax); a URL must match one. At most {MAX_PATTERNS} of {PATTERN_MAX_CHARS} chars"
    )
    exclude_patterns = _patterns_field(
        f"Regular expressions (RE2 syntax); a match skips the URL. At most {MAX_PATTERNS} of {PATTERN_MAX_CHARS} chars"
    )
    query_keep_keys = serializers.ListField(child=serializers.CharField(), required=False)
    user_agent = serializers.CharField(required=False, allow_blank=True, help_text="Empty: Sitewarden's own")
    auth_username = serializers.CharField(required=False, allow_blank=True, help_text="HTTP basic auth")
    auth_password = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        write_only=True,
        help_text="Write-only: never shown back",
    )
    has_auth_password = serializers.SerializerMethodField()
    auth_password_cleared = serializers.SerializerMethodField(
        help_text="True only in the answer to the change that moved base_url to another site: the stored "
        "basic-auth password was removed (it was given for the old site)"
    )
    max_pages = _number_field("max_pages")
    max_concurrency = _number_field("max_concurrency")
    min_request_interval_ms = _number_field("min_request_interval_ms")
    render_budget_pages = _number_field("render_budget_pages")
    max_depth = _number_field("max_depth", allow_null=True)
    max_urls_per_pattern = _number_field("max_urls_per_pattern")
    max_path_segments = _number_field("max_path_segments")
    calendar_years_ahead = _number_field("calendar_years_ahead")
    max_query_variants_per_path = _number_field("max_query_variants_per_path")
    max_dated_urls_per_pattern = _number_field("max_dated_urls_per_pattern")
    max_identical_pages_per_pattern = _number_field("max_identical_pages_per_pattern")
    check_external_links = serializers.BooleanField(
        required=False, help_text="Check every distinct outbound link target once per audit (default true)"
    )
    external_links_max = _number_field("external_links_max")
    external_links_budget_s = _number_field("external_links_budget_s")
    bot_sample_max = _number_field("bot_sample_max")
    keep_page_rows = _number_field(
        "keep_page_rows",
        allow_null=True,
        help_text="Completed audits whose pages, issues and links are kept (1 to 1000); older ones keep their "
        "summary, score, issue counts by type and changes only. null: the instance default (SITEWARDEN_KEEP_PAGE_ROWS)",
    )
    extractors = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text=f"Custom extraction, at most {MAX_EXTRACTORS}: "
        '{"name", "kind": "xpath" | "css" | "regex", "expression", "multiple": false, '
        '"rule": "" | "missing" | "contains" | "matches", "rule_value"}; expressions are checked on save',
    )

    class Meta:
        model = Project
        fields = [
            "id", "name", "base_url", "max_pages", "include_patterns", "exclude_patterns", "user_agent",
            "auth_username", "auth_password", "has_auth_password", "auth_password_cleared", "follow_nofollow",
            "crawl_subdomains", "render_js", "render_budget_pages", "max_depth", "max_urls_per_pattern",
            "max_path_segments", "calendar_years_ahead", "max_dated_urls_per_pattern", "max_query_variants_per_path",
            "max_identical_pages_per_pattern", "query_policy", "query_keep_keys", "min_request_interval_ms",
            "max_concurrency", "check_external_links", "external_links_max", "external_links_budget_s",
            "bot_sample_max", "extractors", "keep_page_rows",
            "created_at",
        ]  # fmt: skip
        read_only_fields = ["id", "created_at"]

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_has_auth_password(self, obj) -> bool:
        return bool(obj.auth_password)

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_auth_password_cleared(self, obj) -> bool:
        return bool(getattr(obj, "auth_password_cleared", False))  # set by audits.projects.project_update


class CategoryScoreSerializer(serializers.Serializer):
    category = serializers.CharField()
    label = serializers.CharField()
    score = serializers.IntegerField(help_text="The score's formula over the category's issue types only")
    issues = serializers.IntegerField(help_text="Issue rows of the category")


class ScoreSerializer(serializers.Serializer):
    """audits.checks.score.ScoreBreakdown on the wire."""

    score = serializers.IntegerField(allow_null=True, help_text="0-100; null when no page was crawled")
    formula_version = serializers.IntegerField(help_text="Version of the score formula (docs/CHECKS.md)")
    pages = serializers.IntegerField()
    pages_without_errors = serializers.IntegerField(help_text="Crawled pages with no critical issue")
    error_free_percent = serializers.FloatField(help_text="pages_without_errors of pages, 0-100")
    categories = CategoryScoreSerializer(many=True)
    words = serializers.CharField(help_text="The score in one plain sentence")


def _score_data(breakdown) -> dict | None:
    return None if breakdown is None else ScoreSerializer(breakdown).data


class AuditSerializer(serializers.ModelSerializer):
    score = serializers.SerializerMethodField(
        help_text="The score's breakdown (pages without errors, a score per category) as stored when the audit "
        "completed; null before, and for an audit never scored. The audit's own endpoint counts it when not stored."
    )

    class Meta:
        model = Audit
        fields = [
            "id", "project", "start_url", "site_url", "status", "current_phase", "scheduled", "config",
            "pages_crawled", "pages_total", "crawl_round", "revivals", "health_score", "score_formula", "score",
            "error_code", "error_detail", "failed_phase", "reconciled_by", "lighthouse_note", "created_at",
            "started_at", "completed_at", "last_progress_at", "summarised_at",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {
            "summarised_at": {
                "help_text": "When retention pruned its pages, issues and links (the project's keep_page_rows): its "
                "score, issue counts by type, changes and summary stay, its page-level lists answer 409 "
                "audit_summarised. null: whole"
            }
        }

    @extend_schema_field(ScoreSerializer(allow_null=True))
    def get_score(self, obj):
        if "score" in self.context:
            return _score_data(self.context["score"])
        return _score_data(score_breakdown_stored(audit=obj))


class AuditDetailSerializer(AuditSerializer):
    issues_by_type = serializers.SerializerMethodField(help_text="Counts per issue type; null while running")

    urls_skipped = serializers.SerializerMethodField(
        help_text="URLs a trap rule, a cap or the page budget left uncrawled: per rule and URL shape, how many, "
        "examples and the project setting that raises it (`setting`); empty when nothing was skipped"
    )

    bot_access = serializers.JSONField(
        read_only=True,
        help_text="Which search and AI crawlers the site lets in, measured in finalize: `robots` (per crawler: its "
        "product token, kind search|ai, the robots.txt group that applies, and for the start page and each "
        "top-level folder allowed|blocked|partial with URLs blocked of checked), `llms_txt` (present, title, "
        "summary, sections, problems, valid, links with their outcome) and `sample` (the URLs fetched as each "
        "agent; the pages themselves: `/api/v1/audits/{id}/bot-fetches/`); {} before finalize",
    )

    class Meta(AuditSerializer.Meta):
        fields = [*AuditSerializer.Meta.fields, "issues_by_type", "urls_skipped", "bot_access"]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.IntegerField(), allow_null=True))
    def get_issues_by_type(self, obj):
        return self.context.get("issues_by_type")

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_urls_skipped(self, obj):
        return self.context.get("urls_skipped") or []


class AuditStartSerializer(serializers.Serializer):
    start_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=4096,
        help_text="Default (also when empty): the project's base URL. On the project's site (its host, www. or not, "
        "and port; subdomains when it crawls them), else 400 start_url_off_site",
    )
    max_pages = serializers.IntegerField(
        required=False, help_text="Default: the project's max pages (with `urls`: the list's length)"
    )
    lighthouse = serializers.BooleanField(required=False, default=False)
    urls = serializers.ListField(
        child=serializers.CharField(allow_blank=True, max_length=4096, trim_whitespace=False),
        required=False,
        max_length=MAX_LIST_URLS,
        help_text="List mode: audit exactly these URLs of the project's site, following no links. A bad entry "
        "refuses the start (invalid_url_list) naming its line (1 = the first entry).",
    )
    sitemap_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=4096,
        help_text="Sitemap mode: audit exactly the URLs of this sitemap (an index is followed), following no links",
    )


class ComparisonRowSerializer(serializers.Serializer):
    """Counts of affected URLs (a site-level issue counts as one)."""

    type = serializers.CharField()
    severity = serializers.CharField(help_text="The type's default severity")
    new = serializers.IntegerField()
    fixed = serializers.IntegerField(help_text="In the base audit only, and its page was crawled again")
    persisting = serializers.IntegerField()
    not_crawled = serializers.IntegerField(help_text="In the base audit only, on a page this audit did not crawl")


class ComparisonTotalsSerializer(serializers.Serializer):
    new = serializers.IntegerField()
    fixed = serializers.IntegerField()
    persisting = serializers.IntegerField()
    not_crawled = serializers.IntegerField()


class ComparisonPagesSerializer(serializers.Serializer):
    both = serializers.IntegerField(help_text="Pages (URLs) both audits crawled")
    not_crawled = serializers.IntegerField(help_text="Pages the base audit crawled and this one did not")
    only_now = serializers.IntegerField(help_text="Pages only this audit crawled")


class SettingDiffSerializer(serializers.Serializer):
    setting = serializers.CharField(help_text="start_url or an Audit.config key")
    label = serializers.CharField()
    base = serializers.CharField(help_text="The base audit's value, in words")
    audit = serializers.CharField(help_text="This audit's value, in words")


class ComparisonSerializer(serializers.Serializer):
    audit = serializers.UUIDField()
    base = serializers.UUIDField()
    totals = ComparisonTotalsSerializer()
    by_type = ComparisonRowSerializer(many=True)
    pages = ComparisonPagesSerializer()
    settings_differ = SettingDiffSerializer(many=True, help_text="Crawl settings that differ between the audits")
    changes = serializers.DictField(
        child=serializers.IntegerField(),
        allow_null=True,
        default=None,  # the counts retention kept for a pruned pair carry no changes
        help_text="When the base is the audit's baseline: its changes per field (GET /audits/{id}/changes/ lists "
        "them); null otherwise",
    )


class ScheduleSerializer(serializers.ModelSerializer):
    cron = serializers.CharField(
        max_length=120, required=False, allow_blank=True, help_text="Five fields, UTC; only read for kind=cron"
    )
    enabled = serializers.BooleanField(required=False, default=True)
    report_recipients = serializers.ListField(
        child=serializers.CharField(max_length=320, allow_blank=True),
        required=False,
        help_text="E-mail addresses each scheduled audit's report (the client PDF and a short summary) is sent to, at "
        "most 20; omitted: unchanged; []: no e-mail. An invalid address answers 400 invalid_report_recipients",
    )

    class Meta:
        model = Schedule
        fields = ["kind", "cron", "enabled", "report_recipients", "created_at"]
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


class SegmentSerializer(serializers.ModelSerializer):
    """A project's segment (audits.segments): `kind` prefix (`value` a URL path prefix such as /blog/), regex (`value`
    a regular expression on the URL path and query) or extraction (`extractor` one of the project's custom
    extractors, `value` one of its values, exactly). Judged by audits.segments, like every other write."""

    name = serializers.CharField(max_length=200)
    value = serializers.CharField(max_length=2000, allow_blank=True)
    extractor = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    position = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=2**31 - 1)

    class Meta:
        model = Segment
        fields = ["id", "project", "name", "kind", "value", "extractor", "position", "created_at"]
        read_only_fields = ["id", "project", "created_at"]


class AuditSegmentSerializer(serializers.Serializer):
    """A segment the audit can be read for (pass `key` as `?segment=`): the project's own, or, for a project
    without any, one of the audit's top-level folders or `other`."""

    key = serializers.CharField(help_text="The `?segment=` value: a segment's id, a folder such as /blog/, or other")
    name = serializers.CharField()
    description = serializers.CharField(help_text="What it matches, in words")
    default = serializers.BooleanField(help_text="A top-level folder standing in for a project without segments")
    segment_id = serializers.IntegerField(allow_null=True, help_text="The stored segment, when it is one")
    pages = serializers.IntegerField(help_text="The audit's pages in the segment")
    issues = serializers.IntegerField(help_text="Issues on those pages (site-wide findings belong to no segment)")
    pages_with_errors = serializers.IntegerField(help_text="Pages with at least one critical finding")
    score = serializers.IntegerField(
        allow_null=True,
        help_text="The audit's health score formula on the segment's pages (null: no page; see the audit's "
        "score_formula)",
    )


class VerificationUrlSerializer(serializers.Serializer):
    url = serializers.CharField()
    outcome = serializers.CharField(
        help_text="fixed | still_present | unreachable. fixed: crawled again and the issue type is gone; "
        "still_present: still reported on it; unreachable: "
        "not crawled again (robots.txt, the project's rules), answered 4xx/5xx, or now redirects",
    )
    note = serializers.CharField(help_text="Why, in words")


class VerificationSerializer(serializers.Serializer):
    """A fix verification: the verdict per URL that carried the issue type in the original audit."""

    audit = serializers.UUIDField(source="audit.id", help_text="This verification audit")
    verifies = serializers.UUIDField(source="original_id", help_text="The audit whose issue type it re-checked")
    issue_type = serializers.CharField()
    title = serializers.CharField()
    status = serializers.CharField(help_text="The verification audit's status; no URLs until it completed")
    label = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="URLs per outcome, zeros included")
    total = serializers.IntegerField()
    note = serializers.CharField(help_text="What the re-check could not cover (a capped original list); often empty")
    checked_at = serializers.DateTimeField(allow_null=True)
    urls = VerificationUrlSerializer(source="rows", many=True)


class GateRuleResultSerializer(serializers.Serializer):
    rule = serializers.CharField(help_text="The rule as written: new-critical, score-drop=5, …")
    passed = serializers.BooleanField()
    judged = serializers.BooleanField(
        help_text="False: there was nothing to judge it on (no baseline, no health score); it then passes"
    )
    reason = serializers.CharField(help_text='One line: "2 URLs became non-indexable", "no baseline", …')
    count = serializers.IntegerField(
        help_text="URLs the rule found (score-drop, score-below: points; pages-drop: pages lost)"
    )
    examples = serializers.ListField(child=serializers.CharField(), help_text="Up to 10 example URLs")


class GateSerializer(serializers.Serializer):
    audit = serializers.UUIDField(source="audit_id")
    baseline = serializers.UUIDField(
        source="baseline_id", allow_null=True, help_text="The audit judged against; null: none (every rule passes)"
    )
    passed = serializers.BooleanField(help_text="Every rule passed")
    reason = serializers.CharField(help_text="One line: the rules that fired and why, or that all passed")
    rules = GateRuleResultSerializer(many=True)
