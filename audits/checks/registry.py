"""Every issue type of the catalogue (docs/CHECKS.md is generated from it): severity, texts, thresholds.

Per-project overrides live in `audit.config["checks"]`, shaped
`{"thresholds": {type: {key: value}}, "severities": {type: severity}, "disabled": [type, ...]}`;
`validate_overrides` is the strict gate for what a person submits, `CheckSettings.for_audit` the lenient
reader of what is stored.

Why one module of over 600 lines: most of it (`CHECKS`, about 520 lines) is a catalogue of data, one entry per
issue type in the order docs/CHECKS.md, the settings form and the issue screens list them; the code around it
(settings, overrides, `make_issue`) is about 200 lines. Splitting the table would scatter one list that is read
and reviewed as a whole.
"""

import logging
import uuid
from dataclasses import dataclass, field

from audits.models import Issue, issue_id_for
from crawler.limits import MAX_HTML_BYTES, MAX_LINK_TARGETS_PER_PAGE

logger = logging.getLogger(__name__)

CRITICAL, WARNING, INFO = Issue.Severity.CRITICAL.value, Issue.Severity.WARNING.value, Issue.Severity.INFO.value
SEVERITIES = (CRITICAL, WARNING, INFO)
SCOPES = ("page", "site", "lighthouse")

HTML_BODY_CAP_BYTES = MAX_HTML_BYTES  # the crawler reads nothing past it (15 MiB), so no check can ask for more
LARGE_HTML_DEFAULT_BYTES = 1024 * 1024  # heavy to download and parse long before a crawler stops reading


