"""API views of an audit's results: issues (list, counts by type), bot fetches, pages (list, one page), external
link targets and their linking pages, changes against the baseline (list, counts). Read-only, each through
api.views.ApiMixin's account-scoped lookups (the audit of another account answers 404)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, generics
from rest_framework.response import Response
from rest_framework.views import APIView

from api import filters, selectors
from api import result_serializers as s
from api.pagination import KeysetPagination
from api.views import SEGMENT_PARAMETER, ApiMixin, _issues_q
from audits.errors import AuditRefused, ErrorCode
from audits.models import AgentFetch, ExternalLink, Issue, Page, PageChange
from audits.segments import SEGMENT_PARAM
from audits.selectors.bots import agent_fetch_list
from audits.selectors.changes import CHANGE_ORDERING, change_counts, change_list, change_total, changes_status
from audits.selectors.external import (
    external_link_filter,
    external_link_get,
    external_linking_pages,
    external_linking_pages_count,
)
from audits.selectors.issues import ISSUE_LIST_ORDERING, issue_counts_by_type, issue_counts_by_type_from, issue_list
from audits.selectors.links import page_links
from audits.selectors.retention import audit_summarised_message, issue_counts_kept
from audits.selectors.verification import verifications_by_type
from audits.stats import page_status_total
from scratchpad.models import LinkEdge


@extend_schema(tags=["results"])
@extend_schema_view(get=extend_schema(parameters=[SEGMENT_PARAMETER]))
class IssueList(ApiMixin, generics.ListAPIView):
    """The audit's issues by type, then page URL; keyset pages (`next`/`previous` links with a cursor)."""

    needs_page_rows = True

    serializer_class = s.IssueSerializer
    filterset_class = filters.IssueFilter
    pagination_class = KeysetPagination
    keyset_ordering = ISSUE_LIST_ORDERING

    def get_queryset(self):
        if self.schema_only:
            return Issue.objects.none()
        audit = self.audit_with_rows_or_404(self.kwargs["pk"])
        segment = self.segment_for(audit)
        issues = issue_list(audit=audit)
        return issues if segment is None else issues.filter(segment.issues_q)


@extend_schema(tags=["results"])
class AuditBotFetches(ApiMixin, generics.ListAPIView):
    """The audit's sampled pages as each agent was served them (the start page and one page per URL template,
    fetched as a desktop and a mobile browser, Googlebot smartphone, Bingbot and GPTBot in finalize): one row per
    page and agent, by URL then agent. Compare a bot's row with its browser's row of the same URL (Googlebot
    smartphone with browser-mobile, the others with browser)."""

    needs_page_rows = True

    serializer_class = s.AgentFetchSerializer
    filter_backends = []

    def get_queryset(self):
        if self.schema_only:
            return AgentFetch.objects.none()
        return agent_fetch_list(audit=self.audit_with_rows_or_404(self.kwargs["pk"]))


@extend_schema(tags=["results"])
class IssueSummary(ApiMixin, APIView):
    needs_page_rows = True
    pagination_class = None  # a few dozen rows at most: one per issue type
    filter_backends = []

    @extend_schema(
        responses={200: s.IssueSummarySerializer(many=True)},
        summary="Issue counts by type",
        description="One row per issue type (and severity) found; not paginated (there are a few dozen types).",
        parameters=[SEGMENT_PARAMETER],
    )
    def get(self, request, pk):
        audit = self.audit_or_404(pk)
        segment = self.segment_for(audit)
        kept = issue_counts_kept(audit=audit)
        if kept is not None:  # a summarised audit: its stored counts, the whole site's only
            if segment is not None:
                raise AuditRefused(ErrorCode.AUDIT_SUMMARISED, audit_summarised_message(audit))
            rows = issue_counts_by_type_from(kept)
        else:
            rows = issue_counts_by_type(audit=audit, **_issues_q(segment))
        verified = verifications_by_type(audit=audit)
        rows = [{**row, "verification": verified.get(row["type"])} for row in rows]
        return Response(s.IssueSummarySerializer(rows, many=True).data)


