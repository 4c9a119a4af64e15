"""Streamed exports of an audit's issues and pages as CSV, JSON and an XLSX workbook, for the dashboard and the API.

Each CSV/JSON function is a generator of str chunks over `.values_list(...).iterator(chunk_size=EXPORT_FETCH_ROWS)`
(a server-side cursor on PostgreSQL), so an export of 50,000 rows holds one fetch of rows and one chunk of
text at a time. Wrap it in a StreamingHttpResponse:

    StreamingHttpResponse(issues_csv_rows(audit), content_type=CSV_CONTENT_TYPE)

CSV cells that a spreadsheet would run as a formula (crawled titles starting with "=", "+", "-", "@")
are prefixed with a quote; JSON is an array of objects, one per row.

The all-issues files are in long form: one row per issue (every issue the UI counts, site-wide ones included,
with an empty page), ISSUE_COLUMNS: type, title, severity, category, page, target, and a one-line detail in
words (audits.evidence.finding_summary). The per-type files (`issue_type_csv_rows`, `issue_type_json_chunks`)
have that type's own evidence columns (audits.evidence), one row per evidence row.

The external links (audits.selectors.external) have files of their own: one row per distinct target
(EXTERNAL_LINK_COLUMNS: what asking it answered and how many pages link to it, `external_links_csv_rows`,
`external_links_json_chunks`) and one row per target and linking page with its anchor (EXTERNAL_LINK_PAGE_COLUMNS,
`external_link_pages_csv_rows`, `external_link_pages_json_chunks`).

The changes against the audit's baseline (audits.selectors.changes) too: one row per URL and field that differs
(CHANGE_EXPORT_COLUMNS: url, field, direction, before, after; `changes_csv_rows`, `changes_json_chunks`), filtered
like the Changes screen.

The workbook (`issues_xlsx_write`) has an Overview sheet, one sheet per issue type found, with the per-type
files' columns, and, when the audit has external targets, the two external sheets (the whole site's), and when it
has changes against its baseline, a Changes sheet (the whole site's);
XlsxWriter's constant_memory mode writes each row to a temporary file as it comes, so memory
stays bounded whatever the audit's size. A sheet stops at Excel's row limit with a last row saying so.
"""

import csv
import json
import re
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from urllib.parse import urlsplit

import xlsxwriter
from django.db.models import Case, Count, IntegerField, Q, QuerySet, Value, When

from audits.checks.registry import CATEGORIES
from audits.checks.score import SCORE_FORMULA_WORDS, score_breakdown
from audits.comparison import check_spec
from audits.evidence import (
    LIST_SEPARATOR,
    evidence_columns,
    evidence_count_unit,
    evidence_queryset,
    evidence_records,
    finding_summary,
)
from audits.models import Audit, ExternalLink, Issue, Page
from audits.segments import SegmentChoice
from audits.selectors.changes import CHANGE_EXPORT_COLUMNS, change_export_rows, change_filter
from audits.selectors.external import external_link_edges, external_link_rows
from audits.selectors.issues import issues_by_severity, issues_by_type, severity_totals
from audits.selectors.links import page_inlinks_count
from audits.stats import issue_type_counts

EXPORT_FETCH_ROWS = 2000  # rows per fetch of the database cursor
EXPORT_ROWS_PER_CHUNK = 500  # rows joined into one yielded string (fewer, larger writes to the socket)

CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# The long form: one row per issue. page_url is empty for a site-wide finding, target where the type has none.
ISSUE_COLUMNS = ("type", "title", "severity", "category", "page_url", "target", "detail")

XLSX_MAX_ROWS = 1_048_576  # Excel's rows per sheet, the header row included
XLSX_SHEET_NAME_MAX_CHARS = 31  # Excel's limit on a sheet name
XLSX_OVERVIEW_SHEET = "Overview"
XLSX_EXTERNAL_SHEET = "External links"  # one row per target
XLSX_EXTERNAL_PAGES_SHEET = "External link pages"  # one row per target and linking page
XLSX_CHANGES_SHEET = "Changes"  # one row per URL and field that differs from the baseline
_SHEET_NAME_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")

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

