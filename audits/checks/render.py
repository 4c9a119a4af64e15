"""Response vs render: what JavaScript changed between the HTML as served and the rendered page.

With rendering on, a page's fields are the rendered page's and `Page.raw_values` holds the same values measured on
the HTML as served (audits.pipeline.render.raw_values_for); `render_page_issues` compares the two. Pure: no DB.
"""

from dataclasses import dataclass

from audits.checks.registry import CheckSettings, make_issue
from audits.checks.robots import robots_directives
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
    return robots_directives(meta_robots, "") - ROBOTS_WORDS_OF_NO_CHANGE


def _text(value) -> str:
    return " ".join(str(value or "").split())


def _change(raw: str, rendered: str) -> str:
    """How a value went from the HTML as served to the rendered page: added, removed or changed."""
    if not raw:
        return "added"
    return "removed" if not rendered else "changed"


@dataclass(frozen=True)
class RenderValue:
    """One value of a rendered page beside the same value of its HTML as served."""

    key: str  # a key of Page.raw_values
    label: str
    raw: object
    rendered: object
    changed: bool  # as the render-* checks judge it (spacing, and robots words that change nothing, are no change)
    kind: str = "text"  # text | url | number


def _number(value) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


# (Page.raw_values key, label, Page field, kind) in the order page detail shows them.
_TEXT_VALUES = (
    ("title", "Title", "title", "text"),
    ("meta_description", "Meta description", "meta_description", "text"),
    ("canonical", "Canonical URL", "canonical_url", "url"),
    ("meta_robots", "Meta robots", "meta_robots", "text"),
    ("h1", "First H1", "h1", "text"),
)
_COUNTS = (
    ("h1_count", "H1 tags", "h1_count"),
    ("internal_links", "Internal links", "internal_links"),
    ("external_links", "External links", "external_links"),
    ("word_count", "Words", "word_count"),
)


def render_comparison(page) -> list[RenderValue]:
    """The page's values as served beside the rendered ones, in the order page detail shows them; [] when the page was
    not rendered. The one place that says what JavaScript changed: the checks below and page detail read it."""
    raw = page.raw_values
    if not isinstance(raw, dict):
        return []
    rows = []
    for key, label, field, kind in _TEXT_VALUES:
        before, after = _text(raw.get(key)), _text(getattr(page, field))
        changed = _meta_directives(before) != _meta_directives(after) if key == "meta_robots" else before != after
        rows.append(RenderValue(key, label, before, after, changed, kind))
    for key, label, field in _COUNTS:
        before, after = _number(raw.get(key)), getattr(page, field)
        label = f"{label} ({page.word_unit})" if key == "word_count" and page.word_unit else label
        rows.append(RenderValue(key, label, before, after, before != after, "number"))
    only_raw, only_rendered = _number(raw.get("links_only_raw")), _number(raw.get("links_only_rendered"))
    rows.append(
        RenderValue(
            "links_only",
            "Link targets the other lacks",
            only_raw,
            only_rendered,
            bool(only_raw or only_rendered),
            "number",
        )
    )
    return rows


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

    values = {row.key: row for row in render_comparison(page)}
    canonical = values["canonical"]
    if canonical.changed:
        add(
            "render-canonical-changed",
            raw_canonical=canonical.raw or None,
            rendered_canonical=canonical.rendered or None,
            change=_change(canonical.raw, canonical.rendered),
        )

    robots = values["meta_robots"]
    if robots.changed:
        raw_directives, directives = _meta_directives(robots.raw), _meta_directives(robots.rendered)
        added = sorted(directives - raw_directives)
        issue = add(
            "render-robots-changed",
            raw_meta_robots=robots.raw or None,
            rendered_meta_robots=robots.rendered or None,
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
        value = values[key]
        if value.changed:
            add(
                issue_type,
                **{
                    raw_key: value.raw[:TEXT_SHOWN_MAX_CHARS] or None,
                    rendered_key: value.rendered[:TEXT_SHOWN_MAX_CHARS] or None,
                    "change": _change(value.raw, value.rendered),
                },
            )

    only_rendered = _number(raw.get("links_only_rendered"))
    if only_rendered and only_rendered >= limit("render-links-only-after-js", "min_links"):
        add(
            "render-links-only-after-js",
            links_only_rendered=only_rendered,
            examples=list(raw.get("links_only_rendered_examples") or []),
            raw_links=_number(raw.get("internal_links")) + _number(raw.get("external_links")),
            rendered_links=page.internal_links + page.external_links,
            min_links=limit("render-links-only-after-js", "min_links"),
        )

    raw_words, words = _number(raw.get("word_count")), page.word_count
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