# With `?include=extracted` a page carries up to 32 KiB of values (audits.limits.EXTRACTED_PAGE_MAX_BYTES): fewer rows
# per response keep one response under ~3 MiB.
PAGE_LIST_EXTRACTED_MAX_PAGE_SIZE = 100


@extend_schema(tags=["results"])
class PageList(ApiMixin, generics.ListAPIView):
    """The audit's pages by URL; keyset pages (`next`/`previous` links with a cursor)."""

    needs_page_rows = True

    serializer_class = s.PageSerializer
    filterset_class = filters.PageFilter
    pagination_class = KeysetPagination
    keyset_ordering = selectors.PAGE_LIST_ORDERING

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "include",
                str,
                OpenApiParameter.QUERY,
                description="`extracted`: add each page's custom extraction values (`extracted`, up to 32 KiB a page; "
                f"then at most {PAGE_LIST_EXTRACTED_MAX_PAGE_SIZE} rows per page). Left out by default; a page's "
                "detail always has them.",
                enum=list(s.PAGE_LIST_INCLUDES),
            ),
            SEGMENT_PARAMETER,
        ],
        responses={200: s.PageWithExtractedSerializer(many=True)},
    )
    def get(self, request, *args, **kwargs):
        query = s.PageListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        self.with_extracted = "extracted" in query.validated_data.get("include", ())
        if self.with_extracted:
            self.paginator.max_page_size = PAGE_LIST_EXTRACTED_MAX_PAGE_SIZE
        return super().get(request, *args, **kwargs)

    def get_serializer_class(self):
        return s.PageWithExtractedSerializer if getattr(self, "with_extracted", False) else s.PageSerializer

    def get_queryset(self):
        if self.schema_only:
            return Page.objects.none()
        self.audit = self.audit_with_rows_or_404(self.kwargs["pk"])
        segment = self.segment_for(self.audit)
        pages = selectors.page_list(audit=self.audit, with_extracted=getattr(self, "with_extracted", False))
        return pages if segment is None else pages.filter(segment.pages_q)

    def keyset_total(self, request) -> int | None:
        """Unfiltered, the audit's counter (it equals its page rows) instead of COUNT(*) over 100,000 rows; filtered
        by a status code alone, the pages finalize counted per code."""
        names = (*filters.PageFilter.base_filters, SEGMENT_PARAM)
        filtered = {name for name in names if request.query_params.get(name)}
        if not filtered:
            return self.audit.pages_crawled
        if filtered == {"status_code"}:
            return page_status_total(audit=self.audit, status=request.query_params["status_code"])
        return None


@extend_schema(tags=["results"])
class PageDetail(ApiMixin, APIView):
    needs_page_rows = True

    @extend_schema(responses={200: s.PageDetailSerializer}, summary="A page with its issues, inlinks and outlinks")
    def get(self, request, pk, page_pk):
        audit = self.audit_with_rows_or_404(pk)
        page = get_object_or_404(Page.objects.filter(audit=audit), pk=page_pk)
        page.link_data = page_links(page=page)
        return Response(s.PageDetailSerializer(page).data)


# The external list's keyset ordering: unique within an audit, in one index after the audit
# (externallink_unique_url_per_audit). A target's linking pages: one edge per source page and target.
EXTERNAL_LINK_LIST_ORDERING = ("url",)
EXTERNAL_LINK_PAGES_ORDERING = ("source_page__url",)


@extend_schema(tags=["results"])
class ExternalLinkList(ApiMixin, generics.ListAPIView):
    """The audit's external link targets (one per distinct URL, each asked once) by URL, with what asking answered
    and how many crawled pages link to it; keyset pages (`next`/`previous` links with a cursor). Empty when the
    project does not check external links or the audit has not finished."""

    needs_page_rows = True

    serializer_class = s.ExternalLinkSerializer
    filterset_class = filters.ExternalLinkFilter
    pagination_class = KeysetPagination
    keyset_ordering = EXTERNAL_LINK_LIST_ORDERING

    def get_queryset(self):
        if self.schema_only:
            return ExternalLink.objects.none()
        return external_link_filter(audit=self.audit_with_rows_or_404(self.kwargs["pk"]))


