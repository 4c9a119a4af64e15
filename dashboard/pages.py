"""What the pages grid, the page detail and the performance screen show beyond their reads (which are
audits.selectors.pages and links): the column chooser and its cookie, the sort in words, the SERP preview, the
heading outline, the page's fields, and the Lighthouse runs with Google's verdicts.
"""

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.http import Http404

from audits.evidence import flat
from audits.models import Audit, LighthouseResult, Page
from audits.selectors.pages import COLUMNS, PageColumn, PageView, page_issue_types

COLS_COOKIE_PREFIX = "sw_cols_"  # + view key: the chosen columns, remembered for the next visit
COLS_COOKIE_MAX_AGE_S = 365 * 24 * 3600
EXTRACTOR_COLUMN_PREFIX = "ex"  # + the extractor's position: the key of a custom extraction column


# --- columns and views -----------------------------------------------------------------------------------


SORT_LABELS = {
    "url": "URL",
    "status": "Status code",
    "depth": "Depth",
    "inlinks": "Inlinks",
    "title": "Title",
    "title_len": "Title length",
    "description_len": "Description length",
    "h1": "H1",
    "h1_len": "H1 length",
    "h1_count": "H1 count",
    "time": "Response time",
    "size": "Size",
    "words": "Words",
    "issues": "Issues",
}

# How a sort reads in words: (ascending, descending) per kind of column.
SORT_DIRECTIONS = {"text": ("A to Z", "Z to A"), "count": ("fewest first", "most first"),
                   "value": ("lowest first", "highest first")}  # fmt: skip
SORT_KINDS = {
    "url": "text",
    "title": "text",
    "h1": "text",
    "status": "value",
    "depth": "value",
    "time": "value",
    "size": "value",
    "title_len": "value",
    "description_len": "value",
    "h1_len": "value",
}  # fmt: skip  (the others count things: inlinks, issues, words, H1s)


def sort_caption(sort: str) -> str:
    """The grid's sort in words: "inlinks, most first", "URL, A to Z"."""
    key = sort.removeprefix("-")
    if key not in SORT_LABELS:  # what _ordering does with an unknown sort
        key, sort = "url", "url"
    label = SORT_LABELS[key] if key == "url" else SORT_LABELS[key].lower()
    ascending, descending = SORT_DIRECTIONS[SORT_KINDS.get(key, "count")]
    return f"{label}, {descending if sort.startswith('-') else ascending}"


def extractor_columns(*, audit: Audit) -> list[PageColumn]:
    """One optional column per custom extractor the audit crawled with (its config snapshot), keyed
    `ex0`, `ex1`, … (an extractor's name may hold characters the column cookie cannot)."""
    extractors = (audit.config or {}).get("extractors") or []
    names = [e["name"] for e in extractors if isinstance(e, dict) and isinstance(e.get("name"), str)]
    return [
        PageColumn(f"{EXTRACTOR_COLUMN_PREFIX}{i}", name, help="Custom extraction", extractor=name)
        for i, name in enumerate(names)
    ]


def columns_for(view: PageView, chosen: list[str] | None, extra: list[PageColumn] = ()) -> list[PageColumn]:
    """The columns to show: the chosen ones (URL always first), else the view's defaults. `extra`: columns
    of this audit only (its custom extractors), choosable like the others."""
    known = {**COLUMNS, **{c.key: c for c in extra}}
    keys = [k for k in (chosen or []) if k in known and k != "url"] if chosen else list(view.columns[1:])
    return [COLUMNS["url"], *(known[k] for k in dict.fromkeys(keys))]


# --- the grid ---------------------------------------------------------------------------------------------


def page_issue_type_choices(*, audit: Audit) -> list[tuple[str, str]]:
    """The "Has issue" filter's choices: (type, "Title (N pages)") for page_issue_types' types."""
    return [(c.type, c.label) for c in page_issue_types(audit=audit)[0]]


def page_filters_narrow(filters: dict) -> bool:
    """Whether the grid's filters (PageFilterForm.filters) leave out any page: without one, the audit's own
    counter is the list's size and no COUNT(*) runs."""
    return any(value not in ("", None, "all") for name, value in filters.items() if name != "view")


def page_filters_status_only(filters: dict) -> bool:
    """Whether the grid's filters narrow by a status alone, in the view of all pages."""
    others = {name: value for name, value in filters.items() if name not in ("view", "status")}
    return filters.get("view") == "all" and bool(filters.get("status")) and not page_filters_narrow(others)


# --- one page ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    skipped: bool  # deeper than the previous heading by more than one level (h2 -> h4)


def heading_outline(page: Page) -> list[Heading]:
    outline, previous = [], 0
    for entry in page.headings or []:
        if not (isinstance(entry, list) and len(entry) == 2):
            continue
        level, text = int(entry[0]), str(entry[1])
        outline.append(Heading(level, text, previous > 0 and level > previous + 1))
        previous = level
    return outline


