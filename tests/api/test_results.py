"""Issues, the by-type summary, pages, a page with its links, streamed exports (all issues, pages, one issue
type's evidence) and the comparison."""

import csv
import io
import json

import openpyxl
import pytest
from django.test import Client
from django.urls import reverse

from audits import exports
from audits.models import Issue, Page, page_id_for
from audits.stats import issue_type_rows
from tests.api.conftest import assert_problem, finished_audit, later_audit
from tests.factories import ProjectFactory


def test_issues_list_and_filters(api, results):
    url = f"/api/v1/audits/{results.id}/issues/"
    body = api.get(url).json()
    assert body["count"] == 4
    assert {i["type"] for i in body["results"]} == {
        "missing-title",
        "title-too-long",
        "broken-page",
        "broken-internal-link",
    }
    assert all(i["title"] for i in body["results"])
    assert {i["type"] for i in api.get(url, {"severity": "critical"}).json()["results"]} == {
        "missing-title",
        "broken-page",
        "broken-internal-link",
    }
    assert [i["type"] for i in api.get(url, {"type": "broken-page"}).json()["results"]] == ["broken-page"]
    assert [i["page_url"] for i in api.get(url, {"url": "/GONE"}).json()["results"]] == ["http://127.0.0.1:1/gone"]
    first = api.get(url, {"page_size": 3}).json()
    assert len(first["results"]) == 3 and first["previous"] is None and first["count"] == 4
    paged = api.get(first["next"]).json()  # keyset pages: follow `next` (api.pagination.KeysetPagination)
    assert len(paged["results"]) == 1 and paged["previous"] and paged["next"] is None


@pytest.mark.parametrize("params, field", [({"severity": "fatal"}, "severity"), ({"type": "no-such"}, "type")])
def test_issues_filter_validation(api, results, params, field):
    assert_problem(api.get(f"/api/v1/audits/{results.id}/issues/", params), 400, "validation_error", field=field)


def test_issues_page_out_of_range_is_not_found(api, results):
    assert_problem(api.get(f"/api/v1/audits/{results.id}/issues/", {"page": 9}), 404, "not_found")


def test_issue_summary(api, results):
    rows = api.get(f"/api/v1/audits/{results.id}/issues/summary/").json()
    assert rows[0]["severity"] == "critical"  # most severe first
    assert {r["type"]: r["count"] for r in rows} == {
        "missing-title": 1,
        "title-too-long": 1,
        "broken-page": 1,
        "broken-internal-link": 1,
    }
    assert all(r["title"] and r["scope"] in ("page", "site") for r in rows)


def test_issue_summary_of_a_completed_audit_is_what_finalize_counted(api, results):
    """The stored counts per type and severity (audits.stats), the same rows as counted; the stored figure is read."""
    url = f"/api/v1/audits/{results.id}/issues/summary/"
    counted = api.get(url).json()
    results.stats = {"issue_types": issue_type_rows(audit_id=results.id)}
    results.save(update_fields=["stats"])
    assert api.get(url).json() == counted
    results.stats["issue_types"][0]["n"] = 70
    results.save(update_fields=["stats"])
    assert 70 in {r["count"] for r in api.get(url).json()}


def test_pages_list_and_filters(api, results):
    url = f"/api/v1/audits/{results.id}/pages/"
    assert api.get(url).json()["count"] == 3
    assert [p["url"] for p in api.get(url, {"status_code": 404}).json()["results"]] == ["http://127.0.0.1:1/gone"]
    assert api.get(url, {"is_indexable": "true"}).json()["count"] == 2
    assert api.get(url, {"fetch_class": "ok"}).json()["count"] == 3
    assert [p["url"] for p in api.get(url, {"has_issue": "missing-title"}).json()["results"]] == [
        "http://127.0.0.1:1/a"
    ]
    assert [p["url"] for p in api.get(url, {"url": "/a"}).json()["results"]] == ["http://127.0.0.1:1/a"]


