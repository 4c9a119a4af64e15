"""Segments in the API: `?segment=` on an audit's issues, pages, issue summary, exports and comparison (a finding on
/blog/ is listed under /blog/ and not under /docs/), the audit's segments, and a project's segments listed, added,
changed and deleted through audits.segments, with its refusals as field errors."""

import csv
import io

import pytest
from django.urls import reverse

from audits.checks.score import DEDUCTION_POINTS, SCORE_MAX_POINTS
from audits.models import Segment
from tests.api.conftest import finished_audit
from tests.factories import SegmentFactory

pytestmark = pytest.mark.django_db

# The score formula on a segment's pages: /blog/'s one page has a warning (every page of it), /docs/' none.
SCORE_OF_BLOG = SCORE_MAX_POINTS - DEDUCTION_POINTS["warning"]
SCORE_OF_DOCS = SCORE_MAX_POINTS


@pytest.fixture
def audits(project):
    before = finished_audit(
        project,
        pages={"/": 200, "/blog/a": 200, "/docs/b": 200},
        issues=[("missing-h1", "warning", "/docs/b")],
        ago_min=120,
    )
    audit = finished_audit(
        project,
        pages={"/": 200, "/blog/a": 200, "/docs/b": 200},
        issues=[("missing-h1", "warning", "/blog/a"), ("sitemap-missing", "info", "")],
    )
    return audit, before


def _url(name, audit, *args):
    return reverse(f"api:{name}", args=[audit.id, *args])


def test_issues_and_pages_lists_read_the_segment(api, audits):
    audit, _before = audits
    blog = api.get(_url("audit-issues", audit), {"segment": "/blog/"}).json()
    assert [(i["type"], i["page_url"].split(":1")[1]) for i in blog["results"]] == [("missing-h1", "/blog/a")]
    assert api.get(_url("audit-issues", audit), {"segment": "/docs/"}).json()["count"] == 0
    assert api.get(_url("audit-issues", audit)).json()["count"] == 2
    pages = api.get(_url("audit-pages", audit), {"segment": "/docs/"}).json()
    assert pages["count"] == 1 and pages["results"][0]["url"].endswith("/docs/b")
    summary = api.get(_url("audit-issue-summary", audit), {"segment": "/blog/"}).json()
    assert [(r["type"], r["count"]) for r in summary] == [("missing-h1", 1)]
    assert api.get(_url("audit-issue-summary", audit), {"segment": "/docs/"}).json() == []


def test_exports_read_the_segment(api, audits):
    audit, _before = audits

    def rows(name, *args, **query):
        response = api.get(_url(name, audit, *args), query)
        assert response.status_code == 200
        return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))

    assert [r["type"] for r in rows("export-issues-csv", segment="/blog/")] == ["missing-h1"]
    assert rows("export-issues-csv", segment="/docs/") == []
    assert len(rows("export-issue-type-csv", "missing-h1", segment="/blog/")) == 1
    assert rows("export-issue-type-csv", "missing-h1", segment="/docs/") == []
    assert [r["url"].split(":1")[1] for r in rows("export-pages-csv", segment="/blog/")] == ["/blog/a"]


def test_comparison_reads_the_segment(api, audits):
    audit, before = audits
    url = reverse("api:audit-compare", args=[audit.id, before.id])
    blog = {r["type"]: r for r in api.get(url, {"segment": "/blog/"}).json()["by_type"]}
    assert (blog["missing-h1"]["new"], blog["missing-h1"]["fixed"]) == (1, 0)
    docs = {r["type"]: r for r in api.get(url, {"segment": "/docs/"}).json()["by_type"]}
    assert (docs["missing-h1"]["new"], docs["missing-h1"]["fixed"]) == (0, 1)


def test_an_unknown_segment_answers_400_unknown_segment(api, audits):
    audit, _before = audits
    for name in ("audit-issues", "audit-pages", "audit-issue-summary", "export-issues-csv"):
        response = api.get(_url(name, audit), {"segment": "/nope/"})
        assert response.status_code == 400, name
        body = response.json()
        assert body["code"] == "unknown_segment" and body["field"] == "segment"
        assert "Unknown segment “/nope/”" in body["detail"]


def test_audit_segments_lists_the_folders_then_the_projects_own(api, audits, project):
    audit, _before = audits
    rows = api.get(_url("audit-segments", audit)).json()
    assert [(r["key"], r["pages"], r["issues"], r["default"], r["score"]) for r in rows] == [
        ("/blog/", 1, 1, True, SCORE_OF_BLOG),
        ("/docs/", 1, 0, True, SCORE_OF_DOCS),
        ("other", 1, 0, True, SCORE_OF_DOCS),
    ]
    created = api.post(
        reverse("api:project-segments", args=[project.id]),
        {"name": "Articles", "kind": "regex", "value": "^/(blog|docs)/"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created["Location"].endswith(reverse("api:segment-detail", args=[created.json()["id"]]))
    rows = api.get(_url("audit-segments", audit)).json()
    assert [(r["name"], r["pages"], r["issues"], r["default"]) for r in rows] == [("Articles", 2, 1, False)]
    key = rows[0]["key"]
    assert api.get(_url("audit-issues", audit), {"segment": key}).json()["count"] == 1
    assert api.get(_url("audit-issues", audit), {"segment": "/blog/"}).status_code == 400


def test_project_segments_are_written_through_the_service(api, project):
    url = reverse("api:project-segments", args=[project.id])
    refused = api.post(url, {"name": "Blog", "kind": "prefix", "value": "blog/"}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"]["value"][0]["code"] == "invalid_segment"
    assert "starts with “/”" in refused.json()["detail"]
    refused = api.post(url, {"name": "G", "kind": "extraction", "extractor": "x", "value": "y"}, format="json")
    assert refused.json()["field"] == "extractor"
    blog = api.post(url, {"name": "Blog", "kind": "prefix", "value": "/blog/"}, format="json").json()
    assert (blog["position"], blog["extractor"]) == (0, "")
    taken = api.post(url, {"name": "blog", "kind": "prefix", "value": "/b/"}, format="json")
    assert taken.status_code == 400 and taken.json()["errors"]["name"][0]["code"] == "segment_name_taken"
    assert [s["name"] for s in api.get(url).json()["results"]] == ["Blog"]

    detail = reverse("api:segment-detail", args=[blog["id"]])
    changed = api.patch(detail, {"value": "/posts/"}, format="json")
    assert changed.status_code == 200 and changed.json()["value"] == "/posts/"
    assert api.patch(detail, {"kind": "regex", "value": "("}, format="json").status_code == 400
    assert api.delete(detail).status_code == 204
    assert not Segment.objects.filter(project=project).exists()


def test_another_accounts_segments_are_not_found(other_api, project, audits):
    segment = SegmentFactory(project=project)
    assert other_api.get(reverse("api:project-segments", args=[project.id])).status_code == 404
    assert other_api.get(reverse("api:segment-detail", args=[segment.id])).status_code == 404
    assert other_api.get(_url("audit-segments", audits[0])).status_code == 404
