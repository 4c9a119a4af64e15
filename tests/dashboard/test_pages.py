"""The pages grid: views and their filters, the inlinks count, the column chooser, the "Has issue" choices,
and exports that carry exactly the rows the screen's filters select."""

import csv
import io
import json

import pytest
from django.urls import reverse

from audits import exports
from audits.models import Audit, Page, PageCounts
from audits.pipeline.page_totals import page_counts_store
from audits.selectors import links as link_reads
from audits.selectors import pages as page_reads
from audits.selectors.pagination import keyset_paginate
from audits.stats import audit_stats_count
from dashboard import pages as page_screens
from scratchpad.models import LinkEdge
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.factories import ProjectFactory

LONG_TITLE = "A title that goes on and on well past the sixty characters a result shows"  # 74 chars


@pytest.fixture
def grid(owner):
    project = ProjectFactory(owner=owner, name="Grid")
    audit = finished_audit(project)
    pages = {
        "home": make_page(audit, "/", title="Home", meta_description="Welcome to the shop.", h1="Shop"),
        "a": make_page(audit, "/a", title="Same title", meta_description=None, h1="Alpha"),
        "b": make_page(audit, "/b", title="Same title", meta_description="", h1="Alpha"),
        "c": make_page(audit, "/c", title=LONG_TITLE, meta_description="x" * 200, h1="", h1_count=0),
        "d": make_page(audit, "/d", title="", is_indexable=False, meta_robots="noindex, nofollow", h1="Delta"),
        "e": make_page(audit, "/e", title="Canon", canonical_url=SITE + "/a", is_indexable=False),
        "f": make_page(audit, "/f", title="Self", canonical_url=SITE + "/f", x_robots_tag="noindex"),
        "pdf": make_page(audit, "/file.pdf", title="", content_type="application/pdf"),
    }
    # Inlinks: home links to a three times and to b once; a links home.
    for target, count in (("a", 3), ("b", 1)):
        for _ in range(count):
            LinkEdge.objects.create(audit=audit, source_page=pages["home"], target_url=pages[target].url)
    LinkEdge.objects.create(audit=audit, source_page=pages["a"], target_url=pages["home"].url)
    make_issue(audit, pages["a"], "missing-meta-description", "warning")
    make_issue(audit, pages["a"], "duplicate-title", "warning", title="Same title", group_size=2)  # site-wide
    return audit, pages


def _grid_urls(client, audit, **params) -> list[str]:
    response = client.get(reverse("audits:audit-pages", args=[audit.id]), params)
    assert response.status_code == 200
    return [p.url for p in response.context["pages"].object_list]


def _export_urls(client, audit, fmt, **params) -> list[str]:
    response = client.get(reverse("audits:audit-pages-export", args=[audit.id, fmt]), params)
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    if fmt == "csv":
        return [row["url"] for row in csv.DictReader(io.StringIO(body))]
    return [row["url"] for row in json.loads(body)]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"view": "titles", "show": "missing"}, ["/d"]),  # the PDF is not an HTML page: no title expected
        ({"view": "titles", "show": "duplicate"}, ["/a", "/b"]),
        ({"view": "titles", "show": "over"}, ["/c"]),  # the check's 60 characters
        ({"view": "titles", "show": "over", "chars": "4"}, ["/a", "/b", "/c", "/e"]),
        ({"view": "titles", "show": "under", "chars": "5"}, ["/f", "/"]),  # "Canon" is 5: not under
        ({"view": "titles", "show": "non_indexable"}, ["/d", "/e"]),
        ({"view": "descriptions", "show": "missing"}, ["/a", "/b", "/d", "/e", "/f"]),
        ({"view": "descriptions", "show": "over"}, ["/c"]),
        ({"view": "h1", "show": "duplicate"}, ["/a", "/b"]),
        ({"view": "h1", "show": "missing"}, ["/c", "/e", "/f"]),
        ({"view": "canonicals", "show": "other"}, ["/e"]),
        ({"view": "canonicals", "show": "self"}, ["/f"]),
        ({"view": "directives", "show": "noindex"}, ["/d", "/f"]),
        ({"view": "directives", "show": "nofollow"}, ["/d"]),
        ({"view": "all", "q": "/file"}, ["/file.pdf"]),
    ],
)
def test_each_view_filter_selects_its_pages_and_the_export_has_exactly_those_rows(owner_client, grid, params, expected):
    audit, _ = grid
    shown = _grid_urls(owner_client, audit, **params)
    assert sorted(shown) == sorted(SITE + path for path in expected)
    for fmt in ("csv", "json"):
        assert _export_urls(owner_client, audit, fmt, **params) == shown  # same rows, same order


