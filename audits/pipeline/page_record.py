"""A fetched URL becomes a page record: the Page row (unsaved), its issues from the page checks, its
outgoing link edges and the in-scope URLs it leads to. Runs in a fetch thread and touches no database."""

from dataclasses import dataclass
from urllib.parse import urlsplit

from django.utils import timezone

from audits.checks.content import content_fields_fill
from audits.checks.page import instant_refresh_target, page_issues, robots_directives
from audits.checks.security import security_headers_kept
from audits.extraction import PageExtraction, extract, extraction_issues
from audits.limits import PAGE_HEADER_VALUE_MAX_CHARS, PAGE_HEADERS_STORED_MAX, PAGE_HEADING_TEXT_MAX_CHARS
from audits.models import Issue, Page, page_id_for
from audits.pipeline.render import raw_values_for
from audits.pipeline.scope import CrawlScope
from crawler import limits as crawl_limits
from crawler.blocked import Refusal, refusal_for
from crawler.fetch import FetchResult
from crawler.parse import PageData, parse_html, parse_link_header
from crawler.urls import normalize
from scratchpad.models import Frontier
from scratchpad.services import ClaimedURL, Edge, NewURL

Source = Frontier.Source

RATE_LIMITED_STATUS_CODES = frozenset({429})


@dataclass
class PageRecord:
    claimed: ClaimedURL
    page: Page
    discovered: list[NewURL]
    edges: list[Edge]
    issues: list[Issue]
    rate_limited: int = 0  # 429/503 answers seen (and waited out) for this URL
    cooldown_s: float = 0.0  # time spent waiting them out
    final_rate_limited: bool = False  # the last answer was still a 429/503
    extraction_stopped: str = ""  # the custom extractor stopped over the page's time budget (an audit event says so)


def fetch_class_for(result: FetchResult, refusal: Refusal | None, *, parsed: bool) -> str:
    """The page's fetch class from its answer and crawler.blocked's decision on it (`parsed`: the body was read
    as the page; a challenge seen only in an unparsed body is reported, not made the fetch class)."""
    # A deadline or a broken connection after the headers is still a failed fetch: the page was not read.
    if result.status_code is None or result.error_kind:
        return Page.FetchClass.ERROR
    if refusal is not None and (refusal.by_answer or parsed):
        return Page.FetchClass.BLOCKED
    if result.status_code in RATE_LIMITED_STATUS_CODES:
        return Page.FetchClass.RATE_LIMITED
    return Page.FetchClass.OK


def _queue(
    scope: CrawlScope, url: str, depth: int | None, source: str, hops: int = 0, *, found_from: str = ""
) -> NewURL | None:
    """The frontier entry for an internal URL a page leads to, or None when the scope refuses it (always in
    list mode: the listed URLs are the audit; links, redirects and canonicals are recorded, not crawled)."""
    if not scope.follow_links:
        return None
    url = scope.rewrite(url)
    if not scope.allows(url, depth):
        return None
    # pattern: set once it is known new
    return NewURL(url, depth=depth, source=source, redirect_hops=hops, found_from=found_from)


