"""Streamed exports of an audit's issues and pages as CSV and JSON, for the dashboard and the API.

Each function is a generator of str chunks over `.values_list(...).iterator(chunk_size=EXPORT_FETCH_ROWS)`
(a server-side cursor on PostgreSQL), so an export of 50,000 rows holds one fetch of rows and one chunk of
text at a time. Wrap it in a StreamingHttpResponse:

    StreamingHttpResponse(issues_csv_rows(audit), content_type=CSV_CONTENT_TYPE)

CSV cells that a spreadsheet would run as a formula (crawled titles starting with "=", "+", "-", "@")
are prefixed with a quote; JSON is an array of objects, one per row.

Issues go out as evidence (audits.evidence): named, flat columns per type, the same in CSV and JSON, never a
JSON blob. The all-issues files have every type's columns (empty where a type has none); the per-type files
(`issue_type_csv_rows`, `issue_type_json_chunks`) have just that type's.
"""

import csv
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from urllib.parse import urlsplit

from django.db.models import Count, QuerySet

from audits.checks.registry import CATEGORIES
from audits.comparison import check_spec
from audits.evidence import LIST_SEPARATOR, all_evidence_keys, evidence_columns, evidence_queryset, evidence_records
from audits.models import Audit, Issue, Page
from audits.selectors import page_inlinks_count

EXPORT_FETCH_ROWS = 2000  # rows per fetch of the database cursor
EXPORT_ROWS_PER_CHUNK = 500  # rows joined into one yielded string (fewer, larger writes to the socket)

CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"

ISSUE_BASE_COLUMNS = ("type", "issue_title", "category", "severity")  # evidence has its own "title"
# page_url is the first evidence key of every page-tied type; the rest follow in registry order.
ISSUE_COLUMNS = (*ISSUE_BASE_COLUMNS, *all_evidence_keys())

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
    "h1",
    "word_count",
    "internal_links",
    "external_links",
    "images_total",
    "images_missing_alt",
    "html_lang",
    "fetched_at",
)
PAGE_COLUMNS = (*PAGE_FIELDS, "inlinks")  # inlinks: links to the page from the audit's crawled pages
EXTRACTED_PREFIX = "extracted."  # + an extractor's name: a pages export column (custom extraction)

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _type_records(audit: Audit, issue_type: str, columns: tuple, prefix: tuple = ()) -> Iterator[tuple]:
    """One tuple per evidence row of a type, in `columns` order (a key the type lacks is "")."""
    issues = evidence_queryset(audit=audit, issue_type=issue_type).iterator(chunk_size=EXPORT_FETCH_ROWS)
    tail = columns[len(prefix) :]
    for _page_id, row in evidence_records(issue_type, issues):
        yield (*prefix, *(row.get(key, "") for key in tail))


def _issue_records(audit: Audit) -> Iterator[tuple]:
    """Every issue of the audit as evidence rows with the type's name, category and severity, type by type."""
    present = (
        Issue.objects.filter(audit=audit)
        .exclude(page_url="", details__capped=True)
        .order_by("type")
        .values("type")
        .annotate(n=Count("id"))
        .values_list("type", flat=True)
    )
    for issue_type in list(present):
        spec = check_spec(issue_type)
        severity = (
            Issue.objects.filter(audit=audit, type=issue_type)
            .exclude(details__capped=True)
            .values_list("severity", flat=True)
            .first()
            or spec.severity
        )
        prefix = (issue_type, spec.title, CATEGORIES.get(spec.category, spec.category), severity)
        yield from _type_records(audit, issue_type, ISSUE_COLUMNS, prefix)


def _extractor_names(audit: Audit) -> list[str]:
    """The custom extractors the audit crawled with (its config snapshot), one export column each."""
    return [e["name"] for e in (audit.config or {}).get("extractors") or [] if isinstance(e, dict) and e.get("name")]


def page_export_columns(audit: Audit) -> tuple:
    """PAGE_COLUMNS, then `extracted.<name>` for each of the audit's custom extractors."""
    return (*PAGE_COLUMNS, *(f"{EXTRACTED_PREFIX}{name}" for name in _extractor_names(audit)))


def _page_rows(audit: Audit, pages: QuerySet | None = None, *, join_values: bool = True) -> Iterator[tuple]:
    """`pages`: the dashboard's filtered, sorted queryset, annotated with `inlinks` (all pages by URL when None).
    Extracted values follow the page's columns: joined into one cell for CSV, a list for JSON."""
    if pages is None:
        pages = Page.objects.filter(audit=audit).annotate(inlinks=page_inlinks_count()).order_by("url")
    names = _extractor_names(audit)
    if not names:
        return pages.filter(audit=audit).values_list(*PAGE_COLUMNS).iterator(chunk_size=EXPORT_FETCH_ROWS)
    rows = pages.filter(audit=audit).values_list(*PAGE_COLUMNS, "extracted").iterator(chunk_size=EXPORT_FETCH_ROWS)
    return (_with_extracted(row, names, join_values) for row in rows)


def _with_extracted(row: tuple, names: list[str], join_values: bool) -> tuple:
    extracted = row[-1] or {}
    values = [extracted.get(name) or [] for name in names]
    return (*row[:-1], *(LIST_SEPARATOR.join(v) if join_values else v for v in values))


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
    """CSV of the audit's issues as evidence rows (ISSUE_COLUMNS), type by type."""
    return _csv_chunks(ISSUE_COLUMNS, _issue_records(audit))


def issue_type_columns(issue_type: str) -> tuple:
    return tuple(key for key, _label in evidence_columns(issue_type))


def issue_type_csv_rows(audit: Audit, issue_type: str) -> Iterator[str]:
    """CSV of one type's evidence: its named columns (audits.evidence), one line per row."""
    columns = issue_type_columns(issue_type)
    return _csv_chunks(columns, _type_records(audit, issue_type, columns))


def pages_csv_rows(audit: Audit, pages: QuerySet | None = None) -> Iterator[str]:
    """CSV of the audit's pages (or of `pages`, in its order): a header line, then chunks of lines."""
    return _csv_chunks(page_export_columns(audit), _page_rows(audit, pages))


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
    """A JSON array of the audit's issues as evidence rows: objects with the ISSUE_COLUMNS keys, in chunks."""
    return _json_chunks(ISSUE_COLUMNS, _issue_records(audit))


def issue_type_json_chunks(audit: Audit, issue_type: str) -> Iterator[str]:
    """A JSON array of one type's evidence rows: objects with the same keys as the CSV's columns."""
    columns = issue_type_columns(issue_type)
    return _json_chunks(columns, _type_records(audit, issue_type, columns))


def pages_json_chunks(audit: Audit, pages: QuerySet | None = None) -> Iterator[str]:
    """A JSON array of the audit's pages (or of `pages`, in its order), PAGE_COLUMNS keys, in chunks."""
    return _json_chunks(page_export_columns(audit), _page_rows(audit, pages, join_values=False))


def export_filename(audit: Audit, what: str, extension: str) -> str:
    """`sitewarden-example.com-2026-01-31-issues.csv`: host of the audited site, day it started."""
    host = urlsplit(audit.start_url).hostname or "site"
    host = re.sub(r"[^A-Za-z0-9.-]", "_", host)[:100]
    day = (audit.started_at or audit.created_at).date().isoformat()
    return f"sitewarden-{host}-{day}-{what}.{extension}"
