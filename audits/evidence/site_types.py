"""The evidence of the site checks (audits/checks/site.py): links, redirect chains and loops, duplicates,
sitemaps, robots.txt and what stopped or limited the crawl."""

from audits.evidence.columns import (
    LINK_COLUMNS,
    STATUS,
    UNIT_CHAINS,
    UNIT_LINKS,
    UNIT_LOOPS,
    UNIT_PAGES,
    UNIT_SITE,
    Evidence,
    computed,
    detail,
    duplicate_group,
    hops,
    item,
    missing_return,
    page,
)

SITE_EVIDENCE: dict[str, Evidence] = {
    "broken-internal-link": Evidence(
        UNIT_LINKS,
        (*LINK_COLUMNS, detail("fetch_error", "Fetch error"), detail("links", "Links on the page")),
        target="target_url",
    ),
    "internal-link-to-redirect": Evidence(
        UNIT_LINKS,
        (*LINK_COLUMNS, detail("redirect_url", "Redirects to"), detail("links", "Links on the page")),
        target="target_url",
    ),
    "redirect-chain": Evidence(
        UNIT_CHAINS,
        (
            page("First URL"),
            detail("hops_count", "Redirects"),
            computed("hops", "Hops (status)", hops),
            detail("final_url", "Final URL"),
            detail("final_status_code", "Final status"),
        ),
        target="final_url",
    ),
    "redirect-loop": Evidence(
        UNIT_LOOPS,
        (
            page("First URL"),
            detail("hops_count", "Redirects"),
            computed("hops", "Hops (status)", hops),
            detail("loops_back_to", "Loops back to"),
        ),
        target="loops_back_to",
    ),
    "duplicate-title": duplicate_group("title", "Title (the group)"),
    "duplicate-meta-description": duplicate_group("meta_description", "Meta description (the group)"),
    "duplicate-content": duplicate_group("text_hash", "Text fingerprint (the group)"),
    "orphan-page": Evidence(UNIT_PAGES, (page(), STATUS, detail("in_sitemap", "In sitemap"))),
    "canonical-target-not-ok": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("canonical_url", "Canonical URL"),
            detail("target_status_code", "Canonical's status", "status_code"),
            detail("redirect_url", "Canonical redirects to"),
            detail("fetch_error", "Fetch error"),
        ),
        target="canonical_url",
    ),
    "hreflang-missing-return-link": Evidence(
        UNIT_PAGES,
        (
            page(),
            item("hreflang", "hreflang"),
            item("target_url", "Target", "href"),
            computed("missing", "What is missing", missing_return),
        ),
        expand="missing",
        target="target_url",
    ),
    "sitemap-url-not-indexable": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("reasons", "Why not indexable"),
            STATUS,
            detail("redirect_url", "Redirects to"),
            detail("robots", "Robots directives"),
            detail("canonical_url", "Canonical URL"),
        ),
    ),
    "sitemap-missing": Evidence(UNIT_SITE, (detail("sitemaps_tried", "Sitemaps tried"), detail("errors", "Errors"))),
    "sitemap-read-in-part": Evidence(
        UNIT_SITE,
        (
            detail("reason", "Why reading stopped"),
            detail("sitemap_urls_read", "Sitemap URLs read"),
            detail("sitemap_documents_fetched", "Sitemap documents fetched"),
            detail("limit", "Limit"),
        ),
    ),
    "robots-txt-invalid": Evidence(
        UNIT_SITE, (item("line", "Invalid line"), detail("invalid_count", "Invalid lines in all")), expand="lines"
    ),
    "crawl-rate-limited": Evidence(
        UNIT_SITE,
        (
            detail("reason", "Why the crawl stopped"),
            detail("cooldown_s", "Time spent waiting (s)"),
            detail("last_url", "Last URL"),
        ),
    ),
    "crawl-urls-skipped": Evidence(
        UNIT_SITE,
        (
            detail("rule", "Rule"),
            detail("pattern", "URL shape"),
            detail("urls_skipped", "URLs skipped"),
            detail("examples", "Examples"),
            detail("setting", "Setting that raises it"),
        ),
    ),
    "max-pages-reached": Evidence(
        UNIT_SITE,
        (
            detail("max_pages", "Page limit"),
            detail("pages_crawled", "Pages crawled"),
            detail("urls_pending", "URLs still waiting"),
        ),
    ),
}
