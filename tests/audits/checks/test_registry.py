"""The registry holds the catalogue exactly; overrides are validated and merged."""

import uuid

import pytest

from audits.checks import CHECKS, CHECKS_BY_TYPE, CheckSettings, make_issue, validate_overrides
from audits.checks.page import PAGE_CHECK_TYPES
from audits.checks.registry import THRESHOLD_UNITS, threshold_words
from audits.checks.site import SITE_CHECK_TYPES
from audits.models import Audit, issue_id_for

# The catalogue's tables (CHECKS.md), type -> (severity, scope), with the thresholds it names.
CATALOGUE = {
    "blocked-page": ("critical", "page"), "rate-limited-page": ("warning", "page"),
    "server-error": ("critical", "page"), "broken-page": ("critical", "page"), "fetch-error": ("critical", "page"),
    "slow-response": ("warning", "page"), "non-html-content": ("info", "page"), "noindex-page": ("warning", "page"),
    "nofollow-page": ("info", "page"), "canonical-conflict": ("warning", "page"),
    "canonicalized-page": ("info", "page"), "canonical-relative": ("info", "page"), "deep-page": ("info", "page"),
    "javascript-rendering-suspected": ("warning", "page"), "missing-title": ("critical", "page"),
    "multiple-titles": ("warning", "page"), "title-too-long": ("warning", "page"),
    "title-too-short": ("warning", "page"), "missing-meta-description": ("warning", "page"),
    "meta-description-too-long": ("info", "page"), "meta-description-too-short": ("info", "page"),
    "missing-h1": ("warning", "page"), "multiple-h1": ("info", "page"), "heading-order-skip": ("info", "page"),
    "thin-content": ("warning", "page"), "images-missing-alt": ("warning", "page"),
    "no-outgoing-links": ("warning", "page"), "too-many-links": ("info", "page"),
    "non-descriptive-link-text": ("info", "page"), "missing-viewport": ("info", "page"),
    "missing-html-lang": ("info", "page"), "mixed-content": ("warning", "page"), "insecure-page": ("warning", "page"),
    "meta-refresh-redirect": ("warning", "page"), "invalid-structured-data": ("warning", "page"),
    "large-html": ("warning", "page"), "long-url": ("info", "page"), "hreflang-invalid": ("warning", "page"),
    "broken-internal-link": ("critical", "site"), "internal-link-to-redirect": ("info", "site"),
    "redirect-chain": ("warning", "site"), "redirect-loop": ("critical", "site"),
    "duplicate-title": ("warning", "site"), "duplicate-meta-description": ("info", "site"),
    "duplicate-content": ("warning", "site"), "orphan-page": ("warning", "site"),
    "canonical-target-not-ok": ("warning", "site"), "hreflang-missing-return-link": ("warning", "site"),
    "sitemap-url-not-indexable": ("warning", "site"), "sitemap-missing": ("info", "site"),
    "sitemap-read-in-part": ("info", "site"),
    "robots-txt-invalid": ("info", "site"), "crawl-rate-limited": ("warning", "site"),
    "max-pages-reached": ("info", "site"), "crawl-urls-skipped": ("warning", "site"),
    "poor-performance-score": ("warning", "lighthouse"),
    "poor-lcp": ("warning", "lighthouse"), "poor-cls": ("warning", "lighthouse"),
}  # fmt: skip
THRESHOLDS = {
    "slow-response": {"max_ms": 1500}, "deep-page": {"min_depth": 5},
    "javascript-rendering-suspected": {"min_words": 20}, "title-too-long": {"max_chars": 60},
    "title-too-short": {"min_chars": 10}, "meta-description-too-long": {"max_chars": 160},
    "meta-description-too-short": {"min_chars": 70}, "thin-content": {"min_words": 150},
    "too-many-links": {"max_links": 250}, "large-html": {"max_bytes": 1024 * 1024}, "long-url": {"max_chars": 115},
    "heading-order-skip": {"max_level_jump": 1}, "redirect-chain": {"min_hops": 2},
    "poor-performance-score": {"min_score": 50}, "poor-lcp": {"max_ms": 2500}, "poor-cls": {"max_cls": 0.1},
}  # fmt: skip

