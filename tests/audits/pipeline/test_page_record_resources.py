"""A page record keeps the resources its page loads (Page.resource_urls), on the site and on other hosts, for the
resource pass of finalize; images stay internal-only in Page.image_urls."""

import uuid

from audits.pipeline.page_record import build_page_record
from audits.pipeline.scope import CrawlScope
from crawler.discovery import Robots
from crawler.fetch import FetchResult
from scratchpad.services import ClaimedURL

AUDIT_ID = uuid.UUID("00000000-0000-0000-0000-0000000000c7")
URL = "https://example.test/docs/page"
HTML = (
    '<html><head><title>Docs</title><link rel="stylesheet" href="../_static/theme.css">'
    '<link rel="icon" href="/favicon.ico"><script src="https://cdn.example.net/mathjax/tex-chtml.js"></script>'
    '</head><body><h1>Docs</h1><img src="https://cdn.example.net/logo.png" alt="Logo"></body></html>'
)


def _record(html: str, status: int = 200):
    result = FetchResult(url=URL, status_code=status, headers={"content-type": "text/html"}, content_type="text/html",
                         charset="utf-8", body=html.encode(), bytes_read=len(html), response_time_ms=1)  # fmt: skip
    scope = CrawlScope(start_url=URL, site_url=URL, robots=Robots(None, "Sitewarden"))
    return build_page_record(AUDIT_ID, scope, ClaimedURL(1, URL, 0, False, 0, 1), result).page


def test_resources_internal_and_external_are_stored_as_kind_and_url():
    page = _record(HTML)
    assert page.resource_urls == [
        ["stylesheet", "https://example.test/_static/theme.css"],
        ["icon", "https://example.test/favicon.ico"],
        ["script", "https://cdn.example.net/mathjax/tex-chtml.js"],
    ]
    assert page.image_urls == []  # the CDN image: the image pass asks the site's own images only


def test_a_page_that_is_not_read_keeps_none():
    assert _record(HTML, status=404).resource_urls == []