def test_export_follows_the_sort_and_ignores_the_pagination(owner_client, grid, monkeypatch):
    audit, _ = grid
    monkeypatch.setattr("audits.selectors.pagination.PAGE_SIZE", 2)
    params = {"view": "all", "sort": "-inlinks", "page": "2"}
    exported = _export_urls(owner_client, audit, "csv", **params)
    assert len(exported) == 8  # every filtered page, not the screen's page of the list
    assert exported[:3] == [SITE + "/a", SITE + "/", SITE + "/b"]  # 3, 1, 1 inlinks (URL breaks the tie)


def test_inlinks_are_counted_in_the_database(owner_client, grid):
    audit, pages = grid
    response = owner_client.get(reverse("audits:audit-pages", args=[audit.id]), {"sort": "-inlinks"})
    counts = {p.url: p.inlinks for p in response.context["pages"].object_list}
    assert counts[pages["a"].url] == 3 and counts[pages["b"].url] == 1 and counts[pages["home"].url] == 1
    assert counts[pages["c"].url] == 0
    rows = list(csv.DictReader(io.StringIO("".join(exports.pages_csv_rows(audit)))))  # unfiltered, as the API
    assert {r["url"]: r["inlinks"] for r in rows}[pages["a"].url] == "3"


def test_column_chooser_shows_the_ticked_columns_and_remembers_them(owner_client, grid):
    audit, _ = grid
    url = reverse("audits:audit-pages", args=[audit.id])
    default = owner_client.get(url, {"view": "titles"})
    assert [c.key for c in default.context["columns"]] == list(page_reads.VIEWS["titles"].columns)

    chosen = owner_client.get(url, {"view": "titles", "cols_set": "1", "cols": ["h1", "words", "nonsense"]})
    assert [c.key for c in chosen.context["columns"]] == ["url", "h1", "words"]
    html = chosen.content.decode()
    assert ">First H1<" in html and ">Words<" in html and "Title chars" not in html.split("<table")[1]
    assert chosen.cookies["sw_cols_titles"].value == "h1.words"

    again = owner_client.get(url, {"view": "titles"})  # the cookie brings the choice back
    assert [c.key for c in again.context["columns"]] == ["url", "h1", "words"]
    other_view = owner_client.get(url, {"view": "h1"})  # a choice belongs to its view
    assert [c.key for c in other_view.context["columns"]] == list(page_reads.VIEWS["h1"].columns)
    reset = owner_client.get(url, {"view": "titles", "cols_set": "1"})
    assert [c.key for c in reset.context["columns"]] == list(page_reads.VIEWS["titles"].columns)


def test_has_issue_filter_offers_every_type_naming_a_page_with_its_count(owner_client, grid):
    audit, pages = grid
    response = owner_client.get(reverse("audits:audit-pages", args=[audit.id]))
    choices = dict(response.context["form"].fields["issue"].choices)
    assert choices["missing-meta-description"] == "Missing meta description (1 page)"
    assert choices["duplicate-title"] == "Duplicate title (1 page)"  # a group finding: each page of it is listed
    filtered = _grid_urls(owner_client, audit, issue="missing-meta-description")
    assert filtered == [pages["a"].url]


def test_a_bad_filter_value_is_said_and_lists_no_page(owner_client, grid):
    audit, _ = grid
    response = owner_client.get(
        reverse("audits:audit-pages", args=[audit.id]), {"view": "nope", "show": "bogus", "sort": "x", "chars": "-1"}
    )
    assert response.status_code == 200
    assert response.context["view"].key == "all" and len(response.context["pages"].object_list) == 0
    assert response.context["unknown"] == ["Unknown view “nope”", "Unknown filter “bogus”", "Unknown sort “x”"]
    assert "showing no pages" in response.content.decode()


def test_an_unknown_sort_alone_lists_every_page_in_url_order(owner_client, grid):
    audit, _ = grid
    response = owner_client.get(reverse("audits:audit-pages", args=[audit.id]), {"sort": "x"})
    assert len(response.context["pages"].object_list) == 8 and response.context["unknown"] == ["Unknown sort “x”"]
    assert "sorted by URL instead" in response.content.decode()