def build_page_record(
    audit_id, scope: CrawlScope, item: ClaimedURL, result: FetchResult, *, rendered_html: str | None = None
) -> PageRecord:
    page = Page(
        id=page_id_for(audit_id, item.url),
        audit_id=audit_id,
        url=item.url,
        status_code=result.status_code,
        fetch_error=(result.error or "")[:500],
        content_type=result.content_type[:120],
        bytes=result.bytes_read,
        truncated=result.truncated,
        response_time_ms=result.response_time_ms,
        depth=item.depth,
        in_sitemap=item.in_sitemap,
        found_from=item.found_from,
        found_via=item.source,
        x_robots_tag=result.headers.get("x-robots-tag", "")[:500],
        response_headers=_stored_headers(result.headers),
        security_headers=security_headers_kept(result.headers) if result.status_code is not None else None,
        fetched_at=timezone.now(),
    )
    discovered: list[NewURL] = []
    edges: list[Edge] = []
    data: PageData | None = None
    raw_data: PageData | None = None  # the HTML as served, when `data` is the rendered page
    extraction = PageExtraction()
    canonical_header = next(
        (normalize(url, item.url) for url, rel in parse_link_header(result.link_headers) if rel == "canonical"), None
    )
    page.canonical_header = canonical_header or ""

    if result.is_html and result.body and result.status_code and 200 <= result.status_code < 300:
        if rendered_html is not None:
            # The rendered DOM is what a JavaScript-running search engine sees; the response time
            # stays the fetch's own.
            data = parse_html(
                rendered_html.encode("utf-8"), item.url, content_type_charset="utf-8", is_internal=scope.is_internal
            )
            # The HTML as served, read by the same parser: its values go beside the rendered ones (raw_values).
            raw_data = parse_html(
                result.body, item.url, content_type_charset=result.charset, is_internal=scope.is_internal
            )
        else:
            data = parse_html(result.body, item.url, content_type_charset=result.charset, is_internal=scope.is_internal)
    # The one "is this answer a refusal" decision (a WAF/bot challenge stands in for the page): the fetch class
    # and the page checks both read it.
    refusal = refusal_for(result, data)
    page.fetch_class = fetch_class_for(result, refusal, parsed=data is not None)

    if result.redirect_url and result.status_code and 300 <= result.status_code < 400:
        target = normalize(result.redirect_url, item.url)
        page.redirect_url = target or result.redirect_url[:2048]
        if target and item.redirect_hops < crawl_limits.MAX_REDIRECT_HOPS:
            new = _queue(scope, target, item.depth, Source.REDIRECT, item.redirect_hops + 1, found_from=item.url)
            discovered += [new] if new else []
    elif data is not None and instant_refresh_target(data, item.url):
        # A 0-second meta refresh is a redirect (search engines treat it as one): its target is followed as a
        # redirect's is, and the page itself is neither content to judge nor indexable (page.redirect_url set).
        target = data.meta_refresh_url
        page.redirect_url = target[:2048]
        if item.redirect_hops < crawl_limits.MAX_REDIRECT_HOPS:
            new = _queue(scope, target, item.depth, Source.REDIRECT, item.redirect_hops + 1, found_from=item.url)
            discovered += [new] if new else []
    elif data is not None:
        _fill_from_html(page, data)
        if raw_data is not None:
            raw_page = Page(url=item.url)
            _fill_from_html(raw_page, raw_data)
            page.raw_values = raw_values_for(raw_page, raw_data, data)
        if scope.extractors:  # the project's custom extraction, read from the HTML the page fields came from
            skip = scope.extractors_skipped()
            if rendered_html is not None:
                extraction = extract(scope.extractors, rendered_html.encode("utf-8"), charset="utf-8", skip=skip)
            else:
                extraction = extract(scope.extractors, result.body, charset=result.charset, skip=skip)
            page.extracted = extraction.stored
            if extraction.stopped:
                scope.extraction_stopped(extraction.stopped)
        content_fields_fill(page, data)
        follow_all = page.fetch_class == Page.FetchClass.OK and "nofollow" not in robots_directives(
            page.meta_robots, page.x_robots_tag
        )
        child_depth = None if item.depth is None else item.depth + 1
        # One edge per distinct target (its link count, first anchor, nofollow when all its links are): the
        # parser folded them and counted every link, so no figure depends on where a link sits on the page.
        for link in data.links if page.fetch_class == Page.FetchClass.OK else []:
            edges.append(Edge(page.id, link.url, link.anchor, link.nofollow, link.internal, link.count))
            if follow_all and link.internal and (scope.follow_nofollow or not link.nofollow):
                new = _queue(scope, link.url, child_depth, Source.LINK, found_from=item.url)
                discovered += [new] if new else []
        if page.fetch_class == Page.FetchClass.OK:
            page.internal_links, page.external_links = data.internal_links_total, data.external_links_total
        # Canonical and hreflang targets are crawled too: their answers decide canonical/hreflang issues.
        for extra in [page.canonical_url, *(href for _, href in data.hreflang)]:
            if extra and extra != item.url and scope.is_internal(extra):
                new = _queue(scope, extra, child_depth, Source.LINK, found_from=item.url)
                discovered += [new] if new else []
        # rel="next"/"prev" targets are crawled like links (scope, robots, max depth and the page budget apply),
        # so the pagination checks can judge a series that points at a 404, a redirect or a noindex page. After
        # the links: a target also linked keeps 'link' as how it was found.
        if follow_all:
            for target in (data.rel_next, data.rel_prev):
                if target and target != item.url and scope.is_internal(target):
                    new = _queue(scope, target, child_depth, Source.PAGINATION, found_from=item.url)
                    discovered += [new] if new else []
    page.is_indexable = _is_indexable(page)
    issues = page_issues(page, data, result, scope.checks, refusal=refusal)
    if extraction.values:
        issues += extraction_issues(page, scope.extractors, extraction, scope.checks)
    return PageRecord(item, page, discovered, edges, issues, extraction_stopped=extraction.stopped)


