"""The dashboard's webhooks page: a project's webhooks (add, enable/disable, delete) and their recent
deliveries. Writes go through webhooks.services, so the URL meets the same SSRF rules as the API's.

A new webhook's secret is shown once: the POST stores it in the session and redirects (post/redirect/get),
and the next GET pops it, so a reload neither adds a second webhook nor shows the secret again."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from audits.errors import AuditRefused
from config.inputs import text_problem
from dashboard import selectors as dashboard
from dashboard.views import dashboard_view
from webhooks import selectors as webhook_reads
from webhooks.services import webhook_create, webhook_delete, webhook_update

NEW_SECRET_SESSION_KEY = "sitewarden_new_webhook_secret"
URL_MAX_CHARS = 2048


def _page(request, project, *, errors=None, url="", status=200):
    fresh = request.session.pop(NEW_SECRET_SESSION_KEY, None)
    created = None
    if fresh and fresh.get("project") == project.id:
        webhook = webhook_reads.webhook_for_project(project=project, webhook_id=fresh.get("id"))
        if webhook is not None:
            created = {"webhook": webhook, "secret": fresh.get("secret", "")}
    context = {
        "project": project,
        "webhooks": webhook_reads.webhook_list_for_project(project=project),
        "deliveries": webhook_reads.webhook_deliveries_recent(project=project),
        "created": created,
        "errors": errors or {},
        "url_value": url,
    }
    return render(request, "dashboard/webhooks.html", context, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
@dashboard_view
def project_webhooks(request, project_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    if request.method == "GET":
        return _page(request, project)
    url = (request.POST.get("url") or "").strip()[:URL_MAX_CHARS]
    secret = (request.POST.get("secret") or "").strip() or None
    if not url:
        return _page(request, project, errors={"url": "Enter the address that should receive the POSTs."}, status=400)
    for field, value in (("url", url), ("secret", secret or "")):
        if problem := text_problem(value):  # a NUL would reach PostgreSQL, which refuses it with a 500
            return _page(request, project, errors={field: problem[1]}, status=400)
    try:
        webhook = webhook_create(project=project, url=url, secret=secret)
    except AuditRefused as exc:
        field = exc.field if exc.field in ("url", "secret") else "url"
        return _page(request, project, errors={field: exc.message}, url=url, status=400)
    request.session[NEW_SECRET_SESSION_KEY] = {"project": project.id, "id": webhook.id, "secret": webhook.secret}
    messages.success(request, "Webhook added.")
    return redirect("audits:project-webhooks", project_id=project.id)


def _webhook(request, project_id, webhook_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    webhook = webhook_reads.webhook_for_project(project=project, webhook_id=webhook_id)
    if webhook is None:
        raise Http404("No such webhook")
    return project, webhook


@require_POST
@dashboard_view
def project_webhook_toggle(request, project_id, webhook_id):
    project, webhook = _webhook(request, project_id, webhook_id)
    webhook_update(webhook=webhook, enabled=not webhook.enabled)
    state = "enabled" if webhook.enabled else "disabled: nothing is sent to it until you enable it again"
    messages.success(request, f"Webhook {state}.")
    return redirect("audits:project-webhooks", project_id=project.id)


@require_POST
@dashboard_view
def project_webhook_delete(request, project_id, webhook_id):
    project, webhook = _webhook(request, project_id, webhook_id)
    webhook_delete(webhook=webhook)
    messages.success(request, "Webhook deleted, with its delivery log.")
    return redirect("audits:project-webhooks", project_id=project.id)