def test_pages_of_another_account_are_not_reachable(client, grid, stranger):
    audit, _ = grid
    client.force_login(stranger)
    assert client.get(reverse("audits:audit-pages", args=[audit.id])).status_code == 404
    assert client.get(reverse("audits:audit-pages-export", args=[audit.id, "csv"])).status_code == 404


def _store_counts(audit):
    """What finalize does after the site checks (audits.pipeline.finalize)."""
    page_counts_store(audit_id=audit.id)
    Audit.objects.filter(id=audit.id).update(stats=audit_stats_count(audit_id=audit.id))
    audit.refresh_from_db()


def test_finalize_stores_the_inlinks_and_the_grid_reads_the_stored_count(owner_client, grid):
    audit, pages = grid
    _store_counts(audit)
    assert PageCounts.objects.filter(audit=audit).count() == 8
    assert PageCounts.objects.get(page=pages["a"]).inlinks == 3
    PageCounts.objects.filter(page=pages["c"]).update(inlinks=42)  # the stored figure wins over a recount
    counts = {p.url: p.inlinks for p in owner_client.get(
        reverse("audits:audit-pages", args=[audit.id]), {"sort": "-inlinks"}).context["pages"].object_list}  # fmt: skip
    assert counts[pages["c"].url] == 42 and counts[pages["a"].url] == 3


def test_a_completed_audit_without_stored_counts_counts_them_in_the_query(owner_client, grid):
    """An audit finalized before the counts were stored (the migration copies none for it): every page is still
    listed, sorted by counts made in the query, not an empty grid from a join on missing rows."""
    audit, pages = grid
    _store_counts(audit)
    PageCounts.objects.filter(audit=audit).delete()
    assert not link_reads.page_counts_stored(audit=audit)
    response = owner_client.get(reverse("audits:audit-pages", args=[audit.id]), {"sort": "-inlinks"})
    rows = response.context["pages"].object_list
    assert len(rows) == 8 and rows[0].url == pages["a"].url and rows[0].inlinks == 3


@pytest.mark.parametrize("sort", ["-issues", "issues", "-inlinks", "inlinks"])
def test_the_grid_sorts_on_the_stored_counts_as_it_did_on_counted_ones(owner_client, grid, sort):
    audit, pages = grid
    make_issue(audit, pages["b"], "missing-h1", "warning")
    url = reverse("audits:audit-pages", args=[audit.id])
    params = {"sort": sort, "cols": ["inlinks", "issues"]}
    counted = [(p.url, p.inlinks, p.issues_total) for p in owner_client.get(url, params).context["pages"]]
    assert not link_reads.page_counts_stored(audit=audit)
    _store_counts(audit)
    assert link_reads.page_counts_stored(audit=audit)
    assert dict(PageCounts.objects.filter(audit=audit).values_list("url", "issues")) == {
        url: issues for url, _inlinks, issues in counted
    }
    response = owner_client.get(url, params)
    assert [(p.url, p.inlinks, p.issues_total) for p in response.context["pages"]] == counted
    assert counted[0 if sort.startswith("-") else -1][0] == pages["a"].url  # two issues, three inlinks: the most
    assert counted[0 if sort.startswith("-") else -1][1:] == (3, 2)


@pytest.mark.parametrize(
    "sort", ["-issues", "issues", "-inlinks", "inlinks", "-words", "words", "-title_len", "-depth", "depth", "-url"]
)
def test_keyset_pages_of_every_sort_hold_each_page_once_in_order_both_ways(grid, sort):
    """Two rows a page, forwards to the end and back: the bound the keyset adds on the sorted column (an index
    range) keeps every row, NULLs last included."""
    audit, pages = grid
    Page.objects.filter(id=pages["c"].id).update(depth=None, word_count=7)
    Page.objects.filter(id=pages["d"].id).update(word_count=7)
    _store_counts(audit)
    rows = page_reads.page_list(pages=Page.objects.filter(audit=audit), columns=[], sort=sort, counted=True)
    expected = [p.url for p in rows]
    seen, back = _pages_both_ways(rows, page_reads.page_keyset_columns(sort, counted=True), sort)
    assert seen == expected and back == expected


def _varied_keys(audit, pages):
    """Ties, NULLs and the PDF outside the text views in every sorted column."""
    Page.objects.filter(id=pages["c"].id).update(depth=None, word_count=7, response_time_ms=None, status_code=404)
    Page.objects.filter(id=pages["d"].id).update(word_count=7, bytes=900, response_time_ms=120, h1_count=2)
    Page.objects.filter(id=pages["e"].id).update(bytes=900, response_time_ms=120, status_code=None)
    _store_counts(audit)


