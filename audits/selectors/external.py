"""Reads of an audit's external links (ExternalLink: one row per distinct outbound target and what asking it once
answered, filled by the finalize pass audits.pipeline.external): the targets with filters, sorts and keyset
pages, counts per outcome, and the crawled pages linking to one target (its LinkEdge rows, internal = False)
with their anchor text. Shared by the dashboard's External screen, the API, the MCP server and the exports."""

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery

from audits.models import Audit, ExternalLink
from audits.selectors.pagination import KeysetColumn
from scratchpad.models import LinkEdge

Outcome = ExternalLink.Outcome

# What asking answered and was fine: a working page, at once or through redirects. Everything else is worth a look
# (broken, unreachable, could not be verified, not asked): the "problems" group of every face.
FINE_OUTCOMES = (Outcome.OK, Outcome.REDIRECTED)
PROBLEM_OUTCOMES = tuple(o for o in Outcome if o not in FINE_OUTCOMES)

EXTERNAL_PER_PAGE = 50  # targets per screen of the dashboard's External list
LINKING_PAGES_PER_PAGE = 50  # linking pages per screen of one target

# The list's sorts: each a keyset (audits.selectors.pagination.keyset_paginate) whose last column, url, is unique
# within an audit (externallink_unique_url_per_audit). A leading "-" is part of the key's name, not a flip.
EXTERNAL_SORTS: dict[str, tuple[KeysetColumn, ...]] = {
    "-pages": (KeysetColumn("linking_pages", descending=True), KeysetColumn("url")),
    "url": (KeysetColumn("url"),),
    "outcome": (KeysetColumn("outcome"), KeysetColumn("url")),
    "host": (KeysetColumn("host"), KeysetColumn("url")),
}
EXTERNAL_SORT_LABELS = {
    "-pages": "Linking pages, most first",
    "url": "URL",
    "outcome": "Outcome",
    "host": "Host",
}
DEFAULT_EXTERNAL_SORT = "-pages"

# The keyset of a target's linking pages: one edge per source page and target, so the source URL is unique.
LINKING_PAGES_KEYSET = (KeysetColumn("source_page__url"),)


def external_checking_on(*, audit: Audit) -> bool:
    """Whether the audit checked its outbound links: its config snapshot says so when it has the key, else the
    project's switch (Project.check_external_links)."""
    config = audit.config or {}
    if "check_external_links" in config:
        return bool(config["check_external_links"])
    return bool(audit.project.check_external_links)


def external_outcome_valid(value: str) -> bool:
    return value in Outcome.values


def external_link_filter(
    *, audit: Audit, outcome: str = "", problems: bool = False, host: str = "", url_contains: str = ""
) -> QuerySet[ExternalLink]:
    """The audit's external targets: of one outcome (an unknown one: none), only problems (every outcome but ok
    and redirected), on one host (exact, any case) and/or with `url_contains` in their URL (any case). Unordered."""
    links = ExternalLink.objects.filter(audit_id=audit.id)
    if outcome:
        links = links.filter(outcome=outcome) if external_outcome_valid(outcome) else links.none()
    if problems:
        links = links.filter(outcome__in=PROBLEM_OUTCOMES)
    if host:
        links = links.filter(host__iexact=host.strip())
    if url_contains:
        links = links.filter(url__icontains=url_contains)
    return links


def external_sort_key(value: str | None) -> str:
    """`value` when it names a sort of EXTERNAL_SORTS, else the default (linking pages, most first)."""
    return value if value in EXTERNAL_SORTS else DEFAULT_EXTERNAL_SORT


def external_link_list(links: QuerySet[ExternalLink], *, sort: str = DEFAULT_EXTERNAL_SORT) -> QuerySet:
    """`links` ordered by `sort`'s keyset columns (for keyset_paginate with `external_keyset_columns(sort)`)."""
    columns = EXTERNAL_SORTS[external_sort_key(sort)]
    return links.order_by(*(f"-{c.name}" if c.descending else c.name for c in columns))


def external_keyset_columns(sort: str) -> tuple[KeysetColumn, ...]:
    return EXTERNAL_SORTS[external_sort_key(sort)]


