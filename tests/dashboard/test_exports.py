"""Exports stream: 50,000 rows go out in chunks read lazily from a server-side cursor, never as one body."""

import csv
import io
import json
import os
import tracemalloc

import openpyxl
import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone

from audits import exports
from audits.models import Issue, Page, issue_id_for, page_id_for
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.dashboard.conftest import SITE, finished_audit
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

ROWS = int(os.environ.get("SITEWARDEN_EXPORT_TEST_ROWS", "50000"))
SMALL_ROWS = 1000
ISSUE_ROWS = 500
DESCRIPTION = (
    "A meta description of the usual length, as crawled from a catalogue page: what the item is, what it "
    "costs, why to buy it."
)


BULK_ROWS = 5000  # made with bulk_create; copied in SQL up to the wanted count (bulk_create is slow at 50k)


def audit_with_pages(owner, rows: int):
    audit = finished_audit(ProjectFactory(owner=owner), pages_crawled=rows)
    now = timezone.now()
    pages = []
    for i in range(min(rows, BULK_ROWS)):
        url = f"{SITE}/catalogue/item-{i:05d}"
        pages.append(
            Page(
                id=page_id_for(audit.id, url),
                audit=audit,
                url=url,
                status_code=200,
                fetch_class="ok",
                title=f"Item {i} – a product page with a title of usual length" if i else '=HYPERLINK("x")',
                meta_description=DESCRIPTION,
                canonical_url=url,
                content_type="text/html; charset=utf-8",
                meta_robots="index, follow",
                html_lang="en",
                response_time_ms=100 + i % 400,
                bytes=20_000 + i,
                depth=i % 7,
                word_count=i,
                is_indexable=True,
                fetched_at=now,
            )
        )
    Page.objects.bulk_create(pages, batch_size=BULK_ROWS)
    if rows > BULK_ROWS:
        copy_pages(audit, copies=-(-rows // BULK_ROWS) - 1, limit=rows - BULK_ROWS)
    Issue.objects.bulk_create(
        [
            Issue(
                id=issue_id_for(audit.id, p.url, "missing-h1"),
                audit=audit,
                page_id=p.id,
                page_url=p.url,
                type="missing-h1",
                severity="warning",
            )
            for p in pages[:ISSUE_ROWS]
        ]
    )
    return audit


def copy_pages(audit, *, copies: int, limit: int) -> None:
    """Copy the audit's pages `copies` times under new URLs (every column, whatever Page has by then)."""
    columns = [f.column for f in Page._meta.concrete_fields]
    exprs = {"id": "md5(audit_id::text || url || '#' || n)::uuid", "url": "url || '/copy-' || n"}
    select = ", ".join(exprs.get(c, f'"{c}"') for c in columns)
    names = ", ".join(f'"{c}"' for c in columns)
    sql = (
        f"INSERT INTO {Page._meta.db_table} ({names}) "
        f"SELECT {select} FROM {Page._meta.db_table} CROSS JOIN generate_series(1, %s) AS n "
        f"WHERE audit_id = %s ORDER BY n, url LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [copies, audit.id, limit])


@pytest.fixture
def big_audit(owner):
    return audit_with_pages(owner, ROWS)


@pytest.fixture
def small_audit(owner):
    return audit_with_pages(owner, SMALL_ROWS)


class Counting:
    """Wraps exports._page_rows and counts the rows the export generator has pulled so far."""

    def __init__(self, source):
        self.source, self.pulled = source, 0

    def __call__(self, audit, pages=None):
        for row in self.source(audit, pages):
            self.pulled += 1
            yield row


@pytest.mark.slow
def test_pages_csv_is_streamed_lazily_with_bounded_memory(owner_client, big_audit, monkeypatch):
    counter = Counting(exports._page_rows)
    monkeypatch.setattr(exports, "_page_rows", counter)
    response = owner_client.get(reverse("audits:audit-export", args=[big_audit.id, "pages", "csv"]))
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment;" in response["Content-Disposition"]
    assert counter.pulled == 0, "nothing is read before the body is consumed"

    chunks = iter(response.streaming_content)
    header = next(chunks)
    first_rows = next(chunks)
    assert header.startswith(b"url,status_code,")
    assert counter.pulled <= exports.EXPORT_ROWS_PER_CHUNK + 1 < ROWS, "the first rows left before the rest was read"

    tracemalloc.start()
    rest = []
    size = len(header) + len(first_rows)
    for chunk in chunks:
        size += len(chunk)
        rest.append(len(chunk))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert counter.pulled == ROWS
    assert len(rest) >= ROWS // exports.EXPORT_ROWS_PER_CHUNK - 1, "many chunks, not one body"
    print(f"pages CSV: {size} bytes in {len(rest) + 2} chunks, peak traced memory {peak} bytes ({peak / size:.1%})")
    assert peak < size / 3, f"peak {peak} bytes while streaming a {size}-byte body"


def test_pages_csv_rows_parse_and_neutralise_formulas(small_audit):
    body = "".join(exports.pages_csv_rows(small_audit))
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == SMALL_ROWS
    first = rows[0]
    assert first["url"] == f"{SITE}/catalogue/item-00000"
    assert first["title"].startswith("'=HYPERLINK")  # a spreadsheet shows it as text
    assert rows[1]["title"].startswith("Item 1 – a product page") and rows[1]["is_indexable"] == "true"


def test_json_exports_are_valid_arrays(owner_client, small_audit):
    response = owner_client.get(reverse("audits:audit-export", args=[small_audit.id, "issues", "json"]))
    assert isinstance(response, StreamingHttpResponse)
    issues = json.loads(b"".join(response.streaming_content))
    assert len(issues) == ISSUE_ROWS
    assert list(issues[0]) == list(exports.ISSUE_COLUMNS)  # the long form: one object per issue, no JSON blob
    assert issues[0] == {
        "type": "missing-h1",
        "title": "Missing H1",
        "severity": "warning",
        "category": "Content",
        "page_url": f"{SITE}/catalogue/item-00000",
        "target": "",
        "detail": "",
    }
    pages = json.loads("".join(exports.pages_json_chunks(small_audit)))
    assert len(pages) == SMALL_ROWS and pages[5]["word_count"] == 5


def test_empty_exports(results):
    empty = finished_audit(results.project, days_ago=30)
    assert json.loads("".join(exports.issues_json_chunks(empty))) == []
    assert "".join(exports.issues_csv_rows(empty)).strip() == ",".join(exports.ISSUE_COLUMNS)


def test_issue_exports_count_what_the_issues_screen_counts(owner_client, results):
    """Site-wide findings included: the long CSV, the JSON and the workbook's overview add up to the screen's
    per-severity counts."""
    screen = owner_client.get(reverse("audits:audit-issues", args=[results.audit.id]))
    ui_total = sum(screen.context["severity_counts"].values())
    assert ui_total == 5

    def download(fmt):
        response = owner_client.get(reverse("audits:audit-export", args=[results.audit.id, "issues", fmt]))
        assert response.status_code == 200
        return b"".join(response.streaming_content)

    rows = list(csv.DictReader(io.StringIO(download("csv").decode())))
    assert len(rows) == ui_total
    assert [r for r in rows if r["type"] == "sitemap-missing"][0]["page_url"] == ""
    assert len(json.loads(download("json"))) == ui_total

    book = openpyxl.load_workbook(io.BytesIO(download("xlsx")), read_only=True)
    assert book.sheetnames == ["Overview", "broken-page", "missing-meta-description", "sitemap-missing", "thin-content"]
    overview = list(book["Overview"].iter_rows(values_only=True))
    assert sum(row[1] for row in overview if row[0] in ("critical", "warning", "info")) == ui_total
    assert len(list(book["missing-meta-description"].iter_rows(values_only=True))) == 1 + 2


def test_workbook_download_and_links(owner_client, results):
    response = owner_client.get(reverse("audits:audit-export", args=[results.audit.id, "issues", "xlsx"]))
    assert response["Content-Type"] == exports.XLSX_CONTENT_TYPE
    assert 'attachment; filename="sitewarden-site.test-' in response["Content-Disposition"]
    assert response["Content-Disposition"].endswith('-issues.xlsx"')
    href = reverse("audits:audit-export", args=[results.audit.id, "issues", "xlsx"])
    for screen in ("audits:audit-detail", "audits:audit-issues"):
        assert href in owner_client.get(reverse(screen, args=[results.audit.id])).content.decode(), screen
    assert owner_client.get(reverse("audits:audit-export", args=[results.audit.id, "pages", "xlsx"])).status_code == 404


def test_workbook_of_another_account_is_not_found(client, results):
    client.force_login(UserFactory(username="stranger"))
    response = client.get(reverse("audits:audit-export", args=[results.audit.id, "issues", "xlsx"]))
    assert response.status_code == 404


@pytest.mark.django_db(transaction=True)
def test_exports_of_a_real_crawl_count_what_the_screen_counts(client, small_site):
    """A generated site (a redirect, a 404, a sitemap-only orphan…) crawled in process: the long CSV and JSON
    have the issues screen's total, one row per issue; the workbook has a sheet per type the screen lists with
    that type's per-type export rows."""
    base, _manifest = small_site
    owner = UserFactory(username="crawler-owner")
    project = ProjectFactory(owner=owner, base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=1000, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == audit.Status.COMPLETED, audit.error_detail
    client.force_login(owner)

    screen = client.get(reverse("audits:audit-issues", args=[audit.id]))
    ui_total = sum(screen.context["severity_counts"].values())
    ui_types = {row.type for row in screen.context["rows"]}
    assert ui_total > 0 and len(ui_types) >= 3

    def download(fmt):
        response = client.get(reverse("audits:audit-export", args=[audit.id, "issues", fmt]))
        assert response.status_code == 200
        return b"".join(response.streaming_content)

    rows = list(csv.DictReader(io.StringIO(download("csv").decode())))
    assert len(rows) == ui_total
    assert {r["type"] for r in rows} == ui_types
    assert all(r["title"] and r["severity"] and r["category"] for r in rows)
    assert len(json.loads(download("json"))) == ui_total

    book = openpyxl.load_workbook(io.BytesIO(download("xlsx")), read_only=True)
    assert set(book.sheetnames) == {"Overview", *exports.xlsx_sheet_names(sorted(ui_types)).values()}
    for issue_type, name in exports.xlsx_sheet_names(sorted(ui_types)).items():
        per_type = list(csv.reader(io.StringIO("".join(exports.issue_type_csv_rows(audit, issue_type)))))
        sheet = list(book[name].iter_rows(values_only=True))
        assert sheet[0] == tuple(per_type[0]) and len(sheet) == len(per_type), issue_type
