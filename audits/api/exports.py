"""Streamed CSV and JSON exports of an audit's issues and pages: rows are read in chunks from the database
and written as they come, so an export of 100,000 pages holds no more than one chunk in memory."""

import csv
import json

from django.db.models import QuerySet

CHUNK_ROWS = 2000
ISSUE_COLUMNS = ["type", "severity", "page_url", "details", "created_at"]
PAGE_COLUMNS = [
    "url", "status_code", "fetch_class", "fetch_error", "content_type", "bytes", "response_time_ms", "depth",
    "in_sitemap", "title", "meta_description", "canonical_url", "is_indexable", "word_count", "h1_count",
    "internal_links", "external_links", "redirect_url", "fetched_at",
]  # fmt: skip
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class _Echo:
    def write(self, value):
        return value


def _cell(value):
    """CSV cell: JSON for structures, ISO for dates, and text that a spreadsheet would run as a formula
    (a hostile page title like '=HYPERLINK(...)') prefixed with an apostrophe."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    elif hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _json_value(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def csv_rows(queryset: QuerySet, columns: list[str]):
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for row in queryset.values_list(*columns).iterator(chunk_size=CHUNK_ROWS):
        yield writer.writerow([_cell(v) for v in row])


def json_chunks(queryset: QuerySet, columns: list[str]):
    """A JSON array of objects, one chunk of text per row."""
    yield "["
    first = True
    for row in queryset.values_list(*columns).iterator(chunk_size=CHUNK_ROWS):
        item = json.dumps({c: _json_value(v) for c, v in zip(columns, row, strict=True)}, ensure_ascii=False)
        yield item if first else "," + item
        first = False
    yield "]\n"
