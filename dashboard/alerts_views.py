"""The dashboard's alert screens: a project's alert settings (rules on or off with their thresholds; channels —
e-mail, Slack, Teams, the project's webhooks — added, switched, removed, sent a test alert; the delivery log) and
a person's in-app notifications (the list; opening one marks it read). Writes go through alerts.services, so a
channel's URL meets the same checks as the admin's."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from alerts import selectors as alert_reads
from alerts.models import AlertChannel, AlertRule
from alerts.services import alert_rules_set, notification_read, notifications_read_all
from alerts.services.channels import (
    alert_channel_create,
    alert_channel_delete,
    alert_channel_test,
    alert_channel_update,
)
from audits.errors import AuditRefused
from config.inputs import text_problem
from dashboard import selectors as dashboard
from dashboard.views import dashboard_view

TARGET_MAX_CHARS = 2048


def _page(request, project, *, errors=None, values=None, status=200):
    context = {
        "project": project,
        "rules": alert_reads.alert_rules_for_project(project=project),
        "channels": alert_reads.alert_channels_for_project(project=project),
        "deliveries": alert_reads.alert_deliveries_recent(project=project),
        "kinds": AlertChannel.Kind.choices,
        "errors": errors or {},
        "values": values or {},
    }
    return render(request, "dashboard/alerts.html", context, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def project_alerts(request, project_id):
    """GET: the settings. POST: the rules form (each kind's switch and threshold)."""
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    if request.method == "GET":
        return _page(request, project)
    rules = {}
    for kind in AlertRule.Kind.values:
        row = {"enabled": request.POST.get(f"{kind}-enabled") == "on"}
        threshold = (request.POST.get(f"{kind}-threshold") or "").strip()[:12]
        if f"{kind}-threshold" in request.POST:
            row["threshold"] = threshold or None
        rules[kind] = row
    try:
        alert_rules_set(project=project, rules=rules)
    except AuditRefused as exc:
        return _page(request, project, errors={f"{exc.field}-threshold": exc.message}, status=400)
    messages.success(request, "Alert rules saved.")
    return redirect("audits:project-alerts", project_id=project.id)


@require_POST
@dashboard_view
def project_alert_channel_add(request, project_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    kind = request.POST.get("kind") or ""
    target = (request.POST.get("target") or "").strip()[:TARGET_MAX_CHARS]
    values = {"kind": kind, "target": target}
    if problem := text_problem(target):  # a NUL would reach PostgreSQL, which refuses it with a 500
        return _page(request, project, errors={"target": problem[1]}, values=values, status=400)
    try:
        alert_channel_create(project=project, kind=kind, target=target)
    except AuditRefused as exc:
        field = exc.field if exc.field in ("kind", "target") else "target"
        return _page(request, project, errors={field: exc.message}, values=values, status=400)
    messages.success(request, "Channel added: the next alert goes there too.")
    return redirect("audits:project-alerts", project_id=project.id)


def _channel(request, project_id, channel_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    channel = alert_reads.alert_channel_for_project(project=project, channel_id=channel_id)
    if channel is None:
        raise Http404("No such channel")
    return project, channel


@require_POST
@dashboard_view
def project_alert_channel_toggle(request, project_id, channel_id):
    project, channel = _channel(request, project_id, channel_id)
    alert_channel_update(channel=channel, enabled=not channel.enabled)
    messages.success(request, "Channel enabled." if channel.enabled else "Channel disabled: no alert goes there.")
    return redirect("audits:project-alerts", project_id=project.id)


@require_POST
@dashboard_view
def project_alert_channel_delete(request, project_id, channel_id):
    project, channel = _channel(request, project_id, channel_id)
    alert_channel_delete(channel=channel)
    messages.success(request, "Channel removed, with its delivery log.")
    return redirect("audits:project-alerts", project_id=project.id)


@require_POST
@dashboard_view
def project_alert_channel_test(request, project_id, channel_id):
    project, channel = _channel(request, project_id, channel_id)
    alert_channel_test(channel=channel)
    messages.success(request, "Test alert queued: its result shows under Recent deliveries in a moment.")
    return redirect("audits:project-alerts", project_id=project.id)


@never_cache
@require_GET
@dashboard_view
def notifications(request):
    page = Paginator(alert_reads.notification_list_for_user(user=request.user), alert_reads.NOTIFICATIONS_PER_PAGE)
    context = {"page": page.get_page(request.GET.get("page"))}
    return render(request, "dashboard/notifications.html", context)


@require_GET
@dashboard_view
def notification_open(request, notification_id):
    """Reading it: marked read, then to what it points at (a dashboard path)."""
    note = alert_reads.notification_for_user(user=request.user, notification_id=notification_id)
    if note is None:
        raise Http404("No such notification")
    notification_read(notification=note)
    if note.link and url_has_allowed_host_and_scheme(note.link, allowed_hosts=None):
        return redirect(note.link)
    return redirect("audits:notifications")


@require_POST
@dashboard_view
def notifications_read(request):
    count = notifications_read_all(user=request.user)
    messages.success(request, f"{count} notification{'' if count == 1 else 's'} marked read.")
    return redirect("audits:notifications")
