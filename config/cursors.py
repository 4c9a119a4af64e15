"""Keyset cursors: the one codec of both keyset paginators (api.pagination.KeysetPagination and
dashboard.selectors.keyset_paginate).

A cursor is the last row's sort key, signed with django.core.signing (HMAC with SECRET_KEY; a salt per
paginator) together with what it was made for (`bound_to`: the list and its sort). So a tampered or forged
cursor, one from another audit, page or sort, or one signed under another key, is refused with
CursorInvalid before any query: the values that reach the database are values this server wrote. The key's
values are still checked (plain JSON scalars, integers in bigint range, text PostgreSQL can store): a leaked
SECRET_KEY must not turn into 500s.
"""

from collections.abc import Sequence
from uuid import UUID

from django.core import signing

from config.inputs import text_problem

KEY_INT_MIN, KEY_INT_MAX = -(2**63), 2**63 - 1  # PostgreSQL's bigint: no sort column holds more
CURSOR_MAX_CHARS = 16_384  # a key of a few URLs (≤ 4 KiB each) and a signature; longer is not ours


class CursorInvalid(ValueError):
    """A cursor this server did not make for this list (`param`: the query parameter it came in)."""

    def __init__(self, reason: str, *, param: str = "cursor"):
        super().__init__(reason)
        self.reason, self.param = reason, param


def _plain(value):
    return str(value) if isinstance(value, UUID) else value


def cursor_encode(key: Sequence, *, backwards: bool, bound_to: str, salt: str) -> str:
    """The cursor of the page after (`backwards`: before) the row whose sort key is `key`."""
    data = {"t": bound_to, "k": [_plain(v) for v in key], "b": int(backwards)}
    return signing.Signer(salt=salt).sign_object(data)


def cursor_decode(token: str, *, bound_to: str, salt: str, size: int, param: str = "cursor") -> tuple[list, bool]:
    """(key, backwards) of a cursor made by cursor_encode with the same salt and `bound_to`; CursorInvalid
    otherwise, saying why in words a person can read."""
    if len(token) > CURSOR_MAX_CHARS:
        raise CursorInvalid("The cursor is too long to be one of ours.", param=param)
    try:
        data = signing.Signer(salt=salt).unsign_object(token)
    except (signing.BadSignature, ValueError, UnicodeError):
        reason = "The cursor is not one this list gave out (altered, or signed elsewhere)."
        raise CursorInvalid(reason, param=param) from None
    if not isinstance(data, dict) or data.get("t") != bound_to:
        raise CursorInvalid("The cursor belongs to another list or sort order.", param=param)
    key, backwards = data.get("k"), data.get("b")
    if not isinstance(key, list) or len(key) != size or backwards not in (0, 1) or not all(map(_fits, key)):
        raise CursorInvalid("The cursor does not hold a position in this list.", param=param)
    return key, bool(backwards)


def _fits(value) -> bool:
    """A value a sort column can hold: NULL, text PostgreSQL stores, a whole number in bigint range."""
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return KEY_INT_MIN <= value <= KEY_INT_MAX
    return isinstance(value, str) and text_problem(value) is None
