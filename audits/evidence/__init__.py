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

The definitions live beside this module, per kind of check: columns.py (the building blocks), page_types.py,
site_types.py, content_types.py, rich_types.py, external_types.py, resource_types.py and render_types.py;
EVIDENCE joins them.
"""

from collections.abc import Iterable, Iterator

from django.db.models import Count, F, IntegerField, Q, QuerySet, Sum, Window
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, RowNumber

from audits.checks.registry import CHECKS
from audits.evidence.bot_types import BOT_EVIDENCE
from audits.evidence.columns import (
    DETAIL_MAX_CHARS,
    DETAIL_SEPARATOR,
    EVIDENCE_FETCH_ROWS,
    LIST_SEPARATOR,
    UNIT_PAGES,
    UNIT_SINGULAR,
    Evidence,
    computed,
    flat,
    page,
)
from audits.evidence.content_types import CONTENT_EVIDENCE
from audits.evidence.external_types import EXTERNAL_EVIDENCE, EXTERNAL_LINK_TYPES
from audits.evidence.page_types import PAGE_EVIDENCE
from audits.evidence.render_types import RENDER_EVIDENCE
from audits.evidence.resource_types import RESOURCE_EVIDENCE, RESOURCE_LINK_TYPES
from audits.evidence.rich_types import RICH_EVIDENCE
from audits.evidence.site_types import SITE_EVIDENCE
from audits.models import Audit, Issue

EVIDENCE: dict[str, Evidence] = {
    **PAGE_EVIDENCE,
    **SITE_EVIDENCE,
    **CONTENT_EVIDENCE,
    **RICH_EVIDENCE,
    **EXTERNAL_EVIDENCE,
    **RESOURCE_EVIDENCE,
    **RENDER_EVIDENCE,
    **BOT_EVIDENCE,
}

# Site checks whose rows are each tied to a page (the others describe the site as a whole). A broken resource's
# rows are (page, resource URL) pairs too: grouped by resource, they list the pages loading it.
LINK_TYPES = ("broken-internal-link", "internal-link-to-redirect", *EXTERNAL_LINK_TYPES, *RESOURCE_LINK_TYPES)
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
