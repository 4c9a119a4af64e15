"""api.permissions: a read-only token reads, and every write operation the OpenAPI schema lists (so an endpoint
added later is covered without touching this test) is refused with 403 token_read_only and changes nothing."""

import uuid

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.tokens import token_create
from audits.models import Audit, Project, Schedule
from tests.api.conftest import assert_problem, bearer_client
from tests.factories import WebhookFactory
from webhooks.models import Webhook

WRITE_METHODS = ("post", "put", "patch", "delete")


def _schema() -> dict:
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json", HTTP_HOST="localhost")
    assert response.status_code == 200
    return response.json()


def _write_operations(schema: dict) -> list[tuple[str, str, dict]]:
    return [
        (method, path, operation)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if method in WRITE_METHODS
    ]


def _fill(path: str, operation: dict, ids: dict[str, object]) -> str:
    """The path with each parameter set to the caller's own object of that collection (`/projects/{id}/` gets
    the caller's project), or to a well-formed id of nothing when the collection is new to this test."""
    for parameter in operation.get("parameters", []):
        if parameter["in"] != "path":
            continue
        placeholder = "{" + parameter["name"] + "}"
        collection = path.split(placeholder)[0].rstrip("/").rsplit("/", 1)[-1]
        fallback = uuid.uuid4() if parameter["schema"].get("format") == "uuid" else 987654321
        path = path.replace(placeholder, str(ids.get(collection, fallback)))
    return path


def _state() -> tuple:
    return (
        list(Project.objects.order_by("id").values_list("id", "name", "base_url")),
        list(Audit.objects.order_by("id").values_list("id", "status")),
        list(Webhook.objects.order_by("id").values_list("id", "url", "enabled")),
        list(Schedule.objects.order_by("id").values_list("id", "kind", "cron")),
    )


def test_a_read_only_token_is_refused_every_write_in_the_schema(user, project, results):
    running = Audit.objects.create(project=project, start_url=project.base_url, status=Audit.Status.RUNNING)
    webhook = WebhookFactory(project=project)
    token, plaintext = token_create(user=user, name="assistant", scope=ApiToken.Scope.READ)
    api = bearer_client(plaintext)
    ids = {"projects": project.id, "audits": running.id, "webhooks": webhook.id}
    body = {"name": "renamed", "base_url": "http://127.0.0.1:2/", "url": "http://127.0.0.1:3/hook", "cron": "0 3 * * *"}

    writes = _write_operations(_schema())
    assert len(writes) >= 10 and {m for m, _, _ in writes} == set(WRITE_METHODS)
    before = _state()
    for method, path, operation in writes:
        response = getattr(api, method)(_fill(path, operation, ids), body, format="json")
        detail = assert_problem(response, 403, "token_read_only")["detail"]
        assert "read only" in detail, (method, path)
    assert _state() == before  # nothing started, cancelled, created, changed or deleted

    # reads still work with it, and the same user's full token writes
    assert api.get("/api/v1/projects/").status_code == 200
    assert api.get(f"/api/v1/audits/{results.id}/issues/").status_code == 200
    full = bearer_client(token_create(user=user, name="ci")[1])
    assert full.patch(f"/api/v1/projects/{project.id}/", {"name": "renamed"}, format="json").status_code == 200


def test_a_session_is_not_limited_by_token_scopes(user, project):
    client = Client()
    client.force_login(user)
    response = client.patch(f"/api/v1/projects/{project.id}/", {"name": "by hand"}, content_type="application/json")
    assert response.status_code == 200


@pytest.mark.parametrize("method", ["get", "head", "options"])
def test_safe_methods_are_reads(user, project, method):
    _, plaintext = token_create(user=user, name="reader", scope=ApiToken.Scope.READ)
    assert getattr(bearer_client(plaintext), method)(f"/api/v1/projects/{project.id}/").status_code == 200