def external_cursor_tag(audit_id, sort: str) -> str:
    """What a cursor of the External list is bound to: the audit and the sort (filters only narrow the rows)."""
    return f"external:{audit_id}:{external_sort_key(sort)}"


def external_linking_cursor_tag(link_id) -> str:
    return f"external-linking:{link_id}"


@dataclass(frozen=True)
class OutcomeCount:
    outcome: str
    label: str
    count: int
    problem: bool


@dataclass(frozen=True)
class ExternalCounts:
    """The audit's external targets per outcome (every outcome, zero-filled, in the choices' order), in all and
    those worth a look."""

    by_outcome: tuple[OutcomeCount, ...]
    total: int
    problems: int

    def as_dict(self) -> dict[str, int]:
        return {row.outcome: row.count for row in self.by_outcome}


def external_counts(*, audit: Audit) -> ExternalCounts:
    """One grouped count on the (audit, outcome, url) index."""
    found = dict(
        ExternalLink.objects.filter(audit_id=audit.id)
        .order_by()
        .values("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    rows = tuple(
        OutcomeCount(outcome=value, label=label, count=found.get(value, 0), problem=value in PROBLEM_OUTCOMES)
        for value, label in Outcome.choices
    )
    return ExternalCounts(
        by_outcome=rows,
        total=sum(r.count for r in rows),
        problems=sum(r.count for r in rows if r.problem),
    )


def external_link_get(*, audit: Audit, link_id=None, url: str | None = None) -> ExternalLink | None:
    """One target of the audit, by its id or its exact URL; None when the audit has no such target."""
    links = ExternalLink.objects.filter(audit_id=audit.id)
    if link_id is not None:
        return links.filter(id=link_id).first()
    if url is not None:
        return links.filter(url=url).first()
    return None


def external_linking_pages(*, audit: Audit, url: str) -> QuerySet:
    """The crawled pages of the audit linking to the external `url`, by source URL: each as a dict with the
    edge's id, source_page_id, source_page__url, anchor_text, nofollow and link_count (the shape of
    audits.selectors.links.page_inlinks). Naming the source page's audit lets PostgreSQL walk its (audit, url)
    index in order and stop after a screen of rows."""
    return (
        LinkEdge.objects.filter(audit_id=audit.id, target_url=url, internal=False, source_page__audit_id=audit.id)
        .order_by("source_page__url", "id")
        .values("id", "source_page_id", "source_page__url", "anchor_text", "nofollow", "link_count")
    )


def external_linking_pages_count(*, audit: Audit, url: str) -> int:
    """How many crawled pages link to `url`: an index count on (audit, target_url), without the join."""
    return LinkEdge.objects.filter(audit_id=audit.id, target_url=url, internal=False).count()


def external_linking_sample(*, audit: Audit, urls: list[str], per_target: int) -> dict[str, list[dict]]:
    """Up to `per_target` linking pages (source URL and anchor) for each of `urls` (a screen's targets), by source
    URL: one query per target on (audit, target_url), at most a screen's worth."""
    return {url: list(external_linking_pages(audit=audit, url=url)[:per_target]) for url in urls}


def external_link_rows(*, audit: Audit) -> QuerySet[ExternalLink]:
    """Every external target of the audit by URL (the exports' one row per target)."""
    return ExternalLink.objects.filter(audit_id=audit.id).order_by("url")


def external_link_edges(*, audit: Audit) -> QuerySet:
    """Every (target, linking page) pair of the audit's checked external targets, by target then source URL, each
    with the target's outcome and status (a lookup per row on (audit, url), the unique index): the exports' one row
    per target, linking page and anchor. Edges to an external URL the pass has no row for are left out."""
    target = ExternalLink.objects.filter(audit_id=OuterRef("audit_id"), url=OuterRef("target_url"))
    return (
        LinkEdge.objects.filter(audit_id=audit.id, internal=False, source_page__audit_id=audit.id)
        .filter(Exists(target))
        .annotate(
            outcome=Subquery(target.values("outcome")[:1]),
            status_code=Subquery(target.values("status_code")[:1]),
        )
        .order_by("target_url", "source_page__url", "id")
    )
