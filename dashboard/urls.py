"""Dashboard routes. Every audit URL is scoped to the signed-in user's account (404 otherwise)."""

from django.urls import path

from config import converters  # noqa: F401  (registers <id:…>)
from dashboard import (
    alerts_views,
    bots_views,
    branding,
    change_views,
    external_views,
    project_views,
    segments,
    share,
    token_views,
    verification_views,
    views,
    webhooks_views,
)

app_name = "audits"

audit = "audits/<uuid:audit_id>/"
urlpatterns = [
    path("", project_views.project_list, name="project-list"),
    path("healthz", views.healthz, name="healthz"),
    path("tokens/", token_views.api_tokens, name="api-tokens"),
    path("tokens/<id:token_id>/revoke/", token_views.api_token_revoke, name="api-token-revoke"),
    path("settings/report-branding/", branding.report_branding, name="report-branding"),
    path("projects/new/", project_views.project_create, name="project-create"),
    path("projects/<id:project_id>/", project_views.project_detail, name="project-detail"),
    path("projects/<id:project_id>/edit/", project_views.project_edit, name="project-edit"),
    path("projects/<id:project_id>/schedule/", project_views.project_schedule, name="project-schedule"),
    path("projects/<id:project_id>/audits/new/", views.audit_new, name="audit-new"),
    path("projects/<id:project_id>/webhooks/", webhooks_views.project_webhooks, name="project-webhooks"),
    path("projects/<id:project_id>/segments/", segments.project_segments, name="project-segments"),
    path(
        "projects/<id:project_id>/segments/<id:segment_id>/",
        segments.project_segment_edit,
        name="project-segment-edit",
    ),
    path(
        "projects/<id:project_id>/segments/<id:segment_id>/delete/",
        segments.project_segment_delete,
        name="project-segment-delete",
    ),
    path(
        "projects/<id:project_id>/webhooks/<id:webhook_id>/toggle/",
        webhooks_views.project_webhook_toggle,
        name="project-webhook-toggle",
    ),
    path(
        "projects/<id:project_id>/webhooks/<id:webhook_id>/delete/",
        webhooks_views.project_webhook_delete,
        name="project-webhook-delete",
    ),
    path("projects/<id:project_id>/alerts/", alerts_views.project_alerts, name="project-alerts"),
    path(
        "projects/<id:project_id>/alerts/channels/",
        alerts_views.project_alert_channel_add,
        name="project-alert-channel-add",
    ),
    path(
        "projects/<id:project_id>/alerts/channels/<id:channel_id>/toggle/",
        alerts_views.project_alert_channel_toggle,
        name="project-alert-channel-toggle",
    ),
    path(
        "projects/<id:project_id>/alerts/channels/<id:channel_id>/delete/",
        alerts_views.project_alert_channel_delete,
        name="project-alert-channel-delete",
    ),
    path(
        "projects/<id:project_id>/alerts/channels/<id:channel_id>/test/",
        alerts_views.project_alert_channel_test,
        name="project-alert-channel-test",
    ),
    path("notifications/", alerts_views.notifications, name="notifications"),
    path("notifications/read/", alerts_views.notifications_read, name="notifications-read"),
    path("notifications/<uuid:notification_id>/", alerts_views.notification_open, name="notification-open"),
    path(audit, views.audit_detail, name="audit-detail"),
    path(audit + "live/", views.audit_live, name="audit-live"),
    path(audit + "cancel/", views.audit_cancel_view, name="audit-cancel"),
    path(audit + "delete/", views.audit_delete_view, name="audit-delete"),
    path(audit + "issues/", views.audit_issues, name="audit-issues"),
    path(audit + "issues/<slug:issue_type>/", views.audit_issue_type, name="audit-issue-type"),
    path(
        audit + "issues/<slug:issue_type>/export.<slug:fmt>",
        views.audit_issue_type_export,
        name="audit-issue-type-export",
    ),
    path(audit + "pages/", views.audit_pages, name="audit-pages"),
    path(audit + "pages/<uuid:page_id>/", views.page_detail, name="page-detail"),
    path(audit + "pages/export.<slug:fmt>", views.audit_pages_export, name="audit-pages-export"),
    path(audit + "structure/", views.audit_structure, name="audit-structure"),
    path(audit + "external/", external_views.audit_external, name="audit-external"),
    path(audit + "external/<uuid:link_id>/", external_views.audit_external_link, name="audit-external-link"),
    path(
        audit + "external/export/<slug:what>.<slug:fmt>",
        external_views.audit_external_export,
        name="audit-external-export",
    ),
    path(audit + "bots/", bots_views.audit_bots, name="audit-bots"),
    path(audit + "changes/", change_views.audit_changes, name="audit-changes"),
    path(audit + "changes/baseline/", change_views.audit_changes_baseline, name="audit-changes-baseline"),
    path(audit + "changes/export.<slug:fmt>", change_views.audit_changes_export, name="audit-changes-export"),
    path(audit + "performance/", views.audit_performance, name="audit-performance"),
    path(audit + "performance/<uuid:result_id>/report.json", views.lighthouse_report, name="lighthouse-report"),
    path(
        audit + "performance/<uuid:result_id>/report.html",
        views.lighthouse_report_html,
        name="lighthouse-report-html",
    ),
    path(audit + "events/", views.audit_events, name="audit-events"),
    path(audit + "compare/", views.audit_compare, name="audit-compare"),
    path(audit + "share/", share.audit_share, name="audit-share"),
    path(audit + "share/<id:link_id>/revoke/", share.audit_share_revoke, name="audit-share-revoke"),
    path(audit + "report/", share.audit_report_preview, name="audit-report-preview"),
    path(audit + "report.pdf", share.audit_report_pdf, name="audit-report-pdf"),
    path(audit + "export/<slug:what>.<slug:fmt>", views.audit_export, name="audit-export"),
    path(audit + "issues/<slug:issue_type>/verify/", verification_views.audit_issue_verify, name="audit-issue-verify"),
    path(audit + "verification/", verification_views.audit_verification, name="audit-verification"),
]
