"""The evidence of each issue type in named columns: what its check stored in `Issue.details`, flattened.

One definition per type in the registry serves the issue screen, the per-type CSV/JSON exports, the
all-issues exports and the MCP tools, so they all show the same columns (never a JSON blob). A row is one
finding: usually one issue, but a list the check stored (the hreflang values of a page, its vague links,
the invalid robots.txt lines) becomes one row per item, so a spreadsheet can filter it.

Public interface:
- evidence_columns(issue_type) -> [(key, human label)]
- evidence_rows(*, audit, issue_type) -> Iterator[dict]: one flat dict per row, streamed with .iterator()
- evidence_count_unit(issue_type) -> "pages" | "links" | …: what the issue count of the type counts
- finding_summary(issue_type, page_url, details) -> (target, one-line detail in words): one issue in the long
  all-issues export, built from the same columns
- evidence_targets(*, audit, issue_type) / evidence_target_sources(…): a link type's rows grouped by target URL
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from django.db.models import Count, F, IntegerField, Q, QuerySet, Sum, Window
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, RowNumber

from audits.checks.registry import CHECKS
from audits.models import Audit, Issue

EVIDENCE_FETCH_ROWS = 2000  # issues per fetch of the database cursor when streaming
LIST_SEPARATOR = " | "  # between the items of a list flattened into one cell
HOP_SEPARATOR = " → "
DETAIL_MAX_CHARS = 500  # a finding's one-line detail is cut past this (the per-type export keeps every value)
DETAIL_SEPARATOR = "; "  # between the "Label: value" parts of a one-line detail

UNIT_PAGES = "pages"
UNIT_LINKS = "links"  # (source page, target URL) pairs; `links` in a row counts the <a> tags of a pair
UNIT_CHAINS = "redirect chains"
UNIT_LOOPS = "redirect loops"
UNIT_RUNS = "Lighthouse runs"  # a sampled page × strategy (mobile, desktop)
UNIT_SITE = "site-wide findings"

# Singular of each unit, for "1 page".
UNIT_SINGULAR = {
    UNIT_PAGES: "page",
    UNIT_LINKS: "link",
    UNIT_CHAINS: "redirect chain",
    UNIT_LOOPS: "redirect loop",
    UNIT_RUNS: "Lighthouse run",
    UNIT_SITE: "site-wide finding",
}

Getter = Callable[[str, dict, dict], object]  # (page_url, details, list item or {}) -> value


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    get: Getter


@dataclass(frozen=True)
class Evidence:
    unit: str
    columns: tuple[Column, ...]
    expand: str = ""  # a details key holding a list: one row per item (an empty list still gives one row)
    order: tuple[str, ...] = ("page_url", "id")
    group_key: str = ""  # details key whose value defines a group (duplicates), for counting groups
    target: str = ""  # the column holding what the finding points at (link target, canonical, duplicate of…)
    detail_first: tuple[str, ...] = ()  # columns a one-line detail says before the others (counts before examples)


def flat(value) -> str | int | float:
    """A cell: None -> "", bool -> yes/no, lists joined, dicts as `key: value` pairs."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{k}: {flat(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return LIST_SEPARATOR.join(str(flat(v)) for v in value)
    return str(value)


# --- column builders ---------------------------------------------------------------------------------


def page(label: str = "Page") -> Column:
    return Column("page_url", label, lambda url, details, item: url)


def detail(key: str, label: str, source: str = "") -> Column:
    """details[source or key], flattened."""
    name = source or key
    return Column(key, label, lambda url, details, item: details.get(name))


def item(key: str, label: str, source: str = "") -> Column:
    """The expanded list item's [source or key]; the item itself when it is not a dict."""
    name = source or key

    def get(url, details, entry):
        return entry.get(name) if isinstance(entry, dict) else entry

    return Column(key, label, get)


def computed(key: str, label: str, fn: Getter) -> Column:
    return Column(key, label, fn)


def _hops(url, details, entry) -> str:
    hops = details.get("hops") or []
    parts = [f"{hop.get('url')} ({hop.get('status_code')})" for hop in hops if isinstance(hop, dict)]
    end = details.get("final_url") or details.get("loops_back_to")
    if end:
        status = details.get("final_status_code")
        parts.append(f"{end} ({status if status is not None else 'loop' if details.get('loops_back_to') else '–'})")
    return HOP_SEPARATOR.join(parts)


def _meta_tag(url, details, entry) -> str:
    return "present but empty" if details.get("present") else "absent"


