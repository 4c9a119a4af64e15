"""/api/: the schema, the interactive docs and version 1 of the API."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from api import export_views as e
from api import result_views as r
from api import views as v
from config import converters  # noqa: F401  (registers <id:…>)

app_name = "api"
urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
    path("v1/projects/", v.ProjectListCreate.as_view(), name="project-list"),
    path("v1/projects/<id:pk>/", v.ProjectDetail.as_view(), name="project-detail"),
    path("v1/projects/<id:pk>/audits/", v.ProjectAudits.as_view(), name="project-audits"),
    path("v1/projects/<id:pk>/schedule/", v.ProjectSchedule.as_view(), name="project-schedule"),
    path("v1/projects/<id:pk>/webhooks/", v.ProjectWebhooks.as_view(), name="project-webhooks"),
    path("v1/projects/<id:pk>/segments/", v.ProjectSegments.as_view(), name="project-segments"),
    path("v1/segments/<id:pk>/", v.SegmentDetail.as_view(), name="segment-detail"),
    path("v1/audits/", v.AuditList.as_view(), name="audit-list"),
    path("v1/audits/<uuid:pk>/", v.AuditDetail.as_view(), name="audit-detail"),
    path("v1/audits/<uuid:pk>/cancel/", v.AuditCancel.as_view(), name="audit-cancel"),
    path("v1/audits/<uuid:pk>/compare/<uuid:base_pk>/", v.AuditCompare.as_view(), name="audit-compare"),
    path("v1/audits/<uuid:pk>/gate/", v.AuditGate.as_view(), name="audit-gate"),
    path("v1/audits/<uuid:pk>/issues/", r.IssueList.as_view(), name="audit-issues"),
    path("v1/audits/<uuid:pk>/bot-fetches/", r.AuditBotFetches.as_view(), name="audit-bot-fetches"),
    path("v1/audits/<uuid:pk>/segments/", v.AuditSegments.as_view(), name="audit-segments"),
    path("v1/audits/<uuid:pk>/issues/summary/", r.IssueSummary.as_view(), name="audit-issue-summary"),
    path("v1/audits/<uuid:pk>/pages/", r.PageList.as_view(), name="audit-pages"),
    path("v1/audits/<uuid:pk>/pages/<uuid:page_pk>/", r.PageDetail.as_view(), name="audit-page-detail"),
    path("v1/audits/<uuid:pk>/external-links/", r.ExternalLinkList.as_view(), name="audit-external-links"),
    path(
        "v1/audits/<uuid:pk>/external-links/linking-pages/",
        r.ExternalLinkPages.as_view(),
        name="audit-external-link-pages",
    ),
    path("v1/audits/<uuid:pk>/changes/", r.ChangeList.as_view(), name="audit-changes"),
    path("v1/audits/<uuid:pk>/changes/summary/", r.ChangeSummary.as_view(), name="audit-change-summary"),
    path("v1/audits/<uuid:pk>/exports/changes.csv", e.ChangesCsvExport.as_view(), name="export-changes-csv"),
    path("v1/audits/<uuid:pk>/exports/changes.json", e.ChangesJsonExport.as_view(), name="export-changes-json"),
    path("v1/audits/<uuid:pk>/exports/issues.csv", e.IssuesCsvExport.as_view(), name="export-issues-csv"),
    path("v1/audits/<uuid:pk>/exports/issues.json", e.IssuesJsonExport.as_view(), name="export-issues-json"),
    path("v1/audits/<uuid:pk>/exports/issues.xlsx", e.IssuesXlsxExport.as_view(), name="export-issues-xlsx"),
    path("v1/audits/<uuid:pk>/exports/pages.csv", e.PagesCsvExport.as_view(), name="export-pages-csv"),
    path("v1/audits/<uuid:pk>/exports/pages.json", e.PagesJsonExport.as_view(), name="export-pages-json"),
    path(
        "v1/audits/<uuid:pk>/exports/external-links.csv",
        e.ExternalLinksCsvExport.as_view(),
        name="export-external-links-csv",
    ),
    path(
        "v1/audits/<uuid:pk>/exports/external-links.json",
        e.ExternalLinksJsonExport.as_view(),
        name="export-external-links-json",
    ),
    path(
        "v1/audits/<uuid:pk>/exports/external-link-pages.csv",
        e.ExternalLinkPagesCsvExport.as_view(),
        name="export-external-link-pages-csv",
    ),
    path(
        "v1/audits/<uuid:pk>/exports/external-link-pages.json",
        e.ExternalLinkPagesJsonExport.as_view(),
        name="export-external-link-pages-json",
    ),
    path(
        "v1/audits/<uuid:pk>/issues/<str:issue_type>/export.csv",
        e.IssueTypeCsvExport.as_view(),
        name="export-issue-type-csv",
    ),
    path(
        "v1/audits/<uuid:pk>/issues/<str:issue_type>/export.json",
        e.IssueTypeJsonExport.as_view(),
        name="export-issue-type-json",
    ),
    path("v1/audits/<uuid:pk>/issues/<str:issue_type>/verify/", v.IssueTypeVerify.as_view(), name="audit-issue-verify"),
    path("v1/audits/<uuid:pk>/verification/", v.AuditVerification.as_view(), name="audit-verification"),
    path("v1/webhooks/<id:pk>/", v.WebhookDetail.as_view(), name="webhook-detail"),
    path("v1/webhooks/<id:pk>/deliveries/", v.WebhookDeliveries.as_view(), name="webhook-deliveries"),
]
