"""The evidence of the page checks (audits/checks/page.py): one row per page, or per item a page lists."""

from audits.evidence.columns import STATUS, UNIT_PAGES, Evidence, computed, detail, item, meta_tag, page

PAGE_EVIDENCE: dict[str, Evidence] = {
    "blocked-page": Evidence(UNIT_PAGES, (page(), STATUS, detail("reason", "Why it counts as blocked"))),
    "rate-limited-page": Evidence(UNIT_PAGES, (page(), STATUS, detail("retry_after", "Retry-After"))),
    "server-error": Evidence(UNIT_PAGES, (page(), STATUS)),
    "broken-page": Evidence(UNIT_PAGES, (page(), STATUS)),
    "fetch-error": Evidence(UNIT_PAGES, (page(), detail("error_kind", "Error kind"), detail("error", "Error"), STATUS)),
    "slow-response": Evidence(
        UNIT_PAGES, (page(), detail("response_time_ms", "Response time (ms)"), detail("max_ms", "Limit (ms)"))
    ),
    "non-html-content": Evidence(UNIT_PAGES, (page(), detail("content_type", "Content type"))),
    "noindex-page": Evidence(
        UNIT_PAGES, (page(), detail("meta_robots", "Meta robots"), detail("x_robots_tag", "X-Robots-Tag"))
    ),
    "nofollow-page": Evidence(
        UNIT_PAGES, (page(), detail("meta_robots", "Meta robots"), detail("x_robots_tag", "X-Robots-Tag"))
    ),
    "canonical-conflict": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("html_canonicals", "Canonicals in the HTML"),
            detail("header_canonical", "Canonical in the Link header"),
            detail("canonicals_count", "Canonical tags"),
        ),
    ),
    "canonicalized-page": Evidence(UNIT_PAGES, (page(), detail("canonical", "Canonical URL")), target="canonical"),
    "canonical-relative": Evidence(
        UNIT_PAGES,
        (page(), detail("href", "Canonical as written"), detail("resolved", "Resolved to")),
        target="resolved",
    ),
    "canonical-non-http": Evidence(
        UNIT_PAGES, (page(), detail("href", "Canonical as written"), detail("scheme", "Scheme")), target="href"
    ),
    "deep-page": Evidence(UNIT_PAGES, (page(), detail("depth", "Clicks from start"), detail("min_depth", "Limit"))),
    "javascript-rendering-suspected": Evidence(
        UNIT_PAGES, (page(), detail("words", "Words in the HTML"), detail("scripts", "Scripts"))
    ),
    "missing-title": Evidence(UNIT_PAGES, (page(), detail("titles_count", "Title tags"))),
    "multiple-titles": Evidence(
        UNIT_PAGES, (page(), detail("titles_count", "Title tags"), detail("titles", "Titles (first 5)"))
    ),
    "title-too-long": Evidence(
        UNIT_PAGES,
        (page(), detail("title", "Title"), detail("chars", "Characters"), detail("max_chars", "Limit")),
    ),
    "title-too-short": Evidence(
        UNIT_PAGES,
        (page(), detail("title", "Title"), detail("chars", "Characters"), detail("min_chars", "Minimum")),
    ),
    "missing-meta-description": Evidence(UNIT_PAGES, (page(), computed("meta_tag", "Meta description tag", meta_tag))),
    "meta-description-too-long": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("description", "Meta description"),
            detail("chars", "Characters"),
            detail("max_chars", "Limit"),
        ),
    ),
    "meta-description-too-short": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("description", "Meta description"),
            detail("chars", "Characters"),
            detail("min_chars", "Minimum"),
        ),
    ),
    "missing-h1": Evidence(UNIT_PAGES, (page(), detail("h1_count", "H1 headings"))),
    "multiple-h1": Evidence(
        UNIT_PAGES, (page(), detail("h1_count", "H1 headings"), detail("h1", "H1 texts (first 5)"))
    ),
    "heading-order-skip": Evidence(
        UNIT_PAGES, (page(), detail("skips", "Skipped levels (first 5)"), detail("skips_count", "Skips"))
    ),
    "thin-content": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("words", "Words"),
            detail("min_words", "Minimum"),
            # A Chinese or Japanese page is counted in characters (crawler.words): these instead of the two above.
            detail("characters", "Characters (Chinese or Japanese text)"),
            detail("min_characters", "Minimum (characters)"),
        ),
    ),
    "images-missing-alt": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("images_missing_alt", "Images without alt"),
            detail("images_total", "Images"),
            detail("srcs", "Image sources (first 5)"),
        ),
    ),
    "no-outgoing-links": Evidence(
        UNIT_PAGES, (page(), computed("links", "Crawlable links", lambda url, details, entry: 0))
    ),
    "too-many-links": Evidence(UNIT_PAGES, (page(), detail("links", "Links"), detail("max_links", "Limit"))),
    "too-many-link-targets": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("links", "Links"),
            detail("targets_stored", "Targets stored"),
            detail("links_not_stored", "Links not stored"),
        ),
    ),
    "non-descriptive-link-text": Evidence(
        UNIT_PAGES,
        (
            page(),
            item("link_text", "Link text", "text"),
            item("link_target", "Link target", "href"),
            detail("links_count", "Vague links on the page"),
        ),
        expand="links",
        target="link_target",
    ),
    "missing-viewport": Evidence(
        UNIT_PAGES, (page(), computed("viewport", "Viewport tag", lambda url, details, entry: "absent"))
    ),
    "missing-html-lang": Evidence(UNIT_PAGES, (page(), detail("lang_attribute", "lang attribute"))),
    "mixed-content": Evidence(
        UNIT_PAGES,
        (page(), detail("resources", "http resources (first 5)"), detail("resources_count", "http resources")),
    ),
    "insecure-page": Evidence(UNIT_PAGES, (page("http URL"), detail("https_url", "https URL")), target="https_url"),
    "meta-refresh-redirect": Evidence(UNIT_PAGES, (page(), detail("target", "Refresh target")), target="target"),
    "invalid-structured-data": Evidence(
        UNIT_PAGES,
        (page(), detail("invalid_blocks", "Invalid JSON-LD blocks"), detail("jsonld_blocks", "JSON-LD blocks")),
    ),
    "large-html": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("bytes_read", "HTML bytes"),
            detail("max_bytes", "Limit (bytes)"),
        ),
    ),
    "html-too-large": Evidence(
        UNIT_PAGES, (page(), detail("bytes_read", "HTML bytes read"), detail("max_bytes", "Read limit (bytes)"))
    ),
    "long-url": Evidence(UNIT_PAGES, (page("URL"), detail("chars", "Characters"), detail("max_chars", "Limit"))),
    "hreflang-invalid": Evidence(
        UNIT_PAGES,
        (
            page(),
            item("hreflang", "hreflang"),
            item("target_url", "Target", "href"),
            item("problem", "Problem"),
        ),
        expand="values",
        target="target_url",
    ),
}