def _missing_return(url, details, entry) -> str:
    href = entry.get("href") if isinstance(entry, dict) else ""
    return f"{href} has no hreflang link back to this page" if href else ""


def _lighthouse(value_label: str) -> Evidence:
    return Evidence(
        UNIT_RUNS,
        (
            page("Sampled page"),
            detail("strategy", "Strategy"),
            detail("value", value_label),
            detail("threshold", "Threshold"),
        ),
        order=("page_url", "details__strategy", "id"),
    )


def _structured(missing_label: str) -> Evidence:
    """One row per entity lacking properties (a page may carry several)."""
    return Evidence(
        UNIT_PAGES,
        (
            page(),
            item("entity_type", "Type", "type"),
            item("syntax", "Syntax"),
            item("missing", missing_label),
            detail("entities_count", "Entities lacking"),
        ),
        expand="entities",
    )


def _duplicate(key: str, label: str) -> Evidence:
    return Evidence(
        UNIT_PAGES,
        (
            detail(key, label),
            detail("group_size", "Pages in the group"),
            page(),
            detail("other_urls", "Other URLs of the group (first 3)"),
        ),
        order=(f"details__{key}", "page_url", "id"),
        group_key=key,
        target="other_urls",
    )


def _missing_header() -> Evidence:
    """A security header missing site-wide: one row per named page, with the counts of the whole site."""
    return Evidence(
        UNIT_SITE,
        (
            item("url", "Page without the header"),
            detail("pages_missing", "Pages without it"),
            detail("pages_checked", "HTML pages checked"),
        ),
        expand="examples",
        detail_first=("pages_missing", "pages_checked"),
    )


_STATUS = detail("status_code", "Status")
_LINK_COLUMNS = (
    page("Source page"),
    detail("target_url", "Target"),
    detail("anchor_text", "Anchor text"),
    detail("target_status_code", "Target status", "status_code"),
)

EVIDENCE: dict[str, Evidence] = {
    # --- page checks -----------------------------------------------------------------------------------
    "blocked-page": Evidence(UNIT_PAGES, (page(), _STATUS, detail("reason", "Why it counts as blocked"))),
    "rate-limited-page": Evidence(UNIT_PAGES, (page(), _STATUS, detail("retry_after", "Retry-After"))),
    "server-error": Evidence(UNIT_PAGES, (page(), _STATUS)),
    "broken-page": Evidence(UNIT_PAGES, (page(), _STATUS)),
    "fetch-error": Evidence(
        UNIT_PAGES, (page(), detail("error_kind", "Error kind"), detail("error", "Error"), _STATUS)
    ),
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
    "missing-meta-description": Evidence(UNIT_PAGES, (page(), computed("meta_tag", "Meta description tag", _meta_tag))),
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
    "thin-content": Evidence(UNIT_PAGES, (page(), detail("words", "Words"), detail("min_words", "Minimum"))),
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
    # --- site checks -----------------------------------------------------------------------------------
    "broken-internal-link": Evidence(
        UNIT_LINKS,
        (*_LINK_COLUMNS, detail("fetch_error", "Fetch error"), detail("links", "Links on the page")),
        target="target_url",
    ),
    "internal-link-to-redirect": Evidence(
        UNIT_LINKS,
        (*_LINK_COLUMNS, detail("redirect_url", "Redirects to"), detail("links", "Links on the page")),
        target="target_url",
    ),
    "redirect-chain": Evidence(
        UNIT_CHAINS,
        (
            page("First URL"),
            detail("hops_count", "Redirects"),
            computed("hops", "Hops (status)", _hops),
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
            computed("hops", "Hops (status)", _hops),
            detail("loops_back_to", "Loops back to"),
        ),
        target="loops_back_to",
    ),
    "duplicate-title": _duplicate("title", "Title (the group)"),
    "duplicate-meta-description": _duplicate("meta_description", "Meta description (the group)"),
    "duplicate-content": _duplicate("text_hash", "Text fingerprint (the group)"),
    "orphan-page": Evidence(UNIT_PAGES, (page(), _STATUS, detail("in_sitemap", "In sitemap"))),
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
            computed("missing", "What is missing", _missing_return),
        ),
        expand="missing",
        target="target_url",
    ),
    "sitemap-url-not-indexable": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("reasons", "Why not indexable"),
            _STATUS,
            detail("redirect_url", "Redirects to"),
            detail("robots", "Robots directives"),
            detail("canonical_url", "Canonical URL"),
        ),
    ),
    "sitemap-missing": Evidence(UNIT_SITE, (detail("sitemaps_tried", "Sitemaps tried"), detail("errors", "Errors"))),
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
    # --- content, URLs, security, pixel widths (issue 14b) --------------------------------------------------
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
    "lorem-ipsum": Evidence(
        UNIT_PAGES, (page(), detail("text", "Placeholder text found"), detail("words", "Main text words"))
    ),
    "near-duplicate-content": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("similarity_pct", "Similarity (%)"),
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
    "missing-hsts": _missing_header(),
    "missing-x-content-type-options": _missing_header(),
    "missing-x-frame-options": _missing_header(),
    "missing-referrer-policy": _missing_header(),
    "custom-extraction": Evidence(
        UNIT_PAGES,
        (page(), item("extractor", "Extractor"), item("rule", "Rule"), item("value", "Value")),
        expand="findings",
    ),
    # --- structured data, images, pagination -------------------------------------------------------------
    "structured-data-missing-required": _structured("Missing required properties"),
    "structured-data-missing-recommended": _structured("Missing recommended properties"),
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
    "poor-performance-score": _lighthouse("Performance score"),
    "poor-lcp": _lighthouse("LCP (ms)"),
    "poor-cls": _lighthouse("CLS"),
}

