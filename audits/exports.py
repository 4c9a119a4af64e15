"""Streamed exports of an audit's issues and pages as CSV and JSON, for the dashboard and the API.

Each function is a generator of str chunks over `.values_list(...).iterator(chunk_size=EXPORT_FETCH_ROWS)`
(a server-side cursor on PostgreSQL), so an export of 50,000 rows holds one fetch of rows and one chunk of
text at a time. Wrap it in a StreamingHttpResponse:

    StreamingHttpResponse(issues_csv_rows(audit), content_type=CSV_CONTENT_TYPE)

CSV cells that a spreadsheet would run as a formula (crawled titles starting with "=", "+", "-", "@")
are prefixed with a quote; JSON is an array of objects, one per row.
"""

import csv
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from urllib.parse import urlsplit

from audits.checks.registry import CHECKS_BY_TYPE
from audits.models import Audit, Issue, Page

EXPORT_FETCH_ROWS = 2000  # rows per fetch of the database cursor
EXPORT_ROWS_PER_CHUNK = 500  # rows joined into one yielded string (fewer, larger writes to the socket)

CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"

ISSUE_FIELDS = ("type", "severity", "page_url", "details")
ISSUE_COLUMNS = ("type", "severity", "title", "page_url", "details")

PAGE_FIELDS = (
    "url",
    "status_code",
    "fetch_class",
    "fetch_error",
    "redirect_url",
    "content_type",
    "bytes",
    "response_time_ms",
    "depth",
    "in_sitemap",
    "is_indexable",
    "title",
    "meta_description",
    "canonical_url",
    "meta_robots",
    "x_robots_tag",
    "h1_count",
    "word_count",
    "internal_links",
    "external_links",
    "images_total",
    "images_missing_alt",
    "html_lang",
    "fetched_at",
)
PAGE_COLUMNS = PAGE_FIELDS

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _issue_rows(audit: Audit) -> Iterator[tuple]:
    return (
        Issue.objects.filter(audit=audit)
        .order_by("type", "page_url", "id")
        .values_list(*ISSUE_FIELDS)
        .iterator(chunk_size=EXPORT_FETCH_ROWS)
    )


def _page_rows(audit: Audit) -> Iterator[tuple]:
    return (
        Page.objects.filter(audit=audit)
        .order_by("url")
        .values_list(*PAGE_FIELDS)
        .iterator(chunk_size=EXPORT_FETCH_ROWS)
    )


def _issue_record(row: tuple) -> tuple:
    issue_type, severity, page_url, details = row
    spec = CHECKS_BY_TYPE.get(issue_type)
    return (issue_type, severity, spec.title if spec else issue_type, page_url, details)


def _batched(rows: Iterable, size: int = EXPORT_ROWS_PER_CHUNK) -> Iterator[list]:
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# --- CSV -----------------------------------------------------------------------------------------------


class _Line:
    """A file-like object whose write returns what it was given: csv.writer then formats one line."""

    def write(self, value: str) -> str:
        return value


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _csv_chunks(columns: tuple, records: Iterable[tuple]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for batch in _batched(records):
        yield "".join(writer.writerow([_csv_cell(v) for v in record]) for record in batch)


def issues_csv_rows(audit: Audit) -> Iterator[str]:
    """CSV of the audit's issues: a header line, then chunks of lines (type, page URL order)."""
    return _csv_chunks(ISSUE_COLUMNS, (_issue_record(row) for row in _issue_rows(audit)))


def pages_csv_rows(audit: Audit) -> Iterator[str]:
    """CSV of the audit's pages: a header line, then chunks of lines (URL order)."""
    return _csv_chunks(PAGE_COLUMNS, _page_rows(audit))


# --- JSON ----------------------------------------------------------------------------------------------


def _json_default(value):
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _json_chunks(columns: tuple, records: Iterable[tuple]) -> Iterator[str]:
    yield "["
    first = True
    for batch in _batched(records):
        text = ",\n".join(
            json.dumps(dict(zip(columns, record, strict=True)), ensure_ascii=False, default=_json_default)
            for record in batch
        )
        yield ("\n" if first else ",\n") + text
        first = False
    yield "\n]\n"


def issues_json_chunks(audit: Audit) -> Iterator[str]:
    """A JSON array of the audit's issues ({type, severity, title, page_url, details}), in chunks."""
    return _json_chunks(ISSUE_COLUMNS, (_issue_record(row) for row in _issue_rows(audit)))


def pages_json_chunks(audit: Audit) -> Iterator[str]:
    """A JSON array of the audit's pages (PAGE_COLUMNS keys), in chunks."""
    return _json_chunks(PAGE_COLUMNS, _page_rows(audit))


def export_filename(audit: Audit, what: str, extension: str) -> str:
    """`sitewarden-example.com-2026-01-31-issues.csv`: host of the audited site, day it started."""
    host = urlsplit(audit.start_url).hostname or "site"
    host = re.sub(r"[^A-Za-z0-9.-]", "_", host)[:100]
    day = (audit.started_at or audit.created_at).date().isoformat()
    return f"sitewarden-{host}-{day}-{what}.{extension}"