def _pages_both_ways(rows, columns, sort, keys=None) -> tuple[list[str], list[str]]:
    """Every page of the list two rows a page, forwards to the end, then back from there to the start."""
    seen, cursor = [], None
    while True:
        page = keyset_paginate(rows, columns=columns, cursor=cursor, tag=sort, per_page=2, keys=keys)
        seen += [p.url for p in page]
        if not page.has_next:
            break
        cursor = page.next_cursor
    back = [p.url for p in page]
    while page.has_previous:
        page = keyset_paginate(rows, columns=columns, cursor=page.previous_cursor, tag=sort, per_page=2, keys=keys)
        back = [p.url for p in page] + back
    return seen, back


@pytest.mark.parametrize("view", ["all", "titles", "directives"])
@pytest.mark.parametrize("sort", [*page_reads.PAGE_SORTS, *(f"-{key}" for key in page_reads.PAGE_SORTS)])
def test_the_grid_sorted_on_the_stored_keys_pages_as_the_page_rows_order(grid, sort, view):
    """Sorted and sought on the PageCounts rows alone (page_sort_keys), every sort no page index serves, of every
    view without a filter, lists the pages the page rows give, in their order, forwards and back."""
    audit, pages = grid
    _varied_keys(audit, pages)
    filtered = page_reads.page_filter(audit=audit, view=view)
    rows = page_reads.page_list(pages=filtered, columns=[], sort=sort, counted=True)
    expected = [p.url for p in rows]
    assert len(expected) == {"all": 8, "titles": 5, "directives": 7}[view]  # not /c (404), /e (no status), the PDF
    keys = page_reads.page_sort_keys(audit=audit, view=view, sort=sort)
    # The sorts an index of the page rows serves in order read it: the URL, status, words and title length, most first.
    assert (keys is None) == (sort in ("url", "-url", "-status", "-words", "-title_len"))
    seen, back = _pages_both_ways(rows, page_reads.page_keyset_columns(sort, counted=True), sort, keys)
    assert seen == expected and back == expected


@pytest.mark.parametrize("sort", ["depth", "time", "title"])
def test_the_unfiltered_grid_of_a_counted_audit_orders_by_the_stored_keys(owner_client, grid, sort):
    """The screen itself sorts on the counts rows when nothing is filtered (the stored key decides), and on the
    page rows as soon as a filter is set."""
    audit, pages = grid
    _store_counts(audit)
    stored = {"depth": {"depth": 99}, "time": {"response_time_ms": 99_999}, "title": {"title": "~ last"}}[sort]
    PageCounts.objects.filter(page=pages["home"]).update(**stored)  # first on its page row's key and URL
    shown = _grid_urls(owner_client, audit, sort=sort)
    assert shown[-1] == pages["home"].url
    filtered = _grid_urls(owner_client, audit, sort=sort, q=SITE)  # every page again, through a filter
    assert sorted(filtered) == sorted(shown) and filtered != shown


def test_a_status_filters_total_is_the_stored_one_over_the_whole_site(owner_client, grid):
    """Filtered by a status alone, the grid's total is finalize's count per code (no COUNT(*) over a million
    pages of that status); with a segment or another filter beside it, counted."""
    audit, _ = grid
    _store_counts(audit)
    url = reverse("audits:audit-pages", args=[audit.id])
    assert owner_client.get(url, {"status": "2xx"}).context["pages"].total == 8
    Audit.objects.filter(id=audit.id).update(stats={**audit.stats, "status_codes": {"200": 80}})
    assert owner_client.get(url, {"status": "2xx"}).context["pages"].total == 80  # the stored figure is read
    assert owner_client.get(url, {"status": "200"}).context["pages"].total == 80
    assert owner_client.get(url, {"status": "200", "q": "/a"}).context["pages"].total == 1  # counted


@pytest.mark.parametrize(
    ("sort", "caption"),
    [
        ("-inlinks", "inlinks, most first"),
        ("inlinks", "inlinks, fewest first"),
        ("url", "URL, A to Z"),
        ("-url", "URL, Z to A"),
        ("-status", "status code, highest first"),
        ("-time", "response time, highest first"),
        ("bogus", "URL, A to Z"),
        ("-bogus", "URL, A to Z"),
    ],
)
def test_the_sort_caption_reads_in_words(sort, caption):
    assert page_screens.sort_caption(sort) == caption