# Site checks whose rows are each tied to a page (the others describe the site as a whole).
LINK_TYPES = ("broken-internal-link", "internal-link-to-redirect")
# A type the registry no longer knows (an old audit's rows) still shows its page and raw fields.
_FALLBACK = Evidence(UNIT_PAGES, (page(), computed("details", "Details", lambda url, details, entry: details)))


def _evidence(issue_type: str) -> Evidence:
    return EVIDENCE.get(issue_type, _FALLBACK)


# --- the interface -------------------------------------------------------------------------------------


def evidence_columns(issue_type: str) -> list[tuple[str, str]]:
    """The evidence table's columns of a type: (key, human label), in display order."""
    return [(column.key, column.label) for column in _evidence(issue_type).columns]


def evidence_count_unit(issue_type: str) -> str:
    """What one issue of the type is: "pages", "links", "redirect chains", "site-wide findings", …"""
    return _evidence(issue_type).unit


def count_label(n: int, unit: str) -> str:
    """`1 page`, `12 links`."""
    return f"{n} {UNIT_SINGULAR.get(unit, unit) if n == 1 else unit}"


def evidence_queryset(*, audit: Audit, issue_type: str, issues_q: Q | None = None) -> QuerySet:
    """The issues behind the evidence rows, in the table's order (paginate it, or stream it); `issues_q`: only
    those (a segment's issues, audits.segments).

    The marker issue a capped link check leaves (no page, "N more not listed") is not a row: see evidence_note.
    """
    spec = _evidence(issue_type)
    issues = Issue.objects.filter(audit=audit, type=issue_type).filter(issues_q or Q())
    if issue_type in LINK_TYPES:
        issues = issues.exclude(page_url="")
    return issues.order_by(*spec.order).values_list("id", "page_id", "page_url", "details")


def evidence_records(issue_type: str, issues: Iterable[tuple]) -> Iterator[tuple]:
    """(page_id, row dict) per evidence row of `issues` (rows of evidence_queryset)."""
    spec = _evidence(issue_type)
    for _id, page_id, page_url, details in issues:
        details = details if isinstance(details, dict) else {}
        items: list = [{}]
        if spec.expand:
            listed = details.get(spec.expand)
            if isinstance(listed, list) and listed:
                items = listed
        for entry in items:
            yield page_id, {c.key: flat(c.get(page_url, details, entry)) for c in spec.columns}


def evidence_rows(*, audit: Audit, issue_type: str) -> Iterator[dict]:
    """One flat dict per evidence row (keys = evidence_columns' keys), streamed from the database."""
    issues = evidence_queryset(audit=audit, issue_type=issue_type).iterator(chunk_size=EVIDENCE_FETCH_ROWS)
    for _page_id, row in evidence_records(issue_type, issues):
        yield row


def evidence_note(*, audit: Audit, issue_type: str) -> str:
    """What the rows leave out, said by the check itself (a capped link check's marker), or ""."""
    if issue_type not in LINK_TYPES:
        return ""
    marker = Issue.objects.filter(audit=audit, type=issue_type, page_url="").values_list("details", flat=True).first()
    return str((marker or {}).get("message", "")) if isinstance(marker, dict) else ""