# External links: one row per distinct target, and one per target and linking page (its anchor text).
EXTERNAL_LINK_FIELDS = (
    "url",
    "host",
    "outcome",
    "status_code",
    "method",
    "final_url",
    "redirect_hops",
    "error",
    "response_time_ms",
    "linking_pages",
    "checked_at",
)
EXTERNAL_LINK_COLUMNS = (*EXTERNAL_LINK_FIELDS[:3], "outcome_label", *EXTERNAL_LINK_FIELDS[3:])
EXTERNAL_LINK_PAGE_COLUMNS = (
    "target_url",
    "outcome",
    "status_code",
    "source_url",
    "anchor_text",
    "nofollow",
    "link_count",
)
_OUTCOME_LABELS = dict(ExternalLink.Outcome.choices)


def _type_records(
    audit: Audit, issue_type: str, columns: tuple, prefix: tuple = (), issues_q: Q | None = None
) -> Iterator[tuple]:
    """One tuple per evidence row of a type, in `columns` order (a key the type lacks is "")."""
    issues = evidence_queryset(audit=audit, issue_type=issue_type, issues_q=issues_q)
    issues = issues.iterator(chunk_size=EXPORT_FETCH_ROWS)
    tail = columns[len(prefix) :]
    for _page_id, row in evidence_records(issue_type, issues):
        yield (*prefix, *(row.get(key, "") for key in tail))


def _severity_rank():
    """critical first, then warning, then info (an unknown severity last)."""
    whens = [When(severity=value, then=Value(rank)) for rank, value in enumerate(Issue.Severity.values)]
    return Case(*whens, default=Value(len(whens)), output_field=IntegerField())


def _issue_records(audit: Audit, issues_q: Q | None = None) -> Iterator[tuple]:
    """Every issue of the audit (the rows the UI counts; a segment's, `issues_q`) as one long-form row, most
    severe first, type by type."""
    issues = (
        Issue.objects.filter(audit=audit)
        .filter(issues_q or Q())
        .order_by(_severity_rank(), "type", "page_url", "id")
        .values_list("type", "severity", "page_url", "details")
        .iterator(chunk_size=EXPORT_FETCH_ROWS)
    )
    names: dict[str, tuple[str, str]] = {}
    for issue_type, severity, page_url, details in issues:
        if issue_type not in names:
            spec = check_spec(issue_type)
            names[issue_type] = (spec.title, CATEGORIES.get(spec.category, spec.category))
        title, category = names[issue_type]
        target, line = finding_summary(issue_type, page_url, details)
        yield (issue_type, title, severity, category, page_url, target, line)


def _extractor_names(audit: Audit) -> list[str]:
    """The custom extractors the audit crawled with (its config snapshot), one export column each."""
    return [e["name"] for e in (audit.config or {}).get("extractors") or [] if isinstance(e, dict) and e.get("name")]


def page_export_columns(audit: Audit) -> tuple:
    """PAGE_COLUMNS, then `extracted.<name>` for each of the audit's custom extractors."""
    return (*PAGE_COLUMNS, *(f"{EXTRACTED_PREFIX}{name}" for name in _extractor_names(audit)))


def _segment_pages(audit: Audit, pages: QuerySet | None, pages_q: Q | None) -> QuerySet | None:
    """`pages`, or a segment's pages (`pages_q`, audits.segments) by URL with their inlinks, or None (all)."""
    if pages is not None or pages_q is None:
        return pages
    return Page.objects.filter(audit=audit).filter(pages_q).annotate(inlinks=page_inlinks_count()).order_by("url")


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


