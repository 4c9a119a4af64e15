"""What an attacker's probe sends the API: every bad input is a 4xx problem+json with a stable code, never
a 500, and nothing is half-stored."""

import json

import pytest

from audits.models import Audit, Project
from tests.api.conftest import assert_problem, finished_audit
from webhooks.models import Webhook

PROJECTS = "/api/v1/projects/"
DEEP_JSON_LEVELS = 50_000
HUGE_BODY_BYTES = 20 * 1024 * 1024


def counts() -> tuple[int, int, int]:
    return Project.objects.count(), Audit.objects.count(), Webhook.objects.count()


@pytest.fixture
def api(api):
    api.raise_request_exception = False  # a 500 must show as a 500 here, not as an exception in the test
    return api


@pytest.mark.parametrize("port", ["0", "65536", "99999999999999999999"])
def test_project_create_with_a_port_out_of_range(api, user, port):
    before = counts()
    body = assert_problem(
        api.post(PROJECTS, {"name": "x", "base_url": f"http://127.0.0.1:{port}/"}, format="json"),
        400,
        "validation_error",
        field="base_url",
    )
    assert body["errors"]["base_url"][0]["code"] == "invalid_port"
    assert counts() == before


def test_project_patch_with_a_port_out_of_range(api, project):
    url = f"{PROJECTS}{project.id}/"
    body = assert_problem(
        api.patch(url, {"base_url": "http://127.0.0.1:65536/", "max_pages": 7}, format="json"),
        400,
        "validation_error",
        field="base_url",
    )
    assert body["errors"]["base_url"][0]["code"] == "invalid_port"
    project.refresh_from_db()
    assert project.base_url == "http://127.0.0.1:1/" and project.max_pages != 7


def test_audit_start_with_a_port_out_of_range(api, project):
    before = counts()
    assert_problem(
        api.post(f"{PROJECTS}{project.id}/audits/", {"start_url": "http://127.0.0.1:65536/"}, format="json"),
        400,
        "invalid_port",
        field="start_url",
    )
    assert counts() == before


def test_webhook_create_with_a_port_out_of_range(api, project):
    before = counts()
    assert_problem(
        api.post(f"{PROJECTS}{project.id}/webhooks/", {"url": "http://127.0.0.1:65536/hook"}, format="json"),
        400,
        "invalid_port",
        field="url",
    )
    assert counts() == before


@pytest.mark.parametrize(
    "payload, field, code",
    [
        ({"user_agent": "Bot/1.0\r\nX-Injected: yes"}, "user_agent", "invalid_user_agent"),
        ({"max_concurrency": 0}, "max_concurrency", "invalid_max_concurrency"),
        ({"max_pages": 10**30}, "max_pages", "invalid_max_pages"),
        ({"exclude_patterns": ["(a)\\1"]}, "exclude_patterns", "invalid_pattern"),
        ({"include_patterns": ["x"] * 51}, "include_patterns", "too_many_patterns"),
        ({"base_url": "http://user:pw@127.0.0.1:8000/"}, "base_url", "credentials_in_url"),
        ({"name": "n" * 500}, "name", "invalid_name"),
    ],
)
def test_the_service_refusals_reach_the_api_as_field_errors(api, user, payload, field, code):
    before = counts()
    data = {"name": "x", "base_url": "http://127.0.0.1:8000/", **payload}
    body = assert_problem(api.post(PROJECTS, data, format="json"), 400, "validation_error", field=field)
    assert body["errors"][field][0]["code"] == code
    assert counts() == before


@pytest.mark.parametrize(
    "method, path",
    [
        ("post", PROJECTS),
        ("patch", "{project}"),
        ("post", "{project}audits/"),
        ("post", "{project}webhooks/"),
        ("put", "{project}schedule/"),
    ],
)
def test_json_nested_50000_deep_is_a_parse_error(api, project, method, path):
    before = counts()
    deep = "[" * DEEP_JSON_LEVELS + "]" * DEEP_JSON_LEVELS
    response = api.generic(
        method.upper(), path.format(project=f"{PROJECTS}{project.id}/"), deep, content_type="application/json"
    )
    assert "nested too deeply" in assert_problem(response, 400, "parse_error")["detail"]
    assert counts() == before


def test_a_20_mb_body_is_413_problem_json(api, user):
    before = counts()
    huge = json.dumps({"name": "x", "base_url": "http://127.0.0.1:8000/", "user_agent": "a" * HUGE_BODY_BYTES})
    response = api.generic("POST", PROJECTS, huge, content_type="application/json")
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in assert_problem(response, 413, "request_too_large")["detail"]
    assert counts() == before


