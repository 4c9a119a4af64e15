"""The MCP tools in process (the SDK's in-memory client; the transports are tests/assistants/test_e2e_transports.py):
schemas, refusals with the API's stable codes, throttles shared with the API, revoked tokens, resources."""

import json
from datetime import timedelta

import anyio
import pytest
from django.utils import timezone
from jsonschema import Draft202012Validator
from mcp import Client

from accounts.models import ApiToken
from accounts.tokens import token_authenticate, token_create, token_revoke
from assistants.identity import stdio_caller
from assistants.server import server
from audits.checks.catalogue import render_catalogue
from audits.models import Audit, Page, Project
from audits.priority import PRIORITY_RULE, issue_summary
from tests.api.conftest import finished_audit
from tests.factories import ProjectFactory
from tests.support.canary import PASSWORD, USER, site_and_canary

pytestmark = pytest.mark.django_db(transaction=True)  # the SDK runs each tool in a worker thread

READ_ONLY = {
    "list_projects", "audit_status", "list_audits", "audit_summary", "list_issues", "issue_evidence",
    "list_pages", "get_page", "compare_audits", "export_links", "list_external_links", "external_link_pages",
    "fix_verification",
    "check_gate",
}  # fmt: skip
WRITES = {"create_project", "start_audit", "cancel_audit", "verify_fix"}  # start, cancel or change something
READ_ONLY |= {"list_changes"}  # issue 28


@pytest.fixture
def as_caller(monkeypatch):
    def use(token: str):
        monkeypatch.setattr(stdio_caller, "plaintext", token)

    return use


@pytest.fixture
def results(token, as_caller):
    as_caller(token)
    user = token_authenticate(token).user
    project = ProjectFactory(owner=user, base_url="http://127.0.0.1:1/")
    return finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/gone": 404},
        issues=[("missing-title", "critical", "/a"), ("broken-page", "critical", "/gone")],
        links=[("/", "/a"), ("/", "/gone"), ("/a", "/")],
    )


def calls(*steps) -> list:
    """Run (tool, arguments) steps in one in-process session; returns each CallToolResult."""

    async def run():
        async with Client(server) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in steps]

    return anyio.run(run)


def test_every_tool_has_valid_typed_schemas_and_says_whether_it_writes():
    async def listed():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listed)
    # a new tool fails here until it is classified (and assistants.server.tool asks for read_only without a default)
    assert {t.name for t in tools} == READ_ONLY | WRITES
    for t in tools:
        Draft202012Validator.check_schema(t.input_schema)
        Draft202012Validator.check_schema(t.output_schema)
        assert t.description and t.annotations.read_only_hint == (t.name in READ_ONLY), t.name
    start = next(t for t in tools if t.name == "start_audit").input_schema
    assert start["required"] == ["project_id"] and start["properties"]["lighthouse"]["type"] == "boolean"


def test_results_of_a_finished_audit(results):
    audit = str(results.id)
    summary, issues, page, stranger_page = calls(
        ("audit_summary", {"audit_id": audit}),
        ("list_issues", {"audit_id": audit, "severity": "critical", "url_contains": "/gone"}),
        ("get_page", {"audit_id": audit, "url": "http://127.0.0.1:1/"}),
        ("get_page", {"audit_id": audit, "url": "http://127.0.0.1:1/elsewhere"}),
    )
    assert summary.structured_content["counts_by_severity"] == {"critical": 2, "warning": 0, "info": 0}
    assert [t["type"] for t in summary.structured_content["top_issues"]] == ["broken-page", "missing-title"]
    # the dashboard's rule and figures: a critical on one of three pages is 100 × 1/3
    assert summary.structured_content["priority_rule"] == PRIORITY_RULE
    first = summary.structured_content["top_issues"][0]
    assert (first["priority"], first["share_percent"], first["site_wide"]) == (33.3333, 33.3, False)
    assert first["priority"] == issue_summary(audit=results)[0].priority
    assert [i["type"] for i in issues.structured_content["issues"]] == ["broken-page"]
    assert page.structured_content["outlinks_count"] == 2 and page.structured_content["inlinks_count"] == 1
    assert stranger_page.is_error and stranger_page.structured_content["code"] == "not_found"


def test_export_links_name_the_apis_files_and_the_workbook(results):
    (links,) = calls(("export_links", {"audit_id": str(results.id)}))
    got = links.structured_content
    base = f"/api/v1/audits/{results.id}/exports/"
    for key, name in (("issues_csv", "issues.csv"), ("issues_xlsx", "issues.xlsx"), ("pages_json", "pages.json")):
        assert got[key].endswith(base + name), key


