"""The API's pagination: page numbers for short lists, keyset (cursor) pages for an audit's pages and issues.

An audit holds up to 100,000 pages and more issues. `?page=2000` would make PostgreSQL walk and throw away
99,950 rows (OFFSET) on every request; a keyset page starts from the last row's sort key instead
(`WHERE (type, page_url, id) > (…)` on an index that has those columns), so the last page costs what the
first does. DRF's own CursorPagination keys on the first ordering field only and falls back to an offset
within ties, which on the issue list (ordered by type first) is an offset again: hence this class.

Cursors are signed and bound to the list (its path: the audit) and its ordering (config.cursors): a tampered,
forged or foreign cursor is a 400 `invalid_cursor` problem, never a query.
"""

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import QuerySet
from rest_framework.exceptions import APIException, NotFound
from rest_framework.pagination import BasePagination, PageNumberPagination
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from audits.errors import ErrorCode
from config.cursors import CursorInvalid, cursor_decode, cursor_encode

API_PAGE_SIZE = 50
API_MAX_PAGE_SIZE = 500
CURSOR_SALT = "api.pagination.keyset"


class InvalidCursor(APIException):
    status_code = ErrorCode.INVALID_CURSOR.status
    default_code = ErrorCode.INVALID_CURSOR.value
    default_detail = "Invalid cursor."


class ApiPagination(PageNumberPagination):
    """Page numbers, for the lists that stay short (projects, audits, webhooks, deliveries)."""

    page_size = API_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = API_MAX_PAGE_SIZE


class KeysetPagination(BasePagination):
    """Keyset pages over the view's `keyset_ordering` (ascending columns of the model's table, the last one
    unique, all in one index with the list's filter column first). The response keeps the page-number
    shape: `count` (exact: the view's `keyset_total` or a count of the filtered rows), `next`, `previous`
    (links that keep the filters and carry an opaque `cursor`), `results`."""

    page_size = API_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = API_MAX_PAGE_SIZE
    cursor_query_param = "cursor"

    def paginate_queryset(self, queryset: QuerySet, request, view=None):
        self.request = request
        self.columns = tuple(view.keyset_ordering)
        self.page_size_now = self._page_size(request)
        cursor = self._decode(request.query_params.get(self.cursor_query_param), queryset.model)
        if request.query_params.get("page") not in (None, "", "1"):
            raise NotFound("This list is paginated by cursor: follow the `next` and `previous` links.")
        # A view may know the size without a COUNT(*) (the audit's page counter when nothing is filtered).
        known = view.keyset_total(request) if hasattr(view, "keyset_total") else None
        self.count = known if known is not None else queryset.order_by().count()
        backwards = bool(cursor and cursor["back"])
        rows = queryset.order_by(*(f"-{c}" if backwards else c for c in self.columns))
        if cursor:
            rows = rows.extra(where=[self._seek_sql(queryset, "<" if backwards else ">")], params=cursor["key"])
        page = list(rows[: self.page_size_now + 1])
        more = len(page) > self.page_size_now
        page = page[: self.page_size_now]
        if backwards:
            page.reverse()
        # Going forward, a next page exists when a row beyond this one does; a previous one when we came
        # from a cursor. Going backwards, the reverse.
        self.has_next = (more if not backwards else True) and bool(page)
        self.has_previous = (bool(cursor) if not backwards else more) and bool(page)
        self.page = page
        return page

    def get_paginated_response(self, data):
        return Response(
            {"count": self.count, "next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

    def get_next_link(self) -> str | None:
        return self._link(self.page[-1], back=False) if self.has_next else None

    def get_previous_link(self) -> str | None:
        return self._link(self.page[0], back=True) if self.has_previous else None

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["count", "results"],
            "properties": {
                "count": {"type": "integer", "example": 123, "description": "Rows matching the filters"},
                "next": {
                    "type": "string",
                    "nullable": True,
                    "format": "uri",
                    "description": "The next page (keeps the filters; an opaque cursor), null on the last page",
                },
                "previous": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "Opaque position from a `next` or `previous` link (keyset pagination: "
                "every page costs the same however deep; there are no page numbers).",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Rows per page (default {self.page_size}, at most {self.max_page_size}).",
                "schema": {"type": "integer"},
            },
        ]

    # --- inside --------------------------------------------------------------------------------------

    def _page_size(self, request) -> int:
        try:
            asked = int(request.query_params.get(self.page_size_query_param) or self.page_size)
        except ValueError:
            return self.page_size
        return min(max(asked, 1), self.max_page_size)

    def _seek_sql(self, queryset: QuerySet, op: str) -> str:
        """A row-value comparison, `(t.a, t.b, t.c) > (%s, %s, %s)`, which PostgreSQL answers from the
        index on those columns (Django has no public expression for it)."""
        meta = queryset.model._meta
        table = meta.db_table
        columns = ", ".join(f'"{table}"."{meta.get_field(name).column}"' for name in self.columns)
        return f"({columns}) {op} ({', '.join(['%s'] * len(self.columns))})"

    def _bound_to(self) -> str:
        """What a cursor of this list is for: the list (its path names the audit) and its ordering."""
        return f"{self.request.path}|{','.join(self.columns)}"

    def _link(self, row, *, back: bool) -> str:
        key = [getattr(row, name) for name in self.columns]
        token = cursor_encode(key, backwards=back, bound_to=self._bound_to(), salt=CURSOR_SALT)
        url = self.request.build_absolute_uri()
        url = remove_query_param(url, "page")
        return replace_query_param(url, self.cursor_query_param, token)

    def _decode(self, token: str | None, model) -> dict | None:
        """The cursor's key, signed for this list and ordering, each value checked against its column (a
        tampered or foreign cursor is a 400, never a query)."""
        if not token:
            return None
        try:
            key, back = cursor_decode(token, bound_to=self._bound_to(), salt=CURSOR_SALT, size=len(self.columns))
            for name, value in zip(self.columns, key, strict=True):
                if not _fits_column(model._meta.get_field(name), value):
                    raise ValidationError("wrong type")
        except CursorInvalid as exc:
            raise InvalidCursor(f"Invalid cursor: {exc.reason} Follow the `next` and `previous` links.") from None
        except ValidationError:
            raise InvalidCursor("Invalid cursor: a value does not fit its column.") from None
        return {"key": key, "back": back}


def _fits_column(field, value) -> bool:
    """Whether a cursor's value is of its column's type (a number for a text column would be compared as
    `text > integer`: a database error)."""
    if isinstance(field, models.UUIDField):
        return isinstance(value, str) and field.to_python(value) is not None
    if isinstance(field, models.IntegerField):
        return isinstance(value, int)
    return isinstance(value, str)