def test_an_oversized_number_is_a_parse_error(api, user):
    body = '{"name": "x", "base_url": "http://127.0.0.1:8000/", "max_pages": ' + "9" * 5000 + "}"
    assert_problem(api.generic("POST", PROJECTS, body, content_type="application/json"), 400, "parse_error")
    assert Project.objects.count() == 0


@pytest.mark.parametrize("host", ["", "no such host.invalid"])
def test_a_request_django_refuses_before_any_view_answers_problem_json(client, host):
    # An empty or unknown Host header is refused by Django itself (DisallowedHost): under /api/ the answer is
    # still the API's problem JSON, as the schema says; elsewhere Django's own page.
    assert_problem(client.get("/api/v1/projects/", HTTP_HOST=host), 400, "bad_request")
    page = client.get("/projects/", HTTP_HOST=host)
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


HUGE_ID = 10**20  # 20 digits: past PostgreSQL's bigint


@pytest.mark.parametrize(
    "path",
    [
        f"{PROJECTS}{HUGE_ID}/",
        f"{PROJECTS}{HUGE_ID}/audits/",
        f"{PROJECTS}{2**63}/schedule/",
        f"{PROJECTS}0/webhooks/",
        f"/api/v1/webhooks/{HUGE_ID}/",
        f"/api/v1/webhooks/{HUGE_ID}/deliveries/",
    ],
)
def test_an_id_out_of_range_in_a_path_is_a_404_problem(api, project, path):
    assert_problem(api.get(path), 404, "not_found")


def test_the_largest_id_is_still_an_id(api, project):
    assert_problem(api.get(f"{PROJECTS}{2**63 - 1}/"), 404, "not_found")  # matched, looked up, not found


@pytest.mark.parametrize(
    "path, query, field",
    [
        ("/api/v1/audits/", {"project": HUGE_ID}, "project"),
        ("/api/v1/audits/", {"project": -1}, "project"),
        ("{audit}pages/", {"status_code": HUGE_ID}, "status_code"),
        ("{audit}pages/", {"status_code": "1e400"}, "status_code"),
    ],
)
def test_a_number_out_of_range_in_a_list_filter_is_a_field_error(api, project, path, query, field):
    audit = finished_audit(project, pages={"/": 200}, issues=[])
    response = api.get(path.format(audit=f"/api/v1/audits/{audit.id}/"), query)
    assert_problem(response, 400, "validation_error", field=field)


@pytest.mark.parametrize(
    "text, code",
    [("\\ud800", "surrogate_characters_not_allowed"), ("a\\u0000b", "null_characters_not_allowed")],
    ids=["lone-surrogate", "nul"],
)
@pytest.mark.parametrize(
    "method, path, body, field",
    [
        ("POST", PROJECTS, '{"name": "%s", "base_url": "http://127.0.0.1:8000/"}', "name"),
        ("POST", PROJECTS, '{"name": "x", "base_url": "http://127.0.0.1:8000/", "exclude_patterns": ["%s"]}',
         "exclude_patterns.0"),
        ("POST", PROJECTS, '{"name": "x", "base_url": "http://127.0.0.1:8000/", "check_overrides": '
         '{"thresholds": {"title-too-long": {"%s": 70}}}}', "check_overrides.thresholds.title-too-long"),
        ("POST", PROJECTS, '{"name": "x", "base_url": "http://127.0.0.1:8000/", "extractors": '
         '[{"name": "%s", "kind": "css", "expression": "h1"}]}', "extractors.0.name"),
        ("PATCH", "{project}", '{"user_agent": "%s"}', "user_agent"),
        ("POST", "{project}audits/", '{"start_url": "http://127.0.0.1:1/%s"}', "start_url"),
        ("POST", "{project}audits/", '{"urls": ["http://127.0.0.1:1/%s"]}', "urls.0"),
        ("POST", "{project}webhooks/", '{"url": "http://127.0.0.1:9/", "secret": "%s"}', "secret"),
        ("PUT", "{project}schedule/", '{"kind": "cron", "cron": "%s"}', "cron"),
    ],
)  # fmt: skip
def test_nul_and_lone_surrogates_in_json_bodies_are_field_errors(api, project, method, path, body, field, text, code):
    before = counts()
    url = path.format(project=f"{PROJECTS}{project.id}/")
    response = api.generic(method, url, body % text, content_type="application/json")
    problem = assert_problem(response, 400, "validation_error", field=field)
    assert problem["errors"][field][0]["code"] == code
    assert counts() == before
