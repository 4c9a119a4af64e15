"""Output shapes of an audit's results (api.result_views and api.export_views): issues and their counts by type,
pages (the list, one page with its issues and links), bot fetches, external link targets and their linking pages,
changes against the baseline; and the query parameters those lists parse. No business rules: selectors read."""

from urllib.parse import urlencode

from django.urls import reverse
from rest_framework import serializers

from audits.checks.registry import CHECKS_BY_TYPE
from audits.models import AgentFetch, ExternalLink, Issue, Page, PageChange


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
    inlink_pages_count = serializers.IntegerField(
        source="counts.inlink_pages",  # PageCounts; None when the audit's counts are not stored
        read_only=True,
        allow_null=True,
        help_text="Crawled pages linking to this URL; counted at finalize",
    )
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
        exclude = ["audit"]
        read_only_fields = [f.name for f in Page._meta.fields]


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
