"""The values the crawl-state store takes and gives: URLs claimed, URLs found, link edges, what a batch's record
did, and the caps the pipeline's trap policy hands it (FrontierCaps)."""

from dataclasses import dataclass

from scratchpad.limits import MAX_HANDOUTS_PER_URL, SQL_IN_BATCH


@dataclass(frozen=True)
class ClaimedURL:
    id: int
    url: str
    depth: int | None
    in_sitemap: bool
    redirect_hops: int
    handouts: int
    starts: int = 0
    source: str = ""  # Frontier.Source: how the URL was found
    found_from: str = ""  # the page that led to it ("" for the start URL and sitemap-only URLs)

    @property
    def exhausted(self) -> bool:
        """Handed out too often without being finished (its chunk kept dying): do not fetch again."""
        return self.handouts > MAX_HANDOUTS_PER_URL

    @property
    def suspect(self) -> bool:
        """Handed out before and never finished: the chunk that held it may have died because of it."""
        return self.handouts > 1


@dataclass(frozen=True)
class NewURL:
    url: str
    depth: int | None
    source: str
    in_sitemap: bool = False
    redirect_hops: int = 0
    pattern: str = ""  # URL shape: named when the URL is skipped, counted by the optional per-shape cap
    trap: str = ""  # the trap rule its shape breaks (crawler.traps.trap_rule), "" when none
    path_key: str = ""  # the URL without its query, when it has one (crawler.shapes.path_key)
    dated: bool = False  # it carries a date (crawler.traps.has_date): counted per shape
    found_from: str = ""  # the crawled page that leads to it (Frontier.found_from)


@dataclass(frozen=True, slots=True)
class Edge:
    """One distinct target of a page's links (see LinkEdge)."""

    source_page_id: object
    target_url: str
    anchor_text: str
    nofollow: bool
    internal: bool
    link_count: int = 1


@dataclass(frozen=True)
class FrontierCaps:
    """What audits.pipeline.traps (the trap policy) tells the store to refuse among a batch's new link-found URLs.
    The store counts its own rows and applies them; None and False leave a rule out."""

    max_per_pattern: int | None = None  # the optional URLs-per-shape cap
    max_query_variants: int | None = None  # query variants per exact path
    max_dated_per_pattern: int | None = None  # dated URLs per shape
    identical_rule: bool = False  # refuse shapes trapped by identical main texts (ShapeText.trapped)


@dataclass(frozen=True)
class SkipFirst:
    """A (rule, shape) that skipped its first URL in this batch: what the audit's event names."""

    rule: str
    pattern: str
    example: str


@dataclass(frozen=True)
class InsertOutcome:
    skipped: int = 0  # new link-found URLs a trap rule or cap refused (distinct, not known before)
    first: tuple[SkipFirst, ...] = ()
    queued: int = 0  # new URLs inserted into the frontier (not known before, by this call alone)


@dataclass(frozen=True)
class BatchOutcome:
    finished: int  # URLs moved from leased to done under the key (0 for a replayed batch)
    capped: int  # new URLs skipped by a trap rule or cap
    first_skips: tuple[SkipFirst, ...] = ()
    queued: int = 0  # new URLs queued: the audit's known URLs grow by this much


def batched(items: list, size: int = SQL_IN_BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]
