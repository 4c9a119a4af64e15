"""A real MCP client from the SDK, over both transports, against a live server and a real Celery worker:
start an audit of a local site, poll its status to completion, read the summary, issues, evidence and a
page; another account's token gets not_found; bad arguments get tool errors with stable codes; every
tool's schemas are valid JSON Schema."""

import anyio
import pytest
import requests
from jsonschema import Draft202012Validator

from tests.assistants.conftest import http_client, stdio_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

AUDIT_WAIT_S = 240
POLL_EVERY_S = 1
MAX_PAGES = 40


async def _call(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    return result.structured_content


async def _refusal(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, result.structured_content)
    body = result.structured_content
    assert result.content[0].text.startswith(f"{body['code']}: ") and body["detail"]
    return body


async def session(client, stranger, site: str) -> dict:
    """The assistant's session of the README's transcript; returns what the assertions after it need."""
    async with client:
        tools = (await client.list_tools()).tools
        for t in tools:
            Draft202012Validator.check_schema(t.input_schema)
            Draft202012Validator.check_schema(t.output_schema)

        project = await _call(client, "create_project", name="local site", base_url=site + "/")
        assert (await _call(client, "list_projects"))["projects"][0]["id"] == project["id"]
        started = await _call(client, "start_audit", project_id=project["id"], max_pages=MAX_PAGES)
        audit_id = started["id"]
        assert started["status"] == "running" and not started["finished"]

        with anyio.fail_after(AUDIT_WAIT_S):
            while not (status := await _call(client, "audit_status", audit_id=audit_id))["finished"]:
                assert 0 <= status["percent"] <= 100
                await anyio.sleep(POLL_EVERY_S)
        assert status["status"] == "completed", status
        assert status["pages_crawled"] == MAX_PAGES and status["percent"] == 100

        summary = await _call(client, "audit_summary", audit_id=audit_id)
        top = summary["top_issues"][0]
        issues = await _call(client, "list_issues", audit_id=audit_id, type=top["type"], page_size=200)
        evidence = await _call(client, "issue_evidence", audit_id=audit_id, issue_type=top["type"])
        pages = await _call(client, "list_pages", audit_id=audit_id, page_size=200, sort="-inlinks")
        home = await _call(client, "get_page", audit_id=audit_id, url=site + "/")
        links = await _call(client, "export_links", audit_id=audit_id)
        report = await client.read_resource(links["report_resource"])
        check = await client.read_resource(f"sitewarden://checks/{top['type']}")

        bad_pages = await _refusal(client, "start_audit", project_id=project["id"], max_pages=0)
        bad_severity = await _refusal(client, "list_issues", audit_id=audit_id, severity="urgent")
        bad_type = await _refusal(client, "issue_evidence", audit_id=audit_id, issue_type="no-such-check")

    async with stranger:
        strangers = [
            await _refusal(stranger, "audit_status", audit_id=audit_id),
            await _refusal(stranger, "get_page", audit_id=audit_id, page_id=home["id"]),
            await _refusal(stranger, "start_audit", project_id=project["id"]),
        ]
        stranger_report = None
        try:
            await stranger.read_resource(links["report_resource"])
        except Exception as exc:  # the SDK raises the protocol error a resource read answers with
            stranger_report = str(exc)

    return locals()


def _check(got: dict, site: str) -> None:
    summary, top = got["summary"], got["top"]
    assert summary["final"] and summary["health_score"] is not None and 0 <= summary["health_score"] <= 100
    assert sum(summary["counts_by_severity"].values()) == summary["issues_total"] > 0
    assert got["issues"]["count"] == top["count"] and {i["type"] for i in got["issues"]["issues"]} == {top["type"]}
    assert got["evidence"]["columns"] and got["evidence"]["rows"] and got["evidence"]["count"] == top["count"]
    assert got["pages"]["count"] == MAX_PAGES and all(p["url"].startswith(site) for p in got["pages"]["pages"])
    inlinks = [p["inlinks"] for p in got["pages"]["pages"]]
    assert inlinks == sorted(inlinks, reverse=True)
    home = got["home"]
    assert home["status_code"] == 200 and home["outlinks_count"] > 0 and home["outlinks"]
    assert got["links"]["pages_csv"].endswith(f"/api/v1/audits/{got['audit_id']}/exports/pages.csv")
    assert got["report"].contents[0].text.startswith("# Audit of local site")
    assert top["title"] in got["check"].contents[0].text

    assert got["bad_pages"]["code"] == "invalid_max_pages" and got["bad_pages"]["field"] == "max_pages"
    assert got["bad_severity"]["code"] == "validation_error" and got["bad_severity"]["field"] == "severity"
    assert got["bad_type"]["code"] == "validation_error" and got["bad_type"]["field"] == "issue_type"
    for refusal in got["strangers"]:
        assert refusal["code"] == "not_found" and refusal["status"] == 404
    assert "No such audit" in got["stranger_report"]


def test_session_over_stdio(small_site, celery_worker_process, token, other_token):
    site = small_site[0]
    got = anyio.run(session, stdio_client(token), stdio_client(other_token), site)
    _check(got, site)


def test_session_over_streamable_http(small_site, celery_worker_process, asgi_server, token, other_token):
    site = small_site[0]
    url = asgi_server + "/mcp/"
    got = anyio.run(session, http_client(url, token), http_client(url, other_token), site)
    _check(got, site)
    assert got["links"]["pages_csv"].startswith(asgi_server + "/api/v1/")
    # The same web process still serves Django, and /mcp/ refuses a request without a token as the API does.
    assert requests.get(asgi_server + "/api/v1/projects/", timeout=10).status_code == 401
    refused = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10)
    assert refused.status_code == 401 and refused.json()["code"] == "not_authenticated"
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    # The export link works with the same token, streamed by Django behind the same ASGI process.
    export = requests.get(got["links"]["pages_csv"], headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert export.status_code == 200 and export.headers["Content-Type"].startswith("text/csv")
    assert len(export.text.strip().splitlines()) == MAX_PAGES + 1
