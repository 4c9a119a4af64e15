"""GET /api/v1/audits/{id}/external-links/ (filters, keyset pages) and .../external-links/linking-pages/?url= (the
pages linking to one target, with anchors), their exports, account scoping and refusals as problems."""

import csv
import io
import json

import pytest

from tests.api.conftest import assert_problem, finished_audit
from tests.factories import ExternalLinkFactory
from tests.support.external_links import external_world

pytestmark = pytest.mark.django_db

LIST = "/api/v1/audits/{}/external-links/"
LINKING = "/api/v1/audits/{}/external-links/linking-pages/"


@pytest.fixture
def world(project):
    return external_world(finished_audit(project, pages={}, issues=[]))


def _urls(body) -> list[str]:
    return [row["url"] for row in body["results"]]


def test_the_list_by_url_with_outcomes_and_linking_pages(api, world):
    audit, links, _pages = world
    body = api.get(LIST.format(audit.id)).json()
    assert body["count"] == 5 and _urls(body) == sorted(link.url for link in links.values())
    dead = next(r for r in body["results"] if r["url"] == links["dead"].url)
    assert dead["outcome"] == "client_error" and dead["outcome_label"] == "Broken (4xx)"
    assert (dead["status_code"], dead["linking_pages"], dead["host"]) == (404, 2, "dead.example")
    moved = next(r for r in body["results"] if r["url"] == links["moved"].url)
    assert (moved["final_url"], moved["redirect_hops"]) == ("https://moved.example/new", 2)
    # its linking pages are one link away
    pages = api.get(dead["linking_pages_url"]).json()
    assert [(p["source_url"], p["anchor_text"]) for p in pages["results"]] == [
        (world[2][0].url, "Gone"),
        (world[2][1].url, "Gone again"),
    ]
    assert pages["count"] == 2


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"outcome": "client_error"}, ["dead"]),
        ({"problems": "true"}, ["dead", "down", "nxdomain"]),
        ({"problems": "false"}, ["moved", "ok"]),
        ({"host": "DOWN.example"}, ["down"]),
        ({"url": "moved"}, ["moved"]),
        ({"problems": "true", "host": "fine.example"}, []),
    ],
)
def test_filters(api, world, query, expected):
    audit, links, _pages = world
    body = api.get(LIST.format(audit.id), query).json()
    assert _urls(body) == sorted(links[name].url for name in expected) and body["count"] == len(expected)


def test_an_unknown_outcome_is_a_400(api, world):
    audit, _links, _pages = world
    assert_problem(api.get(LIST.format(audit.id), {"outcome": "exploded"}), 400, "validation_error", field="outcome")


def test_keyset_pages_cover_every_target_once(api, world):
    audit, links, _pages = world
    seen, url = [], LIST.format(audit.id) + "?page_size=2&problems=true"
    while url:
        body = api.get(url).json()
        seen += _urls(body)
        url = body["next"]
        assert body["count"] == 3
        if url:
            assert "problems=true" in url  # the links keep the filters
    assert seen == sorted(links[name].url for name in ("dead", "down", "nxdomain"))
    assert_problem(api.get(LIST.format(audit.id), {"cursor": "forged"}), 400, "invalid_cursor")


def test_linking_pages_refusals(api, world):
    audit, _links, _pages = world
    assert_problem(api.get(LINKING.format(audit.id)), 400, "validation_error", field="url")
    assert_problem(api.get(LINKING.format(audit.id), {"url": "https://never.example/"}), 404, "not_found")


def test_another_accounts_audit_is_not_found(other_api, world):
    audit, links, _pages = world
    assert_problem(other_api.get(LIST.format(audit.id)), 404, "not_found")
    assert_problem(other_api.get(LINKING.format(audit.id), {"url": links["dead"].url}), 404, "not_found")
    export = f"/api/v1/audits/{audit.id}/exports/external-links.csv"
    assert other_api.get(export).status_code == 404


def test_a_target_of_another_audit_is_not_listed(api, project, world):
    audit, _links, _pages = world
    ExternalLinkFactory(audit=finished_audit(project, pages={}, issues=[], ago_min=30), url="https://only-there.ex/")
    assert "https://only-there.ex/" not in _urls(api.get(LIST.format(audit.id)).json())
    assert_problem(api.get(LINKING.format(audit.id), {"url": "https://only-there.ex/"}), 404, "not_found")


@pytest.mark.parametrize(("what", "fmt", "rows"), [("external-links", "csv", 5), ("external-link-pages", "csv", 7)])
def test_exports(api, world, what, fmt, rows):
    audit, _links, _pages = world
    response = api.get(f"/api/v1/audits/{audit.id}/exports/{what}.{fmt}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert len(list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))) == rows
    as_json = api.get(f"/api/v1/audits/{audit.id}/exports/{what}.json")
    assert as_json.status_code == 200 and len(json.loads(b"".join(as_json.streaming_content))) == rows


@pytest.mark.parametrize(("path", "param"), [(LIST, "host"), (LIST, "url"), (LINKING, "url")])
def test_a_nul_in_a_filter_is_a_400_field_error(api, world, path, param):
    audit, _links, _pages = world
    assert_problem(api.get(path.format(audit.id), {param: "a\x00b"}), 400, "validation_error", field=param)


def test_linking_pages_page_by_source_url(api, world):
    audit, links, (a, b) = world
    first = api.get(LINKING.format(audit.id), {"url": links["dead"].url, "page_size": 1}).json()
    assert [p["source_url"] for p in first["results"]] == [a.url] and first["count"] == 2
    second = api.get(first["next"]).json()
    assert [p["source_url"] for p in second["results"]] == [b.url] and second["next"] is None
    assert "url=" in first["next"]  # the target stays named
