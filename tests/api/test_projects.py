"""Projects: list/create/read/update/delete, validation, and other accounts' projects answering 404."""

import pytest

from audits.models import Audit, Project, Schedule
from audits.schedules import schedule_set
from tests.api.conftest import assert_problem
from tests.factories import AuditFactory, ProjectFactory

PROJECTS = "/api/v1/projects/"


def test_create_list_read_update_delete(api, user):
    created = api.post(
        PROJECTS,
        {
            "name": "Shop",
            "base_url": "http://127.0.0.1:8001/",
            "max_pages": 200,
            "include_patterns": ["^/shop/"],
            "auth_username": "u",
            "auth_password": "secret-pw",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert created["Location"].endswith(f"/api/v1/projects/{body['id']}/")
    assert body["name"] == "Shop" and body["max_pages"] == 200 and body["has_auth_password"] is True
    assert "auth_password" not in body
    project = Project.objects.get(id=body["id"])
    assert project.owner == user and project.auth_password == "secret-pw"

    listed = api.get(PROJECTS, {"name": "sho"}).json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == project.id
    assert api.get(PROJECTS, {"name": "nothing-like-it"}).json()["count"] == 0

    assert api.get(f"{PROJECTS}{project.id}/").json()["base_url"] == "http://127.0.0.1:8001/"
    patched = api.patch(f"{PROJECTS}{project.id}/", {"max_pages": 300, "name": "Shop 2"}, format="json")
    assert patched.status_code == 200 and patched.json()["max_pages"] == 300
    put = api.put(f"{PROJECTS}{project.id}/", {"name": "Shop 3", "base_url": "http://127.0.0.1:8002/"}, format="json")
    assert put.status_code == 200 and put.json()["base_url"] == "http://127.0.0.1:8002/"

    assert api.delete(f"{PROJECTS}{project.id}/").status_code == 204
    assert not Project.objects.filter(id=project.id).exists()


def test_delete_cancels_running_audits_and_clears_the_schedule(api, project):
    running = AuditFactory(project=project)
    schedule_set(project=project, kind="daily")
    assert api.delete(f"{PROJECTS}{project.id}/").status_code == 204
    assert not Audit.objects.filter(id=running.id).exists()
    assert not Schedule.objects.filter(project_id=project.id).exists()
    from django_celery_beat.models import PeriodicTask

    assert not PeriodicTask.objects.filter(name=f"project-{project.id}-audit").exists()


@pytest.mark.parametrize(
    "payload, field, code",
    [
        ({"name": "x", "base_url": "ftp://example.com/"}, "base_url", "unsupported_scheme"),
        ({"name": "x", "base_url": "javascript:alert(1)"}, "base_url", "unsupported_scheme"),
        ({"name": "x", "base_url": "http://127.0.0.1:1/", "max_pages": 0}, "max_pages", "invalid_max_pages"),
        (
            {"name": "x", "base_url": "http://127.0.0.1:1/", "include_patterns": ["("]},
            "include_patterns",
            "invalid_pattern",
        ),
        ({"base_url": "http://127.0.0.1:1/"}, "name", "required"),
    ],
)
def test_create_validation_errors(api, payload, field, code):
    body = assert_problem(api.post(PROJECTS, payload, format="json"), 400, "validation_error", field=field)
    assert body["errors"][field][0]["code"] == code


@pytest.mark.parametrize("base_url", ["javascript:alert(1)", "ftp://x", "JavaScript://x"])
def test_unsupported_schemes_are_named_not_taken_for_a_port(api, base_url):
    response = api.post(PROJECTS, {"name": "x", "base_url": base_url}, format="json")
    body = assert_problem(response, 400, "validation_error")
    error = body["errors"]["base_url"][0]
    assert error["code"] == "unsupported_scheme" and "Only http and https URLs can be audited" in error["message"]


def test_private_base_url_refused_when_private_targets_are_off(api, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    body = assert_problem(
        api.post(PROJECTS, {"name": "x", "base_url": "http://127.0.0.1:8000/"}, format="json"),
        400,
        "validation_error",
        field="base_url",
    )
    assert body["errors"]["base_url"][0]["code"] == "private_address"
    # the refusal comes from a setting, and names it
    assert "set ALLOW_PRIVATE_TARGETS=true to audit private addresses" in body["detail"]


def test_a_private_start_url_refusal_names_allow_private_targets(api, project, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    response = api.post(f"{PROJECTS}{project.id}/audits/", {"start_url": "http://10.1.2.3/"}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "private_address"
    assert "ALLOW_PRIVATE_TARGETS=true" in response.json()["detail"]


def test_duplicate_name_is_a_conflict(api, project):
    assert_problem(
        api.post(PROJECTS, {"name": project.name, "base_url": "http://127.0.0.1:1/"}, format="json"),
        409,
        "project_name_taken",
        field="name",
    )
    other = ProjectFactory(owner=project.owner)
    assert_problem(
        api.patch(f"{PROJECTS}{other.id}/", {"name": project.name}, format="json"), 409, "project_name_taken"
    )


def test_update_validation_error(api, project):
    assert_problem(
        api.patch(f"{PROJECTS}{project.id}/", {"max_concurrency": 0}, format="json"),
        400,
        "validation_error",
        field="max_concurrency",
    )


def test_other_accounts_projects_are_not_found(api, other_api, project):
    assert other_api.get(PROJECTS).json()["count"] == 0
    url = f"{PROJECTS}{project.id}/"
    assert_problem(other_api.get(url), 404, "not_found")
    assert_problem(other_api.patch(url, {"max_pages": 1}, format="json"), 404, "not_found")
    assert_problem(other_api.delete(url), 404, "not_found")
    assert Project.objects.filter(id=project.id, max_pages=project.max_pages).exists()


def test_unknown_api_url_answers_problem_json(api):
    assert_problem(api.get("/api/v1/nothing-here/"), 404, "not_found")
    assert_problem(api.get("/api/v1/projects/-3/"), 404, "not_found")


def test_a_move_to_another_origin_removes_the_password_and_the_answer_says_so(api, user):
    project = ProjectFactory(owner=user, base_url="http://127.0.0.1:8001/", auth_username="u", auth_password="pw")
    same = api.patch(f"{PROJECTS}{project.id}/", {"base_url": "http://127.0.0.1:8001/docs/"}, format="json").json()
    assert same["has_auth_password"] is True and same["auth_password_cleared"] is False
    moved = api.patch(f"{PROJECTS}{project.id}/", {"base_url": "http://127.0.0.1:8002/"}, format="json").json()
    assert moved["has_auth_password"] is False and moved["auth_password_cleared"] is True
    assert api.get(f"{PROJECTS}{project.id}/").json()["auth_password_cleared"] is False  # said once, not stored
    project.refresh_from_db()
    assert project.auth_password == ""


def test_the_external_link_settings_are_read_and_written(api, project):
    """The outbound link pass's switch, cap and time budget (audits/pipeline/external.py), within their bounds."""
    url = f"{PROJECTS}{project.id}/"
    assert {k: api.get(url).json()[k] for k in ("external_links_max", "external_links_budget_s")} == {
        "external_links_max": 2000,
        "external_links_budget_s": 300,
    }
    change = {"check_external_links": True, "external_links_max": 50, "external_links_budget_s": 30}
    patched = api.patch(url, change, format="json")
    assert patched.status_code == 200 and {k: patched.json()[k] for k in change} == change
    refused = api.patch(url, {"external_links_budget_s": 3600}, format="json")
    assert refused.status_code == 400 and "external_links_budget_s" in str(refused.json())


def test_the_bot_sample_size_is_read_and_written(api, project):
    """Pages fetched as each crawler and as a browser (audits/pipeline/bots.py): 0 fetches none, 100 at most."""
    url = f"{PROJECTS}{project.id}/"
    assert api.get(url).json()["bot_sample_max"] == 10
    assert api.patch(url, {"bot_sample_max": 0}, format="json").json()["bot_sample_max"] == 0
    refused = api.patch(url, {"bot_sample_max": 101}, format="json")
    assert refused.status_code == 400 and "bot_sample_max" in str(refused.json())