def _external_records(audit: Audit) -> Iterator[tuple]:
    """One tuple per external target, by URL, in EXTERNAL_LINK_COLUMNS order (the outcome's words beside it)."""
    rows = external_link_rows(audit=audit).values_list(*EXTERNAL_LINK_FIELDS).iterator(chunk_size=EXPORT_FETCH_ROWS)
    for row in rows:
        yield (*row[:3], _OUTCOME_LABELS.get(row[2], row[2]), *row[3:])


def _external_page_records(audit: Audit) -> Iterator[tuple]:
    """One tuple per (target, linking page), by target then page URL, in EXTERNAL_LINK_PAGE_COLUMNS order."""
    edges = external_link_edges(audit=audit).values_list(
        "target_url", "outcome", "status_code", "source_page__url", "anchor_text", "nofollow", "link_count"
    )
    return edges.iterator(chunk_size=EXPORT_FETCH_ROWS)


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


def issues_csv_rows(audit: Audit, *, issues_q: Q | None = None) -> Iterator[str]:
    """CSV of the audit's issues (a segment's, `issues_q`) in long form (ISSUE_COLUMNS), one line per issue."""
    return _csv_chunks(ISSUE_COLUMNS, _issue_records(audit, issues_q))


def issue_type_columns(issue_type: str) -> tuple:
    return tuple(key for key, _label in evidence_columns(issue_type))


def issue_type_csv_rows(audit: Audit, issue_type: str, *, issues_q: Q | None = None) -> Iterator[str]:
    """CSV of one type's evidence: its named columns (audits.evidence), one line per row."""
    columns = issue_type_columns(issue_type)
    return _csv_chunks(columns, _type_records(audit, issue_type, columns, issues_q=issues_q))


def pages_csv_rows(audit: Audit, pages: QuerySet | None = None, *, pages_q: Q | None = None) -> Iterator[str]:
    """CSV of the audit's pages (a segment's, `pages_q`; or of `pages`, in its order): a header line, then chunks
    of lines."""
    return _csv_chunks(page_export_columns(audit), _page_rows(audit, _segment_pages(audit, pages, pages_q)))


def external_links_csv_rows(audit: Audit) -> Iterator[str]:
    """CSV of the audit's external link targets (EXTERNAL_LINK_COLUMNS), one line per distinct target."""
    return _csv_chunks(EXTERNAL_LINK_COLUMNS, _external_records(audit))


def external_link_pages_csv_rows(audit: Audit) -> Iterator[str]:
    """CSV of the pages linking to each external target (EXTERNAL_LINK_PAGE_COLUMNS), one line per target and page."""
    return _csv_chunks(EXTERNAL_LINK_PAGE_COLUMNS, _external_page_records(audit))


def changes_csv_rows(
    audit: Audit, *, field: str | None = None, direction: str | None = None, segment: SegmentChoice | None = None
) -> Iterator[str]:
    """CSV of the audit's changes against its baseline (CHANGE_EXPORT_COLUMNS), one line per URL and field, by URL;
    filtered like the Changes screen (a field, a direction, a segment)."""
    rows = change_export_rows(audit=audit, field=field, direction=direction, segment=segment)
    return _csv_chunks(CHANGE_EXPORT_COLUMNS, rows)


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


def issues_json_chunks(audit: Audit, *, issues_q: Q | None = None) -> Iterator[str]:
    """A JSON array of the audit's issues in long form: one object per issue with the ISSUE_COLUMNS keys."""
    return _json_chunks(ISSUE_COLUMNS, _issue_records(audit, issues_q))


def issue_type_json_chunks(audit: Audit, issue_type: str, *, issues_q: Q | None = None) -> Iterator[str]:
    """A JSON array of one type's evidence rows: objects with the same keys as the CSV's columns."""
    columns = issue_type_columns(issue_type)
    return _json_chunks(columns, _type_records(audit, issue_type, columns, issues_q=issues_q))


