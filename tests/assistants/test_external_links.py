"""The MCP tools list_external_links (the audit's outbound targets with the API's filters) and external_link_pages
(the pages linking to one target, with anchors), in process through the SDK's client."""

import pytest

from accounts.tokens import token_authenticate
from tests.api.conftest import finished_audit
from tests.assistants.test_tools import calls
from tests.factories import ProjectFactory
from tests.support.external_links import external_world

pytestmark = pytest.mark.django_db(transaction=True)  # the SDK runs each tool in a worker thread


@pytest.fixture
def world(token, as_caller):
    as_caller(token)
    project = ProjectFactory(owner=token_authenticate(token).user, base_url="http://127.0.0.1:1/")
    return external_world(finished_audit(project, pages={}, issues=[]))


@pytest.fixture
def as_caller(monkeypatch):
    from assistants.identity import stdio_caller

    def use(token: str):
        monkeypatch.setattr(stdio_caller, "plaintext", token)

    return use


def _urls(result) -> list[str]:
    assert not result.is_error, result
    return [row["url"] for row in result.structured_content["links"]]


def test_list_external_links_with_counts_examples_and_filters(world):
    audit, links, (a, b) = world
    audit_id = str(audit.id)
    every, problems, by_outcome, by_host, by_url, paged = calls(
        ("list_external_links", {"audit_id": audit_id}),
        ("list_external_links", {"audit_id": audit_id, "problems_only": True, "sort": "url"}),
        ("list_external_links", {"audit_id": audit_id, "outcome": "client_error"}),
        ("list_external_links", {"audit_id": audit_id, "host": "DOWN.example"}),
        ("list_external_links", {"audit_id": audit_id, "url_contains": "moved"}),
        ("list_external_links", {"audit_id": audit_id, "sort": "url", "page": 2, "page_size": 2}),
    )
    body = every.structured_content
    assert body["checking_on"] is True and body["count"] == 5 and body["problems"] == 3
    assert body["counts_by_outcome"]["client_error"] == 1 and body["counts_by_outcome"]["timeout"] == 0
    assert _urls(every)[:2] == [links["dead"].url, links["ok"].url]  # most linking pages first
    dead = body["links"][0]
    assert (dead["outcome"], dead["outcome_label"], dead["status_code"], dead["linking_pages"]) == (
        "client_error",
        "Broken (4xx)",
        404,
        2,
    )
    assert dead["linking_examples"] == [
        {"source_url": a.url, "anchor_text": "Gone"},
        {"source_url": b.url, "anchor_text": "Gone again"},
    ]
    assert _urls(problems) == sorted(links[n].url for n in ("dead", "down", "nxdomain"))
    assert _urls(by_outcome) == [links["dead"].url]
    assert _urls(by_host) == [links["down"].url]
    assert _urls(by_url) == [links["moved"].url]
    assert _urls(paged) == sorted(link.url for link in links.values())[2:4] and paged.structured_content["has_more"]


def test_external_link_pages_and_refusals(world, other_token, as_caller):
    audit, links, (a, b) = world
    pages, unknown, bad_outcome = calls(
        ("external_link_pages", {"audit_id": str(audit.id), "url": links["dead"].url}),
        ("external_link_pages", {"audit_id": str(audit.id), "url": "https://never.example/"}),
        ("list_external_links", {"audit_id": str(audit.id), "outcome": "exploded"}),
    )
    body = pages.structured_content
    assert body["count"] == 2 and body["outcome"] == "client_error"
    assert [(p["source_url"], p["anchor_text"]) for p in body["pages"]] == [(a.url, "Gone"), (b.url, "Gone again")]
    assert unknown.is_error and unknown.structured_content["code"] == "not_found"
    assert bad_outcome.is_error and bad_outcome.structured_content["code"] == "validation_error"
    as_caller(other_token)
    (stranger,) = calls(("list_external_links", {"audit_id": str(audit.id)}))
    assert stranger.is_error and stranger.structured_content["code"] == "not_found"


def test_export_links_name_the_external_files(world):
    audit, _links, _pages = world
    (links,) = calls(("export_links", {"audit_id": str(audit.id)}))
    base = f"/api/v1/audits/{audit.id}/exports/"
    assert links.structured_content["external_links_csv"].endswith(base + "external-links.csv")
    assert links.structured_content["external_link_pages_csv"].endswith(base + "external-link-pages.csv")