def test_pages_carry_no_extracted_values(results):
    """Custom extraction values (up to 32 KiB a page) stay out of the pages an assistant reads, as out of the API's
    page list by default: an assistant's context is the scarce resource."""
    Page.objects.filter(audit=results).update(extracted={"body": ["x" * 1000] * 20})
    listed, page = calls(
        ("list_pages", {"audit_id": str(results.id), "page_size": 200}),
        ("get_page", {"audit_id": str(results.id), "url": "http://127.0.0.1:1/"}),
    )
    assert len(listed.structured_content["pages"]) == 3
    for result in (listed, page):
        assert "xxxx" not in json.dumps(result.structured_content) and "extracted" not in str(result.content)


def test_refusals_carry_the_apis_codes_and_a_sentence(results):
    audit, project = str(results.id), results.project
    taken, port, running, same, unknown_tool_type = calls(
        ("create_project", {"name": project.name, "base_url": "http://127.0.0.1:2/"}),
        ("create_project", {"name": "new", "base_url": "http://127.0.0.1:99999/"}),
        ("cancel_audit", {"audit_id": audit}),
        ("compare_audits", {"audit_id": audit, "base_audit_id": audit}),
        ("list_pages", {"audit_id": audit, "issue_type": "no-such-check"}),
    )
    for result, code, status in (
        (taken, "project_name_taken", 409),
        (port, "validation_error", 400),
        (running, "audit_not_running", 409),
        (same, "comparison_same_audit", 400),
        (unknown_tool_type, "validation_error", 400),
    ):
        assert result.is_error
        body = result.structured_content
        assert (body["code"], body["status"]) == (code, status), body
        assert result.content[0].text == f"{code}: {body['detail']}" and body["detail"].endswith(".")
    assert port.structured_content["field"] == "base_url"
    assert port.structured_content["errors"] == {"base_url": [{"code": "invalid_port"}]}


def test_throttled_with_the_apis_rates_and_counters(results, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"api": "2/min"}}
    first, second, third = calls(*[("audit_status", {"audit_id": str(results.id)})] * 3)
    assert not first.is_error and not second.is_error
    assert third.structured_content["code"] == "throttled" and third.structured_content["status"] == 429
    assert third.structured_content["retry_after_s"] > 0


def test_a_revoked_token_stops_working_at_once(results, token):
    token_revoke(token=ApiToken.objects.get(prefix=token[:11]))
    (result,) = calls(("list_projects", {}))
    assert result.structured_content["code"] == "authentication_failed"


def test_resources_catalogue_one_check_and_the_report(results):
    async def read():
        async with Client(server) as client:
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            catalogue = await client.read_resource("sitewarden://checks")
            one = await client.read_resource("sitewarden://checks/missing-title")
            report = await client.read_resource(f"sitewarden://audits/{results.id}/report.md")
            return listed, catalogue, one, report

    listed, catalogue, one, report = anyio.run(read)
    assert listed == ["sitewarden://checks"]
    assert catalogue.contents[0].text == render_catalogue()
    assert '"how_to_fix"' in one.contents[0].text and '"severity": "critical"' in one.contents[0].text
    text = report.contents[0].text
    assert text.startswith(f"# Audit of {results.project.name}") and "`broken-page`" in text
    # the score with its sentence (pages without errors among it), then the formula in words on a line of its own
    # two errors on one page of three each: 100 - 2 x 25 / 3 (the fixture's stored 80 is no formula's: the sentence
    # is counted from its issues)
    assert "- Health score: 83 out of 100: " in text and "1 of 3 pages (33.3 %) have no error." in text
    assert "- How the score is calculated: The site starts at 100 points." in text


def _listed_tools() -> list:
    async def listed():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    return anyio.run(listed)


def _valid_arguments(tool, project_id: int, audit_id: str) -> dict:
    """Arguments that pass the tool's schema: its required ones, named after the caller's own objects."""
    values = {"project_id": project_id, "audit_id": audit_id, "name": "made by a reader"}
    values["base_url"] = "http://127.0.0.1:2/"
    values["issue_type"] = "missing-title"
    required = tool.input_schema.get("required", [])
    assert set(required) <= set(values), (tool.name, required)  # a new write tool: give its argument a value
    return {name: values[name] for name in required}


def test_a_read_only_token_is_refused_every_write_tool_and_still_reads(results, as_caller):
    running = Audit.objects.create(project=results.project, start_url=results.project.base_url, status="running")
    _, reader = token_create(user=results.project.owner, name="reader", scope=ApiToken.Scope.READ)
    as_caller(reader)
    writes = [t for t in _listed_tools() if not t.annotations.read_only_hint]
    assert {t.name for t in writes} == WRITES  # read-only tokens see them: the list is the same for every caller
    projects, audits = Project.objects.count(), Audit.objects.count()
    steps = [(t.name, _valid_arguments(t, results.project_id, str(running.id))) for t in writes]
    for (name, _), result in zip(steps, calls(*steps), strict=True):
        assert result.is_error, name
        body = result.structured_content
        assert (body["code"], body["status"]) == ("token_read_only", 403), (name, body)
        assert "read only" in body["detail"]
    running.refresh_from_db()
    assert running.status == "running" and (Project.objects.count(), Audit.objects.count()) == (projects, audits)
    summary, listed = calls(("audit_summary", {"audit_id": str(results.id)}), ("list_projects", {}))
    assert not summary.is_error and not listed.is_error


