"""GET /api/v1/audits/{id}/changes/ (filters by field, direction and segment, keyset pages), .../changes/summary/
(the baseline, where the changes stand, counts per field), the changes' exports, the comparison's counts, account
scoping and refusals as problems."""

import csv
import io
import json

import pytest

from tests.api.conftest import assert_problem, finished_audit
from tests.factories import PageChangeFactory
from tests.support.page_changes import CHANGES, LONG_TITLE, changes_world

pytestmark = pytest.mark.django_db

LIST = "/api/v1/audits/{}/changes/"
SUMMARY = "/api/v1/audits/{}/changes/summary/"


@pytest.fixture
def world(project):
    baseline = finished_audit(project, pages={}, issues=[], ago_min=600)
    audit = finished_audit(project, pages={}, issues=[])
    audit.pages_crawled = 4
    audit.save(update_fields=["pages_crawled"])
    rows, _pages, _old = changes_world(audit, baseline)
    PageChangeFactory(audit=finished_audit(project, pages={}, issues=[], ago_min=300), baseline=baseline)
    return audit, baseline, rows


def _names(body, rows) -> list[str]:
    by_key = {(row.url, row.field): name for name, row in rows.items()}
    return [by_key[(r["url"], r["field"])] for r in body["results"]]


def _in_order(rows, names) -> list[str]:
    return sorted(names, key=lambda n: (rows[n].url, str(rows[n].id)))


def test_the_list_by_url_with_each_field_before_and_after(api, world):
    audit, _baseline, rows = world
    body = api.get(LIST.format(audit.id)).json()
    assert body["count"] == len(CHANGES) and _names(body, rows) == _in_order(rows, CHANGES)
    title = next(r for r in body["results"] if r["field"] == "title")
    assert title == {
        "url": rows["title"].url,
        "field": "title",
        "field_label": "Title",
        "direction": "changed",
        "before": "First post",
        "after": LONG_TITLE,
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"field": "title"}, ["title"]),
        ({"direction": "added"}, ["description", "added", "robots"]),
        ({"field": "indexability", "direction": "down"}, ["noindex"]),
        ({"segment": "/blog/"}, ["title", "description", "noindex", "removed"]),
        ({"segment": "/docs/", "direction": "up"}, ["words"]),
        ({"field": "h1"}, []),
        ({"field": "sitemap"}, ["sitemap"]),  # a sitemap document (its URL), in no segment
        ({"field": "sitemap", "segment": "/blog/"}, []),
    ],
)
def test_filters(api, world, query, expected):
    audit, _baseline, rows = world
    body = api.get(LIST.format(audit.id), query).json()
    assert _names(body, rows) == _in_order(rows, expected) and body["count"] == len(expected)


@pytest.mark.parametrize(
    ("query", "code", "field"),
    [
        ({"field": "colour"}, "validation_error", "field"),
        ({"direction": "sideways"}, "validation_error", "direction"),
        ({"field": "title\x00"}, "validation_error", "field"),
        ({"segment": "/nope/"}, "unknown_segment", "segment"),
        ({"cursor": "forged"}, "invalid_cursor", None),
    ],
)
def test_bad_filters_are_400_problems(api, world, query, code, field):
    audit, _baseline, _rows = world
    assert_problem(api.get(LIST.format(audit.id), query), 400, code, field=field)


def test_keyset_pages_cover_every_change_once_and_keep_the_filters(api, world):
    audit, _baseline, rows = world
    seen, url = [], LIST.format(audit.id) + "?page_size=2&segment=/blog/"
    while url:
        body = api.get(url).json()
        seen += _names(body, rows)
        url = body["next"]
        assert body["count"] == 4
        if url:
            assert "segment=" in url
    assert seen == _in_order(rows, ["title", "description", "noindex", "removed"])


def test_the_summary_names_the_baseline_and_counts_per_field(api, world):
    audit, baseline, _rows = world
    body = api.get(SUMMARY.format(audit.id)).json()
    assert body["state"] == "changed" and body["baseline"] == str(baseline.id) and body["total"] == len(CHANGES)
    assert body["by_field"]["indexability"] == 1 and body["by_field"]["h1"] == 0
    assert body["changes_url"].endswith(LIST.format(audit.id))
    blog = api.get(SUMMARY.format(audit.id), {"segment": "/blog/"}).json()
    assert blog["total"] == 4 and blog["by_field"]["robots_txt"] == 0 and "segment=" in blog["changes_url"]
    first = finished_audit(audit.project, pages={}, issues=[], ago_min=6000)
    body = api.get(SUMMARY.format(first.id)).json()
    assert (body["state"], body["baseline"], body["total"]) == ("first", None, 0)


def test_another_accounts_audit_is_not_found(other_api, world):
    audit, _baseline, _rows = world
    assert_problem(other_api.get(LIST.format(audit.id)), 404, "not_found")
    assert_problem(other_api.get(SUMMARY.format(audit.id)), 404, "not_found")
    assert other_api.get(f"/api/v1/audits/{audit.id}/exports/changes.csv").status_code == 404


def test_exports(api, world):
    audit, _baseline, rows = world
    response = api.get(f"/api/v1/audits/{audit.id}/exports/changes.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    every = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(every) == len(CHANGES) and list(every[0]) == ["url", "field", "direction", "before", "after"]
    as_json = api.get(f"/api/v1/audits/{audit.id}/exports/changes.json", {"direction": "down"})
    assert json.loads(b"".join(as_json.streaming_content)) == [
        {
            "url": rows["noindex"].url,
            "field": "indexability",
            "direction": "down",
            "before": "indexable",
            "after": "non-indexable: noindex",
        }
    ]
    bad = api.get(f"/api/v1/audits/{audit.id}/exports/changes.csv", {"field": "colour"})
    assert_problem(bad, 400, "validation_error", field="field")


def test_the_comparison_with_the_baseline_counts_changes(api, world):
    audit, baseline, _rows = world
    body = api.get(f"/api/v1/audits/{audit.id}/compare/{baseline.id}/").json()
    assert body["changes"]["title"] == 1 and sum(body["changes"].values()) == len(CHANGES)
    assert body["changes"]["sitemap"] == 1 and body["changes"]["robots_txt"] == 1
    other = finished_audit(audit.project, pages={}, issues=[], ago_min=120)
    assert api.get(f"/api/v1/audits/{audit.id}/compare/{other.id}/").json()["changes"] is None
