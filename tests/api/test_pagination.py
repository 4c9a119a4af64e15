"""Keyset (cursor) pages of an audit's issues and pages (api.pagination.KeysetPagination): every row once, in
the list's order, ties broken by id; `next`/`previous` links that keep the filters; forged cursors refused."""

import base64
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import signing

from audits.models import Issue, Page, issue_id_for, page_id_for
from audits.selectors.pagination import API_CURSOR_SALT as CURSOR_SALT
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


def _unsigned(data) -> str:
    """A cursor in the unsigned format of before (base64 JSON): what a forger writes without the key."""
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _signed(data, salt=CURSOR_SALT) -> str:
    """A cursor signed with this server's key: what only the server can make (or an attacker with its key)."""
    return signing.Signer(salt=salt).sign_object(data)


def _cursor_of(api, url, **params) -> str:
    return parse_qs(urlsplit(api.get(url, {"page_size": 2, **params}).json()["next"]).query)["cursor"][0]


@pytest.mark.parametrize(
    "cursor",
    [
        "not-base64-json!",
        _unsigned({"k": ["a"], "b": 0}),  # wrong key length
        _unsigned({"k": ["t", "u", "not-a-uuid"], "b": 0}),
        _unsigned({"k": [["t"], "u", None], "b": 0}),
        _unsigned({"k": [1, 2, 3], "b": 0}),  # wrong types: once compared as `uuid > numeric`, a 500
        _unsigned({"k": ["x", "y", 10**30], "b": 0}),  # huge integer
        _unsigned({"k": ["x\x00", "y", "z"], "b": 0}),  # NUL
        "x" * 20_000,
    ],
)
def test_forged_cursor_is_a_400_problem(api, tied_audit, cursor):
    body = assert_problem(api.get(ISSUES.format(tied_audit.id), {"cursor": cursor}), 400, "invalid_cursor")
    assert body["detail"].startswith("Invalid cursor: ")


@pytest.mark.parametrize(
    "key",
    [[10**30], [1], ["\x00"], [None], [True], ["\ud800"]],
    ids=["huge-int", "wrong-type", "nul", "null", "bool", "surrogate"],
)
def test_a_signed_cursor_holding_a_value_its_column_cannot_is_still_a_400(api, tied_audit, key):
    # Even with the signing key (leaked, say), a cursor's values never reach a query unchecked.
    url = PAGES.format(tied_audit.id)
    cursor = _signed({"t": f"{url}|url", "k": key, "b": 0})
    assert_problem(api.get(url, {"cursor": cursor}), 400, "invalid_cursor")


def test_a_tampered_cursor_is_a_400(api, tied_audit):
    url = ISSUES.format(tied_audit.id)
    cursor = _cursor_of(api, url)
    value, signature = cursor.rsplit(":", 1)
    payload = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    payload["k"][2] = "ffffffff-ffff-ffff-ffff-ffffffffffff"
    forged = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
    body = assert_problem(api.get(url, {"cursor": f"{forged}:{signature}"}), 400, "invalid_cursor")
    assert "altered" in body["detail"]
    assert api.get(url, {"cursor": cursor}).status_code == 200  # the genuine one still works


def test_a_cursor_of_another_audit_or_list_is_a_400(api, project, tied_audit):
    other = finished_audit(project, pages={"/p00": 200, "/p01": 200, "/p02": 200}, issues=[])
    pages_cursor = _cursor_of(api, PAGES.format(tied_audit.id))
    issues_cursor = _cursor_of(api, ISSUES.format(tied_audit.id))
    assert api.get(PAGES.format(tied_audit.id), {"cursor": pages_cursor}).status_code == 200
    for url, cursor in (
        (PAGES.format(other.id), pages_cursor),  # another audit's
        (ISSUES.format(tied_audit.id), pages_cursor),  # another list's
        (PAGES.format(tied_audit.id), issues_cursor),
    ):
        body = assert_problem(api.get(url, {"cursor": cursor}), 400, "invalid_cursor")
        assert "another list" in body["detail"]


def test_a_dashboard_cursor_is_no_good_to_the_api(api, tied_audit):
    url = PAGES.format(tied_audit.id)
    foreign = _signed({"t": f"{url}|url", "k": [tied_audit.project.base_url], "b": 0}, salt="dashboard.keyset")
    assert_problem(api.get(url, {"cursor": foreign}), 400, "invalid_cursor")


def test_page_numbers_are_refused_past_the_first(api, tied_audit):
    assert api.get(ISSUES.format(tied_audit.id), {"page": 1}).status_code == 200
    assert_problem(api.get(ISSUES.format(tied_audit.id), {"page": 2}), 404, "not_found")


def test_schema_documents_the_cursor(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    params = {p["name"] for p in schema["paths"]["/api/v1/audits/{id}/issues/"]["get"]["parameters"]}
    assert {"cursor", "page_size"} <= params and "page" not in params
