"""The MCP tool list_changes (what changed on each URL against the audit's baseline, with the API's filters: field,
direction, segment) and the changes' file in export_links, in process through the SDK's client."""

import pytest

from accounts.tokens import token_authenticate
from tests.api.conftest import finished_audit
from tests.assistants.test_tools import calls
from tests.factories import ProjectFactory
from tests.support.page_changes import CHANGES, LONG_TITLE, changes_world

pytestmark = pytest.mark.django_db(transaction=True)  # the SDK runs each tool in a worker thread


@pytest.fixture
def as_caller(monkeypatch):
    from assistants.identity import stdio_caller

    def use(token: str):
        monkeypatch.setattr(stdio_caller, "plaintext", token)

    return use


@pytest.fixture
def world(token, as_caller):
    as_caller(token)
    project = ProjectFactory(owner=token_authenticate(token).user, base_url="http://127.0.0.1:1/")
    baseline = finished_audit(project, pages={}, issues=[], ago_min=600)
    audit = finished_audit(project, pages={}, issues=[])
    audit.pages_crawled = 4
    audit.save(update_fields=["pages_crawled"])
    rows, _pages, _old = changes_world(audit, baseline)
    return audit, baseline, rows


def _names(result, rows) -> list[str]:
    assert not result.is_error, result
    by_key = {(row.url, row.field): name for name, row in rows.items()}
    return [by_key[(c["url"], c["field"])] for c in result.structured_content["changes"]]


def _in_order(rows, names) -> list[str]:
    return sorted(names, key=lambda n: (rows[n].url, str(rows[n].id)))


def test_list_changes_names_the_baseline_counts_and_filters(world):
    audit, baseline, rows = world
    audit_id = str(audit.id)
    every, by_field, sitemap, noindexed, blog, paged = calls(
        ("list_changes", {"audit_id": audit_id}),
        ("list_changes", {"audit_id": audit_id, "field": "title"}),
        ("list_changes", {"audit_id": audit_id, "field": "sitemap"}),
        ("list_changes", {"audit_id": audit_id, "field": "indexability", "direction": "down"}),
        ("list_changes", {"audit_id": audit_id, "segment": "/blog/"}),
        ("list_changes", {"audit_id": audit_id, "page": 2, "page_size": 3}),
    )
    body = every.structured_content
    assert body["state"] == "changed" and body["baseline_audit_id"] == str(baseline.id)
    assert body["count"] == len(CHANGES) and body["counts_by_field"]["title"] == 1 and not body["has_more"]
    assert _names(every, rows) == _in_order(rows, CHANGES)
    (title,) = by_field.structured_content["changes"]
    assert title == {
        "url": rows["title"].url,
        "field": "title",
        "field_label": "Title",
        "direction": "changed",
        "before": "First post",
        "after": LONG_TITLE,
    }
    (changed,) = sitemap.structured_content["changes"]
    assert changed["url"] == rows["sitemap"].url and changed["field_label"] == "Sitemap"
    assert (changed["direction"], changed["before"], changed["after"]) == ("changed", "read", "error: HTTP 404")
    assert body["counts_by_field"]["sitemap"] == 1
    assert _names(noindexed, rows) == ["noindex"]
    assert _names(blog, rows) == _in_order(rows, ["title", "description", "noindex", "removed"])
    assert blog.structured_content["counts_by_field"]["robots_txt"] == 0
    assert blog.structured_content["counts_by_field"]["sitemap"] == 0
    assert _names(paged, rows) == _in_order(rows, CHANGES)[3:6] and paged.structured_content["has_more"]


def test_refusals_and_another_account(world, other_token, as_caller):
    audit, _baseline, _rows = world
    bad_field, bad_segment = calls(
        ("list_changes", {"audit_id": str(audit.id), "field": "colour"}),
        ("list_changes", {"audit_id": str(audit.id), "segment": "/nope/"}),
    )
    assert bad_field.is_error and bad_field.structured_content["code"] == "validation_error"
    assert bad_segment.is_error and bad_segment.structured_content["code"] == "unknown_segment"
    as_caller(other_token)
    (stranger,) = calls(("list_changes", {"audit_id": str(audit.id)}))
    assert stranger.is_error and stranger.structured_content["code"] == "not_found"


def test_the_first_audit_has_nothing_to_compare_with(token, as_caller):
    as_caller(token)
    project = ProjectFactory(owner=token_authenticate(token).user, base_url="http://127.0.0.1:1/")
    first = finished_audit(project, pages={}, issues=[])
    (result,) = calls(("list_changes", {"audit_id": str(first.id)}))
    body = result.structured_content
    assert (body["state"], body["baseline_audit_id"], body["count"]) == ("first", None, 0)


def test_export_links_name_the_changes_file(world):
    audit, _baseline, _rows = world
    (links,) = calls(("export_links", {"audit_id": str(audit.id)}))
    assert links.structured_content["changes_csv"].endswith(f"/api/v1/audits/{audit.id}/exports/changes.csv")
