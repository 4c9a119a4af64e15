"""Response vs render: the render-* checks on crafted served and rendered values, and the page record where the two
documents meet (a page served on 127.0.0.1, fetched with the crawler's client, beside a rendered DOM given as text;
the same in real Chromium: tests/audits/pipeline/test_render.py)."""

import uuid

import pytest

from audits.checks import CheckSettings
from audits.checks.render import RENDER_TYPES, render_page_issues
from audits.models import Page
from audits.pipeline.page_record import build_page_record
from audits.pipeline.scope import CrawlScope
from crawler.discovery import Robots
from crawler.fetch import build_session, fetch
from scratchpad.services import ClaimedURL
from tests.support.sites.pages import html_route, page, serve

AUDIT_ID = uuid.UUID("00000000-0000-0000-0000-0000000e27e0")
URL = "https://example.test/a"


def _page(**rendered) -> Page:
    """A rendered page whose served HTML had exactly the same values, unless `raw` says otherwise."""
    raw = rendered.pop("raw", {})
    values = {
        "title": "A title",
        "meta_description": "A description.",
        "canonical_url": URL,
        "meta_robots": "index, follow",
        "h1": "A heading",
        "h1_count": 1,
        "word_count": 400,
        "internal_links": 10,
        "external_links": 2,
    }
    page_row = Page(id=uuid.uuid4(), audit_id=AUDIT_ID, url=URL, **{**values, **rendered})
    served = {k: v for k, v in values.items() if k not in ("canonical_url", "internal_links", "external_links")}
    served |= {"canonical": URL, "internal_links": 10, "external_links": 2, "links_only_rendered": 0}
    served |= {"links_only_rendered_examples": [], "links_only_raw": 0}
    page_row.raw_values = {**served, **raw}
    return page_row


def _found(page_row, settings=None) -> dict:
    return {i.type: i for i in render_page_issues(page_row, settings or CheckSettings())}


def test_not_rendered_or_unchanged_pages_have_no_render_findings():
    unrendered = _page()
    unrendered.raw_values = None
    assert _found(unrendered) == {}
    assert _found(_page()) == {}
    # Spacing is not a change; nor are robots directives written another way ("none" is noindex, nofollow).
    assert _found(_page(title="  A   title ", raw={"meta_robots": "none"}, meta_robots="noindex,nofollow")) == {}
    assert _found(_page(meta_robots="")) == {}  # "index, follow" removed: what a page without directives gets


def test_canonical_changed_or_only_after_javascript_with_both_values():
    changed = _found(_page(canonical_url="https://example.test/b"))
    assert set(changed) == {"render-canonical-changed"}
    assert changed["render-canonical-changed"].severity == "warning"
    assert changed["render-canonical-changed"].details == {
        "raw_canonical": URL,
        "rendered_canonical": "https://example.test/b",
        "change": "changed",
    }
    added = _found(_page(raw={"canonical": ""}))["render-canonical-changed"].details
    assert added == {"raw_canonical": None, "rendered_canonical": URL, "change": "added"}
    removed = _found(_page(canonical_url=""))["render-canonical-changed"].details
    assert removed["change"] == "removed" and removed["rendered_canonical"] is None


def test_noindex_added_by_javascript_is_critical_unless_the_project_sets_the_severity():
    added = _found(_page(meta_robots="noindex"))["render-robots-changed"]
    assert added.severity == "critical"
    assert added.details == {
        "raw_meta_robots": "index, follow",
        "rendered_meta_robots": "noindex",
        "added": ["noindex"],
        "removed": [],
    }
    settings = CheckSettings(severities={"render-robots-changed": "info"})
    assert _found(_page(meta_robots="noindex"), settings)["render-robots-changed"].severity == "info"
    # A noindex removed by JavaScript (Google does not render such a page) and a nofollow added: warnings.
    removed = _found(_page(raw={"meta_robots": "noindex"}, meta_robots=""))["render-robots-changed"]
    assert removed.severity == "warning" and removed.details["removed"] == ["noindex"]
    assert _found(_page(meta_robots="index, nofollow"))["render-robots-changed"].severity == "warning"


@pytest.mark.parametrize(
    ("field", "issue_type", "raw_key", "rendered_key"),
    [
        ("title", "render-title-changed", "raw_title", "rendered_title"),
        ("meta_description", "render-meta-description-changed", "raw_description", "rendered_description"),
        ("h1", "render-h1-changed", "raw_h1", "rendered_h1"),
    ],
)
def test_title_description_and_h1_changed(field, issue_type, raw_key, rendered_key):
    found = _found(_page(**{field: "Written by a script"}))
    assert set(found) == {issue_type}
    assert found[issue_type].details[rendered_key] == "Written by a script"
    assert found[issue_type].details[raw_key] and found[issue_type].details["change"] == "changed"
    only_after = _found(_page(raw={field: None}))[issue_type].details
    assert only_after[raw_key] is None and only_after["change"] == "added"


