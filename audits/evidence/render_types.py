"""The evidence of the response-vs-render checks (audits/checks/render.py): the HTML as served beside the rendered
page, one row per page."""

from audits.evidence.columns import UNIT_PAGES, Evidence, detail, page

CHANGE = detail("change", "Change (added, changed, removed)")


def _before_after(raw_key: str, rendered_key: str, what: str) -> Evidence:
    return Evidence(
        UNIT_PAGES,
        (page(), detail(raw_key, f"{what} as served"), detail(rendered_key, f"{what} after JavaScript"), CHANGE),
    )


RENDER_EVIDENCE: dict[str, Evidence] = {
    "render-canonical-changed": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("raw_canonical", "Canonical as served"),
            detail("rendered_canonical", "Canonical after JavaScript"),
            CHANGE,
        ),
        target="rendered_canonical",
    ),
    "render-robots-changed": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("raw_meta_robots", "Meta robots as served"),
            detail("rendered_meta_robots", "Meta robots after JavaScript"),
            detail("added", "Added by JavaScript"),
            detail("removed", "Removed by JavaScript"),
        ),
    ),
    "render-title-changed": _before_after("raw_title", "rendered_title", "Title"),
    "render-meta-description-changed": _before_after("raw_description", "rendered_description", "Meta description"),
    "render-h1-changed": _before_after("raw_h1", "rendered_h1", "H1"),
    "render-links-only-after-js": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("links_only_rendered", "Link targets only after JavaScript"),
            detail("raw_links", "Links as served"),
            detail("rendered_links", "Links after JavaScript"),
            detail("examples", "Targets only after JavaScript (first 5)"),
        ),
        detail_first=("links_only_rendered",),
    ),
    "render-content-only-after-js": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("words_only_rendered", "Words only after JavaScript"),
            detail("added_percent", "Share of the rendered words (%)"),
            detail("raw_words", "Words as served"),
            detail("rendered_words", "Words after JavaScript"),
        ),
        detail_first=("words_only_rendered", "added_percent"),
    ),
}