def evidence_group_count(*, audit: Audit, issue_type: str, issues_q: Q | None = None) -> int | None:
    """How many groups the rows form (duplicate types), counted in the database; None for other types."""
    key = _evidence(issue_type).group_key
    if not key:
        return None
    issues = Issue.objects.filter(audit=audit, type=issue_type).filter(issues_q or Q())
    return issues.order_by().values(f"details__{key}").distinct().count()


def _one_line(values: Iterable) -> str:
    """Distinct non-empty values of a column over a finding's rows, in order, on one line."""
    seen: dict[str, None] = {}
    for value in values:
        text = " ".join(str(value).split())
        if text:
            seen.setdefault(text, None)
    return LIST_SEPARATOR.join(seen)


def finding_summary(issue_type: str, page_url: str, details) -> tuple[str, str]:
    """(target, detail) of one issue: the URL it points at where its type has one, and its other evidence
    columns in words ("Status: 404; Anchor text: Read more"), the page left out (it has its own column).

    A capped link check's marker row (no page) says its message; a cut detail ends with "…"."""
    spec = _evidence(issue_type)
    details = details if isinstance(details, dict) else {}
    rows = [row for _page_id, row in evidence_records(issue_type, [(None, None, page_url, details)])]
    target = _one_line(row.get(spec.target, "") for row in rows) if spec.target else ""
    parts = []
    first = [c for c in spec.columns if c.key in spec.detail_first]
    for column in (*first, *(c for c in spec.columns if c.key not in spec.detail_first)):
        if column.key in ("page_url", spec.target):
            continue
        value = _one_line(row.get(column.key, "") for row in rows)
        if value:
            parts.append(f"{column.label}: {value}")
    if not parts and target:  # the target is the whole evidence (canonicalized-page): say it in words too
        parts = [f"{label}: {target}" for key, label in evidence_columns(issue_type) if key == spec.target]
    line = DETAIL_SEPARATOR.join(parts) or " ".join(str(details.get("message") or "").split())
    if len(line) > DETAIL_MAX_CHARS:
        line = line[: DETAIL_MAX_CHARS - 1] + "…"
    return target, line


def _link_rows(audit: Audit, issue_type: str, issues_q: Q | None = None) -> QuerySet:
    """A link type's issues, one per (source page, target), without a capped check's marker row."""
    return Issue.objects.filter(audit=audit, type=issue_type).exclude(page_url="").filter(issues_q or Q())


def evidence_targets(*, audit: Audit, issue_type: str, issues_q: Q | None = None) -> QuerySet:
    """A link type's rows grouped by target URL, the target most pages link to first: dicts of target_url,
    status_code (of the target), fetch_error, pages (linking pages) and links (<a> tags on them). Empty for a type
    whose rows are not links (see LINK_TYPES)."""
    if issue_type not in LINK_TYPES:
        return Issue.objects.none().values()
    return (
        _link_rows(audit, issue_type, issues_q)
        .annotate(target_url=KT("details__target_url"))
        .values("target_url")
        .annotate(
            pages=Count("id"),
            links=Sum(Cast(KT("details__links"), IntegerField())),
            status_code=Cast(KT("details__status_code"), IntegerField()),
            fetch_error=KT("details__fetch_error"),
        )
        .order_by("-pages", "target_url")
    )


def evidence_target_sources(
    *, audit: Audit, issue_type: str, targets: list[str], per_target: int, issues_q: Q | None = None
) -> dict[str, list[tuple]]:
    """{target URL: [(page_id, page_url), …]}: the first `per_target` linking pages of each target, by URL, read in
    one query (a target linked from every page of a 100,000-page site gives `per_target` rows, not 100,000)."""
    rows = (
        _link_rows(audit, issue_type, issues_q)
        .annotate(target_url=KT("details__target_url"))
        .filter(target_url__in=targets)
        .annotate(rank=Window(RowNumber(), partition_by=[F("target_url")], order_by=[F("page_url"), F("id")]))
        .filter(rank__lte=per_target)
        .order_by("target_url", "page_url", "id")
        .values_list("target_url", "page_id", "page_url")
    )
    found: dict[str, list[tuple]] = {target: [] for target in targets}
    for target, page_id, page_url in rows:
        found[target].append((page_id, page_url))
    return found


def check_coverage() -> list[str]:
    """Registry types without an evidence definition (a test keeps this empty)."""
    return [spec.type for spec in CHECKS if spec.type not in EVIDENCE]
