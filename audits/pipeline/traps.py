"""Stage helper of the crawl: the trap policy, decided here. Which trap rules an audit applies and with what numbers
(its config snapshot: trap_limits_for, pattern_cap), what one new URL's own shape says (url_shaped, reading
crawler.traps' pure detectors and crawler.shapes), what the frontier store is told to refuse among a batch's new
URLs (frontier_caps), and when a shape's crawled pages say it is a trap (shape_traps_record: most of them one main
text). The store (scratchpad.services) counts its rows and records what it is told; audits.checks.skips says in
words what was skipped.
"""

from dataclasses import replace

from audits.limits import PATTERN_CAP_OFF
from audits.models import Page
from crawler.limits import TRAP_IDENTICAL_PAGES_SHARE
from crawler.shapes import path_key, url_pattern
from crawler.traps import TrapLimits, trap_signs
from scratchpad.services import FrontierCaps, NewURL, ShapeCount, shape_texts_count, shape_texts_trap


def pattern_cap(value: int | None) -> int | None:
    """The per-shape cap, None when off: unset, or PATTERN_CAP_OFF (the default). Off means no count at all: a
    count per batch of every queued URL of a shape grows with the shape (50 ms a batch at 50,000 URLs)."""
    return value if value and value < PATTERN_CAP_OFF else None


def trap_limits_for(config: dict) -> TrapLimits:
    """An audit's trap settings from its config snapshot; an audit started before they existed gets the
    defaults."""
    defaults = TrapLimits()
    return TrapLimits(
        max_path_segments=int(config.get("max_path_segments") or defaults.max_path_segments),
        calendar_years_ahead=int(config.get("calendar_years_ahead") or defaults.calendar_years_ahead),
        max_query_variants_per_path=int(
            config.get("max_query_variants_per_path") or defaults.max_query_variants_per_path
        ),
        max_dated_urls_per_pattern=int(config.get("max_dated_urls_per_pattern") or defaults.max_dated_urls_per_pattern),
        max_identical_pages_per_pattern=int(
            config.get("max_identical_pages_per_pattern") or defaults.max_identical_pages_per_pattern
        ),
    )


def url_shaped(new: NewURL, trap_limits: TrapLimits | None) -> NewURL:
    """A new URL with its shape, and its trap signs when trap rules apply (None: none do, the persister's own
    tests)."""
    if trap_limits is None:
        return replace(new, pattern=url_pattern(new.url))
    signs = trap_signs(new.url, trap_limits)
    return replace(new, pattern=url_pattern(new.url), trap=signs.rule, path_key=path_key(new.url), dated=signs.dated)


def frontier_caps(max_per_pattern: int | None, trap_limits: TrapLimits | None) -> FrontierCaps:
    """What the frontier store refuses among a batch's new link-found URLs: the optional per-shape cap always, the
    counting trap rules when trap rules apply."""
    return FrontierCaps(
        max_per_pattern=max_per_pattern,
        max_query_variants=trap_limits.max_query_variants_per_path if trap_limits else None,
        max_dated_per_pattern=trap_limits.max_dated_urls_per_pattern if trap_limits else None,
        identical_rule=trap_limits is not None,
    )


def shape_pages(pages: list[Page]) -> list[tuple[str, str]]:
    """(shape, main-text fingerprint) of the fetched pages the identical-pages rule counts: answered, with a main
    text."""
    return [
        (url_pattern(page.url), page.main_text_hash)
        for page in pages
        if page.main_text_hash and page.fetch_class == Page.FetchClass.OK
    ]


def shapes_trapped(counts: list[ShapeCount], max_identical: int, share: float) -> list[str]:
    """The shapes whose pages are mostly one main text: `max_identical` of them at least, and `share` of all."""
    return sorted(c.pattern for c in counts if c.most_alike >= max_identical and c.most_alike >= share * c.pages)


def shape_traps_record(
    *, audit_id, pages: list[tuple[str, str]], max_identical: int, share: float = TRAP_IDENTICAL_PAGES_SHARE
) -> list[str]:
    """Count a persisted batch's pages per shape and main text, and trap the shapes that are mostly one text from
    now on. Returns the shapes this batch trapped. Call inside the batch's transaction, late (shape_texts_count
    says why)."""
    counts = shape_texts_count(audit_id=audit_id, pages=pages)
    return shape_texts_trap(audit_id=audit_id, patterns=shapes_trapped(counts, max_identical, share))