def pages_json_chunks(audit: Audit, pages: QuerySet | None = None, *, pages_q: Q | None = None) -> Iterator[str]:
    """A JSON array of the audit's pages (a segment's, `pages_q`; or of `pages`, in its order), PAGE_COLUMNS keys,
    in chunks."""
    rows = _page_rows(audit, _segment_pages(audit, pages, pages_q), join_values=False)
    return _json_chunks(page_export_columns(audit), rows)


def external_links_json_chunks(audit: Audit) -> Iterator[str]:
    """A JSON array of the audit's external link targets: objects with the EXTERNAL_LINK_COLUMNS keys."""
    return _json_chunks(EXTERNAL_LINK_COLUMNS, _external_records(audit))


def external_link_pages_json_chunks(audit: Audit) -> Iterator[str]:
    """A JSON array of (target, linking page) objects with the EXTERNAL_LINK_PAGE_COLUMNS keys."""
    return _json_chunks(EXTERNAL_LINK_PAGE_COLUMNS, _external_page_records(audit))


def changes_json_chunks(
    audit: Audit, *, field: str | None = None, direction: str | None = None, segment: SegmentChoice | None = None
) -> Iterator[str]:
    """A JSON array of the audit's changes: objects with the CHANGE_EXPORT_COLUMNS keys, by URL."""
    rows = change_export_rows(audit=audit, field=field, direction=direction, segment=segment)
    return _json_chunks(CHANGE_EXPORT_COLUMNS, rows)


# --- XLSX ----------------------------------------------------------------------------------------------


def xlsx_sheet_names(issue_types: Iterable[str]) -> dict[str, str]:
    """An Excel-safe sheet name per type: at most 31 characters, none of []:*?/\\, unique (Excel compares
    names without case) and never the overview's or the external links'. `structured-data-missing-recommended`
    -> its first 31 characters; a clash gets `~2`, `~3`… at the end."""
    reserved = (XLSX_OVERVIEW_SHEET, XLSX_EXTERNAL_SHEET, XLSX_EXTERNAL_PAGES_SHEET, XLSX_CHANGES_SHEET)
    taken = {name.lower() for name in reserved}
    names = {}
    for issue_type in issue_types:
        base = _SHEET_NAME_FORBIDDEN.sub("_", issue_type).strip("'") or "issues"
        name, n = base[:XLSX_SHEET_NAME_MAX_CHARS], 1
        while name.lower() in taken:
            n += 1
            suffix = f"~{n}"
            name = base[: XLSX_SHEET_NAME_MAX_CHARS - len(suffix)] + suffix
        taken.add(name.lower())
        names[issue_type] = name
    return names


def _xlsx_row(sheet, row: int, values: Iterable, cell_format=None) -> None:
    """Strings as text (never a formula or a link), numbers as numbers, the rest as text."""
    for col, value in enumerate(values):
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            sheet.write_string(row, col, "yes" if value else "no", cell_format)
        elif isinstance(value, (int, float)):
            sheet.write_number(row, col, value, cell_format)
        elif isinstance(value, datetime):
            sheet.write_string(row, col, value.isoformat(), cell_format)
        else:
            sheet.write_string(row, col, str(value), cell_format)


def _xlsx_type_sheet(audit: Audit, issue_type: str, sheet, bold, issues_q: Q | None = None) -> tuple[int, int]:
    """Writes one type's evidence rows under its columns' header: (rows written, rows past Excel's limit)."""
    columns = issue_type_columns(issue_type)
    records = _type_records(audit, issue_type, columns, issues_q=issues_q)
    return _xlsx_sheet(sheet, bold, columns, records, "the CSV or JSON export of this issue type has them all.")


