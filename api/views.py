"""API views: parse with a serializer, call one service or selector, render. Errors are raised, never
formatted here (api.errors.exception_handler does that for every endpoint).

Every object is looked up through the requester's account (api.selectors), so another account's
project, audit, page or webhook answers 404 exactly like one that does not exist.
"""

from django.http import FileResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, generics, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.services import account_get_or_create_for_user
from api import filters, selectors
from api import serializers as s
from api.pagination import ApiPagination, KeysetPagination
from api.parsers import SafeJSONParser
from api.schema import ApiAutoSchema
from audits import exports
from audits.checks.registry import CHECKS_BY_TYPE
from audits.checks.score import score_breakdown
from audits.errors import AuditRefused, ErrorCode
from audits.gate import gate_evaluate, gate_rules_parse
from audits.models import AgentFetch, Audit, ExternalLink, Issue, Page, PageChange, Project, Schedule, Segment
from audits.segments import (
    SEGMENT_PARAM,
    SegmentChoice,
    resolve_segment,
    segment_create,
    segment_delete,
    segment_update,
)
from audits.selectors.audits import audit_comparison, audit_list_for, audit_urls_skipped
from audits.selectors.bots import agent_fetch_list
from audits.selectors.changes import CHANGE_ORDERING, change_counts, change_list, change_total, changes_status
from audits.selectors.external import (
    external_link_filter,
    external_link_get,
    external_linking_pages,
    external_linking_pages_count,
)
from audits.selectors.issues import (
    ISSUE_LIST_ORDERING,
    issue_counts_by_type,
    issue_counts_by_type_from,
    issue_list,
    issues_by_type,
)
from audits.selectors.links import page_links
from audits.selectors.projects import project_list_for
from audits.selectors.retention import (
    audit_comparison_kept,
    audit_is_summarised,
    audit_summarised_message,
    issue_counts_kept,
)
from audits.selectors.verification import fix_verification, verifications_by_type
from audits.services import (
    audit_cancel_checked,
    audit_delete,
    audit_start,
    audit_status_refresh,
    issue_fix_verify,
    project_create,
    project_delete,
    project_update,
    report_recipients_checked,
    schedule_clear,
    schedule_report_recipients_set,
    schedule_set,
)
from scratchpad.models import LinkEdge
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import webhook_create, webhook_delete, webhook_update


class ApiMixin:
    schema = ApiAutoSchema()
    pagination_class = ApiPagination
    renderer_classes = [JSONRenderer]
    parser_classes = [SafeJSONParser]
    needs_page_rows = False  # True: answers 409 audit_summarised for a summarised audit (documented in the schema)

    @property
    def schema_only(self) -> bool:
        return getattr(self, "swagger_fake_view", False)

    def project_or_404(self, pk) -> Project:
        return get_object_or_404(project_list_for(self.request.user), pk=pk)

    def audit_or_404(self, pk) -> Audit:
        return get_object_or_404(audit_list_for(self.request.user).select_related("project"), pk=pk)

    def audit_with_rows_or_404(self, pk) -> Audit:
        """The audit of a page-level list or detail: 409 audit_summarised once retention pruned its rows."""
        audit = self.audit_or_404(pk)
        if audit_is_summarised(audit):
            raise AuditRefused(ErrorCode.AUDIT_SUMMARISED, audit_summarised_message(audit))
        return audit

    def absolute(self, name: str, **kwargs) -> str:
        return self.request.build_absolute_uri(reverse(name, kwargs=kwargs))

    def segment_for(self, audit: Audit) -> SegmentChoice | None:
        """The `?segment=` the request names (audits.segments); 400 unknown_segment for one that names none."""
        return resolve_segment(audit=audit, param=self.request.query_params.get(SEGMENT_PARAM))


