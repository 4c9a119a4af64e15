"""The signed keyset cursor (audits/selectors/pagination.py) both faces' lists use: it reads back what it
wrote, and refuses anything else before a query — altered, made for another list or by another paginator, or
holding values no sort column can (that last even when signed with the key)."""

from uuid import uuid4

import pytest
from django.core import signing

from audits.models import Issue, Page
from audits.selectors.pagination import (
    CURSOR_MAX_CHARS,
    CursorInvalid,
    KeysetColumn,
    KeysetPosition,
    cursor_decode,
    cursor_encode,
    keyset_position,
)

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
