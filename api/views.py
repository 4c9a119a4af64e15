"""API views: parse with a serializer, call one service or selector, render. Errors are raised, never
formatted here (api.errors.exception_handler does that for every endpoint).

Every object is looked up through the requester's account (api.selectors), so another account's
project, audit, page or webhook answers 404 exactly like one that does not exist.

This module holds what every view shares (`ApiMixin`, the `?segment=` parameter) and the projects, audits,
segments, schedules, webhooks and fix verifications; an audit's results are in api.result_views, its exports in
api.export_views.
"""

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.services import account_get_or_create_for_user
from api import filters, selectors
from api import serializers as s
from api.pagination import ApiPagination
from api.parsers import SafeJSONParser
from api.schema import ApiAutoSchema
from audits.checks.score import score_breakdown
from audits.errors import AuditRefused, ErrorCode
from audits.gate import gate_evaluate, gate_rules_parse
from audits.models import Audit, Project, Schedule, Segment
from audits.segments import SEGMENT_PARAM, SegmentChoice, resolve_segment
from audits.selectors.audits import audit_comparison, audit_list_for, audit_urls_skipped
from audits.selectors.issues import issues_by_type
from audits.selectors.projects import project_list_for
from audits.selectors.retention import audit_comparison_kept, audit_is_summarised, audit_summarised_message
from audits.selectors.verification import fix_verification
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
    segment_create,
    segment_delete,
    segment_update,
)
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
