"""A page record keeps what the page detail screen shows: the heading outline with its text, the first H1
and the response headers, each bounded."""

import uuid

from audits.limits import PAGE_HEADING_TEXT_MAX_CHARS
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
