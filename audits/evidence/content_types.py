"""The evidence of the content, URL, security and pixel-width checks (issue 14b)."""

from audits.evidence.columns import UNIT_PAGES, Evidence, detail, item, missing_header, page

CONTENT_EVIDENCE: dict[str, Evidence] = {
    "title-too-wide": Evidence(
        UNIT_PAGES,
        (page(), detail("title", "Title"), detail("width_px", "Width (px)"), detail("max_px", "Limit (px)")),
    ),
    "meta-description-too-wide": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("description", "Meta description"),
            detail("width_px", "Width (px)"),
            detail("max_px", "Limit (px)"),
        ),
    ),
    "lorem-ipsum": Evidence(UNIT_PAGES, (page(), detail("text", "Placeholder text found"))),
    "near-duplicate-content": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("similarity_pct", "Words the same (%)"),
            detail("most_similar_url", "Most similar page"),
            detail("near_duplicates", "Near duplicates"),
            detail("other_urls", "Near duplicates (first 3)"),
        ),
        target="most_similar_url",
    ),
    "soft-404": Evidence(
        UNIT_PAGES,
        (page(), detail("reasons", "Why it looks like an error page"), detail("words", "Main text words")),
    ),
    "url-uppercase": Evidence(UNIT_PAGES, (page("URL"), detail("path", "Path"))),
    "url-underscores": Evidence(UNIT_PAGES, (page("URL"), detail("path", "Path"))),
    "url-multiple-slashes": Evidence(UNIT_PAGES, (page("URL"), detail("path", "Path"))),
    "url-non-ascii": Evidence(UNIT_PAGES, (page("URL"), detail("decoded", "Decoded URL"))),
    "url-spaces": Evidence(UNIT_PAGES, (page("URL"), detail("path", "Path"))),
    "url-too-many-parameters": Evidence(
        UNIT_PAGES,
        (page("URL"), detail("params", "Parameters"), detail("max_params", "Limit"), detail("query", "Query")),
    ),
    "url-repetitive-path": Evidence(UNIT_PAGES, (page("URL"), detail("repeated", "Repeated segments"))),
    "url-tracking-parameters": Evidence(
        UNIT_PAGES,
        (page(), item("link", "Linked URL", "href"), item("parameters", "Parameters")),
        expand="links",
        target="link",
    ),
    "form-posts-to-http": Evidence(
        UNIT_PAGES, (page(), detail("actions", "Form actions (first 5)"), detail("forms_count", "Forms"))
    ),
    "target-blank-without-noopener": Evidence(
        UNIT_PAGES, (page(), detail("links", "Links (first 5)"), detail("links_count", "Links"))
    ),
    "protocol-relative-resource": Evidence(
        UNIT_PAGES, (page(), detail("resources", "Resources (first 5)"), detail("resources_count", "Resources"))
    ),
    "missing-hsts": missing_header(),
    "missing-x-content-type-options": missing_header(),
    "missing-x-frame-options": missing_header(),
    "missing-referrer-policy": missing_header(),
    "custom-extraction": Evidence(
        UNIT_PAGES,
        (page(), item("extractor", "Extractor"), item("rule", "Rule"), item("value", "Value")),
        expand="findings",
    ),
}
