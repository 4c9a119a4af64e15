"""The signed keyset cursor (audits/selectors/pagination.py) both faces' lists use: it reads back what it
wrote, and refuses anything else before a query — altered, made for another list or by another paginator, or
holding values no sort column can (that last even when signed with the key)."""

import base64
import json
from uuid import uuid4

import pytest
from django.core import signing
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from audits.models import Issue, Page
from audits.selectors.pagination import (
    CURSOR_MAX_CHARS,
    CursorInvalid,
    KeysetColumn,
    KeysetPosition,
    cursor_decode,
    cursor_encode,
    keyset_paginate,
    keyset_position,
)
from tests.dashboard.conftest import SITE, finished_audit, make_page
from tests.factories import ProjectFactory

SALT = "tests.keyset"


def test_a_cursor_reads_back_its_key_and_direction():
    token = cursor_encode(["https://example.com/a", 7, None], backwards=True, bound_to="list:1", salt=SALT)
    assert cursor_decode(token, bound_to="list:1", salt=SALT, size=3) == (["https://example.com/a", 7, None], True)


@pytest.mark.parametrize(
    "change, words",
    [
        ({"bound_to": "list:2"}, "another list or sort"),
        ({"salt": "another.paginator"}, "not one this list gave out"),
        ({"size": 2}, "does not hold a position"),
    ],
)
def test_a_cursor_for_another_list_paginator_or_key_size_is_refused(change, words):
    token = cursor_encode(["a", 1, 2], backwards=False, bound_to="list:1", salt=SALT)
    options = {"bound_to": "list:1", "salt": SALT, "size": 3, **change}
    with pytest.raises(CursorInvalid, match=words):
        cursor_decode(token, **options)


def test_an_altered_cursor_is_refused_and_names_its_parameter():
    token = cursor_encode(["a"], backwards=False, bound_to="l", salt=SALT)
    value, signature = token.rsplit(":", 1)
    with pytest.raises(CursorInvalid) as refused:
        cursor_decode(value[:-2] + "x" + value[-1] + ":" + signature, bound_to="l", salt=SALT, size=1, param="out")
    assert refused.value.param == "out"
    with pytest.raises(CursorInvalid, match="too long"):
        cursor_decode("x" * (CURSOR_MAX_CHARS + 1), bound_to="l", salt=SALT, size=1)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30, True, 1.5, ["a"], {"a": 1}, "a\x00", "\ud800"])
def test_a_signed_cursor_with_a_value_no_column_holds_is_refused(value):
    token = signing.Signer(salt=SALT).sign_object({"t": "l", "k": [value], "b": 0})
    with pytest.raises(CursorInvalid, match="does not hold a position"):
        cursor_decode(token, bound_to="l", salt=SALT, size=1)


@pytest.mark.parametrize(
    ("columns", "key", "refused"),
    [
        ((KeysetColumn("type"), KeysetColumn("page_url"), KeysetColumn("id")), [1, "u", str(uuid4())], True),
        ((KeysetColumn("type"), KeysetColumn("page_url"), KeysetColumn("id")), ["t", "u", "not-a-uuid"], True),
        ((KeysetColumn("type"), KeysetColumn("page_url"), KeysetColumn("id")), ["t", None, str(uuid4())], True),
        ((KeysetColumn("type"), KeysetColumn("page_url"), KeysetColumn("id")), ["t", "u", str(uuid4())], False),
    ],
)
def test_keyset_position_is_the_one_decision_that_a_cursor_is_bad(columns, key, refused):
    """A signed cursor whose values do not fit their columns is refused like a forged one (one CursorInvalid,
    worded by each face), before any query."""
    token = cursor_encode(key, backwards=False, bound_to="list", salt=SALT)
    if refused:
        with pytest.raises(CursorInvalid, match="does not fit its column"):
            keyset_position(token, columns=columns, tag="list", salt=SALT, model=Issue, param="in")
    else:
        position = keyset_position(token, columns=columns, tag="list", salt=SALT, model=Issue)
        assert position == KeysetPosition(key, False)


