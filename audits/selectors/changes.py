"""Reads of an audit's changes against its baseline (PageChange: one row per URL and field that differs, a URL only one
of the two audits crawled, a robots.txt line, a sitemap document; written at finalize by audits.pipeline.changes): the
rows with filters by field, direction and segment in keyset pages, the counts per field, where the audit stands (no
baseline, being computed, nothing changed) and the exports' rows. Shared by the dashboard's Changes screen, the API, the
MCP server, the exports and the comparison screen.

Every list is ordered by (url, id): the index (audit, url, id) serves it, and with a field, (audit, field, url, id)
does, the field being fixed. A segment's changes are those whose URL is one of the segment's pages in the audit or, for
a URL this audit no longer has (removed), in the baseline; robots.txt lines and sitemaps belong to no segment, like
site-wide findings."""

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from audits.models import Audit, Page, PageChange
from audits.segments import SegmentChoice
from audits.selectors.pagination import KeysetColumn

Field = PageChange.Field
Direction = PageChange.Direction

CHANGES_PER_PAGE = 50  # rows per screen of the dashboard's Changes list
# The keyset of every list of changes: url then id (unique), in the order of both PageChange indexes.
CHANGE_KEYSET = (KeysetColumn("url"), KeysetColumn("id"))
CHANGE_ORDERING = tuple(column.name for column in CHANGE_KEYSET)
CHANGE_EXPORT_COLUMNS = ("url", "field", "direction", "before", "after")
CHANGE_FETCH_ROWS = 2000  # rows per fetch of the exports' database cursor
BASELINE_CHOICES_MAX = 50  # audits offered as a baseline (newest first)
STATS_KEY = "changes"  # Audit.stats["changes"]: {field: count, "baseline": id or null}, written at finalize

FIELD_LABELS = dict(Field.choices)
# How each direction reads beside a field (a number grew; a page became indexable: "up").
DIRECTION_LABELS = {
    Direction.ADDED: "added",
    Direction.REMOVED: "removed",
    Direction.CHANGED: "changed",
    Direction.UP: "up",
    Direction.DOWN: "down",
}


def change_field_valid(value: str) -> bool:
    return value in Field.values


def change_direction_valid(value: str) -> bool:
    return value in Direction.values


def _in_segment(segment: SegmentChoice) -> Q:
    """The changes whose URL is a page of the segment in the change's audit, or in its baseline (a removed URL)."""
    pages = Page.objects.filter(segment.pages_q)
    here = Exists(pages.filter(audit_id=OuterRef("audit_id"), url=OuterRef("url")))
    there = Exists(pages.filter(audit_id=OuterRef("baseline_id"), url=OuterRef("url")))
    return Q(here) | Q(there)


def change_filter(
    *, audit: Audit, field: str | None = None, direction: str | None = None, segment: SegmentChoice | None = None
) -> QuerySet[PageChange]:
    """The audit's changes of one field and/or direction (an unknown value: none), in a segment. Unordered."""
    changes = PageChange.objects.filter(audit_id=audit.id)
    if field:
        changes = changes.filter(field=field) if change_field_valid(field) else changes.none()
    if direction:
        changes = changes.filter(direction=direction) if change_direction_valid(direction) else changes.none()
    if segment is not None:
        changes = changes.filter(_in_segment(segment))
    return changes


def change_list(
    *, audit: Audit, field: str | None = None, direction: str | None = None, segment: SegmentChoice | None = None
) -> QuerySet[PageChange]:
    """The filtered changes by (url, id), for keyset_paginate with CHANGE_KEYSET."""
    return change_filter(audit=audit, field=field, direction=direction, segment=segment).order_by(*CHANGE_ORDERING)


def change_cursor_tag(audit_id) -> str:
    """What a cursor of the Changes list is bound to: the audit (one order; filters only narrow the rows)."""
    return f"changes:{audit_id}"


def changes_with_pages(rows) -> list[PageChange]:
    """`rows` (a screen of changes) with `page_id` set: the audit's page of the URL, or for a URL it no longer has,
    the baseline's (`page_audit_id` says whose), None when neither crawled it (a robots.txt line, a sitemap). Two
    queries on the (audit, url) unique index, whatever the screen's size."""
    rows = list(rows)
    urls = {row.url for row in rows}
    audit_ids = {row.audit_id for row in rows} | {row.baseline_id for row in rows if row.baseline_id}
    found = {
        (audit_id, url): page_id
        for audit_id, url, page_id in Page.objects.filter(audit_id__in=audit_ids, url__in=urls).values_list(
            "audit_id", "url", "id"
        )
    }
    for row in rows:
        row.page_id = found.get((row.audit_id, row.url))
        row.page_audit_id = row.audit_id
        if row.page_id is None and row.baseline_id:
            row.page_id = found.get((row.baseline_id, row.url))
            row.page_audit_id = row.baseline_id
        row.field_label = FIELD_LABELS.get(row.field, row.field)
    return rows


@dataclass(frozen=True)
class FieldCount:
    field: str
    label: str
    count: int