def _stored_headers(headers: dict[str, str]) -> dict[str, str]:
    """The response headers shown on the page detail screen, bounded: a hostile site can send thousands."""
    kept = list(headers.items())[:PAGE_HEADERS_STORED_MAX]
    return {name[:100]: str(value)[:PAGE_HEADER_VALUE_MAX_CHARS] for name, value in kept}


def _fill_from_html(page: Page, data: PageData) -> None:
    page.title = data.titles[0][:1000] if data.titles else ""
    page.titles_count = len(data.titles)
    page.meta_description = data.meta_description
    page.canonical_url = data.canonical_url or ""
    page.canonicals_count = len(data.canonicals)
    page.meta_robots = data.meta_robots[:500]
    page.open_graph = data.og
    levels = [level for level, _ in data.headings]
    page.heading_order = levels
    page.headings = [[level, text[:PAGE_HEADING_TEXT_MAX_CHARS]] for level, text in data.headings]
    page.heading_counts = {f"h{n}": levels.count(n) for n in range(1, 7) if n in levels}
    page.h1_count = sum(1 for level, text in data.headings if level == 1 and text.strip())
    page.h1 = next((text for level, text in data.headings if level == 1 and text.strip()), "")[
        :PAGE_HEADING_TEXT_MAX_CHARS
    ]
    page.word_count = data.word_count
    page.word_unit = data.word_unit
    page.text_hash = data.text_hash
    page.html_lang = (data.html_lang or "")[:64]
    page.images_total = data.images_total
    page.images_missing_alt = data.images_missing_alt
    page.hreflang = [[lang, href] for lang, href in data.hreflang]
    page.structured_data = {
        "jsonld_blocks": data.jsonld_blocks,
        "jsonld_invalid": data.jsonld_invalid,
        "types": data.structured_data_types[:50],
        # Summary per page: entities by syntax and type, with their property names (audits/checks/structured_data).
        "items": data.structured_items,
        "rich_types": sorted({item["type"] for item in data.structured_items}),
    }
    page.rel_next = data.rel_next or ""
    page.rel_prev = data.rel_prev or ""
    host = urlsplit(page.url).hostname
    page.image_urls = [src for src in data.image_urls if urlsplit(src).hostname == host]
    # Internal and external alike: a page that loads a missing CDN script is broken all the same.
    page.resource_urls = [[kind, url] for kind, url in data.resource_urls]


def _is_indexable(page: Page) -> bool:
    """2xx HTML, no noindex (meta or header), canonical absent or pointing at itself (docs/CHECKS.md)."""
    if page.fetch_class != Page.FetchClass.OK:
        return False
    if not page.status_code or not 200 <= page.status_code < 300:
        return False
    if page.redirect_url:  # a 0-second meta refresh: a redirect
        return False
    if page.content_type not in ("text/html", "application/xhtml+xml"):
        return False
    if "noindex" in robots_directives(page.meta_robots, page.x_robots_tag):
        return False
    canonical = page.canonical_url or page.canonical_header
    return not canonical or canonical == page.url
