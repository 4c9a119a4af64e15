"""A page record keeps what the page detail screen shows: the heading outline with its text, the first H1
and the response headers, each bounded; custom extractors stopped on too many pages of a chunk are skipped."""

import uuid

from audits.extraction import NOT_RUN_MARK, SKIPPED_MARK, STOPPED_MARK, compile_extractors
from audits.limits import EXTRACTOR_STOPS_BEFORE_SKIP, PAGE_HEADING_TEXT_MAX_CHARS
from audits.pipeline.page_record import build_page_record
from audits.pipeline.scope import CrawlScope
from crawler.discovery import Robots
from crawler.fetch import FetchResult
from scratchpad.services import ClaimedURL

AUDIT_ID = uuid.UUID("00000000-0000-0000-0000-0000000000b2")
URL = "https://example.test/guide"
HTML = (
    "<html><head><title>Guide</title></head><body><h1> </h1><h1>Choosing  a tent</h1><h2>Weight</h2>"
    f"<h4>{'x' * 500}</h4></body></html>"
)


def test_outline_first_h1_and_headers_are_stored():
    result = FetchResult(
        url=URL,
        status_code=200,
        headers={"content-type": "text/html; charset=utf-8", "server": "nginx"},
        content_type="text/html",
        charset="utf-8",
        body=HTML.encode(),
        bytes_read=len(HTML),
        response_time_ms=12,
    )
    scope = CrawlScope(start_url=URL, site_url=URL, robots=Robots(None, "Sitewarden"))
    page = build_page_record(AUDIT_ID, scope, ClaimedURL(1, URL, 0, False, 0, 1), result).page
    assert page.headings[:3] == [[1, ""], [1, "Choosing a tent"], [2, "Weight"]]
    assert page.headings[3][0] == 4 and len(page.headings[3][1]) == PAGE_HEADING_TEXT_MAX_CHARS
    assert page.h1 == "Choosing a tent"  # the first non-empty one
    assert page.response_headers == {"content-type": "text/html; charset=utf-8", "server": "nginx"}


def _html_result(url: str, html: str) -> FetchResult:
    return FetchResult(url=url, status_code=200, headers={"content-type": "text/html"}, content_type="text/html",
                       charset="utf-8", body=html.encode(), bytes_read=len(html), response_time_ms=1)  # fmt: skip


def test_an_extractor_stopped_on_a_few_pages_of_a_chunk_is_not_run_on_its_others():
    """The cubic XPath is stopped over the page's budget (the extractor after it not run) on each large page,
    until EXTRACTOR_STOPS_BEFORE_SKIP pages of the chunk; then the chunk skips it and the others run again."""
    cubic = "count(//*[count(//*[count(//*) > 0]) > 0])"
    large = "<html><head><title>Large</title></head><body>" + "<p>x</p>" * 3000 + "</body></html>"
    scope = CrawlScope(start_url=URL, site_url=URL, robots=Robots(None, "Sitewarden"), extractors=compile_extractors([
        {"name": "title", "kind": "css", "expression": "title::text"},
        {"name": "cubic", "kind": "xpath", "expression": cubic},
        {"name": "after", "kind": "xpath", "expression": "count(//p)", "rule": "missing"},
    ]))  # fmt: skip
    records = [
        build_page_record(AUDIT_ID, scope, ClaimedURL(n, f"{URL}/{n}", 0, False, 0, 1), _html_result(URL, large))
        for n in range(EXTRACTOR_STOPS_BEFORE_SKIP + 1)
    ]
    for record in records[:-1]:
        assert record.extraction_stopped == "cubic"
        assert record.page.extracted == {"title": ["Large"], "cubic": [STOPPED_MARK], "after": [NOT_RUN_MARK]}
        assert all(i.type != "custom-extraction" for i in record.issues)  # a rule judges only where it ran
    assert records[-1].extraction_stopped == ""
    assert records[-1].page.extracted == {"title": ["Large"], "cubic": [SKIPPED_MARK], "after": ["3000"]}


# --- issue 27: a 0-second meta refresh is a redirect; rel=next/prev targets are queued ---------------------


def _record(html: str, url: str = URL, hops: int = 0):
    scope = CrawlScope(start_url=URL, site_url=URL, robots=Robots(None, "Sitewarden"))
    return build_page_record(AUDIT_ID, scope, ClaimedURL(1, url, 1, False, hops, 1), _html_result(url, html))


def test_an_instant_meta_refresh_is_followed_as_a_redirect_and_not_judged_as_content():
    record = _record('<html><head><meta http-equiv="refresh" content="0; url=/new"></head><body><a href="/x">x</a>')
    assert record.page.redirect_url == "https://example.test/new" and not record.page.is_indexable
    assert [(u.url, u.source, u.redirect_hops, u.depth) for u in record.discovered] == [
        ("https://example.test/new", "redirect", 1, 1)  # a redirect's depth: the same page, one hop on
    ]
    assert record.edges == [] and record.page.title == ""
    assert [i.type for i in record.issues] == ["meta-refresh-redirect"]


def test_a_slow_meta_refresh_is_content_with_its_links():
    record = _record('<html><head><meta http-equiv="refresh" content="5; url=/new"></head><body><a href="/x">x</a>')
    assert record.page.redirect_url == "" and record.page.is_indexable
    assert [(u.url, u.source) for u in record.discovered] == [("https://example.test/x", "link")]
    assert {"meta-refresh-redirect", "missing-title"} <= {i.type for i in record.issues}


def test_rel_next_and_prev_targets_are_queued_as_pagination_after_the_links():
    html = (
        '<html><head><link rel="next" href="/list?page=3"><link rel="prev" href="/list?page=1">'
        '<link rel="next" href="/ignored"></head><body><a href="/list?page=1">First</a></body></html>'
    )
    record = _record(html, url="https://example.test/list?page=2")
    assert [(u.url, u.source, u.depth) for u in record.discovered] == [
        ("https://example.test/list?page=1", "link", 2),  # linked too: found as a link
        ("https://example.test/list?page=3", "pagination", 2),
        ("https://example.test/list?page=1", "pagination", 2),  # the frontier keeps the first of equal depth
    ]
    nofollow = html.replace("<head>", '<head><meta name="robots" content="nofollow">')
    assert _record(nofollow, url="https://example.test/list?page=2").discovered == []
