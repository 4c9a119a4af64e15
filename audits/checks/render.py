"""Response vs render: what JavaScript changed between the HTML as served and the rendered page.

With rendering on, a page's fields are the rendered page's and `Page.raw_values` holds the same values measured on
the HTML as served (audits.pipeline.render.raw_values_for); `render_page_issues` compares the two. Pure: no DB.
"""

from audits.checks.registry import CheckSettings, make_issue
from audits.models import Issue

RENDER_TYPES = (
    "render-canonical-changed",
    "render-robots-changed",
    "render-title-changed",
    "render-meta-description-changed",
    "render-h1-changed",
    "render-links-only-after-js",
    "render-content-only-after-js",
)
TEXT_SHOWN_MAX_CHARS = 300  # a title, description or H1 in the evidence
# Robots words that change nothing when a script adds or removes them: index, follow and all are what a page without
# directives gets, and "none" is read as the noindex, nofollow it stands for.
ROBOTS_WORDS_OF_NO_CHANGE = frozenset({"index", "follow", "all", "none"})


def _meta_directives(meta_robots: str) -> set[str]:
    """The directives of a meta robots value as the page checks read them (X-Robots-Tag left out: it is the same
    answer's header on both sides)."""
    # why: audits.checks.page runs these checks and imports this module, so its one robots reading is imported late
    from audits.checks.page import robots_directives

    return robots_directives(meta_robots, "") - ROBOTS_WORDS_OF_NO_CHANGE


def _text(value) -> str:
    return " ".join(str(value or "").split())


def _change(raw: str, rendered: str) -> str:
    """How a value went from the HTML as served to the rendered page: added, removed or changed."""
    if not raw:
        return "added"
    return "removed" if not rendered else "changed"


def render_page_issues(page, settings: CheckSettings) -> list[Issue]:
    """Unsaved Issue rows for a rendered page whose values JavaScript changed; [] when the page was not rendered
    (`page.raw_values` is None)."""
    raw = page.raw_values
    if not isinstance(raw, dict):
        return []
    found: list[Issue] = []

    def add(issue_type: str, **details) -> Issue | None:
        issue = make_issue(page.audit_id, issue_type, page=page, details=details, settings=settings)
        if issue is not None:
            found.append(issue)
        return issue

    def limit(issue_type: str, key: str):
        return settings.threshold(issue_type, key)

    raw_canonical, canonical = _text(raw.get("canonical")), _text(page.canonical_url)
    if raw_canonical != canonical:
        add(
            "render-canonical-changed",
            raw_canonical=raw_canonical or None,
            rendered_canonical=canonical or None,
            change=_change(raw_canonical, canonical),
        )

    raw_directives, directives = _meta_directives(raw.get("meta_robots")), _meta_directives(page.meta_robots)
    if raw_directives != directives:
        added = sorted(directives - raw_directives)
        issue = add(
            "render-robots-changed",
            raw_meta_robots=_text(raw.get("meta_robots")) or None,
            rendered_meta_robots=_text(page.meta_robots) or None,
            added=added,
            removed=sorted(raw_directives - directives),
        )
        # A noindex only JavaScript writes takes the page out of search: worse than a warning, unless the project
        # set this type's severity itself.
        if issue is not None and "noindex" in added and "render-robots-changed" not in settings.severities:
            issue.severity = Issue.Severity.CRITICAL

    for issue_type, key, raw_key, rendered_key in (
        ("render-title-changed", "title", "raw_title", "rendered_title"),
        ("render-meta-description-changed", "meta_description", "raw_description", "rendered_description"),
        ("render-h1-changed", "h1", "raw_h1", "rendered_h1"),
    ):
        before, after = _text(raw.get(key)), _text(getattr(page, key))
        if before != after:
            add(
                issue_type,
                **{
                    raw_key: before[:TEXT_SHOWN_MAX_CHARS] or None,
                    rendered_key: after[:TEXT_SHOWN_MAX_CHARS] or None,
                    "change": _change(before, after),
                },
            )

    only_rendered = int(raw.get("links_only_rendered") or 0)
    if only_rendered and only_rendered >= limit("render-links-only-after-js", "min_links"):
        add(
            "render-links-only-after-js",
            links_only_rendered=only_rendered,
            examples=list(raw.get("links_only_rendered_examples") or []),
            raw_links=int(raw.get("internal_links") or 0) + int(raw.get("external_links") or 0),
            rendered_links=page.internal_links + page.external_links,
            min_links=limit("render-links-only-after-js", "min_links"),
        )

    raw_words, words = int(raw.get("word_count") or 0), page.word_count
    added_words = words - raw_words
    added_percent = round(100 * added_words / words) if words else 0
    if (
        added_words > 0
        and added_words >= limit("render-content-only-after-js", "min_words")
        and added_percent >= limit("render-content-only-after-js", "min_added_percent")
    ):
        add(
            "render-content-only-after-js",
            words_only_rendered=added_words,
            added_percent=added_percent,
            raw_words=raw_words,
            rendered_words=words,
            word_unit=page.word_unit or "words",
        )
    return found