# Google cuts a title at about 600 px and a description at about 920 px on desktop; by characters, which is
# what can be computed without a font, that is some 60 and 158.
SERP_TITLE_MAX_CHARS = 60
SERP_DESCRIPTION_MAX_CHARS = 158
SERP_ELLIPSIS = " ..."


def serp_truncate(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut as Google does: at the last whole word within `limit` characters, then " ..."."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    if " " in cut and not text[limit].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-–—") + SERP_ELLIPSIS, True


def serp_breadcrumb(url: str) -> str:
    """`https://example.com › blog › post`: Google's way of showing a result's URL."""
    parts = urlsplit(url)
    segments = [unquote(s) for s in parts.path.split("/") if s]
    return " › ".join([f"{parts.scheme}://{parts.hostname or ''}", *segments])


def serp_preview(page: Page) -> dict:
    title, title_cut = serp_truncate(page.title or "", SERP_TITLE_MAX_CHARS)
    description, description_cut = serp_truncate(page.meta_description or "", SERP_DESCRIPTION_MAX_CHARS)
    return {
        "title": title,
        "title_cut": title_cut,
        "title_chars": len(page.title or ""),
        "breadcrumb": serp_breadcrumb(page.url),
        "description": description,
        "description_cut": description_cut,
        "description_chars": len(page.meta_description or ""),
        "title_max": SERP_TITLE_MAX_CHARS,
        "description_max": SERP_DESCRIPTION_MAX_CHARS,
    }


def response_headers(page: Page) -> list[tuple[str, str]]:
    headers = page.response_headers if isinstance(page.response_headers, dict) else {}
    return sorted((str(k), str(v)) for k, v in headers.items())


@dataclass(frozen=True)
class FieldRow:
    name: str
    label: str
    value: object
    kind: str  # url | pairs | items | bool | datetime | text


URL_FIELDS = {"url", "redirect_url", "canonical_url", "canonical_header"}
SHOWN_ELSEWHERE = {"id", "audit", "headings", "heading_order", "response_headers"}
SHOWN_ELSEWHERE |= {"found_from", "found_via"}  # the "How the crawl found it" section
SHOWN_ELSEWHERE |= {"raw_values"}  # the "Response vs render" section
FIELD_LABELS = {
    "url": "URL",
    "redirect_url": "Redirects to",
    "canonical_url": "Canonical URL",
    "canonical_header": "Canonical (Link header)",
    "response_time_ms": "Response time (ms)",
    "bytes": "Size (bytes)",
    "meta_robots": "Meta robots",
    "x_robots_tag": "X-Robots-Tag",
    "open_graph": "Open Graph",
    "h1_count": "H1 count",
    "heading_counts": "Headings per level",
    "html_lang": "HTML lang",
    "hreflang": "hreflang",
    "structured_data": "Structured data",
    "is_indexable": "Indexable",
    "fetched_at": "Fetched at (UTC)",
}


def page_fields(page: Page) -> list[FieldRow]:
    """Every other extracted field of a page in model order (a field added to Page shows up here too);
    structured values as key/value pairs or items, never as a JSON blob."""
    rows = []
    for model_field in Page._meta.concrete_fields:
        if model_field.name in SHOWN_ELSEWHERE:
            continue
        value = getattr(page, model_field.attname)
        internal = model_field.get_internal_type()
        if model_field.name in URL_FIELDS:
            kind = "url"
        elif internal == "JSONField" and isinstance(value, dict):
            kind, value = "pairs", [(str(k), flat(v)) for k, v in value.items()]
        elif internal == "JSONField":
            kind, value = (
                "items",
                [flat(v) if not isinstance(v, list) else " → ".join(map(str, v)) for v in value or []],
            )
        elif internal == "BooleanField":
            kind = "bool"
        elif internal == "DateTimeField":
            kind = "datetime"
        else:
            kind = "text"
        label = FIELD_LABELS.get(model_field.name) or str(model_field.verbose_name)
        rows.append(FieldRow(model_field.name, label[:1].upper() + label[1:], value, kind))
    return rows


# --- Lighthouse ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vital:
    field: str
    label: str
    name: str
    good_max: float  # Google's thresholds: good up to good_max, poor above poor_min
    poor_min: float
    unit: str  # "ms" or "" (CLS)