def _xlsx_sheet(sheet, bold, columns: tuple, records: Iterable[tuple], elsewhere: str) -> tuple[int, int]:
    """Writes `records` under the `columns` header: (rows written, rows past Excel's limit, said in the last row
    with `elsewhere`: where they all are)."""
    _xlsx_row(sheet, 0, columns, bold)
    sheet.freeze_panes(1, 0)
    last_data_row = XLSX_MAX_ROWS - 2  # the last sheet row says what did not fit
    written = left_out = 0
    for record in records:
        if written < last_data_row:
            written += 1
            _xlsx_row(sheet, written, record)
        else:
            left_out += 1
    if left_out:
        sheet.write_string(
            written + 1,
            0,
            f"{left_out} more rows are past Excel's limit of {XLSX_MAX_ROWS:,} rows a sheet: {elsewhere}",
        )
    return written, left_out


def _segment_counts(audit: Audit, issues_q: Q) -> tuple[dict[str, int], dict[str, int], list[dict]]:
    """A segment's issues per type and per severity, and its type rows (audits.stats.issue_type_rows' shape)."""
    rows = list(
        Issue.objects.filter(audit=audit).filter(issues_q).order_by().values("type", "severity").annotate(n=Count("id"))
    )
    by_type: dict[str, int] = {}
    for r in rows:
        by_type[r["type"]] = by_type.get(r["type"], 0) + r["n"]
    return dict(sorted(by_type.items())), severity_totals(rows), rows


def issues_xlsx_write(audit: Audit, output, *, segment_name: str = "", issues_q: Q | None = None) -> None:
    """The audit's workbook into `output` (a path or a binary file): an Overview sheet (site, date, score, pages
    crawled, issues per severity, one row per type with its count and sheet) and a sheet per type found. For a
    segment (`segment_name`, `issues_q`: audits.segments) the issues are the segment's and the Overview names it."""
    workbook = xlsxwriter.Workbook(
        output,
        {
            "constant_memory": True,  # each row goes to a temporary file as soon as the next starts
            "strings_to_formulas": False,
            "strings_to_urls": False,
            "strings_to_numbers": False,
        },
    )
    bold = workbook.add_format({"bold": True})
    overview = workbook.add_worksheet(XLSX_OVERVIEW_SHEET)  # first tab; filled last (its rows need the counts)
    if issues_q is None:
        counts, by_severity, type_rows = issues_by_type(audit=audit), issues_by_severity(audit=audit), None
    else:
        counts, by_severity, type_rows = _segment_counts(audit, issues_q)
    sheets = xlsx_sheet_names(counts)
    written = {}
    for issue_type, name in sheets.items():
        sheet = workbook.add_worksheet(name)
        written[issue_type] = _xlsx_type_sheet(audit, issue_type, sheet, bold, issues_q=issues_q)
    external = _xlsx_external_sheets(audit, workbook, bold)
    changes = _xlsx_changes_sheet(audit, workbook, bold)

    day = audit.started_at or audit.created_at
    score = score_breakdown(audit=audit)
    rows: list[tuple] = [
        ("Site", audit.start_url),
        ("Audit date", day.date().isoformat()),
        (
            "Health score (whole site)" if segment_name else "Health score",
            audit.health_score if audit.health_score is not None else "not scored",
        ),
        ("Pages crawled", audit.pages_crawled),
        *([("Segment", segment_name)] if segment_name else []),
        ("Pages without errors", score.pages_without_errors, f"{score.error_free_percent:g} %"),
        ("The score in words", score.words),
        ("How the score is calculated", SCORE_FORMULA_WORDS),
        (),
        ("Category", "Score", "Issues"),
        *((c.label, c.score, c.issues) for c in score.categories),
        (),
        ("Severity", "Issues"),
        *((severity, n) for severity, n in by_severity.items()),
        (),
        ("Issue type", "Title", "Severity", "Category", "Issues", "Counts", "Sheet", "Rows in the sheet", "Note"),
    ]
    severities: dict[str, str] = {}  # the type's most severe row (an override may have changed the registry's)
    type_rows = issue_type_counts(audit=audit) if type_rows is None else type_rows
    for entry in sorted(type_rows, key=lambda r: Issue.Severity.values.index(r["severity"])):
        severities.setdefault(entry["type"], entry["severity"])
    for issue_type, n in counts.items():
        spec = check_spec(issue_type)
        rows_written, left_out = written[issue_type]
        note = f"{left_out} rows past Excel's row limit: see the CSV export" if left_out else ""
        rows.append(
            (
                issue_type,
                spec.title,
                severities.get(issue_type, spec.severity),
                CATEGORIES.get(spec.category, spec.category),
                n,
                evidence_count_unit(issue_type),
                sheets[issue_type],
                rows_written,
                note,
            )
        )
    if external:
        rows += [(), ("External links (whole site)", "Rows", "Sheet"), *external]
    if changes:
        rows += [(), ("Changes against the baseline (whole site)", "Rows", "Sheet"), changes]
    headers = {
        i
        for i, values in enumerate(rows)
        if values[:1]
        in (
            ("Severity",),
            ("Issue type",),
            ("External links (whole site)",),
            ("Changes against the baseline (whole site)",),
        )
    }
    for row, values in enumerate(rows):
        _xlsx_row(overview, row, values, bold if row in headers else None)
    overview.set_column(0, 1, 28)
    workbook.close()