def test_a_token_that_expires_or_whose_user_is_deactivated_stops_working_at_once(results, token):
    row = ApiToken.objects.get(prefix=token[:11])
    ApiToken.objects.filter(id=row.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    (expired,) = calls(("list_projects", {}))
    assert expired.structured_content["code"] == "authentication_failed"
    assert "expired" in expired.structured_content["detail"]
    ApiToken.objects.filter(id=row.id).update(expires_at=None)
    row.user.is_active = False
    row.user.save()
    (inactive,) = calls(("list_projects", {}))
    assert "deactivated" in inactive.structured_content["detail"]


@pytest.mark.parametrize(
    "tool, arguments, field",
    [
        ("list_projects", {"page": 10**19}, "page"),
        ("list_audits", {"page": 10**19}, "page"),
        ("list_audits", {"project_id": 10**20}, "project_id"),
        ("start_audit", {"project_id": 10**20}, "project_id"),
        ("start_audit", {"project_id": 0}, "project_id"),
        ("list_issues", {"audit_id": "{audit}", "page": 10**19}, "page"),
        ("issue_evidence", {"audit_id": "{audit}", "issue_type": "missing-title", "page": 10**19}, "page"),
        ("list_pages", {"audit_id": "{audit}", "page": 10**19}, "page"),
        ("list_pages", {"audit_id": "{audit}", "view": "titles", "show": "over", "chars": 10**19}, "chars"),
    ],
)
def test_huge_page_numbers_and_ids_are_validation_errors(results, tool, arguments, field):
    arguments = {k: v.format(audit=results.id) if isinstance(v, str) else v for k, v in arguments.items()}
    (result,) = calls((tool, arguments))
    assert result.is_error, result
    body = result.structured_content
    assert (body["code"], body["status"], body["field"]) == ("validation_error", 400, field), body


@pytest.mark.parametrize(
    "text, code", [("a\x00b", "null_characters_not_allowed"), ("\ud800", "surrogate_characters_not_allowed")]
)
@pytest.mark.parametrize(
    "tool, arguments, field",
    [
        ("list_projects", {"name_contains": "{text}"}, "name_contains"),
        ("create_project", {"name": "{text}", "base_url": "http://127.0.0.1:2/"}, "name"),
        (
            "create_project",
            {"name": "x", "base_url": "http://127.0.0.1:2/", "exclude_patterns": ["{text}"]},
            "exclude_patterns.0",
        ),
        ("list_issues", {"audit_id": "{audit}", "url_contains": "{text}"}, "url_contains"),
        ("get_page", {"audit_id": "{audit}", "url": "http://127.0.0.1:1/{text}"}, "url"),
        ("start_audit", {"project_id": 1, "start_url": "http://127.0.0.1:1/{text}"}, "start_url"),
    ],
)
def test_nul_and_lone_surrogates_in_any_string_argument_are_field_errors(results, tool, arguments, field, text, code):
    arguments = {
        k: (
            v.format(audit=results.id, text=text)
            if isinstance(v, str)
            else [e.format(text=text) for e in v]
            if isinstance(v, list)
            else v
        )
        for k, v in arguments.items()
    }
    (result,) = calls((tool, arguments))
    assert result.is_error, result
    body = result.structured_content
    assert (body["code"], body["status"], body["field"]) == ("validation_error", 400, field), body
    assert body["errors"] == {field: [{"code": code}]} and body["detail"].endswith(".")


def test_an_off_site_start_is_refused_with_the_code_and_the_canary_hears_nothing(token, as_caller):
    as_caller(token)
    user = token_authenticate(token).user
    with site_and_canary() as (site, canary):
        project = ProjectFactory(owner=user, base_url=site.url + "/", auth_username=USER, auth_password=PASSWORD)
        (result,) = calls(("start_audit", {"project_id": project.id, "start_url": canary.url + "/"}))
    assert result.is_error
    body = result.structured_content
    assert (body["code"], body["status"], body["field"]) == ("start_url_off_site", 400, "start_url"), body
    assert result.content[0].text == f"start_url_off_site: {body['detail']}" and site.url in body["detail"]
    assert canary.seen == [] and site.seen == []
    assert not Audit.objects.filter(project=project).exists()