def test_a_status_filters_count_is_the_stored_one_once_finalize_counted_per_code(api, results):
    """Filtered by a status code alone, `count` is what finalize stored per code (audits.stats.page_status_total),
    not a COUNT(*) over every page of that status; with any other filter beside it, counted."""
    url = f"/api/v1/audits/{results.id}/pages/"
    assert api.get(url, {"status_code": 200}).json()["count"] == 2  # no counts stored: counted
    results.stats = {"status_codes": {"200": 2, "404": 1}}
    results.save(update_fields=["stats"])
    assert api.get(url, {"status_code": 200}).json()["count"] == 2
    assert api.get(url, {"status_code": 500}).json()["count"] == 0
    results.stats = {"status_codes": {"200": 7, "404": 1}}  # the stored figure is the one read
    results.save(update_fields=["stats"])
    assert api.get(url, {"status_code": 200}).json()["count"] == 7
    assert api.get(url, {"status_code": 200, "url": "/a"}).json()["count"] == 1


@pytest.mark.parametrize(
    "params, field",
    [
        ({"status_code": "abc"}, "status_code"),
        ({"fetch_class": "weird"}, "fetch_class"),
        ({"has_issue": "nope"}, "has_issue"),
    ],
)
def test_pages_filter_validation(api, results, params, field):
    assert_problem(api.get(f"/api/v1/audits/{results.id}/pages/", params), 400, "validation_error", field=field)


def test_pages_list_carries_extracted_values_only_when_asked(api, results):
    """Up to 32 KiB of custom extraction values a page: the list leaves them out unless `include=extracted`
    (then at most 100 rows a response); a page's detail always has them."""
    big = {"body": ["x" * 1000] * 20}
    Page.objects.filter(audit=results).update(extracted=big)
    url = f"/api/v1/audits/{results.id}/pages/"
    plain = api.get(url, {"page_size": 500})
    assert plain.status_code == 200 and plain.json()["count"] == 3
    assert all("extracted" not in p for p in plain.json()["results"])
    assert b"xxxx" not in plain.content
    for include in ("extracted", "extracted,", ["extracted", "extracted"]):
        asked = api.get(url, {"include": include}).json()
        assert [p["extracted"] for p in asked["results"]] == [big] * 3
    assert [p["url"] for p in api.get(url, {"include": "extracted", "page_size": 2}).json()["results"]] == [
        "http://127.0.0.1:1/",
        "http://127.0.0.1:1/a",
    ]
    Page.objects.bulk_create(
        Page(id=page_id_for(results.id, f"http://127.0.0.1:1/p{n}"), audit=results, url=f"http://127.0.0.1:1/p{n}")
        for n in range(120)
    )
    assert len(api.get(url, {"include": "extracted", "page_size": 500}).json()["results"]) == 100
    assert len(api.get(url, {"page_size": 500}).json()["results"]) == 123
    home = page_id_for(results.id, "http://127.0.0.1:1/")
    assert api.get(f"/api/v1/audits/{results.id}/pages/{home}/").json()["extracted"] == big
    assert_problem(api.get(url, {"include": "issues"}), 400, "validation_error", field="include")


