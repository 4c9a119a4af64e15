"""Keyset (cursor) pages of an audit's issues and pages (api.pagination.KeysetPagination): every row once, in
the list's order, ties broken by id; `next`/`previous` links that keep the filters; forged cursors refused."""

import base64
import json

import pytest

from audits.models import Issue, Page, issue_id_for, page_id_for
from tests.api.conftest import assert_problem, finished_audit

ISSUES = "/api/v1/audits/{}/issues/"
PAGES = "/api/v1/audits/{}/pages/"


@pytest.fixture
def tied_audit(project):
    """An audit whose issues tie on (type, page_url) in runs: 3 types x 4 pages x 3 issues each (by dedupe
    key), so only the id orders rows within a run; 23 pages."""
    audit = finished_audit(project, pages={f"/p{n:02d}": 200 for n in range(23)}, issues=[])
    base = project.base_url.rstrip("/")
    rows = []
    for issue_type, severity in (("broken-internal-link", "critical"), ("missing-title", "critical"),
                                 ("title-too-long", "warning")):  # fmt: skip
        for n in range(4):
            url = f"{base}/p{n:02d}"
            for key in ("a", "b", "c"):
                rows.append(
                    Issue(
                        id=issue_id_for(audit.id, url, issue_type, key),
                        audit=audit,
                        page_id=page_id_for(audit.id, url),
                        page_url=url,
                        type=issue_type,
                        severity=severity,
                        details={"key": key},
                    )
                )
    Issue.objects.bulk_create(rows)
    return audit


def _walk(api, url, params=None, *, direction="next"):
    """Every row of the list, following `direction` links from `url`; also the pages' sizes."""
    rows, sizes = [], []
    body = api.get(url, params).json()
    while True:
        rows += body["results"]
        sizes.append(len(body["results"]))
        if not body[direction]:
            return rows, sizes, body
        body = api.get(body[direction]).json()


def test_issue_pages_cover_every_row_once_in_order_with_ties_broken_by_id(api, tied_audit):
    rows, sizes, last = _walk(api, ISSUES.format(tied_audit.id), {"page_size": 5})
    expected = list(
        Issue.objects.filter(audit=tied_audit).order_by("type", "page_url", "id").values_list("id", flat=True)
    )
    assert [r["id"] for r in rows] == [str(i) for i in expected]
    assert len(expected) == 36 and sizes == [5] * 7 + [1]
    assert last["next"] is None and last["count"] == 36


def test_previous_links_walk_back_to_the_first_page(api, tied_audit):
    forward, _, last = _walk(api, ISSUES.format(tied_audit.id), {"page_size": 7})
    backward_pages = []
    body = last
    while body["previous"]:
        body = api.get(body["previous"]).json()
        backward_pages.append([r["id"] for r in body["results"]])
    assert body["previous"] is None and len(backward_pages[-1]) == 7  # back on the first page, full
    seen = [i for page in reversed(backward_pages) for i in page] + [r["id"] for r in last["results"]]
    assert seen == [r["id"] for r in forward]
    # A page reached backwards still links forwards, to the rows after it.
    assert api.get(body["next"]).json()["results"][0]["id"] == forward[7]["id"]


def test_links_keep_the_filters(api, tied_audit):
    url = ISSUES.format(tied_audit.id)
    first = api.get(url, {"type": "missing-title", "page_size": 4}).json()
    assert "type=missing-title" in first["next"] and "page_size=4" in first["next"]
    rows, _, _ = _walk(api, url, {"type": "missing-title", "page_size": 4})
    assert len(rows) == 12 and {r["type"] for r in rows} == {"missing-title"} and first["count"] == 12


def test_page_list_pages_by_url(api, tied_audit):
    rows, sizes, _ = _walk(api, PAGES.format(tied_audit.id), {"page_size": 10})
    assert [r["url"] for r in rows] == sorted(Page.objects.filter(audit=tied_audit).values_list("url", flat=True))
    assert sizes == [10, 10, 3]
    only_ok, _, body = _walk(api, PAGES.format(tied_audit.id), {"page_size": 10, "status_code": 404})
    assert only_ok == [] and body["count"] == 0 and body["next"] is None and body["previous"] is None


@pytest.mark.parametrize(
    "cursor",
    [
        "not-base64-json!",
        base64.urlsafe_b64encode(json.dumps({"k": ["a"], "b": 0}).encode()).decode(),  # wrong key length
        base64.urlsafe_b64encode(json.dumps({"k": ["t", "u", "not-a-uuid"], "b": 0}).encode()).decode(),
        base64.urlsafe_b64encode(json.dumps({"k": [["t"], "u", None], "b": 0}).encode()).decode(),
    ],
)
def test_forged_cursor_is_not_found(api, tied_audit, cursor):
    assert_problem(api.get(ISSUES.format(tied_audit.id), {"cursor": cursor}), 404, "not_found")


def test_page_numbers_are_refused_past_the_first(api, tied_audit):
    assert api.get(ISSUES.format(tied_audit.id), {"page": 1}).status_code == 200
    assert_problem(api.get(ISSUES.format(tied_audit.id), {"page": 2}), 404, "not_found")


def test_schema_documents_the_cursor(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    params = {p["name"] for p in schema["paths"]["/api/v1/audits/{id}/issues/"]["get"]["parameters"]}
    assert {"cursor", "page_size"} <= params and "page" not in params
