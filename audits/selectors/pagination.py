"""Pagination of every long list, the API's and the dashboard's: one cursor format, one keyset query, one
decision that a cursor is bad (`keyset_position`). The faces only word the refusal: the API answers a 400
`invalid_cursor` problem (api.pagination), the dashboard sends the person to the list's first page with a note
(dashboard.views).

A cursor is the last row's sort key, signed with django.core.signing (HMAC with SECRET_KEY; a salt per
face) together with what it was made for (`bound_to`: the list and its sort). So a tampered or forged
cursor, one from another audit, page or sort, or one signed under another key, is refused with
CursorInvalid before any query: the values that reach the database are values this server wrote. The key's
values are still checked (plain JSON scalars, integers in bigint range, text PostgreSQL can store, each of its
column's type): a leaked SECRET_KEY must not turn into 500s.

A keyset page starts from the last row's sort key instead of an OFFSET (`WHERE (type, page_url, id) > (…)` on
an index that has those columns), so the last page of 100,000 rows costs what the first does.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from django.core import signing
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.db.models import Q, QuerySet

from config.inputs import text_problem

PAGE_SIZE = 50  # rows per page of every long list of the dashboard
DASHBOARD_CURSOR_SALT = "dashboard.keyset"  # the dashboard's cursors are no good to the API, and the other way round
API_CURSOR_SALT = "api.pagination.keyset"
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


@dataclass(frozen=True)
class KeysetColumn:
    """One column of a keyset: a field or annotation of the queryset, its direction and whether it can be
    NULL (NULLs sort last, as the lists' orderings say)."""

    name: str
    descending: bool = False
    nullable: bool = False


@dataclass
class KeysetPage:
    """One page of a keyset-paginated list: its rows, cursors to the pages on either side, and the list's
    size when it is known cheaply (`total`; `total_is_estimate` when it comes from the audit's counters)."""

    object_list: list
    has_next: bool
    has_previous: bool
    next_cursor: str = ""
    previous_cursor: str = ""
    total: int | None = None
    total_is_estimate: bool = False
    param: str = field(default="cursor")

    def __iter__(self):
        return iter(self.object_list)

    def __len__(self):
        return len(self.object_list)

    @property
    def has_other_pages(self) -> bool:
        return self.has_next or self.has_previous


@dataclass(frozen=True)
class KeysetPosition:
    """Where a cursor points: the sort key of the row it follows (precedes, `backwards`)."""

    key: list
    backwards: bool


def keyset_position(
    token: str | None,
    *,
    columns: Sequence[KeysetColumn],
    tag: str,
    salt: str = DASHBOARD_CURSOR_SALT,
    model=None,
    param: str = "cursor",
) -> KeysetPosition | None:
    """The one decision "this cursor is bad": the position a cursor names in the list `tag` names, None without
    a cursor, CursorInvalid (naming `param`) for a cursor this server did not make for that list and sort, or
    one whose values do not fit their columns of `model` (a number for a text column would reach the database
    as `text > integer`). Before any query; each face words the refusal (the API a 400 problem, the dashboard
    the list's first page with a note)."""
    if not token:
        return None
    key, backwards = cursor_decode(token, bound_to=tag, salt=salt, size=len(columns), param=param)
    if model is not None:
        for column, value in zip(columns, key, strict=True):
            if not _fits_column(model, column, value):
                raise CursorInvalid("A value does not fit its column.", param=param)
    return KeysetPosition(key, backwards)


def keyset_paginate(
    queryset: QuerySet,
    *,
    columns: Sequence[KeysetColumn],
    cursor: str | None = None,
    position: KeysetPosition | None = None,
    tag: str = "",
    salt: str = DASHBOARD_CURSOR_SALT,
    per_page: int | None = None,
    total: int | None = None,
    total_is_estimate: bool = False,
    keys_first: bool = False,
    keys: QuerySet | None = None,
    param: str = "cursor",
) -> KeysetPage:
    """One page of `queryset` (already ordered by `columns`, whose values together are unique) starting
    after the row the cursor names: a seek on the ordering instead of OFFSET, so page 3,000 of 100,000 rows
    costs what page 1 does, and no COUNT(*) is needed. `tag` names what the cursor is for (the list and its
    sort: `grid_cursor_tag`, `links_cursor_tag`, the API's path and ordering); cursors are signed with the
    face's `salt`, and one altered or made for another list or sort raises CursorInvalid naming `param`
    (keyset_position), before any query. A caller that read the cursor already passes its `position`.

    `keys_first`: sort and seek selecting the primary keys alone, then read the page's rows by key. For an
    ordering no index serves, the database then sorts every row of the list without reading each one whole
    (the pages grid sorted by depth on a 100,000-page crawl: 96 -> 61 ms); one more query of per_page rows.
    `keys`: a narrower table to sort and seek in instead (implies keys_first): one row a row of `queryset`, its
    primary key the row's, the ordering's columns under the same names and the same ORDER BY
    (audits.selectors.pages.page_sort_keys)."""
    per_page = per_page or PAGE_SIZE
    if position is None and cursor:
        position = keyset_position(cursor, columns=columns, tag=tag, salt=salt, model=queryset.model, param=param)
    key, backwards = (position.key, position.backwards) if position is not None else (None, False)
    rows = queryset if keys is None else keys
    keys_first = keys_first or keys is not None
    if key is not None:
        rows = _keyset_seek(rows, columns, key, backwards=backwards)
        if backwards:
            rows = rows.reverse()  # flips each direction and NULLS LAST/FIRST with it
    if keys_first:
        keys = list(rows.values_list("pk", flat=True)[: per_page + 1])
        by_key = queryset.in_bulk(keys)
        page = [by_key[k] for k in keys if k in by_key]  # a row deleted in between is left out
    else:
        page = list(rows[: per_page + 1])
    more = len(page) > per_page
    page = page[:per_page]
    if backwards:
        page.reverse()
    # Going forward, a next page exists when a row beyond this one does; a previous one when we came from a
    # cursor. Going backwards, the reverse.
    has_next = bool(page) and (more if not backwards else True)
    has_previous = bool(page) and (key is not None if not backwards else more)
    return KeysetPage(
        object_list=page,
        has_next=has_next,
        has_previous=has_previous,
        next_cursor=keyset_cursor(page[-1], columns, tag, backwards=False, salt=salt) if has_next else "",
        previous_cursor=keyset_cursor(page[0], columns, tag, backwards=True, salt=salt) if has_previous else "",
        total=total,
        total_is_estimate=total_is_estimate,
        param=param,
    )


def keyset_cursor(
    row, columns: Sequence[KeysetColumn], tag: str = "", *, backwards: bool = False, salt: str = DASHBOARD_CURSOR_SALT
) -> str:
    """The cursor of the page that starts after `row` (before it, `backwards`), as keyset_paginate reads it."""
    key = [row[c.name] if isinstance(row, dict) else getattr(row, c.name) for c in columns]
    return cursor_encode(key, backwards=backwards, bound_to=tag, salt=salt)


def _keyset_seek(queryset: QuerySet, columns: Sequence[KeysetColumn], key: list, *, backwards: bool) -> QuerySet:
    """The rows of `queryset` beyond `key`. Ascending NOT NULL columns of the model's own table are compared as
    one row value, `(t.a, t.b, t.c) > (%s, %s, %s)`, which PostgreSQL answers from the index on those columns
    (Django has no public expression for it); any other ordering through `_keyset_beyond`."""
    fields = [_own_field(queryset.model, column) for column in columns]
    if all(f is not None and not c.descending and not c.nullable for f, c in zip(fields, columns, strict=True)):
        table = queryset.model._meta.db_table
        names = ", ".join(f'"{table}"."{f.column}"' for f in fields)
        where = f"({names}) {'<' if backwards else '>'} ({', '.join(['%s'] * len(fields))})"
        return queryset.extra(where=[where], params=key)
    return queryset.filter(_keyset_beyond(columns, key, backwards=backwards))


def _own_field(model, column: KeysetColumn):
    """The concrete field of the model's own table a keyset column names; None for an annotation or a join."""
    if "__" in column.name:
        return None
    try:
        field = model._meta.get_field(column.name)
    except FieldDoesNotExist:
        return None
    return field if field.concrete and not field.is_relation else None


def _fits_column(model, column: KeysetColumn, value) -> bool:
    """Whether a cursor's value is of its column's type; annotations and joined columns are left to the signature
    (their values are still plain JSON scalars: cursor_decode)."""
    field = _own_field(model, column)
    if field is None:
        return True
    if value is None:
        return column.nullable
    if isinstance(field, models.UUIDField):
        if not isinstance(value, str):
            return False
        try:
            return field.to_python(value) is not None
        except ValidationError:
            return False
    if isinstance(field, models.IntegerField):
        return isinstance(value, int)
    return isinstance(value, str)


_NOTHING = Q(pk__in=[])


def _keyset_beyond(columns: Sequence[KeysetColumn], key: list, *, backwards: bool) -> Q:
    """Rows after (or before) `key` in the columns' order, NULLs last: the lexicographic comparison
    spelled out column by column, because a column may be descending or NULL where a row-value `>` cannot."""
    alternatives = []
    equal_so_far = Q()
    for column, value in zip(columns, key, strict=True):
        smaller = column.descending != backwards  # does "beyond" mean a smaller value in this column?
        if value is None:  # NULLs sort last: nothing is after a NULL but other NULLs, everything else before
            step = Q(**{f"{column.name}__isnull": False}) if backwards else None
            equal = Q(**{f"{column.name}__isnull": True})
        else:
            step = Q(**{f"{column.name}__{'lt' if smaller else 'gt'}": value})
            if column.nullable and not backwards:
                step |= Q(**{f"{column.name}__isnull": True})
            equal = Q(**{column.name: value})
        if step is not None:
            alternatives.append(equal_so_far & step)
        equal_so_far &= equal
    beyond = _NOTHING
    for alternative in alternatives:
        beyond = alternative if beyond is _NOTHING else beyond | alternative
    # The OR above is no index range: say the bound it implies on the first column too, so an index on the
    # ordering is entered at the cursor instead of read (with its rows) from the start of the list. Only where
    # no NULL can be beyond (a NULL fails any comparison).
    first, value = columns[0], key[0]
    if len(columns) > 1 and value is not None and (backwards or not first.nullable):
        smaller = first.descending != backwards
        beyond = Q(**{f"{first.name}__{'lte' if smaller else 'gte'}": value}) & beyond
    return beyond