def as_uuid(value) -> uuid.UUID:
    """A page or audit id as a UUID, from what the database returns (a UUID, or its hex text on SQLite)."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


@dataclass(frozen=True)
class CheckSpec:
    type: str
    severity: str
    scope: str  # page | site | lighthouse
    title: str
    explanation: str  # one line: what is wrong and why it matters
    how_to_fix: str
    thresholds: dict = field(default_factory=dict)  # unit-named keys, e.g. {"max_chars": 60}
    # Largest value a threshold may be set to, when the crawler cannot measure past it.
    threshold_limits: dict = field(default_factory=dict)
    category: str = "other"  # one of CATEGORIES: how the issues screen groups and filters types
    scored: bool = True  # False: stated in reports but taking no points off the health score (UNSCORED_TYPES)


# Groups people filter the issues by, in display order. Every type names one (an unknown type fails at import).
CATEGORIES: dict[str, str] = {
    "crawlability": "Crawlability",
    "indexability": "Indexability",
    "links": "Links and redirects",
    "metadata": "Titles and metadata",
    "content": "Content",
    "performance": "Performance",
    "security": "Security",
    "urls": "URLs",
    "international": "International",
    "structured_data": "Structured data",
    "images": "Images",
    "pagination": "Pagination",
    "accessibility": "Accessibility",
    "custom": "Custom extraction",
}
_CATEGORY_TYPES: dict[str, tuple[str, ...]] = {
    "crawlability": (
        "blocked-page", "rate-limited-page", "server-error", "broken-page", "fetch-error", "non-html-content",
        "javascript-rendering-suspected", "robots-txt-invalid", "sitemap-missing", "sitemap-read-in-part",
        "crawl-rate-limited", "max-pages-reached", "crawl-urls-skipped", "html-too-large",
        # Issue 27 bots: which crawlers robots.txt and the server let in, llms.txt
        "search-bot-blocked-robots", "ai-bots-blocked-robots", "llms-txt-missing", "llms-txt-invalid",
        "llms-txt-broken-link", "bot-blocked", "bot-served-different-status-or-redirect", "bot-cloaking",
        "ai-bot-blocked-by-server",
        "render-links-only-after-js",  # Issue 27 render: what JavaScript changes (audits/checks/render.py)
    ),
    "indexability": (
        "noindex-page", "nofollow-page", "canonical-conflict", "canonicalized-page", "canonical-relative",
        "canonical-non-http", "canonical-target-not-ok", "sitemap-url-not-indexable",
        "render-canonical-changed", "render-robots-changed",
    ),
    "links": (
        "broken-script", "broken-stylesheet", "broken-font", "broken-icon",  # Issue 27: page resources
        "broken-internal-link", "internal-link-to-redirect", "redirect-chain", "redirect-loop",
        "meta-refresh-redirect", "no-outgoing-links", "too-many-links", "non-descriptive-link-text", "deep-page",
        "orphan-page", "too-many-link-targets",
        # Issue 27: outbound links (audits/checks/external.py)
        "external-link-broken", "external-link-server-error", "external-link-unreachable",
        "external-link-redirect-loop", "external-link-redirect-broken", "external-link-redirect-chain",
        "external-link-redirected", "external-link-insecure", "external-link-unverified", "external-links-unchecked",
    ),
    "metadata": (
        "missing-title", "multiple-titles", "title-too-long", "title-too-short", "duplicate-title",
        "missing-meta-description", "meta-description-too-long", "meta-description-too-short",
        "duplicate-meta-description", "invalid-structured-data", "missing-viewport", "missing-html-lang",
        "title-too-wide", "meta-description-too-wide", "render-title-changed", "render-meta-description-changed",
    ),
    "content": ("missing-h1", "multiple-h1", "heading-order-skip", "thin-content", "duplicate-content",
                "images-missing-alt", "near-duplicate-content", "soft-404", "lorem-ipsum", "render-h1-changed",
                "render-content-only-after-js"),
    "performance": ("slow-response", "large-html", "poor-performance-score", "poor-lcp", "poor-cls"),
    "security": ("mixed-content", "insecure-page", "form-posts-to-http", "target-blank-without-noopener",
                 "protocol-relative-resource", "missing-hsts", "missing-x-content-type-options",
                 "missing-x-frame-options", "missing-referrer-policy"),
    "urls": ("long-url", "url-uppercase", "url-underscores", "url-multiple-slashes", "url-non-ascii", "url-spaces",
             "url-too-many-parameters", "url-repetitive-path", "url-tracking-parameters"),
    "international": ("hreflang-invalid", "hreflang-missing-return-link"),
    "structured_data": ("structured-data-missing-required", "structured-data-missing-recommended"),
    "images": ("image-missing-size", "image-alt-too-long", "broken-image", "image-too-large"),
    "pagination": ("pagination-broken-sequence", "pagination-url-not-ok", "pagination-loop"),
    "accessibility": ("accessibility-violation",),
    "custom": ("custom-extraction",),
}  # fmt: skip
_CATEGORY_OF = {issue_type: category for category, types in _CATEGORY_TYPES.items() for issue_type in types}


# Findings that inform without saying the site is worse, so the health score leaves them out: what the site may
# have chosen (AI crawlers kept out, no llms.txt: a proposal few sites follow yet) and what the audit could not
# verify (a bot wall in front of another site, targets past the external link cap or time budget, sitemap URLs
# past the audit's reading caps).
UNSCORED_TYPES = frozenset(
    {"ai-bots-blocked-robots", "llms-txt-missing", "external-link-unverified", "external-links-unchecked",
     "sitemap-read-in-part"}
)  # fmt: skip


def _spec(type_, severity, scope, title, explanation, how_to_fix, thresholds=None, limits=None) -> CheckSpec:
    return CheckSpec(
        type_,
        severity,
        scope,
        title,
        explanation,
        how_to_fix,
        thresholds or {},
        limits or {},
        _CATEGORY_OF[type_],
        scored=type_ not in UNSCORED_TYPES,
    )


_P, _S, _L = "page", "site", "lighthouse"

CHECKS: tuple[CheckSpec, ...] = (
    # --- page checks ---------------------------------------------------------------------------------
    _spec(
        "blocked-page", CRITICAL, _P, "Blocked by the site",
        "The site refused the crawler (401/403, a firewall or bot challenge), so search engines may be refused too.",
        "Allow well-known crawlers through the firewall/CDN bot protection, or remove the login wall from "
        "pages meant to be public.",
    ),
    _spec(
        "rate-limited-page", WARNING, _P, "Rate limited (429)",
        "The site answered 429 Too Many Requests even after the crawler slowed down.",
        "Raise the rate limit for crawlers or lower the audit's crawl speed; search engines back off too.",
    ),
    _spec(
        "server-error", CRITICAL, _P, "Server error (5xx)",
        "The page answered with a 5xx server error; visitors and search engines get nothing.",
        "Check the server logs for this URL and fix the error; a lasting 5xx drops the page from search.",
    ),
    _spec(
        "broken-page", CRITICAL, _P, "Broken page (4xx)",
        "The URL answered with a 4xx client error (e.g. 404 Not Found, 410 Gone).",
        "Restore the page, redirect the URL (301) to its replacement, or remove the links that lead here.",
    ),
    _spec(
        "fetch-error", CRITICAL, _P, "No HTTP answer",
        "The URL gave no usable HTTP answer: DNS, connection, TLS, timeout or too many redirects.",
        "Check DNS, the TLS certificate and that the server answers within seconds.",
    ),
    _spec(
        "slow-response", WARNING, _P, "Slow server response",
        "The server took too long to answer: from the request's first byte sent to the response's last byte read "
        "(connecting and the crawler's own waiting are not counted).",
        "Cache the page or speed up the backend (database queries, rendering) for this URL.",
        {"max_ms": 1500},
    ),
    _spec(
        "non-html-content", INFO, _P, "Non-HTML content",
        "A linked internal URL answered 200 with a content type other than HTML; it was recorded, not parsed.",
        "Nothing to do if the file is meant to be linked; otherwise fix the link or the Content-Type header.",
    ),
    _spec(
        "noindex-page", WARNING, _P, "Noindex page",
        "A meta robots tag or X-Robots-Tag header tells search engines not to index this page.",
        "Remove the noindex directive if the page should appear in search results.",
    ),
    _spec(
        "nofollow-page", INFO, _P, "Nofollow page",
        "A meta robots tag or X-Robots-Tag header tells search engines not to follow this page's links.",
        "Remove the nofollow directive unless the page's links really must not pass signals.",
    ),
    _spec(
        "canonical-conflict", WARNING, _P, "Conflicting canonicals",
        "The page declares several different canonical URLs (HTML and Link header disagree, or more than one "
        "tag), so search engines may ignore all of them.",
        "Declare exactly one canonical URL, in the HTML or the Link header, and make both agree.",
    ),
    _spec(
        "canonicalized-page", INFO, _P, "Canonicalized to another URL",
        "The page names another URL as its canonical, so this URL is not meant to be indexed itself.",
        "Nothing to do if this is a duplicate; otherwise make the canonical point at the page itself.",
    ),
    _spec(
        "canonical-relative", INFO, _P, "Relative canonical URL",
        "The canonical href is relative; a mistake in the base URL then points it at the wrong page.",
        "Write the canonical as an absolute URL including https:// and the host.",
    ),
    _spec(
        "canonical-non-http", WARNING, _P, "Canonical URL not http(s)",
        "The canonical href is an absolute URL of another scheme (file:///, ftp://, …), often a path from the "
        "build machine; search engines ignore it, so the page has no canonical in effect.",
        "Write the canonical as the page's public https:// URL; check the template or build step that wrote it.",
    ),
    _spec(
        "deep-page", INFO, _P, "Deep in the site",
        "The page is many clicks away from the start page; deep pages get crawled and ranked less.",
        "Link to the page from higher up (navigation, hub pages, related links).",
        {"min_depth": 5},
    ),
    _spec(
        "javascript-rendering-suspected", WARNING, _P, "Content rendered by JavaScript",
        "The HTML holds an empty app root, scripts and almost no text, headings, links or images: the content "
        "is probably rendered in the browser.",
        "Render the content on the server (SSR or pre-rendering) so crawlers see it without running scripts.",
        {"min_words": 20},
    ),
    # --- Issue 27 render: the HTML as served beside the rendered page (page, rendering on) -------------
    _spec(
        "render-canonical-changed", WARNING, _P, "Canonical changed by JavaScript",
        "The canonical URL of the rendered page differs from the HTML as served (or exists only after "
        "JavaScript): crawlers that do not run scripts, and Google before rendering, see another canonical.",
        "Write the final canonical into the HTML the server sends and keep scripts from changing it.",
    ),
    _spec(
        "render-robots-changed", WARNING, _P, "Robots directives changed by JavaScript",
        "The meta robots directives of the rendered page differ from the HTML as served; a noindex added by "
        "JavaScript is critical (the page drops out of search), and one removed by it is never seen by Google.",
        "Send the robots directives the page should have in the served HTML (or the X-Robots-Tag header) and "
        "keep scripts from changing them.",
    ),
    _spec(
        "render-title-changed", WARNING, _P, "Title changed by JavaScript",
        "The rendered page's title differs from the HTML as served (or exists only after JavaScript): search "
        "engines before rendering, social previews and other crawlers show the served one.",
        "Put the final title into the HTML the server sends (server-side rendering or pre-rendering).",
    ),
    _spec(
        "render-meta-description-changed", INFO, _P, "Meta description changed by JavaScript",
        "The rendered page's meta description differs from the HTML as served (or exists only after "
        "JavaScript); crawlers that do not run scripts read the served one.",
        "Put the final meta description into the HTML the server sends.",
    ),
    _spec(
        "render-h1-changed", INFO, _P, "H1 changed by JavaScript",
        "The rendered page's first H1 differs from the HTML as served (or exists only after JavaScript).",
        "Render the main heading on the server so every crawler reads the same one.",
    ),
    _spec(
        "render-links-only-after-js", INFO, _P, "Links only after JavaScript",
        "Link targets appear only in the rendered page, not in the HTML as served: crawlers that do not run "
        "scripts never find them, and Google finds them only after rendering.",
        "Write navigation and content links as <a href> into the served HTML.",
        {"min_links": 1},
    ),
    _spec(
        "render-content-only-after-js", INFO, _P, "Content only after JavaScript",
        "The rendered page has many more words than the HTML as served: that text exists only after JavaScript "
        "and is invisible to crawlers that do not run scripts.",
        "Render the main content on the server (SSR, static generation or pre-rendering).",
        {"min_words": 25, "min_added_percent": 10},
    ),
    _spec(
        "missing-title", CRITICAL, _P, "Missing title",
        "The page has no <title> or an empty one; search results need it as the headline.",
        "Add a unique, descriptive <title> to the page's <head>.",
    ),
    _spec(
        "multiple-titles", WARNING, _P, "Several titles",
        "The page has more than one <title>; search engines pick one of them.",
        "Keep exactly one <title> in the <head>.",
    ),
    _spec(
        "title-too-long", WARNING, _P, "Title too long",
        "The title is longer than search results show; the end gets cut off.",
        "Shorten the title, keeping the important words first.",
        {"max_chars": 60},
    ),
    _spec(
        "title-too-short", WARNING, _P, "Title too short",
        "The title is very short and says little about the page.",
        "Write a title that describes the page's content.",
        {"min_chars": 10},
    ),
    _spec(
        "missing-meta-description", WARNING, _P, "Missing meta description",
        "The page has no meta description or an empty one; search engines then make up a snippet.",
        'Add <meta name="description" content="…"> summing up the page.',
    ),
    _spec(
        "meta-description-too-long", INFO, _P, "Meta description too long",
        "The meta description is longer than search results show.",
        "Shorten the description to its essential sentence.",
        {"max_chars": 160},
    ),
    _spec(
        "meta-description-too-short", INFO, _P, "Meta description too short",
        "The meta description is very short and says little about the page.",
        "Write a description of one or two sentences that summarises the page.",
        {"min_chars": 70},
    ),
    _spec(
        "missing-h1", WARNING, _P, "Missing H1",
        "The page has no non-empty <h1> heading.",
        "Add one <h1> that states what the page is about.",
    ),
    _spec(
        "multiple-h1", INFO, _P, "Several H1 headings",
        "The page has more than one non-empty <h1>.",
        "Keep one <h1> for the page's topic and use <h2>–<h6> below it.",
    ),
    _spec(
        "heading-order-skip", INFO, _P, "Heading levels skipped",
        "A heading jumps down more than one level (e.g. h2 -> h4), which breaks the outline.",
        "Use heading levels in order; style headings with CSS instead of picking levels for their look.",
        {"max_level_jump": 1},
    ),
    _spec(
        "thin-content", WARNING, _P, "Thin content",
        "An indexable page with very little visible text; it is unlikely to rank. A page in Chinese or Japanese "
        "is counted in characters, two to a word.",
        "Add useful content, merge the page into a related one, or mark it noindex.",
        {"min_words": 150},
    ),
    _spec(
        "images-missing-alt", WARNING, _P, "Images without alt",
        'An <img> has no alt attribute (alt="" is fine for decorative images).',
        'Add an alt text describing each image, or alt="" for purely decorative ones.',
    ),
    _spec(
        "no-outgoing-links", WARNING, _P, "No outgoing links",
        "An indexable page with no crawlable links: a dead end for visitors and crawlers.",
        "Link to related pages, or at least include the site navigation as plain <a href> links.",
    ),
    _spec(
        "too-many-links", INFO, _P, "Too many links",
        "The page has a very large number of links, which dilutes each one.",
        "Trim navigation and footer links; split long link lists into pages.",
        {"max_links": 250},
    ),
    _spec(
        "too-many-link-targets", INFO, _P, "Too many distinct link targets",
        f"The page links to more than {MAX_LINK_TARGETS_PER_PAGE:,} distinct URLs: every link was counted, but the "
        f"links to URLs past the first {MAX_LINK_TARGETS_PER_PAGE:,} were neither stored nor followed, so their "
        "targets' inlinks and broken links are incomplete.",
        "Split the page into smaller ones (pagination, per-section indexes) so each lists a manageable set of links.",
    ),
    _spec(
        "non-descriptive-link-text", INFO, _P, "Non-descriptive link text",
        'A link\'s text is only "click here", "more" or the like and says nothing about its target.',
        "Use link text that names what the target page is about.",
    ),
    _spec(
        "missing-viewport", INFO, _P, "Missing viewport",
        'The page has no <meta name="viewport">, so phones render it as a zoomed-out desktop page.',
        'Add <meta name="viewport" content="width=device-width, initial-scale=1">.',
    ),
    _spec(
        "missing-html-lang", INFO, _P, "Missing html lang",
        "The <html> element declares no language (lang attribute).",
        'Add the page\'s language, e.g. <html lang="en">.',
    ),
    _spec(
        "mixed-content", WARNING, _P, "Mixed content",
        "An https page loads a script, stylesheet, image or iframe over plain http; browsers block or flag it.",
        "Load every resource over https.",
    ),
    _spec(
        "insecure-page", WARNING, _P, "Page served over http",
        "An internal page answered over plain http although the site runs on https.",
        "Redirect (301) every http URL to its https version and link to https URLs.",
    ),
    _spec(
        "meta-refresh-redirect", WARNING, _P, "Meta refresh redirect",
        '<meta http-equiv="refresh"> sends visitors to another URL; search engines prefer HTTP redirects.',
        "Replace the meta refresh with a 301 redirect on the server.",
    ),
    _spec(
        "invalid-structured-data", WARNING, _P, "Invalid JSON-LD",
        "A JSON-LD block does not parse as JSON, so search engines ignore it.",
        "Fix the JSON syntax (quotes, commas, brackets) and test it with a structured data validator.",
    ),
    _spec(
        "large-html", WARNING, _P, "Large HTML",
        "The HTML document is very large: slow to download and parse, for visitors and crawlers.",
        "Move inline data, scripts and styles out of the HTML and paginate long lists.",
        {"max_bytes": LARGE_HTML_DEFAULT_BYTES},
        {"max_bytes": HTML_BODY_CAP_BYTES},
    ),
    _spec(
        "html-too-large", WARNING, _P, "HTML over 15 MB",
        "The HTML is larger than 15 MiB, all that Googlebot reads of a page: text and links past that point are "
        "ignored by Google and were not read by this audit either.",
        "Cut the page below 15 MiB: move inline data, scripts and styles out and paginate long lists.",
    ),
    _spec(
        "long-url", INFO, _P, "Long URL",
        "The URL is very long, hard to read and share.",
        "Use short, readable URLs; drop needless parameters and path segments.",
        {"max_chars": 115},
    ),
    _spec(
        "hreflang-invalid", WARNING, _P, "Invalid hreflang",
        "An hreflang value is not a valid language(-region) code or x-default, so it is ignored.",
        'Use ISO 639-1 language codes with optional ISO 3166-1 regions, e.g. "en", "en-GB", "x-default".',
    ),
    _spec(
        "title-too-wide", WARNING, _P, "Title too wide",
        "The title is wider than Google shows on desktop (Arial 20 px, about 580 px); the end is cut off with …, "
        "however few characters it has.",
        "Shorten the title or use narrower words; keep what matters in the first 580 px.",
        {"max_px": 580},
    ),
    _spec(
        "meta-description-too-wide", INFO, _P, "Meta description too wide",
        "The meta description is wider than Google's desktop snippet (Arial 14 px, about 920 px); the rest is cut.",
        "Shorten the description so its point fits in the first 920 px.",
        {"max_px": 920},
    ),
    _spec(
        "lorem-ipsum", WARNING, _P, "Placeholder text (lorem ipsum)",
        'The page\'s main text contains "lorem ipsum" placeholder text (code samples, where it is the subject, are '
        "not counted): a draft went live. The evidence shows the wording found.",
        "Replace the placeholder with the real text, or unpublish the page until it is written.",
    ),
    _spec(
        "url-uppercase", INFO, _P, "Uppercase in URL",
        "The URL's path has capital letters; paths are case-sensitive, so /Page and /page can be two duplicates.",
        "Use lower-case URLs and 301-redirect the mixed-case ones to them.",
    ),
    _spec(
        "url-underscores", INFO, _P, "Underscores in URL",
        "The URL's path uses underscores; search engines read hyphens, not underscores, as word separators.",
        "Use hyphens between words in new URLs; redirect (301) old ones only when you change them anyway.",
    ),
    _spec(
        "url-multiple-slashes", WARNING, _P, "Multiple slashes in URL",
        'The URL\'s path has "//"; usually a template joining paths badly, giving one page several URLs.',
        "Fix the link or template that builds the URL, and redirect the double-slash URL to the clean one.",
    ),
    _spec(
        "url-non-ascii", INFO, _P, "Non-ASCII characters in URL",
        "The URL's path or query has non-ASCII characters; they are percent-encoded when shared and some tools "
        "mangle them.",
        "Prefer ASCII slugs (transliterate), or make sure every link uses the same encoded form.",
    ),
    _spec(
        "url-spaces", WARNING, _P, "Spaces in URL",
        "The URL has spaces (%20): links break when copied and the URL is hard to read.",
        "Replace spaces with hyphens and redirect (301) the old URL.",
    ),
    _spec(
        "url-too-many-parameters", INFO, _P, "Too many URL parameters",
        "The URL has many query parameters; such URLs multiply (filters, sorts) and waste the crawl budget.",
        "Keep parameters for what changes the content; link the clean URL and canonicalize the variants.",
        {"max_params": 3},
    ),
    _spec(
        "url-repetitive-path", INFO, _P, "Repeated path segment",
        "A segment repeats in the URL's path (/shop/shop/, /a/b/a/b/): often relative links that stack up.",
        "Fix the relative links (use root-relative /paths) and redirect the repeated URL.",
    ),
    _spec(
        "url-tracking-parameters", WARNING, _P, "Tracking or session parameters in internal links",
        "The page links to internal URLs with utm_*, gclid, fbclid or session id parameters: every variant is "
        "crawled as its own URL and analytics attribute visits wrongly.",
        "Link the clean URL; keep campaign tags for links from other sites and ids in cookies.",
    ),
    _spec(
        "form-posts-to-http", WARNING, _P, "Form posts to http",
        "A <form> on an https page (or https site) sends its data to an http URL: it travels unencrypted and "
        "browsers warn before sending.",
        "Point the form's action at the https URL (or a relative one).",
    ),
    _spec(
        "target-blank-without-noopener", INFO, _P, "target=_blank without noopener",
        'A link to another site opens a new tab (target="_blank") without rel="noopener": in older browsers the '
        "opened page can navigate this one (tabnabbing).",
        'Add rel="noopener" (or "noopener noreferrer") to links that open other sites in a new tab.',
    ),
    _spec(
        "protocol-relative-resource", INFO, _P, "Protocol-relative resource",
        'A script, stylesheet, image or frame is loaded from a "//host/…" URL: over http pages it is fetched '
        "unencrypted, and the pattern is obsolete.",
        "Write the resource URL with https://.",
    ),
    # --- site checks ---------------------------------------------------------------------------------
    _spec(
        "broken-internal-link", CRITICAL, _S, "Broken internal link",
        "A crawled page links to an internal URL that answered 400 or more, or gave no answer.",
        "Update the link to the right URL, or restore/redirect the target.",
    ),
    _spec(
        "internal-link-to-redirect", INFO, _S, "Internal link to a redirect",
        "A page links to an internal URL that redirects; every click and crawl pays an extra hop.",
        "Link straight to the final URL.",
    ),
    _spec(
        "redirect-chain", WARNING, _S, "Redirect chain",
        "A URL redirects several times before reaching its final URL.",
        "Redirect the first URL straight to the final one.",
        {"min_hops": 2},
    ),
    _spec(
        "redirect-loop", CRITICAL, _S, "Redirect loop",
        "A redirect chain comes back to a URL already in it; it never ends.",
        "Fix the redirect rules so the chain ends at a page that answers 200.",
    ),
    _spec(
        "duplicate-title", WARNING, _S, "Duplicate title",
        "Several indexable pages share the same title.",
        "Give each page a title that describes what makes it different.",
    ),
    _spec(
        "duplicate-meta-description", INFO, _S, "Duplicate meta description",
        "Several indexable pages share the same meta description.",
        "Write a description for each page, or leave it out rather than repeating one.",
    ),
    _spec(
        "duplicate-content", WARNING, _S, "Duplicate content",
        "Several indexable pages have the same main text (navigation, header, footer and aside left out).",
        "Keep one version: redirect or canonicalize the others to it.",
    ),
    _spec(
        "near-duplicate-content", WARNING, _S, "Near-duplicate content",
        "An indexable page's main text is nearly the same as another's (the share of its words, counted with "
        "their repeats, that the other has too); "
        "search engines pick one and ignore the others.",
        "Merge the pages, make each one distinct, or canonicalize the variants to the main one.",
        {"min_similarity_pct": 90, "min_words": 50},
        {"min_similarity_pct": 100},
    ),
    _spec(
        "soft-404", WARNING, _S, "Soft 404",
        "A page answers 200 but reads like an error page (its title or heading says not found, or a short text "
        "outside code samples says the page does not exist), or the same tiny text is served on many URLs: search "
        "engines treat it as a 404 and waste crawls on it.",
        "Answer 404 or 410 for pages that do not exist (or redirect them to a real replacement).",
        {"max_words": 50, "min_pages": 5},
    ),
    _spec(
        "missing-hsts", WARNING, _S, "No HSTS header",
        "https pages come without Strict-Transport-Security, so a visitor's first request can be downgraded to "
        "http.",
        'Send "Strict-Transport-Security: max-age=31536000; includeSubDomains" on every https response.',
    ),
    _spec(
        "missing-x-content-type-options", INFO, _S, "No X-Content-Type-Options",
        'HTML pages come without "X-Content-Type-Options: nosniff", so browsers may guess content types.',
        'Send "X-Content-Type-Options: nosniff" on every response (server or CDN configuration).',
    ),
    _spec(
        "missing-x-frame-options", INFO, _S, "No clickjacking protection",
        "HTML pages have neither X-Frame-Options nor a Content-Security-Policy frame-ancestors directive: any "
        "site can frame them (clickjacking).",
        "Send \"Content-Security-Policy: frame-ancestors 'self'\" (or X-Frame-Options: SAMEORIGIN).",
    ),
    _spec(
        "missing-referrer-policy", INFO, _S, "No Referrer-Policy",
        "HTML pages come without a Referrer-Policy header; browsers' defaults differ on what they send to other "
        "sites.",
        'Send "Referrer-Policy: strict-origin-when-cross-origin" (or stricter).',
    ),
    _spec(
        "orphan-page", WARNING, _S, "Orphan page",
        "A URL known only from the sitemap: no crawled page links to it and no redirect leads to it.",
        "Link to the page from related pages or the navigation, or drop it from the sitemap.",
    ),
    _spec(
        "canonical-target-not-ok", WARNING, _S, "Canonical target not OK",
        "The canonical URL answered with an error or redirects, so search engines may ignore the canonical.",
        "Point the canonical at a URL that answers 200 directly.",
    ),
    _spec(
        "hreflang-missing-return-link", WARNING, _S, "Hreflang without return link",
        "Page A names page B as an alternate language version, but B does not name A back.",
        "Add the reciprocal hreflang annotation on every alternate page.",
    ),
    _spec(
        "sitemap-url-not-indexable", WARNING, _S, "Non-indexable URL in sitemap",
        "A URL in the sitemap answered non-2xx, is noindex, or is canonicalized elsewhere.",
        "List only final, indexable URLs in the sitemap.",
    ),
    _spec(
        "sitemap-missing", INFO, _S, "No sitemap",
        "No XML sitemap was found in robots.txt or at /sitemap.xml.",
        "Publish a sitemap and name it in robots.txt with a Sitemap: line.",
    ),
    _spec(
        "sitemap-read-in-part", INFO, _S, "Sitemaps read in part",
        "Discovery stopped reading the sitemaps at one of the audit's caps (the sitemap URLs it reads for its page "
        "limit, the number of sitemap documents, or the time for reading them), so later sitemap URLs are not in "
        "the audit: pages only they name are not crawled, and in-sitemap and orphan findings cover what was read.",
        "Raise the audit's page limit (it reads twenty sitemap URLs a page, up to 5,000,000), or audit the "
        "sitemap that matters in sitemap mode.",
    ),
    _spec(
        "robots-txt-invalid", INFO, _S, "Invalid robots.txt lines",
        "robots.txt has lines that do not parse; crawlers ignore them.",
        'Fix or remove those lines; each line is "Directive: value" or a # comment.',
    ),
    _spec(
        "crawl-rate-limited", WARNING, _S, "Crawl stopped by rate limiting",
        "The crawl stopped early because the site kept answering 429 Too Many Requests.",
        "Allow the crawler a higher request rate, or audit with fewer pages at a time.",
    ),
    _spec(
        "crawl-urls-skipped", WARNING, _S, "URLs skipped by a crawl trap rule",
        "New URLs found by links were not crawled because their shape is a sign of an endless URL space: paths "
        "deeper than the limit or repeating themselves, calendar dates far from today or more dated URLs of one "
        "shape than the limit, more query-string variants of one path than the limit (or, when the project set "
        "one, more URLs of one shape than its cap). The rule, the URL shape, how many URLs and examples are named.",
        "If the skipped URLs are real pages, raise the setting the issue names in the project's settings; if "
        "they are a trap, keep crawlers out of it (nofollow, robots.txt) so search engines do not waste time.",
    ),
    _spec(
        "max-pages-reached", INFO, _S, "Page limit reached",
        "The crawl stopped at the audit's page limit with URLs still waiting; the site was not fully audited.",
        "Raise the page limit, or narrow the audit with include/exclude patterns.",
    ),
    _spec(
        "custom-extraction", WARNING, _P, "Custom extraction rule broken",
        "A value the project's custom extractors read from the page is missing, lacks the expected text or "
        "does not match the expected pattern (the project's extractor rules).",
        "Fix the page's template where the value comes from, or change the extractor's rule in the project "
        "settings if the rule is wrong.",
    ),
    # --- external links (site; Issue 27: audits/checks/external.py, asked by audits/pipeline/external.py) --
    _spec(
        "external-link-broken", WARNING, _S, "Broken external link",
        "A page links to another site's URL that answered 4xx (404 Not Found, 410 Gone, …): visitors who follow it "
        "land on an error page.",
        "Link to the page's new address, a working replacement or an archived copy, or remove the link.",
    ),
    _spec(
        "external-link-server-error", WARNING, _S, "External link to a server error",
        "A page links to another site's URL that answered 5xx: the other site is failing (it may be temporary).",
        "Check the link again later; if the error lasts, link to another source or remove the link.",
    ),
    _spec(
        "external-link-unreachable", WARNING, _S, "External link unreachable",
        "A page links to another site that gave no answer: its host name does not resolve, the connection or TLS "
        "handshake failed, or it did not answer in time (the evidence says which).",
        "Check the address (a typo, an expired domain); link to a working source or remove the link.",
    ),
    _spec(
        "external-link-redirect-loop", WARNING, _S, "External link to a redirect loop",
        "A page links to another site's URL whose redirects come back to themselves or never end.",
        "Link to the page the redirects were meant to reach, or remove the link.",
    ),
    _spec(
        "external-link-redirect-broken", WARNING, _S, "External link redirects to an error",
        "A page links to another site's URL that redirects to a page answering 4xx or 5xx.",
        "Link to the page's current address, or remove the link.",
    ),
    _spec(
        "external-link-redirect-chain", INFO, _S, "External link through a redirect chain",
        "A page links to another site's URL that takes several redirects to reach its page: every visit pays them.",
        "Link straight to the final URL the evidence names.",
        {"min_hops": 3},
    ),
    _spec(
        "external-link-redirected", INFO, _S, "External link redirects",
        "A page links to another site's URL that redirects to a working page (often http to https, or a moved "
        "page).",
        "Link straight to the final URL the evidence names.",
    ),
    _spec(
        "external-link-insecure", INFO, _S, "Insecure external link",
        "An https page links to another site over plain http: the visit leaves encryption and can be intercepted "
        "or rewritten on the way.",
        "Link to the https address of the other site where it has one.",
    ),
    _spec(
        "external-link-unverified", INFO, _S, "External link could not be verified",
        "Another site answered the check with a bot wall (403, 429, 999 or a challenge page such as Cloudflare's "
        "\"Just a moment…\"), or its address is private: the link may work for a person, so it is not called "
        "broken.",
        "Open the link in a browser; if it works, nothing needs doing.",
    ),
    _spec(
        "external-links-unchecked", INFO, _S, "External links left unchecked",
        "The audit's cap on external link targets or its time budget for checking them left targets unchecked "
        "(the most linked were checked first).",
        "Raise the project's external link cap (external_links_max) or time budget (external_links_budget_s).",
    ),
    # --- structured data, images (page) -------------------------------------------------------------
    _spec(
        "structured-data-missing-required", WARNING, _P, "Rich result: required property missing",
        "A structured-data entity (JSON-LD, microdata or RDFa) of a rich-result type lacks a property Google "
        "requires, so the page cannot show as that rich result.",
        "Add the listed properties to the entity; check it with Google's Rich Results Test.",
    ),
    _spec(
        "structured-data-missing-recommended", INFO, _P, "Rich result: recommended property missing",
        "A structured-data entity of a rich-result type lacks properties Google recommends; the result shows "
        "with less information.",
        "Add the listed properties where the page has that information.",
    ),
    _spec(
        "image-missing-size", INFO, _P, "Images without width and height",
        "<img> elements without both width and height attributes: the browser cannot reserve their space, so "
        "the layout shifts as they load (CLS).",
        "Give every <img> its intrinsic width and height attributes (CSS can still scale it).",
    ),
    _spec(
        "image-alt-too-long", INFO, _P, "Image alt text too long",
        "Alt text longer than the threshold: screen readers read it all, and long alts are often keyword lists.",
        "Describe the image in a short phrase; put long descriptions in the page text or a caption.",
        {"max_chars": 100},
    ),
    # --- images, pagination (site) -------------------------------------------------------------------
    _spec(
        "broken-image", WARNING, _S, "Broken image",
        "An internal image the page shows answered 4xx/5xx or not at all: visitors see a broken picture and "
        "image search drops it (up to 500 distinct images are asked per audit).",
        "Restore the image, fix the src, or remove the <img>.",
    ),
    _spec(
        "image-too-large", INFO, _S, "Image too large",
        "An internal image is larger than the threshold (its Content-Length): slow to load, worse LCP on mobile.",
        "Compress the image, serve a modern format (WebP/AVIF) and sizes that fit the layout (srcset).",
        {"max_kb": 300},
    ),
    # --- page resources (site; Issue 27: audits/checks/resources.py, asked by audits/pipeline/resources.py) ---
    _spec(
        "broken-script", WARNING, _S, "Broken script",
        "A script the page loads (<script src>, a script preload) answered 4xx/5xx or not at all: whatever it "
        "does (menus, search, maths, analytics) does not happen. Asked once per audit, on this site or another.",
        "Restore the file or fix the src (a moved CDN path, a removed version), or remove the <script>.",
    ),
    _spec(
        "broken-stylesheet", WARNING, _S, "Broken stylesheet",
        "A stylesheet the page loads (<link rel=stylesheet>, a style preload) answered 4xx/5xx or not at all: "
        "the page shows unstyled or with a broken layout.",
        "Restore the stylesheet or fix its href, or remove the <link>.",
    ),
    _spec(
        "broken-font", WARNING, _S, "Broken font",
        "A web font the page loads (an @font-face src of a stylesheet it loads, or a font preload) answered "
        "4xx/5xx or not at all: text falls back to another font, or stays invisible until the browser gives up.",
        "Restore the font file or fix the url() in the stylesheet's @font-face (it resolves against the "
        "stylesheet's own URL), or remove the preload.",
    ),
    _spec(
        "broken-icon", INFO, _S, "Broken icon",
        "An icon the page names (<link rel=icon>, shortcut icon, apple-touch-icon, mask-icon) answered 4xx/5xx or "
        "not at all: browsers, bookmarks and search results show a blank or generic icon.",
        "Restore the icon file or fix the href in the page's <link rel=icon>.",
    ),
    # --- pagination (site) ---------------------------------------------------------------------------
    _spec(
        "pagination-broken-sequence", WARNING, _S, "Broken pagination sequence",
        'A page\'s rel="next" target does not point back to it with rel="prev" (or the reverse), so the series '
        "does not chain.",
        'Make each page\'s rel="next" and the next page\'s rel="prev" name each other.',
    ),
    _spec(
        "pagination-url-not-ok", WARNING, _S, "Paginated URL not indexable",
        'A rel="next"/"prev" target answered non-2xx, is noindex or canonicalized elsewhere.',
        "Point pagination links at final, indexable pages of the series.",
    ),
    _spec(
        "pagination-loop", WARNING, _S, "Pagination loop",
        'Following rel="next" comes back to a page already in the series: crawlers go round in circles.',
        'End the series: the last page has no rel="next".',
    ),
    # --- Issue 27 bots: bot and AI access (site; audits/checks/bots.py) ----------------------------------
    _spec(
        "search-bot-blocked-robots", CRITICAL, _S, "Search engine crawler blocked by robots.txt",
        "robots.txt keeps a search engine's crawler (Googlebot, Bingbot, Applebot, …) out of the start page or "
        "of folders holding indexable pages, so those pages drop out of that search engine. The crawler, the "
        "robots.txt group that applies to it and where it is blocked are named (an image crawler such as "
        "Googlebot-Image kept out is a warning: it costs image search, not the pages).",
        "Remove or narrow the Disallow lines of the group named (or add an Allow) so the crawler may fetch "
        "the pages meant to be found; check the result in the search engine's robots.txt tester.",
    ),
    _spec(
        "ai-bots-blocked-robots", INFO, _S, "AI crawlers blocked by robots.txt",
        "robots.txt keeps AI crawlers (GPTBot, ClaudeBot, Google-Extended, CCBot, …) out of the site or of some "
        "folders. It may be intended (no training on the content) but it also keeps the site out of AI answers "
        "and AI search; which crawlers, by which group and where are listed.",
        "If it is intended, nothing to do. If not, remove the Disallow lines of those crawlers' groups (or of a "
        "CDN's managed robots.txt); search-only agents such as OAI-SearchBot can be let in apart from training.",
    ),
    _spec(
        "llms-txt-missing", INFO, _S, "No llms.txt",
        "The site has no /llms.txt, the proposed Markdown index (llmstxt.org) that tells language models what "
        "the site is and where its key pages are.",
        "Publish /llms.txt: an H1 with the site's name, a > summary, then H2 sections listing key pages as "
        "\"- [name](url): notes\".",
    ),
    _spec(
        "llms-txt-invalid", WARNING, _S, "llms.txt does not follow the format",
        "/llms.txt exists but does not follow the llmstxt.org structure (an H1 title first, an optional "
        "blockquote summary, H2 sections of Markdown link lists), so tools may not read it; what is wrong is "
        "named with line numbers.",
        "Fix the lines named: start with \"# Title\", keep each H2 section to list items \"- [name](url): notes\".",
    ),
    _spec(
        "llms-txt-broken-link", WARNING, _S, "Broken link in llms.txt",
        "A link listed in /llms.txt answers 4xx/5xx or not at all (internal links are read from the crawl, others "
        "asked once; bot protection answers from other hosts are not counted as broken).",
        "Point the link at the page's current URL or remove it from llms.txt.",
    ),
    _spec(
        "bot-blocked", CRITICAL, _S, "Search engine bot refused by the server",
        "A sampled page answered a search engine's user agent (Googlebot smartphone, Bingbot) with 401/403/429, "
        "a 5xx or a bot challenge while a browser got it (200): that search engine cannot index it. Checked on "
        "the start page and one page per URL template.",
        "Allow the search engine's verified crawlers through the firewall, CDN or bot protection (verify them by "
        "reverse DNS or the published IP ranges rather than blocking their user agent).",
    ),
    _spec(
        "bot-served-different-status-or-redirect", WARNING, _S, "Bot served a different status or redirect",
        "A crawler's user agent got another HTTP status or was redirected elsewhere than a browser for the same "
        "sampled page: the crawler indexes something other than what visitors see.",
        "Serve crawlers and browsers the same status and redirects; remove user-agent based redirects.",
    ),
    _spec(
        "bot-cloaking", WARNING, _S, "Bot served different content (cloaking)",
        "A crawler's user agent got the page (200, like the browser) with another title, canonical, robots "
        "directives or a main text less alike than the threshold: search engines treat content served to "
        "crawlers only as cloaking. Both values are shown.",
        "Serve the same HTML to every user agent (dynamic rendering must give the same content); check the "
        "CDN, A/B tests and bot-specific templates.",
        {"min_similarity_pct": 80},
    ),
    _spec(
        "ai-bot-blocked-by-server", INFO, _S, "AI crawler refused by the server",
        "A sampled page answered an AI crawler's user agent (GPTBot) with 401/403/429, a 5xx or a challenge while "
        "a browser got it: often a CDN's AI-bot blocking, maybe intended; the site is then absent from that "
        "AI's answers.",
        "If it is not intended, allow the AI crawler in the CDN or firewall settings (and in robots.txt).",
    ),
    # --- Lighthouse checks ---------------------------------------------------------------------------
    _spec(
        "accessibility-violation", WARNING, _L, "Accessibility violation",
        "axe-core (in the Lighthouse run of a sampled page) found a serious or critical accessibility failure; "
        "critical ones are reported as critical unless the project sets the severity.",
        "Fix the listed rule on the offending elements (the Lighthouse report names them); see the axe rule docs.",
    ),
    _spec(
        "poor-performance-score", WARNING, _L, "Poor performance score",
        "Lighthouse scored the page's performance low (mobile or desktop).",
        "Follow the Lighthouse report's opportunities: smaller images, less JavaScript, caching.",
        {"min_score": 50},
    ),
    _spec(
        "poor-lcp", WARNING, _L, "Slow Largest Contentful Paint",
        "The largest element took too long to render.",
        "Speed up the server response and the main image or text block (preload, compress, cache).",
        {"max_ms": 2500},
    ),
    _spec(
        "poor-cls", WARNING, _L, "Layout shifts",
        "The page layout shifts noticeably while loading (CLS).",
        "Reserve space for images, ads and embeds; avoid inserting content above what is shown.",
        {"max_cls": 0.1},
    ),
)  # fmt: skip

CHECKS_BY_TYPE: dict[str, CheckSpec] = {spec.type: spec for spec in CHECKS}
PAGE_TYPES = tuple(s.type for s in CHECKS if s.scope == _P)
SITE_TYPES = tuple(s.type for s in CHECKS if s.scope == _S)
LIGHTHOUSE_TYPES = tuple(s.type for s in CHECKS if s.scope == _L)


# What a threshold key measures, in words, by its unit suffix (keys are unit-named: max_ms, min_words, …);
# the project form labels its inputs with it. A new suffix without words fails tests/audits/checks.
THRESHOLD_UNITS = {
    "ms": "milliseconds",
    "chars": "characters",
    "px": "pixels",
    "kb": "KB",
    "bytes": "bytes",
    "words": "words",
    "depth": "clicks from the start page",
    "links": "links",
    "params": "query parameters",
    "hops": "redirects",
    "pct": "% similar",
    "pages": "pages",
    "score": "Lighthouse score (0–100)",
    "cls": "CLS",
    "jump": "heading levels skipped",
    "percent": "% of the rendered words",  # Issue 27 render
}


def threshold_words(key: str) -> str:
    """A threshold key in words, e.g. max_ms "Maximum, milliseconds", min_similarity_pct "Minimum, % similar"."""
    bound = {"max": "Maximum", "min": "Minimum"}.get(key.split("_", 1)[0], "Limit")
    return f"{bound}, {THRESHOLD_UNITS.get(key.rsplit('_', 1)[-1], key.replace('_', ' '))}"


def spec_for(issue_type: str) -> CheckSpec:
    try:
        return CHECKS_BY_TYPE[issue_type]
    except KeyError:
        raise KeyError(f"unknown issue type {issue_type!r}") from None


# --- overrides ---------------------------------------------------------------------------------------


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not NaN


def _check_threshold(issue_type: str, key: str, value) -> str | None:
    """Why this override cannot be used, or None when it can."""
    spec = CHECKS_BY_TYPE.get(issue_type)
    if spec is None:
        return f"unknown check type {issue_type!r}"
    if key not in spec.thresholds:
        known = ", ".join(sorted(spec.thresholds)) or "none"
        return f"{issue_type} has no threshold {key!r} (known: {known})"
    default = spec.thresholds[key]
    if not _number(value) or value < 0:
        return f"threshold {issue_type}.{key} must be a number >= 0, not {value!r}"
    if isinstance(default, int) and not float(value).is_integer():
        return f"threshold {issue_type}.{key} must be a whole number, not {value!r}"
    limit = spec.threshold_limits.get(key)
    if limit is not None and value > limit:
        return f"threshold {issue_type}.{key} cannot exceed {limit} (the crawler measures no further)"
    return None


def _parse_overrides(raw, *, strict: bool) -> dict:
    """Normalised overrides; strict raises ValueError on the first problem, lenient skips what is wrong."""
    problems: list[str] = []

    def bad(message: str) -> None:
        if strict:
            raise ValueError(message)
        problems.append(message)

    result: dict = {"thresholds": {}, "severities": {}, "disabled": []}
    if raw is None:
        return result
    if not isinstance(raw, dict):
        bad("check overrides must be an object with thresholds, severities and disabled")
        return result
    for key in raw:
        if key not in result:
            bad(f"unknown check override section {key!r} (known: thresholds, severities, disabled)")

    thresholds = raw.get("thresholds") or {}
    if not isinstance(thresholds, dict):
        bad("checks.thresholds must be an object {type: {key: value}}")
        thresholds = {}
    for issue_type in sorted(thresholds):
        values = thresholds[issue_type]
        if issue_type not in CHECKS_BY_TYPE:
            bad(f"unknown check type {issue_type!r} in thresholds")
            continue
        if not isinstance(values, dict):
            bad(f"checks.thresholds.{issue_type} must be an object {{key: value}}")
            continue
        for key in sorted(values):
            problem = _check_threshold(issue_type, key, values[key])
            if problem:
                bad(problem)
                continue
            default = CHECKS_BY_TYPE[issue_type].thresholds[key]
            value = int(values[key]) if isinstance(default, int) else float(values[key])
            result["thresholds"].setdefault(issue_type, {})[key] = value

    severities = raw.get("severities") or {}
    if not isinstance(severities, dict):
        bad("checks.severities must be an object {type: severity}")
        severities = {}
    for issue_type in sorted(severities):
        severity = severities[issue_type]
        if issue_type not in CHECKS_BY_TYPE:
            bad(f"unknown check type {issue_type!r} in severities")
        elif severity not in SEVERITIES:
            bad(f"severity of {issue_type} must be one of {', '.join(SEVERITIES)}, not {severity!r}")
        else:
            result["severities"][issue_type] = severity

    disabled = raw.get("disabled") or []
    if not isinstance(disabled, (list, tuple)):
        bad("checks.disabled must be a list of check types")
        disabled = []
    for issue_type in disabled:
        if not isinstance(issue_type, str) or issue_type not in CHECKS_BY_TYPE:
            bad(f"unknown check type {issue_type!r} in disabled")
        elif issue_type not in result["disabled"]:
            result["disabled"].append(issue_type)
    result["disabled"].sort()

    if problems:
        logger.warning("ignored invalid check overrides", extra={"problems": problems[:20]})
    return result


def validate_overrides(raw: dict) -> dict:
    """Check a project's check overrides; return them normalised, or raise ValueError saying what is wrong."""
    return _parse_overrides(raw, strict=True)


