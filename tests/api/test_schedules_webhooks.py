"""Schedules (set/read/clear through audits.schedules) and webhooks (CRUD, SSRF policy, delivery log)."""

from django_celery_beat.models import PeriodicTask

from audits.models import Schedule
from tests.api.conftest import assert_problem
from tests.factories import AuditFactory
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import webhook_create


def test_schedule_set_read_clear(api, project):
    url = f"/api/v1/projects/{project.id}/schedule/"
    assert_problem(api.get(url), 404, "not_found")
    response = api.put(url, {"kind": "weekly"}, format="json")
    assert response.status_code == 200 and response.json()["cron"] == "0 3 * * 1"
    cron = api.put(url, {"kind": "cron", "cron": "15 4 * * *", "enabled": False}, format="json").json()
    assert cron == {**cron, "kind": "cron", "cron": "15 4 * * *", "enabled": False}
    task = Schedule.objects.get(project=project).periodic_task
    assert task.task == "audits.run_schedule" and task.enabled is False
    assert api.get(url).json()["kind"] == "cron"
    assert api.delete(url).status_code == 204
    assert not Schedule.objects.filter(project=project).exists()
    assert not PeriodicTask.objects.filter(id=task.id).exists()


def test_schedule_validation(api, project):
    url = f"/api/v1/projects/{project.id}/schedule/"
    assert_problem(api.put(url, {"kind": "cron", "cron": "not a cron"}, format="json"), 400, "invalid_schedule")
    assert_problem(api.put(url, {"kind": "cron", "cron": "99 * * * *"}, format="json"), 400, "invalid_schedule")
    assert_problem(api.put(url, {"kind": "hourly"}, format="json"), 400, "validation_error", field="kind")


def test_schedule_of_another_account_is_not_found(other_api, project):
    url = f"/api/v1/projects/{project.id}/schedule/"
    assert_problem(other_api.get(url), 404, "not_found")
    assert_problem(other_api.put(url, {"kind": "daily"}, format="json"), 404, "not_found")
    assert_problem(other_api.delete(url), 404, "not_found")
    assert not Schedule.objects.filter(project=project).exists()


def test_webhook_crud_shows_the_secret_once(api, project):
    url = f"/api/v1/projects/{project.id}/webhooks/"
    created = api.post(url, {"url": "http://127.0.0.1:9/hook"}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert len(body["secret"]) == 64 and created["Location"].endswith(f"/api/v1/webhooks/{body['id']}/")
    detail = api.get(f"/api/v1/webhooks/{body['id']}/").json()
    assert "secret" not in detail and detail["url"] == "http://127.0.0.1:9/hook"
    assert api.get(url).json()["count"] == 1
    assert api.get(url, {"enabled": "false"}).json()["count"] == 0

    patched = api.patch(f"/api/v1/webhooks/{body['id']}/", {"enabled": False, "secret": "s" * 20}, format="json").json()
    assert patched["enabled"] is False
    assert Webhook.objects.get(id=body["id"]).secret == "s" * 20

    assert api.delete(f"/api/v1/webhooks/{body['id']}/").status_code == 204
    assert not Webhook.objects.filter(id=body["id"]).exists()


def test_webhook_validation(api, project, settings):
    url = f"/api/v1/projects/{project.id}/webhooks/"
    assert_problem(api.post(url, {"url": "ftp://127.0.0.1/"}, format="json"), 400, "unsupported_scheme", field="url")
    assert_problem(
        api.post(url, {"url": "http://127.0.0.1:9/", "secret": "short"}, format="json"), 400, "invalid_webhook_secret"
    )
    assert_problem(api.post(url, {}, format="json"), 400, "validation_error", field="url")
    settings.ALLOW_PRIVATE_TARGETS = False
    assert_problem(api.post(url, {"url": "http://127.0.0.1:9/"}, format="json"), 400, "private_address", field="url")
    hook = webhook_create(project=project, url="http://93.184.215.14/hook")
    assert_problem(
        api.patch(f"/api/v1/webhooks/{hook.id}/", {"url": "http://10.0.0.1/"}, format="json"), 400, "private_address"
    )


def test_delivery_log(api, project):
    hook = webhook_create(project=project, url="http://127.0.0.1:9/hook")
    audit = AuditFactory(project=project)
    WebhookDelivery.objects.create(
        webhook=hook,
        audit=audit,
        audit_ref=audit.id,
        event="audit.finished",
        status="failed",
        attempts=6,
        last_response_code=500,
        last_error="HTTP 500",
    )
    body = api.get(f"/api/v1/webhooks/{hook.id}/deliveries/").json()
    assert body["count"] == 1
    row = body["results"][0]
    assert row["audit"] == str(audit.id) and row["status"] == "failed" and row["attempts"] == 6
    assert row["last_response_code"] == 500
    assert api.get(f"/api/v1/webhooks/{hook.id}/deliveries/", {"status": "succeeded"}).json()["count"] == 0
    assert_problem(
        api.get(f"/api/v1/webhooks/{hook.id}/deliveries/", {"status": "lost"}), 400, "validation_error", field="status"
    )


def test_other_accounts_webhooks_are_not_found(other_api, project):
    hook = webhook_create(project=project, url="http://127.0.0.1:9/hook")
    assert_problem(other_api.get(f"/api/v1/projects/{project.id}/webhooks/"), 404, "not_found")
    assert_problem(
        other_api.post(f"/api/v1/projects/{project.id}/webhooks/", {"url": "http://127.0.0.1:9/"}, format="json"),
        404,
        "not_found",
    )
    for method in ("get", "delete"):
        assert_problem(getattr(other_api, method)(f"/api/v1/webhooks/{hook.id}/"), 404, "not_found")
    assert_problem(other_api.patch(f"/api/v1/webhooks/{hook.id}/", {"enabled": False}, format="json"), 404, "not_found")
    assert_problem(other_api.get(f"/api/v1/webhooks/{hook.id}/deliveries/"), 404, "not_found")
    assert Webhook.objects.filter(id=hook.id, enabled=True).count() == 1
