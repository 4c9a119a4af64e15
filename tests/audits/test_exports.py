"""The all-issues export in long form (one row per issue the UI counts, site-wide findings included, a target and
a one-line detail in words) and the XLSX workbook (an Overview sheet, one sheet per issue type), read back."""

import csv
import io
import json
import tracemalloc

import openpyxl
import pytest

from audits import exports
from audits.evidence import DETAIL_MAX_CHARS
from audits.models import Issue, issue_id_for
from audits.selectors.issues import issues_by_severity, issues_by_type
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def audit(db):
    audit = finished_audit(ProjectFactory(owner=UserFactory()), pages_crawled=3, health_score=71)
    home, about, shop = (make_page(audit, path) for path in ("/", "/about", "/shop"))
    make_issue(audit, home, "missing-h1", "warning", h1_count=0)
    make_issue(audit, about, "missing-h1", "warning", h1_count=0)
    make_issue(audit, shop, "title-too-long", "warning", chars=80, max_chars=60, title="=SUM(A1)")
    make_issue(
        audit,
        home,
        "broken-internal-link",
        "critical",
        target_url=SITE + "/gone",
        status_code=404,
        anchor_text="Old page",
        links=2,
    )
    make_issue(audit, about, "canonicalized-page", "info", canonical=SITE + "/")
    make_issue(audit, None, "sitemap-missing", "info", sitemaps_tried=[SITE + "/sitemap.xml"], errors=["404"])
    make_issue(audit, None, "robots-txt-invalid", "info", invalid_count=2, lines=["Dissallow: /", "foo"])
    # A capped link check's marker (no page): the UI counts it, so the export has it.
    make_issue(audit, None, "broken-internal-link", "critical", capped=True, message="40 more broken links not listed")
    make_issue(audit, home, "structured-data-missing-recommended", "info", entities=[], entities_count=0)
    examples = [{"url": SITE + "/"}, {"url": SITE + "/a"}]
    make_issue(audit, None, "missing-hsts", "info", pages_missing=40, pages_checked=300, examples=examples)
    return audit


def long_rows(audit):
    return list(csv.DictReader(io.StringIO("".join(exports.issues_csv_rows(audit)))))


def test_long_form_has_one_row_per_issue_the_ui_counts(audit):
    rows = long_rows(audit)
    ui_total = sum(issues_by_type(audit=audit).values())
    assert len(rows) == ui_total == sum(issues_by_severity(audit=audit).values()) == 10
    assert list(rows[0]) == list(exports.ISSUE_COLUMNS)
    assert [r["severity"] for r in rows][:2] == ["critical", "critical"]  # most severe first
    assert len(json.loads("".join(exports.issues_json_chunks(audit)))) == ui_total


def test_page_level_link_level_and_site_wide_rows(audit):
    rows = long_rows(audit)
    by = {(r["type"], r["page_url"]): r for r in rows}

    h1 = by[("missing-h1", SITE + "/")]
    assert (h1["title"], h1["category"], h1["target"], h1["detail"]) == ("Missing H1", "Content", "", "H1 headings: 0")

    link = by[("broken-internal-link", SITE + "/")]
    assert link["target"] == SITE + "/gone"
    assert link["detail"] == "Anchor text: Old page; Target status: 404; Links on the page: 2"

    canonical = by[("canonicalized-page", SITE + "/about")]
    assert (canonical["target"], canonical["detail"]) == (SITE + "/", f"Canonical URL: {SITE}/")
    assert by[("title-too-long", SITE + "/shop")]["detail"].startswith("Title: =SUM(A1); Characters: 80")

    sitemap = by[("sitemap-missing", "")]
    assert sitemap["target"] == ""
    assert sitemap["detail"] == f"Sitemaps tried: {SITE}/sitemap.xml; Errors: 404"
    robots = by[("robots-txt-invalid", "")]
    assert robots["detail"] == "Invalid line: Dissallow: / | foo; Invalid lines in all: 2"  # one row, both lines
    assert by[("broken-internal-link", "")]["detail"] == "40 more broken links not listed"
    hsts = by[("missing-hsts", "")]
    assert (
        hsts["detail"] == f"Pages without it: 40; HTML pages checked: 300; Page without the header: {SITE}/ | {SITE}/a"
    )


def test_long_csv_is_not_a_sparse_union_and_defuses_formulas(audit):
    text = "".join(exports.issues_csv_rows(audit))
    header, *lines = list(csv.reader(io.StringIO(text)))
    assert len(header) == len(exports.ISSUE_COLUMNS) == 7
    assert all(len(line) == 7 for line in lines)
    assert all(line[0] and line[1] and line[2] and line[3] and line[6] for line in lines), "type..detail filled"