@dataclass(frozen=True)
class ChangeCounts:
    """The audit's changes per field (every field, zero-filled, in the choices' order) and in all."""

    by_field: tuple[FieldCount, ...]
    total: int

    def as_dict(self) -> dict[str, int]:
        return {row.field: row.count for row in self.by_field}

    @property
    def shown(self) -> tuple[FieldCount, ...]:
        """The fields that changed at all (a screen's filters)."""
        return tuple(row for row in self.by_field if row.count)


def _stored_counts(audit: Audit) -> dict[str, int] | None:
    stored = (audit.stats or {}).get(STATS_KEY)
    if not isinstance(stored, dict):
        return None
    return {key: value for key, value in stored.items() if key in Field.values and isinstance(value, int)}


def change_counts(*, audit: Audit, segment: SegmentChoice | None = None) -> ChangeCounts:
    """Changes per field: the counts finalize stored (Audit.stats["changes"]) for the whole site, one grouped count
    on the (audit, field, …) index otherwise (a segment's, or an audit whose counts were not stored)."""
    found = _stored_counts(audit) if segment is None else None
    if found is None:
        found = dict(
            change_filter(audit=audit, segment=segment)
            .order_by()
            .values("field")
            .annotate(n=Count("id"))
            .values_list("field", "n")
        )
    rows = tuple(FieldCount(field=value, label=label, count=found.get(value, 0)) for value, label in Field.choices)
    return ChangeCounts(by_field=rows, total=sum(row.count for row in rows))


def change_total(
    counts: ChangeCounts, *, audit: Audit, field: str | None = None, direction: str | None = None, segment=None
) -> int:
    """How many changes a list of these filters holds: read from `counts` (the same audit and segment's) unless a
    direction narrows it, then counted."""
    if direction:
        return change_filter(audit=audit, field=field, direction=direction, segment=segment).count()
    if field:
        return counts.as_dict().get(field, 0)
    return counts.total


def change_export_rows(
    *, audit: Audit, field: str | None = None, direction: str | None = None, segment: SegmentChoice | None = None
):
    """Every (filtered) change of the audit as a CHANGE_EXPORT_COLUMNS tuple, by (url, id), through a server-side
    cursor: the exports hold one fetch of rows at a time."""
    rows = change_list(audit=audit, field=field, direction=direction, segment=segment)
    return rows.values_list(*CHANGE_EXPORT_COLUMNS).iterator(chunk_size=CHANGE_FETCH_ROWS)


# --- where the audit stands ------------------------------------------------------------------------------------


class ChangesState:
    """Why a Changes screen shows what it shows (each face words it)."""

    RUNNING = "running"  # changes are computed at finalize
    NOT_COMPLETED = "not_completed"  # failed or cancelled: never finalized
    FIRST = "first"  # no completed audit of the project before it: nothing to compare with
    NO_BASELINE = "no_baseline"  # earlier audits exist, but none is its baseline (an older audit, a deleted one)
    PENDING = "pending"  # a baseline was chosen and its changes are not written yet
    UNCHANGED = "unchanged"  # against its baseline, nothing changed
    CHANGED = "changed"


@dataclass(frozen=True)
class ChangesStatus:
    state: str
    baseline: Audit | None  # the audit its changes are measured against (None: none, or deleted)
    computed_against: str | None  # the baseline id finalize or a recomputation stored with the counts


def changes_status(*, audit: Audit, total: int | None = None) -> ChangesStatus:
    """Where the audit's changes stand; `total`: its changes in all, when the caller counted them already."""
    baseline = Audit.objects.filter(id=audit.baseline_id).first() if audit.baseline_id else None
    stored = (audit.stats or {}).get(STATS_KEY)
    computed_against = stored.get("baseline") if isinstance(stored, dict) else None
    computed_against = str(computed_against) if computed_against else None
    if not audit.is_finished:
        state = ChangesState.RUNNING
    elif audit.status != Audit.Status.COMPLETED:
        state = ChangesState.NOT_COMPLETED
    else:
        if total is None:
            total = change_counts(audit=audit).total
        # Finalize stores the baseline with the counts; rows without counts stored are the baseline's too.
        stale = computed_against != str(baseline.id) if computed_against else not total
        if baseline is not None and stale:
            state = ChangesState.PENDING
        elif total:
            state = ChangesState.CHANGED
        elif baseline is not None:
            state = ChangesState.UNCHANGED
        elif _earlier_completed(audit):
            state = ChangesState.NO_BASELINE
        else:
            state = ChangesState.FIRST
    return ChangesStatus(state=state, baseline=baseline, computed_against=computed_against)


def change_baseline_choices(*, audit: Audit) -> QuerySet[Audit]:
    """The audits a person may pick as this one's baseline, newest first: the project's other completed audits whose
    pages are kept (a summarised audit cannot be compared page by page; audits.services.audit_baseline_set decides),
    fix verifications (a re-check of a few URLs) left out."""
    return (
        Audit.objects.filter(
            project_id=audit.project_id,
            status=Audit.Status.COMPLETED,
            summarised_at__isnull=True,
            verifies__isnull=True,
        )
        .exclude(id=audit.id)
        .order_by("-created_at")[:BASELINE_CHOICES_MAX]
    )


def _earlier_completed(audit: Audit) -> bool:
    return Audit.objects.filter(
        project_id=audit.project_id, status=Audit.Status.COMPLETED, created_at__lt=audit.created_at, verifies=None
    ).exists()
