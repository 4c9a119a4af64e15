"""The evidence of the structured-data, image and pagination checks, and of the Lighthouse phase."""

from audits.evidence.columns import UNIT_PAGES, Evidence, detail, item, lighthouse_run, page, structured_entities

RICH_EVIDENCE: dict[str, Evidence] = {
    "structured-data-missing-required": structured_entities("Missing required properties"),
    "structured-data-missing-recommended": structured_entities("Missing recommended properties"),
    "image-missing-size": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("images_missing_size", "Images without width/height"),
            detail("images_total", "Images"),
            detail("srcs", "Image sources (first 5)"),
        ),
    ),
    "image-alt-too-long": Evidence(
        UNIT_PAGES,
        (page(), item("src", "Image source"), item("alt_chars", "Alt characters"), detail("max_chars", "Limit")),
        expand="images",
    ),
    "broken-image": Evidence(
        UNIT_PAGES,
        (
            page(),
            item("src", "Image"),
            item("status_code", "Status"),
            item("error", "Error"),
            detail("images_count", "Broken images on the page"),
        ),
        expand="images",
        target="src",
    ),
    "image-too-large": Evidence(
        UNIT_PAGES,
        (page(), item("src", "Image"), item("kb", "Size (KB)"), detail("max_kb", "Limit (KB)")),
        expand="images",
    ),
    "pagination-broken-sequence": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("rel", "Link"),
            detail("target", "Target"),
            detail("expected_rel", "Target's link back"),
            detail("target_points_to", "Which points to"),
        ),
        target="target",
    ),
    "pagination-url-not-ok": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("rel", "Link"),
            detail("target", "Target"),
            detail("status_code", "Target status"),
            detail("indexable", "Target indexable"),
        ),
        target="target",
    ),
    "pagination-loop": Evidence(
        UNIT_PAGES, (page("First page of the loop"), detail("loop_length", "Pages in loop"), detail("urls", "Loop"))
    ),
    # --- Lighthouse --------------------------------------------------------------------------------------
    "accessibility-violation": Evidence(
        UNIT_PAGES,
        (
            page("Sampled page"),
            detail("rule", "axe rule"),
            detail("impact", "Impact"),
            detail("description", "Description"),
            detail("nodes", "Elements"),
            detail("strategy", "Strategy"),
        ),
        order=("page_url", "details__rule", "id"),
    ),
    "poor-performance-score": lighthouse_run("Performance score"),
    "poor-lcp": lighthouse_run("LCP (ms)"),
    "poor-cls": lighthouse_run("CLS"),
}
