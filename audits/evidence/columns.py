"""What an evidence table is made of: the units an issue count counts, `Column` and `Evidence`, `flat` (a cell),
the column builders and the shapes several issue types share (link columns, duplicates, Lighthouse runs)."""

from collections.abc import Callable
from dataclasses import dataclass

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
UNIT_LOADS = "resource loads"  # (page, resource URL) pairs: a page loading a broken script, stylesheet, font, icon

# Singular of each unit, for "1 page".
UNIT_SINGULAR = {
    UNIT_PAGES: "page",
    UNIT_LINKS: "link",
    UNIT_CHAINS: "redirect chain",
    UNIT_LOOPS: "redirect loop",
    UNIT_RUNS: "Lighthouse run",
    UNIT_SITE: "site-wide finding",
    UNIT_LOADS: "resource load",
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


def hops(url, details, entry) -> str:
    hops = details.get("hops") or []
    parts = [f"{hop.get('url')} ({hop.get('status_code')})" for hop in hops if isinstance(hop, dict)]
    end = details.get("final_url") or details.get("loops_back_to")
    if end:
        status = details.get("final_status_code")
        parts.append(f"{end} ({status if status is not None else 'loop' if details.get('loops_back_to') else '–'})")
    return HOP_SEPARATOR.join(parts)


def meta_tag(url, details, entry) -> str:
    return "present but empty" if details.get("present") else "absent"


def missing_return(url, details, entry) -> str:
    href = entry.get("href") if isinstance(entry, dict) else ""
    return f"{href} has no hreflang link back to this page" if href else ""


def lighthouse_run(value_label: str) -> Evidence:
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


def structured_entities(missing_label: str) -> Evidence:
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


def duplicate_group(key: str, label: str) -> Evidence:
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


def missing_header() -> Evidence:
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


STATUS = detail("status_code", "Status")
LINK_COLUMNS = (
    page("Source page"),
    detail("target_url", "Target"),
    detail("anchor_text", "Anchor text"),
    detail("target_status_code", "Target status", "status_code"),
)