@extend_schema(tags=["results"])
class ExternalLinkPages(ApiMixin, generics.ListAPIView):
    """The crawled pages linking to one external target, by page URL, with their anchor text; keyset pages."""

    needs_page_rows = True

    serializer_class = s.InlinkSerializer
    pagination_class = KeysetPagination
    keyset_ordering = EXTERNAL_LINK_PAGES_ORDERING
    filter_backends = []

    @extend_schema(
        summary="The pages linking to one external target",
        description="`url` is the target's exact URL, as the external-links list gives it (its `linking_pages_url` "
        "is this request). A URL the audit has no target for answers 404 not_found.",
        parameters=[
            OpenApiParameter(
                "url", str, OpenApiParameter.QUERY, required=True, description="The external target's exact URL"
            )
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if self.schema_only:
            return LinkEdge.objects.none()
        audit = self.audit_with_rows_or_404(self.kwargs["pk"])
        query = s.ExternalLinkPagesQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        self.link = external_link_get(audit=audit, url=query.validated_data["url"])
        if self.link is None:
            raise exceptions.NotFound("The audit has no external link target with this URL.")
        return external_linking_pages(audit=audit, url=self.link.url)

    def keyset_total(self, request) -> int:
        return external_linking_pages_count(audit=self.link.audit, url=self.link.url)


@extend_schema(tags=["results"])
@extend_schema_view(get=extend_schema(parameters=[SEGMENT_PARAMETER]))
class ChangeList(ApiMixin, generics.ListAPIView):
    """What changed on each URL between the audit and its baseline (GET .../changes/summary/ names the baseline and
    counts them per field): one row per URL and field that differs, a URL only one of them crawled (field added or
    removed), a robots.txt line added or removed, a sitemap document found, gone or read differently (field sitemap,
    url: the sitemap's; before/after: "read" or "error: …"); by URL; keyset pages (`next`/`previous` links with a
    cursor). With `segment`, the changes on the segment's pages (a removed URL: the baseline's page); robots.txt lines
    and sitemaps are in no segment."""

    serializer_class = s.PageChangeSerializer
    filterset_class = filters.ChangeFilter
    pagination_class = KeysetPagination
    keyset_ordering = CHANGE_ORDERING

    def get_queryset(self):
        if self.schema_only:
            return PageChange.objects.none()
        self.audit = self.audit_or_404(self.kwargs["pk"])
        self.segment = self.segment_for(self.audit)
        return change_list(audit=self.audit, segment=self.segment)

    def keyset_total(self, request) -> int | None:
        """The counts per field (stored by finalize for the whole site) instead of a COUNT(*), unless a direction
        narrows the list."""
        query = {name: request.query_params.get(name) or None for name in ("field", "direction")}
        counts = change_counts(audit=self.audit, segment=self.segment)
        return change_total(counts, audit=self.audit, segment=self.segment, **query)


@extend_schema(tags=["results"])
class ChangeSummary(ApiMixin, APIView):
    pagination_class = None
    filter_backends = []

    @extend_schema(
        responses={200: s.ChangeSummarySerializer},
        summary="The audit's changes against its baseline, counted per field",
        description="Which audit the changes are measured against (the project's previous completed audit by "
        "default, or the one chosen), where they stand (`state`) and how many there are per field. "
        "`changes_url` lists them.",
        parameters=[SEGMENT_PARAMETER],
    )
    def get(self, request, pk):
        audit = self.audit_or_404(pk)
        segment = self.segment_for(audit)
        counts = change_counts(audit=audit, segment=segment)
        whole = counts if segment is None else change_counts(audit=audit)
        status_ = changes_status(audit=audit, total=whole.total)
        url = self.absolute("api:audit-changes", pk=audit.pk)
        data = {
            "state": status_.state,
            "baseline": status_.baseline.id if status_.baseline else None,
            "baseline_created_at": status_.baseline.created_at if status_.baseline else None,
            "total": counts.total,
            "by_field": counts.as_dict(),
            "changes_url": url + (f"?{SEGMENT_PARAM}={segment.key}" if segment else ""),
        }
        return Response(s.ChangeSummarySerializer(data).data)
