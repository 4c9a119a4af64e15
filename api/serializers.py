"""Input parsing and output shapes. No business rules here: services decide, serializers translate."""

from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from audits.checks.registry import CHECKS_BY_TYPE
from audits.checks.score import score_breakdown_stored
from audits.extraction import MAX_EXTRACTORS
from audits.limits import MAX_LIST_URLS
from audits.models import AgentFetch, Audit, ExternalLink, Issue, Page, PageChange, Project, Schedule, Segment
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


class IssueSerializer(serializers.ModelSerializer):
    title = serializers.SerializerMethodField()

    class Meta:
        model = Issue
        fields = ["id", "type", "title", "severity", "page", "page_url", "details", "created_at"]
        read_only_fields = fields

    def get_title(self, obj) -> str:
        spec = CHECKS_BY_TYPE.get(obj.type)
        return spec.title if spec else obj.type


class VerificationBriefSerializer(serializers.Serializer):
    """The newest fix verification of an issue type (audits.selectors.verification), as its row shows it."""

    audit = serializers.UUIDField(source="audit.id", help_text="The verification: GET …/audits/{id}/verification/")
    status = serializers.CharField(help_text="The verification audit's status: running, completed, failed, cancelled")
    label = serializers.CharField(help_text='"verified fixed on 4 Dec 2026", "3 of 5 fixed on 4 Dec 2026", …')
    fixed = serializers.IntegerField()
    total = serializers.IntegerField(help_text="URLs re-checked (0 until the verification completed)")
    checked_at = serializers.DateTimeField(allow_null=True)


class IssueSummarySerializer(serializers.Serializer):
    type = serializers.CharField()
    title = serializers.CharField()
    scope = serializers.CharField(allow_null=True)
    severity = serializers.CharField()
    count = serializers.IntegerField()
    verification = VerificationBriefSerializer(
        allow_null=True,
        required=False,
        help_text="The newest fix verification of this type (POST …/issues/{type}/verify/); null when none",
    )


PAGE_LIST_FIELDS = [
    "id", "url", "status_code", "fetch_class", "fetch_error", "content_type", "bytes", "truncated",
    "response_time_ms", "depth", "in_sitemap", "title", "is_indexable", "word_count", "internal_links",
    "external_links", "redirect_url", "canonical_url", "fetched_at",
]  # fmt: skip
PAGE_LIST_INCLUDES = ("extracted",)  # what `?include=` adds to the page list (each page's detail has it always)


class PageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Page
        fields = PAGE_LIST_FIELDS
        read_only_fields = fields


class PageWithExtractedSerializer(serializers.ModelSerializer):
    """A page of the list with its custom extraction values (`?include=extracted`): up to 32 KiB a page."""

    extracted = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,  # the schema's page list: present only with include=extracted
        help_text="Only with `include=extracted`: {extractor name: [values]}, at most 32 KiB a page; a cut value "
        "ends with “…[truncated]”, an extractor stopped over the page's time budget reads “[stopped: …]”",
    )

    class Meta:
        model = Page
        fields = [*PAGE_LIST_FIELDS, "extracted"]
        read_only_fields = PAGE_LIST_FIELDS


class PageListQuerySerializer(serializers.Serializer):
    include = serializers.MultipleChoiceField(choices=PAGE_LIST_INCLUDES, required=False)

    def to_internal_value(self, data):
        # `include=a,b` or `include=a&include=b`: one list of words
        words = [w.strip() for value in data.getlist("include") for w in value.split(",") if w.strip()]
        return super().to_internal_value({"include": words} if words else {})


class OutlinkSerializer(serializers.Serializer):
    target_url = serializers.CharField()
    link_count = serializers.IntegerField(help_text="Links of the page to this target (one row per distinct target)")
    anchor_text = serializers.CharField()
    nofollow = serializers.BooleanField()
    internal = serializers.BooleanField()


class InlinkSerializer(serializers.Serializer):
    source_page = serializers.UUIDField(source="source_page_id")
    source_url = serializers.CharField(source="source_page__url")
    link_count = serializers.IntegerField(help_text="Links of the source page to this page")
    anchor_text = serializers.CharField()
    nofollow = serializers.BooleanField()