# --- settings for one audit --------------------------------------------------------------------------


@dataclass
class CheckSettings:
    """Effective thresholds, severities and disabled checks of one audit (defaults plus overrides)."""

    thresholds: dict = field(default_factory=dict)  # overrides only: {type: {key: value}}
    severities: dict = field(default_factory=dict)  # overrides only: {type: severity}
    disabled: set = field(default_factory=set)
    site_https: bool = False

    @classmethod
    def for_audit(cls, audit) -> "CheckSettings":
        config = audit.config or {}
        overrides = _parse_overrides(config.get("checks"), strict=False)
        return cls(
            thresholds=overrides["thresholds"],
            severities=overrides["severities"],
            disabled=set(overrides["disabled"]),
            site_https=(audit.site_url or audit.start_url).startswith("https://"),
        )

    def threshold(self, issue_type: str, key: str):
        override = self.thresholds.get(issue_type, {})
        if key in override:
            return override[key]
        return spec_for(issue_type).thresholds[key]

    def severity(self, issue_type: str) -> str:
        return self.severities.get(issue_type) or spec_for(issue_type).severity

    def enabled(self, issue_type: str) -> bool:
        return issue_type not in self.disabled


def make_issue(
    audit_id,
    type: str,
    *,
    page=None,
    page_id=None,
    page_url: str = "",
    details: dict | None = None,
    dedupe_key: str = "",
    settings: CheckSettings,
) -> Issue | None:
    """An unsaved Issue with its deterministic id and the audit's severity; None when the type is disabled.

    `page` is a Page (saved or not); site checks that only hold ids pass `page_id` and `page_url`.
    """
    spec_for(type)
    if not settings.enabled(type):
        return None
    if page is not None:
        page_id = page.id
        page_url = page_url or page.url
    return Issue(
        id=issue_id_for(audit_id, page_url, type, dedupe_key),
        audit_id=audit_id,
        page_id=page_id,
        page_url=page_url,
        type=type,
        severity=settings.severity(type),
        details=details or {},
    )