SEGMENT_PARAMETER = OpenApiParameter(
    SEGMENT_PARAM,
    str,
    OpenApiParameter.QUERY,
    description="Only this segment of the site (audits.segments): a key listed by `/api/v1/audits/{id}/segments/` — "
    "a segment's id, or, for a project without segments, a top-level folder such as `/blog/` or `other`. Issues "
    "count through their page: site-wide findings belong to no segment. An unknown value answers 400 "
    "unknown_segment.",
)


def _issues_q(segment: SegmentChoice | None) -> dict:
    return {"issues_q": segment.issues_q} if segment is not None else {}


def _pages_q(segment: SegmentChoice | None) -> dict:
    return {"pages_q": segment.pages_q} if segment is not None else {}


# --- projects ------------------------------------------------------------------------------------------


@extend_schema(tags=["projects"])
class ProjectListCreate(ApiMixin, generics.ListCreateAPIView):
    serializer_class = s.ProjectSerializer
    filterset_class = filters.ProjectFilter

    def get_queryset(self):
        if self.schema_only:
            return Project.objects.none()
        return project_list_for(self.request.user)

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        project = project_create(
            account=account_get_or_create_for_user(user=request.user), owner=request.user, **serializer.validated_data
        )
        return Response(
            self.get_serializer(project).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": self.absolute("api:project-detail", pk=project.pk)},
        )


@extend_schema(tags=["projects"])
class ProjectDetail(ApiMixin, generics.RetrieveUpdateDestroyAPIView):
    serializer_class = s.ProjectSerializer

    def get_queryset(self):
        if self.schema_only:
            return Project.objects.none()
        return project_list_for(self.request.user)

    def perform_update(self, serializer):
        serializer.instance = project_update(project=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance):
        project_delete(project=instance)


# --- audits --------------------------------------------------------------------------------------------


@extend_schema(tags=["audits"])
class ProjectAudits(ApiMixin, generics.ListAPIView):
    """GET: the project's audits. POST: start an audit (202, Location: the audit)."""

    serializer_class = s.AuditSerializer
    filterset_class = filters.AuditFilter
    throttle_scope = "audit_start"

    def get_queryset(self):
        if self.schema_only:
            return Audit.objects.none()
        return audit_list_for(self.request.user).filter(project=self.project_or_404(self.kwargs["pk"]))

    @extend_schema(
        request=s.AuditStartSerializer,
        responses={202: OpenApiResponse(s.AuditSerializer, description="Started; Location is the audit")},
        summary="Start an audit of the project",
    )
    def post(self, request, pk):
        project = self.project_or_404(pk)
        serializer = s.AuditStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        audit = audit_start(project=project, **serializer.validated_data)
        return Response(
            s.AuditSerializer(audit).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": self.absolute("api:audit-detail", pk=audit.pk)},
        )


@extend_schema(tags=["audits"])
class AuditList(ApiMixin, generics.ListAPIView):
    serializer_class = s.AuditSerializer
    filterset_class = filters.AuditFilter

    def get_queryset(self):
        if self.schema_only:
            return Audit.objects.none()
        return audit_list_for(self.request.user)