def test_detail_is_one_bounded_line(audit):
    page = make_page(audit, "/long")
    make_issue(audit, page, "multiple-titles", "warning", titles_count=2, titles=["A\nB", "x" * 2000])
    (row,) = [r for r in long_rows(audit) if r["type"] == "multiple-titles"]
    assert "\n" not in row["detail"] and row["detail"].startswith("Title tags: 2; Titles (first 5): A B | xxx")
    assert len(row["detail"]) == DETAIL_MAX_CHARS and row["detail"].endswith("…")


def read_workbook(audit, tmp_path):
    path = tmp_path / "issues.xlsx"
    exports.issues_xlsx_write(audit, str(path))
    return openpyxl.load_workbook(path, read_only=True)


def sheet_rows(sheet):
    return [tuple(cell for cell in row) for row in sheet.iter_rows(values_only=True)]


def test_workbook_has_an_overview_and_one_sheet_per_type(audit, tmp_path):
    book = read_workbook(audit, tmp_path)
    counts = issues_by_type(audit=audit)
    names = exports.xlsx_sheet_names(counts)
    assert book.sheetnames == ["Overview", *names.values()]

    overview = sheet_rows(book["Overview"])
    assert overview[0][:2] == ("Site", audit.start_url)
    assert overview[2][:2] == ("Health score", 71) and overview[3][:2] == ("Pages crawled", 3)
    assert ("critical", 2) in [row[:2] for row in overview] and ("info", 5) in [row[:2] for row in overview]
    assert overview[4][:3] == ("Pages without errors", 2, "66.7 %")  # the home page has the broken link
    assert overview[5][1].endswith("2 of 3 pages (66.7 %) have no error.") and "starts at 100" in overview[6][1]
    start = [row[:3] for row in overview].index(("Category", "Score", "Issues")) + 1
    categories = {row[0]: row[1:3] for row in overview[start : start + 12]}
    assert categories["URLs"] == (100, 0) and categories["Security"] == (98, 1)  # HSTS, site-wide notice: -2
    assert categories["Content"] == (95, 2)  # missing H1 on 2 of 3 pages: 8 x 2/3 = 5.33 off
    header = overview.index(next(r for r in overview if r[0] == "Issue type"))
    types = {row[0]: row for row in overview[header + 1 :]}
    assert set(types) == set(counts)
    assert types["broken-internal-link"][4] == 2  # the UI's count (the capped marker included) …
    assert types["broken-internal-link"][7] == 1  # … and the evidence rows its sheet holds

    for issue_type, name in names.items():
        rows = sheet_rows(book[name])
        assert rows[0] == tuple(exports.issue_type_columns(issue_type)), issue_type
        per_type_csv = list(csv.reader(io.StringIO("".join(exports.issue_type_csv_rows(audit, issue_type)))))
        assert len(rows) == len(per_type_csv), issue_type
        assert types[issue_type][6] == name and types[issue_type][7] == len(rows) - 1

    titles = sheet_rows(book[names["title-too-long"]])
    assert titles[1][:3] == (SITE + "/shop", "=SUM(A1)", 80)  # text stays text, numbers stay numbers
    assert sheet_rows(book[names["robots-txt-invalid"]])[1:] == [("Dissallow: /", 2), ("foo", 2)]


def test_sheet_names_are_excel_safe_and_unique():
    long = "structured-data-missing-recommended"
    names = exports.xlsx_sheet_names([long, "structured-data-missing-recommended-x", "a[b]:c*d?e/f\\g", "OVERVIEW"])
    assert names[long] == long[:31]
    assert names["structured-data-missing-recommended-x"] == long[:29] + "~2"
    assert names["a[b]:c*d?e/f\\g"] == "a_b__c_d_e_f_g"
    assert names["OVERVIEW"] == "OVERVIEW~2"
    assert all(len(n) <= 31 for n in names.values())
    assert len({n.lower() for n in names.values()}) == len(names)


def test_a_sheet_stops_at_excels_row_limit_and_says_so(audit, tmp_path, monkeypatch):
    for i in range(5):
        make_issue(audit, make_page(audit, f"/p{i}"), "missing-h1", "warning", h1_count=0)
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 4)  # Excel's 1,048,576, scaled down: 7 rows do not fit in 4
    book = read_workbook(audit, tmp_path)
    rows = sheet_rows(book["missing-h1"])
    assert len(rows) == 4 and rows[0][0] == "page_url"
    assert rows[3][0].startswith("5 more rows are past Excel's limit of 4 rows a sheet")
    (row,) = [r for r in sheet_rows(book["Overview"]) if r[0] == "missing-h1"]
    assert row[4] == 7 and row[7] == 2 and "past Excel's row limit" in row[8]


