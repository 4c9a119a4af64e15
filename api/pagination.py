"""The API's pagination: page numbers for short lists, keyset (cursor) pages for an audit's pages and issues.

An audit holds up to 100,000 pages and more issues. `?page=2000` would make PostgreSQL walk and throw away
99,950 rows (OFFSET) on every request; a keyset page starts from the last row's sort key instead
(`WHERE (type, page_url, id) > (…)` on an index that has those columns), so the last page costs what the
first does. DRF's own CursorPagination keys on the first ordering field only and falls back to an offset
within ties, which on the issue list (ordered by type first) is an offset again: hence this class.

The cursor format, the keyset query and the decision that a cursor is bad are audits.selectors.pagination's
(the dashboard's lists use the same): cursors are signed and bound to the list (its path: the audit) and its
ordering, and this module only words a refusal, a 400 `invalid_cursor` problem, never a query.
"""

from django.db.models import QuerySet
from rest_framework.exceptions import APIException, NotFound
from rest_framework.pagination import BasePagination, PageNumberPagination
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from audits.errors import ErrorCode
from audits.selectors.pagination import (
    API_CURSOR_SALT,
    CursorInvalid,
    KeysetColumn,
    keyset_paginate,
    keyset_position,
)

API_PAGE_SIZE = 50
API_MAX_PAGE_SIZE = 500


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
        columns = [KeysetColumn(name) for name in self.columns]
        position = self._position(request.query_params.get(self.cursor_query_param), columns, queryset.model)
        if request.query_params.get("page") not in (None, "", "1"):
            raise NotFound("This list is paginated by cursor: follow the `next` and `previous` links.")
        # A view may know the size without a COUNT(*) (the audit's page counter when nothing is filtered).
        known = view.keyset_total(request) if hasattr(view, "keyset_total") else None
        self.count = known if known is not None else queryset.order_by().count()
        self.keyset_page = keyset_paginate(
            queryset.order_by(*self.columns),
            columns=columns,
            position=position,
            tag=self._bound_to(),
            salt=API_CURSOR_SALT,
            per_page=self.page_size_now,
            param=self.cursor_query_param,
        )
        self.page = self.keyset_page.object_list
        return self.page

    def get_paginated_response(self, data):
        return Response(
            {"count": self.count, "next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

    def get_next_link(self) -> str | None:
        return self._link(self.keyset_page.next_cursor) if self.keyset_page.has_next else None

    def get_previous_link(self) -> str | None:
        return self._link(self.keyset_page.previous_cursor) if self.keyset_page.has_previous else None

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

    def _bound_to(self) -> str:
        """What a cursor of this list is for: the list (its path names the audit) and its ordering."""
        return f"{self.request.path}|{','.join(self.columns)}"

    def _link(self, token: str) -> str:
        url = self.request.build_absolute_uri()
        url = remove_query_param(url, "page")
        return replace_query_param(url, self.cursor_query_param, token)

    def _position(self, token: str | None, columns: list[KeysetColumn], model):
        """The cursor's position (audits.selectors.pagination.keyset_position decides), a refusal worded as the
        API's 400 problem."""
        try:
            return keyset_position(
                token,
                columns=columns,
                tag=self._bound_to(),
                salt=API_CURSOR_SALT,
                model=model,
                param=self.cursor_query_param,
            )
        except CursorInvalid as exc:
            raise InvalidCursor(f"Invalid cursor: {exc.reason} Follow the `next` and `previous` links.") from None