def test_keyset_position_lets_a_null_through_a_nullable_column_only():
    token = cursor_encode([None, "https://a/"], backwards=True, bound_to="grid", salt=SALT)
    columns = (KeysetColumn("depth", nullable=True), KeysetColumn("url"))
    assert keyset_position(token, columns=columns, tag="grid", salt=SALT, model=Page).backwards
    assert keyset_position("", columns=columns, tag="grid", salt=SALT, model=Page) is None


# --- keyset_paginate over an audit's pages (moved from tests/dashboard/test_keyset_pager.py) ----------------


def _unsigned(data) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def api_cursor() -> str:
    """A well-signed cursor of the API's paginator: another salt, so no good to the dashboard's lists."""
    return signing.Signer(salt="api.pagination.keyset").sign_object({"t": "", "k": ["a"], "b": 0})


@pytest.fixture
def tied_pages(db):
    """23 pages whose depth ties in runs (0, 1, 2, 3 and NULL), so only the URL orders rows within a run."""
    audit = finished_audit(ProjectFactory(base_url=SITE + "/"), pages_crawled=23)
    for n in range(23):
        make_page(audit, f"/p{n:02d}", depth=None if n % 5 == 4 else n % 5, status_code=404 if n % 3 == 0 else 200)
    return audit


def _expected(audit, *, descending: bool) -> list[str]:
    rows = sorted(Page.objects.filter(audit=audit).values_list("depth", "url"), key=lambda r: r[1])
    with_depth = sorted((r for r in rows if r[0] is not None), key=lambda r: r[0], reverse=descending)
    return [url for _, url in with_depth] + [url for depth, url in rows if depth is None]  # NULLs last


def test_keyset_paginate_refuses_a_bad_cursor_before_any_query(tied_pages):
    rows = Page.objects.filter(audit=tied_pages).order_by("url")
    for cursor in ("x", _unsigned({"t": "", "k": [1], "b": 0}), api_cursor()):
        with CaptureQueriesContext(connection) as queries, pytest.raises(CursorInvalid) as raised:
            keyset_paginate(rows, columns=[KeysetColumn("url")], cursor=cursor, param="in")
        assert queries.captured_queries == [] and raised.value.param == "in"


def test_keyset_paginate_on_a_plain_queryset(tied_pages):
    rows = Page.objects.filter(audit=tied_pages).order_by("-url")
    columns = [KeysetColumn("url", descending=True)]
    seen, cursor = [], None
    while True:
        page = keyset_paginate(rows, columns=columns, cursor=cursor, per_page=10)
        seen += [p.url for p in page]
        if not page.has_next:
            break
        cursor = page.next_cursor
    assert seen == sorted(Page.objects.filter(audit=tied_pages).values_list("url", flat=True), reverse=True)


def _walk_rows(rows, columns, **options) -> list:
    """Every page of `rows` forward, then back from the last one: urls and both cursors of each page."""
    walked, cursor = [], None
    while True:
        page = keyset_paginate(rows, columns=columns, cursor=cursor, per_page=5, **options)
        walked.append(([p.url for p in page], page.next_cursor, page.previous_cursor))
        if not page.has_next:
            break
        cursor = page.next_cursor
    while page.has_previous:
        page = keyset_paginate(rows, columns=columns, cursor=page.previous_cursor, per_page=5, **options)
        walked.append(([p.url for p in page], page.next_cursor, page.previous_cursor))
    return walked


def test_keys_first_gives_the_same_pages_and_sorts_over_the_keys_alone(tied_pages):
    rows = Page.objects.filter(audit=tied_pages).order_by(F("depth").desc(nulls_last=True), "url", "id")
    columns = [KeysetColumn("depth", descending=True, nullable=True), KeysetColumn("url")]
    walked = _walk_rows(rows, columns, keys_first=True)
    assert walked == _walk_rows(rows, columns)
    assert len(walked) == 9 and [u for urls, _, _ in walked[:5] for u in urls] == _expected(tied_pages, descending=True)

    with CaptureQueriesContext(connection) as queries:
        keyset_paginate(rows, columns=columns, cursor=walked[1][1], per_page=5, keys_first=True)
    sorted_keys, page_rows = (q["sql"] for q in queries.captured_queries)
    assert sorted_keys.startswith('SELECT "audits_page"."id" AS "pk" FROM') and "ORDER BY" in sorted_keys
    assert '"audits_page"."title"' in page_rows and '"audits_page"."id" IN (' in page_rows