def test_links_only_after_javascript_from_the_threshold():
    links = ["https://example.test/x", "https://example.test/y"]
    found = _found(_page(internal_links=12, raw={"links_only_rendered": 2, "links_only_rendered_examples": links}))
    assert found["render-links-only-after-js"].details == {
        "links_only_rendered": 2,
        "examples": links,
        "raw_links": 12,
        "rendered_links": 14,
        "min_links": 1,
    }
    settings = CheckSettings(thresholds={"render-links-only-after-js": {"min_links": 3}})
    assert _found(_page(raw={"links_only_rendered": 2}), settings) == {}
    assert _found(_page(raw={"links_only_rendered": 3}), settings).keys() == {"render-links-only-after-js"}


def test_content_only_after_javascript_needs_enough_words_and_share():
    spa = _found(_page(raw={"word_count": 0}, word_count=300))["render-content-only-after-js"]
    assert spa.details == {
        "words_only_rendered": 300,
        "added_percent": 100,
        "raw_words": 0,
        "rendered_words": 300,
        "word_unit": "words",
    }
    # 40 more words on a 440-word page (9 %), 24 more on a 100-word page (24 words): below one threshold each.
    assert _found(_page(raw={"word_count": 400}, word_count=440)) == {}
    assert _found(_page(raw={"word_count": 76}, word_count=100)) == {}
    assert _found(_page(raw={"word_count": 75}, word_count=100)).keys() == {"render-content-only-after-js"}
    assert _found(_page(raw={"word_count": 500}, word_count=100)) == {}  # JavaScript removed text: not this check


def test_disabled_render_types_are_not_reported():
    settings = CheckSettings(disabled=set(RENDER_TYPES))
    assert _found(_page(canonical_url="", meta_robots="noindex", title="", raw={"word_count": 0}), settings) == {}


# --- where the served and rendered documents meet ------------------------------------------------------------


SERVED = page(
    "served",
    head='<link rel="canonical" href="/meet"><meta name="robots" content="index">',
    links=[("/", "Home page"), ("https://other.example/", "Elsewhere")],
    words=120,
)


def _rendered(served: str) -> str:
    return (
        served.replace('href="/meet"', 'href="/elsewhere"')
        .replace('content="index"', 'content="noindex"')
        .replace("</ul>", '<li><a href="/only-js">Script link</a></li></ul>')
    )


@pytest.fixture(scope="module")
def served_site():
    with serve({"/meet": html_route(SERVED)}) as base:
        yield base


def _record(base: str, rendered_html: str | None):
    session = build_session()
    try:
        result = fetch(session, base + "/meet")
    finally:
        session.close()
    scope = CrawlScope(
        start_url=base + "/", site_url=base + "/", robots=Robots(None, "Sitewarden"), checks=CheckSettings()
    )
    return build_page_record(
        AUDIT_ID, scope, ClaimedURL(1, base + "/meet", 1, False, 0, 1), result, rendered_html=rendered_html
    )


def test_the_page_record_keeps_the_served_values_beside_the_rendered_ones(served_site):
    base = served_site
    record = _record(base, _rendered(SERVED))
    page_row, raw = record.page, record.page.raw_values
    assert raw == {
        "title": "Test page served",
        "meta_description": page_row.meta_description,
        "canonical": base + "/meet",
        "meta_robots": "index",
        "h1": "Heading served",
        "h1_count": 1,
        "word_count": 120,
        "internal_links": 1,
        "external_links": 1,
        "links_only_rendered": 1,
        "links_only_rendered_examples": [base + "/only-js"],
        "links_only_raw": 0,
    }
    assert (page_row.canonical_url, page_row.meta_robots, page_row.word_count) == (base + "/elsewhere", "noindex", 122)
    types = {i.type for i in record.issues}
    assert types & set(RENDER_TYPES) == {
        "render-canonical-changed",
        "render-robots-changed",
        "render-links-only-after-js",
    }
    assert not page_row.is_indexable


def test_a_render_that_changed_nothing_and_no_render_leave_no_finding(served_site):
    same = _record(served_site, SERVED)
    assert same.page.raw_values["links_only_rendered"] == 0
    assert not {i.type for i in same.issues} & set(RENDER_TYPES)
    unrendered = _record(served_site, None)
    assert unrendered.page.raw_values is None
    assert not {i.type for i in unrendered.issues} & set(RENDER_TYPES)