class ExternalLinkSerializer(serializers.ModelSerializer):
    """One distinct external link target of the audit and what asking it once answered."""

    outcome_label = serializers.CharField(
        source="get_outcome_display", read_only=True, help_text="The outcome in words"
    )
    linking_pages_url = serializers.SerializerMethodField(help_text="The pages linking to it, with their anchors")

    class Meta:
        model = ExternalLink
        fields = [
            "id", "url", "host", "outcome", "outcome_label", "status_code", "method", "final_url", "redirect_hops",
            "error", "response_time_ms", "linking_pages", "linking_pages_url", "checked_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_linking_pages_url(self, obj) -> str:
        request = self.context["request"]
        path = reverse("api:audit-external-link-pages", kwargs={"pk": obj.audit_id})
        return request.build_absolute_uri(f"{path}?{urlencode({'url': obj.url})}")


class PageChangeSerializer(serializers.ModelSerializer):
    """One thing that differs on one URL between the audit and its baseline (or a URL only one of them crawled, a
    robots.txt line added or removed, or a sitemap document found, gone or read differently)."""

    field_label = serializers.CharField(source="get_field_display", read_only=True, help_text="The field in words")
    before = serializers.CharField(help_text="The baseline's value as text (empty: none)")
    after = serializers.CharField(help_text="This audit's value as text (empty: none)")

    class Meta:
        model = PageChange
        fields = ["url", "field", "field_label", "direction", "before", "after"]
        read_only_fields = fields


class ChangeQuerySerializer(serializers.Serializer):
    """The changes' filters where no filter set reads them (the exports)."""

    field = serializers.ChoiceField(choices=PageChange.Field.choices, required=False, allow_blank=True)
    direction = serializers.ChoiceField(choices=PageChange.Direction.choices, required=False, allow_blank=True)


class ChangeSummarySerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=["running", "not_completed", "first", "no_baseline", "pending", "unchanged", "changed"],
        help_text="first: the project's first completed audit (nothing to compare with); no_baseline: changes were "
        "not measured (an audit older than change detection, or its baseline deleted); pending: a baseline was "
        "chosen and its changes are being computed",
    )
    baseline = serializers.UUIDField(allow_null=True, help_text="The audit the changes are measured against")
    baseline_created_at = serializers.DateTimeField(allow_null=True)
    total = serializers.IntegerField(help_text="Changes in all (of the segment, with `segment`)")
    by_field = serializers.DictField(child=serializers.IntegerField(), help_text="Changes per field, every field")
    changes_url = serializers.URLField(help_text="The rows, keyset paginated")


class ExternalLinkPagesQuerySerializer(serializers.Serializer):
    url = serializers.CharField(max_length=4096, help_text="The external target's exact URL (as the list gives it)")


class PageIssueSerializer(serializers.ModelSerializer):
    class Meta:
        model = Issue
        fields = ["id", "type", "severity", "details"]
        read_only_fields = fields


class RawValuesSerializer(serializers.Serializer):
    """A rendered page's values measured on its HTML as served, before JavaScript (audits.checks.render compares them
    with the page's own, rendered, fields)."""

    title = serializers.CharField(required=False)
    meta_description = serializers.CharField(required=False, allow_null=True, help_text="null: no meta description")
    canonical = serializers.CharField(required=False, help_text="Resolved and normalised; empty: none")
    meta_robots = serializers.CharField(required=False)
    h1 = serializers.CharField(required=False, help_text="The first non-empty H1")
    h1_count = serializers.IntegerField(required=False)
    word_count = serializers.IntegerField(required=False)
    internal_links = serializers.IntegerField(required=False)
    external_links = serializers.IntegerField(required=False)
    links_only_rendered = serializers.IntegerField(
        required=False, help_text="Distinct link targets only the rendered page has"
    )
    links_only_rendered_examples = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="The first 5 of them"
    )
    links_only_raw = serializers.IntegerField(
        required=False, help_text="Distinct link targets only the HTML as served has"
    )


class PageDetailSerializer(serializers.ModelSerializer):
    """A page with its issues and links; the view puts selectors.page_links() on `page.link_data`."""

    issues = PageIssueSerializer(many=True, read_only=True)
    inlinks_count = serializers.IntegerField(source="link_data.inlinks_count", read_only=True)
    inlinks = InlinkSerializer(
        source="link_data.inlinks",
        many=True,
        read_only=True,
        help_text="At most 500; inlinks_count (linking pages) is exact",
    )
    outlinks_count = serializers.IntegerField(source="link_data.outlinks_count", read_only=True)
    outlinks = OutlinkSerializer(
        source="link_data.outlinks",
        many=True,
        read_only=True,
        help_text="At most 500; outlinks_count (distinct targets) is exact",
    )
    found_via = serializers.ChoiceField(
        choices=Page.FoundVia.choices,
        allow_blank=True,
        read_only=True,
        help_text="How the crawl first found the page; empty for pages crawled before it was recorded",
    )
    raw_values = RawValuesSerializer(
        read_only=True,
        allow_null=True,
        help_text="With rendering on: the values of the HTML as served, before JavaScript, beside the rendered ones "
        "(the page's own fields); null: the page was not rendered",
    )

    class Meta:
        model = Page
        exclude = ["audit", "issues_count"]  # the grid's sort key; `issues` lists them
        read_only_fields = [f.name for f in Page._meta.fields]


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


class AgentFetchSerializer(serializers.ModelSerializer):
    agent = serializers.CharField(
        help_text="The user agent it was fetched as: browser (desktop Chrome), browser-mobile (Chrome on Android), "
        "googlebot-smartphone (compare with browser-mobile), bingbot or gptbot (compare with browser)"
    )

    class Meta:
        model = AgentFetch
        fields = [
            "url", "agent", "status_code", "final_url", "title", "canonical_url", "robots", "main_text_hash",
            "main_words", "error", "fetched_at",
        ]  # fmt: skip
        read_only_fields = fields


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