def _xlsx_external_sheets(audit: Audit, workbook, bold) -> list[tuple]:
    """The external link sheets when the audit has external targets (the whole site's, whatever the segment): one
    row per target, one per target and linking page. Their rows for the Overview: (what, rows written, sheet)."""
    if not external_link_rows(audit=audit).exists():
        return []
    elsewhere = "the CSV or JSON export of external links has them all."
    targets = _xlsx_sheet(
        workbook.add_worksheet(XLSX_EXTERNAL_SHEET), bold, EXTERNAL_LINK_COLUMNS, _external_records(audit), elsewhere
    )
    pages = _xlsx_sheet(
        workbook.add_worksheet(XLSX_EXTERNAL_PAGES_SHEET),
        bold,
        EXTERNAL_LINK_PAGE_COLUMNS,
        _external_page_records(audit),
        elsewhere,
    )
    return [
        ("Targets", targets[0], XLSX_EXTERNAL_SHEET),
        ("Linking pages (target, page, anchor)", pages[0], XLSX_EXTERNAL_PAGES_SHEET),
    ]


def _xlsx_changes_sheet(audit: Audit, workbook, bold) -> tuple | None:
    """The Changes sheet when the audit has changes against its baseline (the whole site's, whatever the segment):
    one row per URL and field, by URL. Its row for the Overview: (what, rows written, sheet)."""
    if not change_filter(audit=audit).exists():
        return None
    written, _left_out = _xlsx_sheet(
        workbook.add_worksheet(XLSX_CHANGES_SHEET),
        bold,
        CHANGE_EXPORT_COLUMNS,
        change_export_rows(audit=audit),
        "the CSV or JSON export of changes has them all.",
    )
    return ("URL and field changes", written, XLSX_CHANGES_SHEET)


def issues_xlsx_file(audit: Audit, *, segment_name: str = "", issues_q: Q | None = None):
    """The workbook in an anonymous temporary file, rewound: hand it to a FileResponse, which closes it (and the
    file goes with it)."""
    output = tempfile.TemporaryFile()  # noqa: SIM115 (the response closes it)
    try:
        issues_xlsx_write(audit, output, segment_name=segment_name, issues_q=issues_q)
    except BaseException:
        output.close()
        raise
    output.seek(0)
    return output


def export_filename(audit: Audit, what: str, extension: str) -> str:
    """`sitewarden-example.com-2026-01-31-issues.csv`: host of the audited site, day it started."""
    host = urlsplit(audit.start_url).hostname or "site"
    host = re.sub(r"[^A-Za-z0-9.-]", "_", host)[:100]
    day = (audit.started_at or audit.created_at).date().isoformat()
    return f"sitewarden-{host}-{day}-{what}.{extension}"