def test_pages_list_include_is_in_the_schema(db):
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    get = schema["paths"]["/api/v1/audits/{id}/pages/"]["get"]
    (include,) = [p for p in get["parameters"] if p["name"] == "include"]
    assert include["in"] == "query" and include["schema"]["enum"] == ["extracted"]
    listed = schema["components"]["schemas"][get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
                                             .rsplit("/", 1)[1]]  # fmt: skip
    item = schema["components"]["schemas"][listed["properties"]["results"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert "extracted" in item["properties"] and "extracted" not in item["required"] and "url" in item["required"]


def test_page_detail_with_inlinks_and_outlinks(api, results):
    home = page_id_for(results.id, "http://127.0.0.1:1/")
    body = api.get(f"/api/v1/audits/{results.id}/pages/{home}/").json()
    assert body["url"] == "http://127.0.0.1:1/"
    assert body["outlinks_count"] == 2
    assert {o["target_url"] for o in body["outlinks"]} == {"http://127.0.0.1:1/a", "http://127.0.0.1:1/gone"}
    assert body["inlinks_count"] == 1
    assert body["inlinks"][0]["source_url"] == "http://127.0.0.1:1/a"
    assert body["inlinks"][0]["source_page"] == str(page_id_for(results.id, "http://127.0.0.1:1/a"))
    assert {i["type"] for i in body["issues"]} == {"title-too-long", "broken-internal-link"}
    gone = api.get(f"/api/v1/audits/{results.id}/pages/{page_id_for(results.id, 'http://127.0.0.1:1/gone')}/")
    assert gone.json()["inlinks_count"] == 1 and gone.json()["outlinks_count"] == 0


def test_page_of_another_audit_is_not_found(api, results, project):
    other = finished_audit(project, pages={"/x": 200}, issues=[])
    page = Page.objects.get(audit=other)
    assert_problem(api.get(f"/api/v1/audits/{results.id}/pages/{page.id}/"), 404, "not_found")


def test_exports_stream_csv_and_json(api, results):
    base = f"/api/v1/audits/{results.id}/exports/"
    response = api.get(base + "issues.csv")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 4 and {r["type"] for r in rows} >= {"broken-page", "missing-title"}

    issues = json.loads(b"".join(api.get(base + "issues.json").streaming_content))
    assert len(issues) == 4 and {"type", "severity", "page_url"} <= set(issues[0])

    pages_csv = list(csv.DictReader(io.StringIO(b"".join(api.get(base + "pages.csv").streaming_content).decode())))
    assert sorted(r["url"] for r in pages_csv) == [
        "http://127.0.0.1:1/",
        "http://127.0.0.1:1/a",
        "http://127.0.0.1:1/gone",
    ]
    pages = json.loads(b"".join(api.get(base + "pages.json").streaming_content))
    assert {p["status_code"] for p in pages} == {200, 404}


def test_issues_workbook_export(api, results):
    response = api.get(f"/api/v1/audits/{results.id}/exports/issues.xlsx")
    assert response.status_code == 200
    assert response["Content-Type"] == exports.XLSX_CONTENT_TYPE
    assert response["Content-Disposition"].startswith("attachment;")
    book = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content)), read_only=True)
    assert book.sheetnames == ["Overview", "broken-internal-link", "broken-page", "missing-title", "title-too-long"]
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    responses = schema["paths"]["/api/v1/audits/{id}/exports/issues.xlsx"]["get"]["responses"]
    assert exports.XLSX_CONTENT_TYPE in responses["200"]["content"]


def test_issue_type_export_is_the_dashboards_file(api, user, results):
    """One type's evidence in its named columns, byte for byte what the dashboard's per-type export sends."""
    Issue.objects.filter(audit=results, type="broken-page").update(details={"status_code": 404})
    dashboard = Client()
    dashboard.force_login(user)
    for fmt, media in (("csv", "text/csv"), ("json", "application/json")):
        response = api.get(f"/api/v1/audits/{results.id}/issues/broken-page/export.{fmt}")
        assert response.status_code == 200 and response.streaming
        assert response["Content-Type"].startswith(media)
        assert f"issues-broken-page.{fmt}" in response["Content-Disposition"]
        body = b"".join(response.streaming_content)
        screen = dashboard.get(reverse("audits:audit-issue-type-export", args=[results.id, "broken-page", fmt]))
        assert screen.status_code == 200 and body == b"".join(screen.streaming_content)
        if fmt == "csv":
            rows = list(csv.reader(io.StringIO(body.decode())))
            assert rows == [["page_url", "status_code"], ["http://127.0.0.1:1/gone", "404"]]
        else:
            assert json.loads(body) == [{"page_url": "http://127.0.0.1:1/gone", "status_code": 404}]
    # a known type the audit does not have: an empty file with the type's columns
    empty = api.get(f"/api/v1/audits/{results.id}/issues/redirect-chain/export.json")
    assert empty.status_code == 200 and json.loads(b"".join(empty.streaming_content)) == []