@extend_schema(tags=["audits"])
class AuditDetail(ApiMixin, generics.RetrieveDestroyAPIView):
    """GET reconciles a running audit first (a stuck one shows as failed at once); DELETE removes it with
    its pages and issues (a running audit is cancelled first)."""

    serializer_class = s.AuditDetailSerializer

    def get_queryset(self):
        return Audit.objects.none()

    def retrieve(self, request, pk):
        audit = audit_status_refresh(audit_id=self.audit_or_404(pk).id)
        counts = issues_by_type(audit=audit) if audit.is_finished else None
        skipped = audit_urls_skipped(audit=audit)
        score = score_breakdown(audit=audit) if audit.health_score is not None else None
        return Response(
            s.AuditDetailSerializer(
                audit, context={"issues_by_type": counts, "urls_skipped": skipped, "score": score}
            ).data
        )

    def destroy(self, request, pk):
        audit_delete(audit=self.audit_or_404(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["audits"])
class AuditCancel(ApiMixin, APIView):
    @extend_schema(request=None, responses={200: s.AuditSerializer}, summary="Cancel a running audit")
    def post(self, request, pk):
        audit = audit_cancel_checked(audit=self.audit_or_404(pk))
        return Response(s.AuditSerializer(audit).data)


@extend_schema(tags=["audits"])
class AuditCompare(ApiMixin, APIView):
    needs_page_rows = True

    @extend_schema(
        responses={200: s.ComparisonSerializer},
        summary="Compare an audit's issues with another audit of the same project",
        description="Issues are matched by (type, page_url): new = only in this audit, fixed = only in the "
        "base audit and its page was crawled again, not_crawled = only in the base audit, on a page this audit "
        "did not crawl (never counted as fixed), persisting = in both; affected URLs counted per type. `pages` "
        "counts the URLs each audit crawled; `settings_differ` names the crawl settings that differ. With "
        "`segment`, only the issues and pages of that segment in each audit. Once retention pruned one of the two "
        "audits (`summarised_at`), the counts stored for an audit and its baseline still answer (the whole site's); "
        "any other pair, or a segment, answers 409 audit_summarised.",
        parameters=[SEGMENT_PARAMETER],
    )
    def get(self, request, pk, base_pk):
        audit = self.audit_or_404(pk)
        base = self.audit_or_404(base_pk)
        segment = self.segment_for(audit)
        if audit_is_summarised(audit) or audit_is_summarised(base):
            # Retention stored the counts of an audit against its baseline before pruning; any other pair is gone.
            kept = audit_comparison_kept(audit=audit, base=base) if segment is None and audit.id != base.id else None
            if kept is None:
                pruned = audit if audit_is_summarised(audit) else base
                raise AuditRefused(ErrorCode.AUDIT_SUMMARISED, audit_summarised_message(pruned))
            return Response(s.ComparisonSerializer(kept).data)
        return Response(s.ComparisonSerializer(audit_comparison(audit=audit, base=base, segment=segment)).data)


@extend_schema(tags=["audits"])
class AuditGate(ApiMixin, APIView):
    pagination_class = None
    filter_backends = []

    @extend_schema(
        responses={200: s.GateSerializer},
        summary="The release gate: judge a completed audit against its baseline",
        description="Each rule of `rules` passed or failed, with a one-line reason, a count and up to 10 example "
        "URLs (audits/gate.py). Rules: `new-critical` (a critical issue, by type and URL, not in the baseline), "
        "`new-issue=TYPE` (the same for one issue type), `score-drop=N` (the health score fell by N or more), "
        "`score-below=N` (the health score is below N; needs no baseline), `became-noindex` (a URL indexable in "
        "the baseline is not now), `new-broken` (a URL that answered below 400 in the baseline answers 4xx/5xx or "
        "fails now, or an added URL that is broken), `pages-drop=N` (N % fewer pages crawled). The baseline is the "
        "audit's own, else the project's previous completed audit; without one, the rules that need it pass with "
        "the reason `no baseline` (`judged`: false). A bad rule answers 400 invalid_gate_rule naming it; an audit "
        "that has not completed 409 audit_not_completed; one whose pages retention pruned 409 audit_summarised.",
        parameters=[
            OpenApiParameter(
                "rules",
                str,
                OpenApiParameter.QUERY,
                required=True,
                description="Comma-separated rules, e.g. `new-critical,score-drop=5,became-noindex,new-broken`",
            )
        ],
    )
    def get(self, request, pk):
        audit = self.audit_or_404(pk)
        rules = gate_rules_parse(request.query_params.get("rules", ""))
        return Response(s.GateSerializer(gate_evaluate(audit=audit, rules=rules)).data)


# --- results -------------------------------------------------------------------------------------------


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
        """Unfiltered, the audit's counter (it equals its page rows) instead of COUNT(*) over 100,000 rows."""
        names = (*filters.PageFilter.base_filters, SEGMENT_PARAM)
        filtered = any(request.query_params.get(name) for name in names)
        return None if filtered else self.audit.pages_crawled


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


class _FirstRenderer(BaseContentNegotiation):
    """Exports answer CSV or JSON whatever Accept says; errors are rendered as JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


EXPORTS = {
    ("issues", "csv"): (exports.issues_csv_rows, exports.CSV_CONTENT_TYPE),
    ("issues", "json"): (exports.issues_json_chunks, exports.JSON_CONTENT_TYPE),
    ("pages", "csv"): (exports.pages_csv_rows, exports.CSV_CONTENT_TYPE),
    ("pages", "json"): (exports.pages_json_chunks, exports.JSON_CONTENT_TYPE),
}


class _Export(ApiMixin, APIView):
    """The dashboard's streamed exports (audits.exports): the same files, through the API."""

    needs_page_rows = True

    kind = ""  # issues | pages
    fmt = ""  # csv | json
    content_negotiation_class = _FirstRenderer
    pagination_class = None
    filter_backends = []

    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        segment = self.segment_for(audit)
        chunks, content_type = EXPORTS[(self.kind, self.fmt)]
        restriction = _issues_q(segment) if self.kind == "issues" else _pages_q(segment)
        response = StreamingHttpResponse(chunks(audit, **restriction), content_type=content_type)
        filename = exports.export_filename(audit, self.kind, self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _export_view(kind: str, fmt: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export the audit's {kind} as {fmt.upper()} (streamed)",
        parameters=[SEGMENT_PARAMETER],
        responses={(200, media): schema},
    )
    return decorated(type(f"{kind.title()}{fmt.upper()}Export", (_Export,), {"kind": kind, "fmt": fmt}))


class _IssuesXlsxExport(_Export):
    """The dashboard's workbook (audits.exports.issues_xlsx_file): Overview plus one sheet per issue type."""

    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        segment = self.segment_for(audit)
        return FileResponse(
            exports.issues_xlsx_file(audit, segment_name=segment.name if segment else "", **_issues_q(segment)),
            as_attachment=True,
            filename=exports.export_filename(audit, "issues", "xlsx"),
            content_type=exports.XLSX_CONTENT_TYPE,
        )


IssuesXlsxExport = extend_schema(
    tags=["exports"],
    summary="Export the audit's issues as an XLSX workbook (an Overview sheet, one sheet per issue type)",
    parameters=[SEGMENT_PARAMETER],
    responses={(200, exports.XLSX_CONTENT_TYPE): OpenApiTypes.BINARY},
)(_IssuesXlsxExport)
IssuesCsvExport = _export_view("issues", "csv")
IssuesJsonExport = _export_view("issues", "json")
PagesCsvExport = _export_view("pages", "csv")
PagesJsonExport = _export_view("pages", "json")

EXTERNAL_EXPORTS = {  # the dashboard's External screen's exports (dashboard.external_views)
    ("external-links", "csv"): (exports.external_links_csv_rows, exports.CSV_CONTENT_TYPE),
    ("external-links", "json"): (exports.external_links_json_chunks, exports.JSON_CONTENT_TYPE),
    ("external-link-pages", "csv"): (exports.external_link_pages_csv_rows, exports.CSV_CONTENT_TYPE),
    ("external-link-pages", "json"): (exports.external_link_pages_json_chunks, exports.JSON_CONTENT_TYPE),
}


class _ExternalExport(_Export):
    """The audit's external targets, or their linking pages, as the dashboard exports them (the whole site's)."""

    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        chunks, content_type = EXTERNAL_EXPORTS[(self.kind, self.fmt)]
        response = StreamingHttpResponse(chunks(audit), content_type=content_type)
        filename = exports.export_filename(audit, self.kind, self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _external_export_view(kind: str, fmt: str, what: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export the audit's {what} as {fmt.upper()} (streamed)",
        responses={(200, media): schema},
    )
    name = "".join(part.title() for part in kind.split("-"))
    return decorated(type(f"{name}{fmt.upper()}Export", (_ExternalExport,), {"kind": kind, "fmt": fmt}))


_TARGETS = "external link targets (one row per target)"
_LINKING = "external links' linking pages (one row per target and page, with the anchor)"
ExternalLinksCsvExport = _external_export_view("external-links", "csv", _TARGETS)
ExternalLinksJsonExport = _external_export_view("external-links", "json", _TARGETS)
ExternalLinkPagesCsvExport = _external_export_view("external-link-pages", "csv", _LINKING)
ExternalLinkPagesJsonExport = _external_export_view("external-link-pages", "json", _LINKING)


class _ChangesExport(_Export):
    """The audit's changes against its baseline (url, field, direction, before, after), filtered like the list."""

    def get(self, request, pk):
        audit = self.audit_or_404(pk)
        segment = self.segment_for(audit)
        query = s.ChangeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        chunks = exports.changes_csv_rows if self.fmt == "csv" else exports.changes_json_chunks
        content_type = exports.CSV_CONTENT_TYPE if self.fmt == "csv" else exports.JSON_CONTENT_TYPE
        response = StreamingHttpResponse(
            chunks(audit, segment=segment, **{k: v for k, v in query.validated_data.items() if v}),
            content_type=content_type,
        )
        filename = exports.export_filename(audit, "changes", self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _changes_export_view(fmt: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export the audit's changes against its baseline as {fmt.upper()} (streamed)",
        description="One row per URL and field: url, field, direction, before, after; by URL. The filters of "
        "GET /audits/{id}/changes/ apply.",
        parameters=[
            OpenApiParameter("field", str, OpenApiParameter.QUERY, enum=PageChange.Field.values),
            OpenApiParameter("direction", str, OpenApiParameter.QUERY, enum=PageChange.Direction.values),
            SEGMENT_PARAMETER,
        ],
        responses={(200, media): schema},
    )
    return decorated(type(f"Changes{fmt.upper()}Export", (_ChangesExport,), {"kind": "changes", "fmt": fmt}))


ChangesCsvExport = _changes_export_view("csv")
ChangesJsonExport = _changes_export_view("json")

ISSUE_TYPE_EXPORTS = {  # the dashboard's per-type exports (dashboard.views.audit_issue_type_export)
    "csv": (exports.issue_type_csv_rows, exports.CSV_CONTENT_TYPE),
    "json": (exports.issue_type_json_chunks, exports.JSON_CONTENT_TYPE),
}


class _IssueTypeExport(_Export):
    """One issue type's evidence in its named columns (audits.evidence), as the dashboard exports it."""

    def get(self, request, pk, issue_type):
        audit = self.audit_with_rows_or_404(pk)
        if issue_type not in CHECKS_BY_TYPE:
            raise exceptions.NotFound(f"No such issue type: {issue_type[:100]!r}.")
        segment = self.segment_for(audit)
        chunks, content_type = ISSUE_TYPE_EXPORTS[self.fmt]
        response = StreamingHttpResponse(chunks(audit, issue_type, **_issues_q(segment)), content_type=content_type)
        filename = exports.export_filename(audit, f"issues-{issue_type}", self.fmt)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _issue_type_export_view(fmt: str):
    media = "text/csv" if fmt == "csv" else "application/json"
    schema = OpenApiTypes.STR if fmt == "csv" else {"type": "array", "items": {"type": "object"}}
    decorated = extend_schema(
        tags=["exports"],
        summary=f"Export one issue type's evidence as {fmt.upper()} (streamed)",
        description=(
            "The rows of the type's evidence table in the dashboard, with the same named columns "
            "(the JSON objects have the CSV's column keys). An unknown type answers 404 not_found."
        ),
        parameters=[
            OpenApiParameter(
                "issue_type", str, OpenApiParameter.PATH, description="An issue type", enum=sorted(CHECKS_BY_TYPE)
            ),
            SEGMENT_PARAMETER,
        ],
        responses={(200, media): schema},
    )
    return decorated(type(f"IssueType{fmt.upper()}Export", (_IssueTypeExport,), {"kind": "issue-type", "fmt": fmt}))


IssueTypeCsvExport = _issue_type_export_view("csv")
IssueTypeJsonExport = _issue_type_export_view("json")


# --- segments ------------------------------------------------------------------------------------------


@extend_schema(tags=["segments"])
class ProjectSegments(ApiMixin, generics.ListCreateAPIView):
    """GET: the project's segments, in their order. POST: add one (201, Location: the segment)."""

    serializer_class = s.SegmentSerializer
    filter_backends = []

    def get_queryset(self):
        if self.schema_only:
            return Segment.objects.none()
        return selectors.segment_list_for(self.request.user).filter(project=self.project_or_404(self.kwargs["pk"]))

    def create(self, request, *args, **kwargs):
        project = self.project_or_404(self.kwargs["pk"])
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        segment = segment_create(project=project, **serializer.validated_data)
        return Response(
            self.get_serializer(segment).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": self.absolute("api:segment-detail", pk=segment.pk)},
        )


@extend_schema(tags=["segments"])
class SegmentDetail(ApiMixin, generics.RetrieveUpdateDestroyAPIView):
    serializer_class = s.SegmentSerializer

    def get_queryset(self):
        if self.schema_only:
            return Segment.objects.none()
        return selectors.segment_list_for(self.request.user).select_related("project")

    def perform_update(self, serializer):
        serializer.instance = segment_update(segment=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance):
        segment_delete(segment=instance)


@extend_schema(tags=["segments"])
class AuditSegments(ApiMixin, APIView):
    needs_page_rows = True
    pagination_class = None  # at most the project's segments (50) or 12 folders and "other"
    filter_backends = []

    @extend_schema(
        responses={200: s.AuditSegmentSerializer(many=True)},
        summary="The segments an audit can be read for, with their pages, issues and pages with errors",
        description="The project's own segments, or for a project without any, the audit's largest top-level "
        "folders and `other`. Pass a row's `key` as `?segment=` to the audit's issues, pages, summary, exports and "
        "comparison. A page belongs to every segment it matches.",
    )
    def get(self, request, pk):
        audit = self.audit_with_rows_or_404(pk)
        return Response(s.AuditSegmentSerializer(selectors.audit_segments(audit=audit), many=True).data)


# --- schedules and webhooks ------------------------------------------------------------------------------


@extend_schema(tags=["schedules"])
class ProjectSchedule(ApiMixin, APIView):
    @extend_schema(responses={200: s.ScheduleSerializer}, summary="The project's schedule (404: none)")
    def get(self, request, pk):
        project = self.project_or_404(pk)
        schedule = Schedule.objects.filter(project=project).first()
        if schedule is None:
            raise exceptions.NotFound("This project has no schedule.")
        return Response(s.ScheduleSerializer(schedule).data)

    @extend_schema(request=s.ScheduleSerializer, responses={200: s.ScheduleSerializer}, summary="Set the schedule")
    def put(self, request, pk):
        project = self.project_or_404(pk)
        serializer = s.ScheduleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = dict(serializer.validated_data)
        recipients = values.pop("report_recipients", None)
        if recipients is not None:
            report_recipients_checked(recipients)  # refused before the schedule changes
        schedule = schedule_set(project=project, **values)
        if recipients is not None:
            schedule = schedule_report_recipients_set(project=project, recipients=recipients)
        return Response(s.ScheduleSerializer(schedule).data)

    @extend_schema(responses={204: None}, summary="Clear the schedule")
    def delete(self, request, pk):
        schedule_clear(project=self.project_or_404(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["webhooks"])
class ProjectWebhooks(ApiMixin, generics.ListCreateAPIView):
    serializer_class = s.WebhookSerializer
    filterset_class = filters.WebhookFilter

    def get_queryset(self):
        if self.schema_only:
            return Webhook.objects.none()
        return selectors.webhook_list_for(self.request.user).filter(project=self.project_or_404(self.kwargs["pk"]))

    @extend_schema(responses={201: s.WebhookCreatedSerializer}, summary="Add a webhook (the secret is shown once)")
    def post(self, request, pk):
        project = self.project_or_404(pk)
        serializer = s.WebhookSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook = webhook_create(project=project, **serializer.validated_data)
        return Response(
            s.WebhookCreatedSerializer(webhook).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": self.absolute("api:webhook-detail", pk=webhook.pk)},
        )


@extend_schema(tags=["webhooks"])
class WebhookDetail(ApiMixin, generics.RetrieveUpdateDestroyAPIView):
    serializer_class = s.WebhookSerializer

    def get_queryset(self):
        if self.schema_only:
            return Webhook.objects.none()
        return selectors.webhook_list_for(self.request.user)

    def perform_update(self, serializer):
        serializer.instance = webhook_update(webhook=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance):
        webhook_delete(webhook=instance)


@extend_schema(tags=["webhooks"])
class WebhookDeliveries(ApiMixin, generics.ListAPIView):
    serializer_class = s.WebhookDeliverySerializer
    filterset_class = filters.DeliveryFilter

    def get_queryset(self):
        if self.schema_only:
            return WebhookDelivery.objects.none()
        webhook = get_object_or_404(selectors.webhook_list_for(self.request.user), pk=self.kwargs["pk"])
        return selectors.delivery_list(webhook=webhook)


# --- fix verification (issue 28) ------------------------------------------------------------------------


@extend_schema(tags=["audits"])
class IssueTypeVerify(ApiMixin, APIView):
    throttle_scope = "audit_start"

    @extend_schema(
        request=None,
        responses={202: OpenApiResponse(s.AuditSerializer, description="Started; Location is its verification")},
        summary="Verify a fix: re-check the URLs that carry an issue type",
        description="Starts a list-mode audit of the pages that carry the issue type in this completed audit (for a "
        "link type, with the link targets its findings name), linked to it and judged with its check settings. "
        "Its verdict per URL: `GET /api/v1/audits/{new id}/verification/`. Refused: 409 audit_not_completed, "
        "409 audit_summarised, 400 issue_type_not_verifiable (site-wide findings, types that need the whole crawl "
        "— duplicates, orphans, click depth, redirect chains, pagination, hreflang return links —, Lighthouse's), "
        "404 issue_type_not_found, and what starting an audit refuses (409 audit_already_running, …).",
    )
    def post(self, request, pk, issue_type):
        verification = issue_fix_verify(audit=self.audit_or_404(pk), issue_type=issue_type, user=request.user)
        return Response(
            s.AuditSerializer(verification).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": self.absolute("api:audit-verification", pk=verification.pk)},
        )


@extend_schema(tags=["audits"])
class AuditVerification(ApiMixin, APIView):
    pagination_class = None  # at most MAX_LIST_URLS rows, read whole
    filter_backends = []

    @extend_schema(
        responses={200: s.VerificationSerializer},
        summary="A fix verification's verdict per URL",
        description="For an audit started by `POST …/issues/{type}/verify/`: each URL that carried the issue type in "
        "the original audit, fixed, still_present or unreachable, with why; counts per outcome and the line the "
        "issue type shows (`label`). No URLs while it runs. 404 not_a_verification for any other audit.",
    )
    def get(self, request, pk):
        result = fix_verification(audit=self.audit_or_404(pk))
        if result is None:
            raise AuditRefused(ErrorCode.NOT_A_VERIFICATION, "This audit is not a fix verification.")
        return Response(s.VerificationSerializer(result).data)
