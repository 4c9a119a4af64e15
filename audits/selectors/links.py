"""Reads of the links between an audit's pages: a page's inlinks and outlinks (the dashboard's page detail, the
API's and the MCP server's page), and the inlinks counts the pages grid shows and sorts by."""

from dataclasses import dataclass

from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from audits.models import Audit, Page, PageCounts
from audits.selectors.pagination import KeysetColumn
from scratchpad.models import LinkEdge

LINKS_PER_PAGE = 50  # inlinks and outlinks per screen of a page's detail
PAGE_LINKS_SHOWN = 500  # inlinks and outlinks listed on a page's detail by the API (the counts are exact)


def page_inlinks_subquery() -> Subquery:
    """Links to the outer Page's URL from the audit's crawled pages, summed (a subquery on LinkEdge's
    (audit, target_url) index)."""
    edges = (
        LinkEdge.objects.filter(audit_id=OuterRef("audit_id"), target_url=OuterRef("url"))
        .order_by()
        .values("target_url")
        .annotate(n=Sum("link_count"))  # an edge is one source page's links to the target, counted
        .values("n")[:1]
    )
    return Subquery(edges, output_field=IntegerField())


def page_inlinks_count():
    """An annotation for a Page queryset: links to the page's URL from the audit's crawled pages (every
    <a> counts, as in a crawler's Inlinks column). Finalize stores the count (PageCounts.inlinks: sorting 10,000
    pages by a per-row subquery takes most of a second); until then, or for an audit that never finalized, a
    subquery on LinkEdge's (audit, target_url) index counts it. COALESCE evaluates the subquery only where the
    page has no stored count."""
    return Coalesce(F("counts__inlinks"), page_inlinks_subquery(), Value(0))


def page_counts_stored(*, audit: Audit) -> bool:
    """Whether finalize stored every page's inlinks and issues (PageCounts): a completed audit with its page
    figures (audits.stats) and its counts rows (one index probe; an audit completed before the counts were
    stored has none). The grid then sorts on the stored counts, which PageCounts' (audit, count DESC NULLS LAST,
    url) indexes serve; otherwise the counts are counted in the query."""
    if audit.status != Audit.Status.COMPLETED or not audit.stats:
        return False
    return PageCounts.objects.filter(audit_id=audit.id).exists()


def inlink_pages_subquery():
    """An annotation for a Page queryset: the crawled pages linking to the page (one edge per source page and
    target: an index-only count on (audit, target_url)); evaluated for the rows on screen only."""
    return Coalesce(
        Subquery(
            LinkEdge.objects.filter(audit_id=OuterRef("audit_id"), target_url=OuterRef("url"))
            .order_by()
            .values("target_url")
            .annotate(n=Count("id"))
            .values("n")[:1],
            output_field=IntegerField(),
        ),
        Value(0),
    )


def page_inlinks(*, page: Page) -> QuerySet:
    """Links from crawled pages of the same audit to this page's URL."""
    # The source page's audit is the edge's, but saying so lets PostgreSQL walk the (audit, url) index in order
    # and stop after a screen of rows: 280 ms -> 7 ms for a page every one of 100,000 pages links to.
    return (
        LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url, source_page__audit_id=page.audit_id)
        .order_by("source_page__url", "id")
        .values("id", "source_page_id", "source_page__url", "anchor_text", "nofollow", "link_count")
    )


@dataclass(frozen=True)
class Inlinks:
    """Links to a page and the pages they are on: "24 links from 7 pages" (a page may link a URL many times)."""

    links: int
    pages: int


def page_inlinks_summary(*, page: Page) -> Inlinks:
    """The page's inlinks as the grid counts them: links (stored at finalize, else summed now) and linking pages."""
    pages = page_inlinks_total(page=page)
    links = PageCounts.objects.filter(page_id=page.id).values_list("inlinks", flat=True).first()
    if links is None:
        edges = LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url)
        links = edges.aggregate(n=Coalesce(Sum("link_count"), Value(0)))["n"]
    return Inlinks(links=links, pages=pages)


def page_inlinks_total(*, page: Page) -> int:
    """How many crawled pages link to the page: an index-only count on (audit, target_url), without the join
    `page_inlinks` needs for its order (with it, 1 s for a page 100,000 pages link to)."""
    return LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url).count()


def links_cursor_tag(page_id, param: str) -> str:
    """What a cursor of a page's inlinks (`in`) or outlinks (`out`) is bound to: that page and that list."""
    return f"links-{param}:{page_id}"


# Keyset columns of the two link lists (audits.selectors.pagination.keyset_paginate): a page links to a target once
# (one edge per source page and target URL), so the source URL is unique among a page's inlinks.
INLINK_KEYSET = (KeysetColumn("source_page__url"),)
OUTLINK_KEYSET = (KeysetColumn("id"),)


def page_outlinks(*, page: Page) -> QuerySet:
    """Links on this page, each with the crawled page it leads to and that page's status (unique index on
    (audit, url): one index lookup per row on screen)."""
    target = Page.objects.filter(audit_id=page.audit_id, url=OuterRef("target_url"))
    return (
        LinkEdge.objects.filter(source_page=page)
        .order_by("id")
        .annotate(
            target_page_id=Subquery(target.values("id")[:1]),
            target_status=Subquery(target.values("status_code")[:1]),
            target_fetch=Subquery(target.values("fetch_class")[:1]),
        )
        .values(
            "id",
            "target_url",
            "link_count",
            "anchor_text",
            "nofollow",
            "internal",
            "target_page_id",
            "target_status",
            "target_fetch",
        )
    )


def page_links(*, page: Page, limit: int = PAGE_LINKS_SHOWN) -> dict:
    """Outlinks (edges from the page) and inlinks (edges whose target is the page's URL), capped, with counts."""
    outlinks = LinkEdge.objects.filter(source_page_id=page.id)
    inlinks = LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url)
    # Naming the source page's audit lets PostgreSQL walk (audit, url) in order and stop at `limit` rows
    # instead of sorting every inlink of a page 100,000 pages link to; the count stays join-free.
    return {
        "outlinks_count": outlinks.count(),
        "outlinks": list(
            outlinks.order_by("id").values("target_url", "link_count", "anchor_text", "nofollow", "internal")[:limit]
        ),
        "inlinks_count": inlinks.count(),
        "inlinks": list(
            inlinks.filter(source_page__audit_id=page.audit_id)
            .order_by("source_page__url", "id")
            .values("source_page_id", "source_page__url", "link_count", "anchor_text", "nofollow")[:limit]
        ),
    }
