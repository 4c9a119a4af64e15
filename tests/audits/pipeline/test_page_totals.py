"""Finalize's page totals (audits.pipeline.page_totals): every page's inlinks (links, summed over linking pages),
linking pages and issue rows stored as its PageCounts row in one statement, equal to what a recount of the link
graph and the issues gives; stored again, replaced. A real crawl of a site served on 127.0.0.1."""

import pytest
from django.db.models import Sum

from audits.models import Audit, Issue, Page, PageCounts
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.page_totals import page_counts_store
from audits.pipeline.start import audit_start
from scratchpad.models import LinkEdge
from tests.factories import ProjectFactory
from tests.support.sites.pages import html_route, page, serve

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def audit():
    """/ links to /a twice and to /b; /a links to / and /b; /b links to /missing (404)."""
    routes = {
        "/": html_route(page("home", links=[("/a", "First A"), ("/a", "Second A"), ("/b", "The B page")])),
        "/a": html_route(page("a", links=[("/", "Home page"), ("/b", "The B page")])),
        "/b": html_route(page("b", links=[("/missing", "A missing page")])),
    }
    with serve(routes) as base:
        project = ProjectFactory(base_url=base + "/")
        audit = audit_start(project=project, start_url=base + "/", max_pages=20, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    return audit


def _stored(audit) -> dict:
    base = audit.start_url.rstrip("/")
    return {
        url.removeprefix(base) or "/": (inlinks, issues)
        for url, inlinks, issues in PageCounts.objects.filter(audit=audit).values_list("url", "inlinks", "issues")
    }


def _recounted(audit) -> dict:
    base = audit.start_url.rstrip("/")
    out = {}
    for page_row in Page.objects.filter(audit=audit):
        links = LinkEdge.objects.filter(audit=audit, target_url=page_row.url).aggregate(n=Sum("link_count"))["n"]
        out[page_row.url.removeprefix(base) or "/"] = (links or 0, Issue.objects.filter(page=page_row).count())
    return out


def test_finalize_stores_each_pages_links_in_and_issue_rows(audit):
    stored = _stored(audit)
    assert {path: inlinks for path, (inlinks, _) in stored.items()} == {"/": 1, "/a": 2, "/b": 2, "/missing": 1}
    assert stored == _recounted(audit)
    assert stored["/missing"][1] >= 1  # the broken page has its issue rows counted


def test_stored_again_the_totals_replace_the_earlier_ones(audit):
    """Finalize can run again (a revived audit): its counts replace the rows of the run before, none twice."""
    before = _stored(audit)
    assert len(before) == Page.objects.filter(audit=audit).count()
    PageCounts.objects.filter(audit=audit).update(inlinks=0, issues=0)
    assert page_counts_store(audit_id=audit.id) == len(before)
    assert _stored(audit) == before
    PageCounts.objects.filter(audit=audit).delete()
    assert page_counts_store(audit_id=audit.id) == len(before)
    assert _stored(audit) == before
    urls = PageCounts.objects.filter(audit=audit).values_list("url", "page__url")
    assert all(url == page_url for url, page_url in urls)  # the sorts' tie-break is the page's own URL
    ranked = PageCounts.objects.filter(audit=audit).order_by("url_rank").values_list("url_rank", "url")
    assert [rank for rank, _ in ranked] == list(range(1, len(before) + 1))  # its rank: the URL order, from 1
    assert [url for _, url in ranked] == sorted(Page.objects.filter(audit=audit).values_list("url", flat=True))


def test_finalize_stores_each_pages_linking_pages(audit):
    # / links to /a twice and to /b, /a to / and /b, /b to /missing: the grid says "2 links from 1 page" for /a,
    # read from the stored count (counted per row, a nav target of 100,000 pages took ~150 ms a row).
    base = audit.start_url.rstrip("/")
    stored = {
        url.removeprefix(base) or "/": pages
        for url, pages in PageCounts.objects.filter(audit=audit).values_list("url", "inlink_pages")
    }
    assert stored == {"/": 1, "/a": 1, "/b": 2, "/missing": 1}
    recounted = {
        url.removeprefix(base) or "/": LinkEdge.objects.filter(audit=audit, target_url=url).count()
        for url in Page.objects.filter(audit=audit).values_list("url", flat=True)
    }
    assert recounted == stored


def test_each_row_carries_its_pages_sort_keys(audit):
    """The grid sorts an unfiltered counted audit on these copies (audits.selectors.pages.page_sort_keys): each is
    the page's column, the lengths are the texts' characters, and `html` is what the text views list."""
    copied = ("status_code", "depth", "title", "h1", "h1_count", "response_time_ms", "bytes", "word_count")
    rows = PageCounts.objects.filter(audit=audit).select_related("page")
    assert len(rows) == 4
    for row in rows:
        page = row.page
        assert {key: getattr(row, key) for key in copied} == {key: getattr(page, key) for key in copied}
        assert (row.title_len, row.h1_len) == (len(page.title), len(page.h1))
        assert row.description_len == len(page.meta_description or "")
        assert row.html == (page.status_code == 200 and page.content_type == "text/html")
    assert sorted(row.html for row in rows) == [False, True, True, True]  # /missing is a 404