# Issue 14b: content, URL, security and pixel-width checks.
CATALOGUE.update({
    "title-too-wide": ("warning", "page"), "meta-description-too-wide": ("info", "page"),
    "lorem-ipsum": ("warning", "page"), "url-uppercase": ("info", "page"), "url-underscores": ("info", "page"),
    "url-multiple-slashes": ("warning", "page"), "url-non-ascii": ("info", "page"), "url-spaces": ("warning", "page"),
    "url-too-many-parameters": ("info", "page"), "url-repetitive-path": ("info", "page"),
    "url-tracking-parameters": ("warning", "page"), "form-posts-to-http": ("warning", "page"),
    "target-blank-without-noopener": ("info", "page"), "protocol-relative-resource": ("info", "page"),
    "near-duplicate-content": ("warning", "site"), "soft-404": ("warning", "site"), "missing-hsts": ("warning", "site"),
    "missing-x-content-type-options": ("info", "site"), "missing-x-frame-options": ("info", "site"),
    "missing-referrer-policy": ("info", "site"),
})  # fmt: skip
THRESHOLDS.update({
    "title-too-wide": {"max_px": 580}, "meta-description-too-wide": {"max_px": 920},
    "url-too-many-parameters": {"max_params": 3}, "near-duplicate-content": {"min_similarity_pct": 90, "min_words": 50},
    "soft-404": {"max_words": 50, "min_pages": 5},
})  # fmt: skip

# Issue 14a: a canonical of another scheme, a page over the 15 MiB read limit, a page past the stored link targets.
CATALOGUE.update({
    "canonical-non-http": ("warning", "page"), "html-too-large": ("warning", "page"),
    "too-many-link-targets": ("info", "page"),
})  # fmt: skip

# Issue 14d: the rules of a project's custom extractors.
CATALOGUE.update({"custom-extraction": ("warning", "page")})

# Issue 14c: structured data, images, pagination, accessibility from Lighthouse.
CATALOGUE.update({
    "structured-data-missing-required": ("warning", "page"), "structured-data-missing-recommended": ("info", "page"),
    "image-missing-size": ("info", "page"), "image-alt-too-long": ("info", "page"), "broken-image": ("warning", "site"),
    "image-too-large": ("info", "site"), "pagination-broken-sequence": ("warning", "site"),
    "pagination-url-not-ok": ("warning", "site"), "pagination-loop": ("warning", "site"),
    "accessibility-violation": ("warning", "lighthouse"),
})  # fmt: skip
THRESHOLDS.update({"image-alt-too-long": {"max_chars": 100}, "image-too-large": {"max_kb": 300}})

# Issue 27 external links
CATALOGUE.update({
    "external-link-broken": ("warning", "site"), "external-link-server-error": ("warning", "site"),
    "external-link-unreachable": ("warning", "site"), "external-link-redirect-loop": ("warning", "site"),
    "external-link-redirect-broken": ("warning", "site"), "external-link-redirect-chain": ("info", "site"),
    "external-link-redirected": ("info", "site"), "external-link-insecure": ("info", "site"),
    "external-link-unverified": ("info", "site"), "external-links-unchecked": ("info", "site"),
})  # fmt: skip
THRESHOLDS.update({"external-link-redirect-chain": {"min_hops": 3}})
# Issue 27 resources: scripts, stylesheets, fonts and icons a page loads that answer 4xx/5xx or not at all.
CATALOGUE.update({
    "broken-script": ("warning", "site"), "broken-stylesheet": ("warning", "site"),
    "broken-font": ("warning", "site"), "broken-icon": ("info", "site"),
})  # fmt: skip
# Issue 27 render: the HTML as served beside the rendered page.
CATALOGUE.update({
    "render-canonical-changed": ("warning", "page"), "render-robots-changed": ("warning", "page"),
    "render-title-changed": ("warning", "page"), "render-meta-description-changed": ("info", "page"),
    "render-h1-changed": ("info", "page"), "render-links-only-after-js": ("info", "page"),
    "render-content-only-after-js": ("info", "page"),
})  # fmt: skip
THRESHOLDS.update({
    "render-links-only-after-js": {"min_links": 1},
    "render-content-only-after-js": {"min_words": 25, "min_added_percent": 10},
})  # fmt: skip
# Issue 27 bots: which crawlers robots.txt and the server let in, what they are served, llms.txt.
CATALOGUE.update({
    "search-bot-blocked-robots": ("critical", "site"), "ai-bots-blocked-robots": ("info", "site"),
    "llms-txt-missing": ("info", "site"), "llms-txt-invalid": ("warning", "site"),
    "llms-txt-broken-link": ("warning", "site"), "bot-blocked": ("critical", "site"),
    "bot-served-different-status-or-redirect": ("warning", "site"), "bot-cloaking": ("warning", "site"),
    "ai-bot-blocked-by-server": ("info", "site"),
})  # fmt: skip
THRESHOLDS.update({"bot-cloaking": {"min_similarity_pct": 80}})


def test_registry_is_the_catalogue():
    assert {s.type: (s.severity, s.scope) for s in CHECKS} == CATALOGUE
    assert len(CHECKS) == len(CATALOGUE)
    assert {s.type: s.thresholds for s in CHECKS if s.thresholds} == THRESHOLDS
    assert set(PAGE_CHECK_TYPES) == {t for t, (_, scope) in CATALOGUE.items() if scope == "page"}
    assert set(SITE_CHECK_TYPES) == {t for t, (_, scope) in CATALOGUE.items() if scope == "site"}
    for spec in CHECKS:
        assert spec.title and spec.how_to_fix
        assert spec.explanation and "\n" not in spec.explanation