def test_issue_type_export_of_an_unknown_type_is_not_found(api, results):
    for fmt in ("csv", "json"):
        response = api.get(f"/api/v1/audits/{results.id}/issues/no-such-check/export.{fmt}")
        assert_problem(response, 404, "not_found")
        assert "no-such-check" in response.json()["detail"]


def test_issue_type_exports_are_in_the_schema(db):
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for fmt, media in (("csv", "text/csv"), ("json", "application/json")):
        get = schema["paths"][f"/api/v1/audits/{{id}}/issues/{{issue_type}}/export.{fmt}"]["get"]
        assert media in get["responses"]["200"]["content"]
        assert "application/problem+json" in get["responses"]["404"]["content"]
        (issue_type,) = [p for p in get["parameters"] if p["name"] == "issue_type"]
        assert issue_type["in"] == "path" and "broken-page" in issue_type["schema"]["enum"]


def test_csv_export_defuses_formulas(api, project):
    audit = finished_audit(project, pages={"/f": 200}, issues=[])
    Page.objects.filter(audit=audit).update(title='=HYPERLINK("http://evil")')
    text = b"".join(api.get(f"/api/v1/audits/{audit.id}/exports/pages.csv").streaming_content).decode()
    assert "'=HYPERLINK" in text


def test_comparison_new_fixed_persisting(api, project, results):
    later = later_audit(project)
    body = api.get(f"/api/v1/audits/{later.id}/compare/{results.id}/").json()
    assert body["audit"] == str(later.id) and body["base"] == str(results.id)
    assert body["totals"] == {"new": 1, "fixed": 1, "persisting": 2, "not_crawled": 1}
    by_type = {r["type"]: r for r in body["by_type"]}
    assert by_type["missing-title"] == {
        "type": "missing-title",
        "severity": "critical",
        "new": 1,
        "fixed": 0,
        "persisting": 1,
        "not_crawled": 0,
    }
    assert by_type["broken-page"]["fixed"] == 0 and by_type["broken-page"]["not_crawled"] == 1
    assert by_type["broken-internal-link"]["fixed"] == 1
    assert body["pages"] == {"both": 2, "not_crawled": 1, "only_now": 1}
    # The other way round, new and fixed swap (/new was not crawled by `results`: its issue is not crawled).
    back = api.get(f"/api/v1/audits/{results.id}/compare/{later.id}/").json()
    assert back["totals"] == {"new": 2, "fixed": 0, "persisting": 2, "not_crawled": 1}


def test_comparison_validation(api, project, results):
    assert_problem(
        api.get(f"/api/v1/audits/{results.id}/compare/{results.id}/"), 400, "comparison_same_audit", field="base"
    )
    elsewhere = finished_audit(ProjectFactory(owner=project.owner), pages={"/": 200}, issues=[])
    assert_problem(api.get(f"/api/v1/audits/{results.id}/compare/{elsewhere.id}/"), 400, "comparison_project_mismatch")


def test_other_accounts_results_are_not_found(other_api, results, project):
    later = finished_audit(project, pages={"/": 200}, issues=[], ago_min=1)
    home = page_id_for(results.id, "http://127.0.0.1:1/")
    for path in (
        "issues/",
        "issues/summary/",
        "pages/",
        f"pages/{home}/",
        "exports/issues.csv",
        "exports/issues.json",
        "exports/issues.xlsx",
        "exports/pages.csv",
        "exports/pages.json",
        "issues/broken-page/export.csv",
        "issues/broken-page/export.json",
        f"compare/{later.id}/",
    ):
        assert_problem(other_api.get(f"/api/v1/audits/{results.id}/{path}"), 404, "not_found")