def test_empty_audit_exports(db):
    audit = finished_audit(ProjectFactory(owner=UserFactory()))
    assert "".join(exports.issues_csv_rows(audit)).strip() == ",".join(exports.ISSUE_COLUMNS)
    assert json.loads("".join(exports.issues_json_chunks(audit))) == []
    path = exports.issues_xlsx_file(audit)
    book = openpyxl.load_workbook(path, read_only=True)
    assert book.sheetnames == ["Overview"]


BIG_ISSUES = 40_000  # issues of three types over as many pages' URLs


def bulk_issues(audit, n: int) -> None:
    types = (("missing-h1", "warning", {"h1_count": 0}), ("title-too-long", "warning", {"chars": 80, "max_chars": 60}))
    Issue.objects.bulk_create(
        (
            Issue(
                id=issue_id_for(audit.id, f"{SITE}/p/{i:06d}", issue_type),
                audit=audit,
                page_url=f"{SITE}/p/{i:06d}",
                type=issue_type,
                severity=severity,
                details={**details, "title": f"A product page title that runs on for a while, number {i}"},
            )
            for i in range(n // 2)
            for issue_type, severity, details in types
        ),
        batch_size=5000,
    )


@pytest.mark.slow
def test_workbook_memory_stays_bounded_as_rows_grow(tmp_path):
    """constant_memory and a cursor: twice the rows, about the same peak (Python's allocations, traced)."""
    peaks, sizes = [], []
    for n in (BIG_ISSUES // 2, BIG_ISSUES):
        audit = finished_audit(ProjectFactory(owner=UserFactory()))
        bulk_issues(audit, n)
        path = tmp_path / f"{n}.xlsx"
        tracemalloc.start()
        exports.issues_xlsx_write(audit, str(path))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        sizes.append(path.stat().st_size)
        book = openpyxl.load_workbook(path, read_only=True)
        assert book["missing-h1"].max_row == n // 2 + 1
    print(f"workbook peaks {peaks} bytes for files of {sizes} bytes")
    assert peaks[1] < peaks[0] * 1.5, f"peak grew with the rows: {peaks}"


# --- external links ---------------------------------------------------------------------------------------


def test_external_links_one_row_per_target_and_one_per_linking_page(db):
    from tests.support.external_links import external_world

    audit, links, (a, b) = external_world(finished_audit(ProjectFactory(owner=UserFactory())))
    targets = list(csv.DictReader(io.StringIO("".join(exports.external_links_csv_rows(audit)))))
    assert list(targets[0]) == list(exports.EXTERNAL_LINK_COLUMNS)
    assert [t["url"] for t in targets] == sorted(link.url for link in links.values())  # not the other audit's
    dead = next(t for t in targets if t["url"] == links["dead"].url)
    assert (dead["outcome"], dead["outcome_label"], dead["status_code"], dead["linking_pages"]) == (
        "client_error",
        "Broken (4xx)",
        "404",
        "2",
    )
    moved = next(t for t in targets if t["url"] == links["moved"].url)
    assert (moved["final_url"], moved["redirect_hops"]) == ("https://moved.example/new", "2")
    assert json.loads("".join(exports.external_links_json_chunks(audit)))[0].keys() == set(
        exports.EXTERNAL_LINK_COLUMNS
    )

    pages = list(csv.DictReader(io.StringIO("".join(exports.external_link_pages_csv_rows(audit)))))
    assert list(pages[0]) == list(exports.EXTERNAL_LINK_PAGE_COLUMNS)
    assert len(pages) == 7  # the edges to the five targets; the internal edge is not one
    rows = [(p["target_url"], p["source_url"], p["anchor_text"]) for p in pages if p["target_url"] == links["dead"].url]
    assert rows == [(links["dead"].url, a.url, "Gone"), (links["dead"].url, b.url, "Gone again")]
    assert {p["outcome"] for p in pages if p["target_url"] == links["dead"].url} == {"client_error"}
    objects = json.loads("".join(exports.external_link_pages_json_chunks(audit)))
    assert len(objects) == 7 and objects[0]["nofollow"] is False


def test_workbook_has_the_external_sheets_when_the_audit_has_targets(audit, tmp_path):
    from tests.support.external_links import external_world

    assert "External links" not in read_workbook(audit, tmp_path).sheetnames  # none yet: no sheet
    _audit, links, _pages = external_world(audit)
    book = read_workbook(audit, tmp_path)
    assert book.sheetnames[-2:] == ["External links", "External link pages"]
    targets = sheet_rows(book["External links"])
    assert targets[0] == exports.EXTERNAL_LINK_COLUMNS and len(targets) == 6
    dead = next(r for r in targets if r[0] == links["dead"].url)
    assert dead[2:5] == ("client_error", "Broken (4xx)", 404)  # numbers stay numbers
    linking = sheet_rows(book["External link pages"])
    assert linking[0] == exports.EXTERNAL_LINK_PAGE_COLUMNS and len(linking) == 8
    overview = sheet_rows(book["Overview"])
    header = [r[0] for r in overview].index("External links (whole site)")
    assert overview[header + 1][:3] == ("Targets", 5, "External links")
    assert overview[header + 2][1:3] == (7, "External link pages")
    # an issue type can never take an external sheet's name
    assert exports.xlsx_sheet_names(["external links"])["external links"] == "external links~2"


# --- changes against the baseline (issue 28) ----------------------------------------------------------------


def _changed(audit):
    from tests.support.page_changes import changes_world

    baseline = finished_audit(audit.project, days_ago=7)
    rows, _pages, _old = changes_world(audit, baseline)
    return rows


def test_changes_one_row_per_url_and_field_filtered_like_the_screen(audit):
    from tests.factories import PageChangeFactory
    from tests.support.page_changes import CHANGES, LONG_TITLE

    rows = _changed(audit)
    every = list(csv.DictReader(io.StringIO("".join(exports.changes_csv_rows(audit)))))
    assert list(every[0]) == ["url", "field", "direction", "before", "after"] and len(every) == len(CHANGES)
    assert [r["url"] for r in every] == sorted(r["url"] for r in every)
    title = next(r for r in every if r["field"] == "title")
    assert (title["before"], title["after"]) == ("First post", LONG_TITLE)
    objects = json.loads("".join(exports.changes_json_chunks(audit, direction="removed")))
    assert objects == [
        {"url": rows["removed"].url, "field": "removed", "direction": "removed", "before": "200", "after": ""}
    ]
    PageChangeFactory(audit=audit, baseline=rows["title"].baseline, url=SITE + "/x", before="=HYPERLINK(1)")
    titles = list(csv.DictReader(io.StringIO("".join(exports.changes_csv_rows(audit, field="title")))))
    formula = next(r for r in titles if r["url"] == SITE + "/x")
    assert formula["before"] == "'=HYPERLINK(1)"  # a crawled title is never a formula


def test_workbook_has_a_changes_sheet_when_the_audit_has_changes(audit, tmp_path):
    from tests.support.page_changes import CHANGES

    assert "Changes" not in read_workbook(audit, tmp_path).sheetnames  # none: no sheet
    rows = _changed(audit)
    book = read_workbook(audit, tmp_path)
    assert book.sheetnames[-1] == "Changes"
    sheet = sheet_rows(book["Changes"])
    assert sheet[0] == ("url", "field", "direction", "before", "after") and len(sheet) == len(CHANGES) + 1
    assert (rows["noindex"].url, "indexability", "down", "indexable", "non-indexable: noindex") in sheet
    overview = sheet_rows(book["Overview"])
    header = [r[0] for r in overview].index("Changes against the baseline (whole site)")
    assert overview[header + 1][:3] == ("URL and field changes", len(CHANGES), "Changes")
    assert exports.xlsx_sheet_names(["changes"])["changes"] == "changes~2"  # never an issue type's


@pytest.mark.slow
def test_changes_csv_memory_stays_bounded_as_rows_grow():
    """A cursor and chunks: twice the changes, about the same peak (Python's allocations, traced)."""
    from audits.models import PageChange, page_change_id_for

    peaks = []
    for n in (10_000, 20_000):
        audit = finished_audit(ProjectFactory(owner=UserFactory()))
        PageChange.objects.bulk_create(
            (
                PageChange(
                    id=page_change_id_for(audit.id, f"{SITE}/p{i}", "title"),
                    audit=audit,
                    url=f"{SITE}/p{i}",
                    field="title",
                    direction="changed",
                    before=f"An old product title that ran for a while, number {i}",
                    after=f"A new product title that runs for a while longer, number {i}",
                )
                for i in range(n)
            ),
            batch_size=5000,
        )
        tracemalloc.start()
        lines = sum(chunk.count("\n") for chunk in exports.changes_csv_rows(audit))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert lines == n + 1
    print(f"changes CSV peaks {peaks} bytes")
    assert peaks[1] < peaks[0] * 1.5, f"peak grew with the rows: {peaks}"