def test_validate_overrides_normalises_what_is_valid():
    raw = {
        "thresholds": {"title-too-long": {"max_chars": 70.0}, "poor-cls": {"max_cls": 0.25}},
        "severities": {"orphan-page": "info"},
        "disabled": ["missing-viewport", "missing-viewport", "long-url"],
    }
    assert validate_overrides(raw) == {
        "thresholds": {"title-too-long": {"max_chars": 70}, "poor-cls": {"max_cls": 0.25}},
        "severities": {"orphan-page": "info"},
        "disabled": ["long-url", "missing-viewport"],
    }
    assert validate_overrides({}) == {"thresholds": {}, "severities": {}, "disabled": []}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"thresholds": {"no-such-check": {"max_chars": 1}}}, "unknown check type 'no-such-check'"),
        ({"thresholds": {"title-too-long": {"max_words": 1}}}, "has no threshold 'max_words'"),
        ({"thresholds": {"title-too-long": {"max_chars": "60"}}}, "must be a number"),
        ({"thresholds": {"title-too-long": {"max_chars": -1}}}, "must be a number >= 0"),
        ({"thresholds": {"title-too-long": {"max_chars": 60.5}}}, "whole number"),
        ({"thresholds": {"title-too-long": {"max_chars": True}}}, "must be a number"),
        ({"thresholds": {"large-html": {"max_bytes": 20_000_000}}}, "cannot exceed"),  # over the 15 MiB read
        ({"severities": {"orphan-page": "urgent"}}, "must be one of critical, warning, info"),
        ({"disabled": ["nope"]}, "unknown check type 'nope'"),
        ({"disabled": "missing-h1"}, "must be a list"),
        ({"limits": {}}, "unknown check override section 'limits'"),
        (["missing-h1"], "must be an object"),
    ],
)
def test_validate_overrides_rejects_with_a_clear_message(raw, message):
    with pytest.raises(ValueError, match=message):
        validate_overrides(raw)


def test_settings_for_audit_merge_overrides_and_skip_invalid_ones():
    audit = Audit(
        start_url="https://example.com/",
        site_url="https://www.example.com/",
        config={
            "checks": {
                "thresholds": {"title-too-long": {"max_chars": 80}, "bogus": {"x": 1}},
                "severities": {"missing-h1": "critical", "orphan-page": "loud"},
                "disabled": ["long-url", "nope"],
            }
        },
    )
    settings = CheckSettings.for_audit(audit)
    assert settings.site_https
    assert settings.threshold("title-too-long", "max_chars") == 80
    assert settings.threshold("title-too-short", "min_chars") == 10
    assert settings.severity("missing-h1") == "critical"
    assert settings.severity("orphan-page") == "warning"
    assert not settings.enabled("long-url") and settings.enabled("missing-h1")
    plain = CheckSettings.for_audit(Audit(start_url="http://example.com/", config={}))
    assert not plain.site_https and plain.threshold("title-too-long", "max_chars") == 60


def test_make_issue():
    audit_id = uuid.uuid4()
    settings = CheckSettings(severities={"sitemap-missing": "warning"}, disabled={"long-url"})
    issue = make_issue(audit_id, "sitemap-missing", details={"a": 1}, settings=settings)
    assert issue.id == issue_id_for(audit_id, "", "sitemap-missing", "")
    assert (issue.page_id, issue.page_url, issue.severity, issue.details) == (None, "", "warning", {"a": 1})
    linked = make_issue(
        audit_id,
        "broken-internal-link",
        page_id=uuid.UUID(int=5),
        page_url="http://x/a",
        dedupe_key="t",
        settings=settings,
    )
    assert linked.id == issue_id_for(audit_id, "http://x/a", "broken-internal-link", "t")
    assert linked.severity == "critical" and linked.page_id == uuid.UUID(int=5)
    assert make_issue(audit_id, "long-url", page_url="http://x/a", settings=settings) is None
    with pytest.raises(KeyError):
        make_issue(audit_id, "not-a-check", settings=settings)
    assert CHECKS_BY_TYPE["title-too-long"].thresholds == {"max_chars": 60}


def test_every_threshold_key_reads_in_words():
    """The project form labels each threshold input with these words: a key with a new unit suffix needs them."""
    for spec in CHECKS:
        for key in spec.thresholds:
            assert key.rsplit("_", 1)[-1] in THRESHOLD_UNITS, f"{spec.type}.{key}: no words for its unit"
            assert threshold_words(key).startswith(("Maximum, ", "Minimum, ")), key
    assert threshold_words("max_ms") == "Maximum, milliseconds"
    assert threshold_words("min_similarity_pct") == "Minimum, % similar"