VITALS = (
    Vital("lcp_ms", "LCP", "Largest Contentful Paint", 2500, 4000, "ms"),
    Vital("cls", "CLS", "Cumulative Layout Shift", 0.1, 0.25, ""),
    Vital("inp_ms", "INP", "Interaction to Next Paint", 200, 500, "ms"),
    Vital("tbt_ms", "TBT", "Total Blocking Time, the lab stand-in for INP", 200, 600, "ms"),
    Vital("fcp_ms", "FCP", "First Contentful Paint", 1800, 3000, "ms"),
    Vital("ttfb_ms", "TTFB", "Time to First Byte", 800, 1800, "ms"),
)
VERDICT_LABELS = {"good": "Good", "needs-improvement": "Needs improvement", "poor": "Poor"}
SCORE_GOOD_MIN = 90  # Lighthouse's colours: 90-100 good, 50-89 needs improvement, 0-49 poor
SCORE_POOR_BELOW = 50
SCORE_CATEGORIES = (
    ("performance", "Performance"),
    ("accessibility", "Accessibility"),
    ("best_practices", "Best practices"),
    ("seo", "SEO"),
)


def vital_verdict(vital: Vital, value) -> str:
    if value is None:
        return ""
    if value <= vital.good_max:
        return "good"
    return "needs-improvement" if value <= vital.poor_min else "poor"


def _vital_display(vital: Vital, value) -> str:
    if value is None:
        return "–"
    if vital.unit == "":
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{int(value)} ms"


def score_verdict(score) -> str:
    if score is None:
        return ""
    return "good" if score >= SCORE_GOOD_MIN else "poor" if score < SCORE_POOR_BELOW else "needs-improvement"


def _run(result: LighthouseResult) -> dict:
    vitals = []
    for vital in VITALS:
        value = getattr(result, vital.field)
        if vital.field == "inp_ms" and value is None:
            continue  # a lab run has no interaction: TBT stands in
        verdict = vital_verdict(vital, value)
        vitals.append({"vital": vital, "value": _vital_display(vital, value), "verdict": verdict,
                       "verdict_label": VERDICT_LABELS.get(verdict, "Not measured")})  # fmt: skip
    scores = [
        {"label": label, "value": getattr(result, name), "verdict": score_verdict(getattr(result, name))}
        for name, label in SCORE_CATEGORIES
    ]
    summary = result.summary if isinstance(result.summary, dict) else {}
    opportunities = [
        {**o, "savings": _vital_display(VITALS[0], o["savings_ms"]) if o.get("savings_ms") else ""}
        for o in summary.get("opportunities") or []
    ]
    return {
        "result": result,
        "scores": scores,
        "vitals": vitals,
        "opportunities": opportunities,
        "diagnostics": summary.get("diagnostics") or [],
    }


def lighthouse_pages(*, audit: Audit) -> list[dict]:
    """The audit's Lighthouse runs, per sampled page (start page first, then by URL), mobile then desktop,
    each with its scores, vitals with Google's verdicts and the top opportunities and diagnostics (parsed
    when the run was stored: no report file is opened here)."""
    results = LighthouseResult.objects.filter(audit=audit).select_related(None).order_by("url", "-strategy")
    pages: dict[str, dict] = {}
    for result in results:
        entry = pages.setdefault(
            result.url, {"url": result.url, "page_id": result.page_id, "template": result.template, "runs": []}
        )
        entry["runs"].append(_run(result))
    start = audit.site_url or audit.start_url
    return sorted(pages.values(), key=lambda p: (p["url"] != start, p["url"]))


def lighthouse_comparison(sampled: list[dict]) -> dict:
    """The sampled pages' runs side by side (one row per page and device: category scores and vitals with their
    verdicts), from lighthouse_pages' entries; INP is a column only when a run measured it (lab runs do not)."""
    results = [run["result"] for p in sampled for run in p["runs"] if run["result"].status == "ok"]
    vitals = [v for v in VITALS if v.field != "inp_ms" or any(r.inp_ms is not None for r in results)]
    rows = []
    for p in sampled:
        for run in p["runs"]:
            result = run["result"]
            if result.status != "ok":
                continue
            cells = [
                {
                    "label": vital.label,
                    "value": _vital_display(vital, getattr(result, vital.field)),
                    "verdict": vital_verdict(vital, getattr(result, vital.field)),
                }  # fmt: skip
                for vital in vitals
            ]
            rows.append({"page": p, "result": result, "scores": run["scores"], "vitals": cells})
    return {"categories": [label for _, label in SCORE_CATEGORIES], "vitals": vitals, "rows": rows}


def lighthouse_report_path(*, audit: Audit, result_id) -> tuple[LighthouseResult, Path]:
    """The stored report file of one of the audit's Lighthouse runs; 404 unless it is inside the audit's
    report folder and exists."""
    result = LighthouseResult.objects.filter(audit=audit, id=result_id).first()
    if result is None or not result.report_path:
        raise Http404("No such report")
    folder = (Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit.id)).resolve()
    path = (Path(settings.MEDIA_ROOT) / result.report_path).resolve()
    if not path.is_relative_to(folder) or not path.is_file():
        raise Http404("No such report")
    return result, path
