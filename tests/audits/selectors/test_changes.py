"""audits.selectors.changes: an audit's changes against its baseline filtered by field, direction and segment, in
keyset pages by (url, id) on the PageChange indexes, counted per field (stored at finalize, or grouped), where the
audit stands (first, no baseline, pending, unchanged) and the exports' rows."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audits.models import PageChange
from audits.segments import resolve_segment
from audits.selectors import changes
from audits.selectors.pagination import _keyset_seek, keyset_paginate
from tests.dashboard.conftest import finished_audit
from tests.factories import PageChangeFactory, ProjectFactory
from tests.support.page_changes import CHANGES, changes_world

pytestmark = pytest.mark.django_db

Field = PageChange.Field
Direction = PageChange.Direction
State = changes.ChangesState


@pytest.fixture
def world():
    project = ProjectFactory()
    baseline = finished_audit(project, days_ago=7)
    audit = finished_audit(project, pages_crawled=4)
    rows, pages, old = changes_world(audit, baseline)
    PageChangeFactory(audit=finished_audit(project, days_ago=3), baseline=baseline)  # another audit's: never shown
    return audit, baseline, rows


def _names(rows, world_rows) -> list[str]:
    by_id = {row.id: name for name, row in world_rows.items()}
    return [by_id[row.id] for row in rows]


def _sorted_names(world_rows, names) -> list[str]:
    return sorted(names, key=lambda n: (world_rows[n].url, str(world_rows[n].id)))


def test_the_list_is_by_url_then_id_and_filters_by_field_and_direction(world):
    audit, _baseline, rows = world
    every = changes.change_list(audit=audit)
    assert _names(every, rows) == _sorted_names(rows, CHANGES)
    assert _names(changes.change_list(audit=audit, field=Field.TITLE), rows) == ["title"]
    assert _names(changes.change_list(audit=audit, direction=Direction.ADDED), rows) == _sorted_names(
        rows, ["description", "added", "robots"]
    )
    assert _names(changes.change_list(audit=audit, field=Field.INDEXABILITY, direction="down"), rows) == ["noindex"]
    assert changes.change_list(audit=audit, field="nonsense").count() == 0
    assert changes.change_list(audit=audit, direction="sideways").count() == 0


def test_a_segment_holds_its_pages_changes_and_its_removed_urls_through_the_baseline(world):
    audit, _baseline, rows = world
    blog = resolve_segment(audit=audit, param="/blog/")
    assert _names(changes.change_list(audit=audit, segment=blog), rows) == _sorted_names(
        rows,
        ["title", "description", "noindex", "removed"],  # /blog/gone: only the baseline crawled it
    )
    other = resolve_segment(audit=audit, param="other")
    assert _names(changes.change_list(audit=audit, segment=other), rows) == ["added"]  # robots.txt is in none
    docs = resolve_segment(audit=audit, param="/docs/")
    assert _names(changes.change_list(audit=audit, segment=docs, field=Field.WORDS), rows) == ["words"]


def test_keyset_pages_walk_every_change_once(world):
    audit, _baseline, rows = world
    listed = changes.change_list(audit=audit)
    seen, cursor = [], None
    while True:
        page = keyset_paginate(
            listed, columns=changes.CHANGE_KEYSET, cursor=cursor, tag=changes.change_cursor_tag(audit.id), per_page=3
        )
        seen += [row.id for row in page]
        if not page.has_next:
            break
        cursor = page.next_cursor
    assert seen == [row.id for row in listed] and len(seen) == len(CHANGES)


def test_the_list_reads_its_index_in_order(world):
    """With and without a field, PostgreSQL can walk a PageChange index in the list's order: no sort of the audit's
    changes before the first screen (sorts and scans off: a table of a few rows would be read whole, as it should)."""
    audit, _baseline, rows = world
    after = [rows["title"].url, str(rows["title"].id)]
    for field, key in ((None, None), (Field.TITLE, None), (None, after), (Field.TITLE, after)):
        listed = changes.change_list(audit=audit, field=field)
        if key is not None:  # a later page: the seek enters the index at the cursor
            listed = _keyset_seek(listed, changes.CHANGE_KEYSET, key, backwards=False)
        sql, params = listed[:50].query.sql_with_params()
        with connection.cursor() as cursor:
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                cursor.execute(f"SET LOCAL {setting} = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        expected = "page_change_audit_field_url" if field else "page_change_audit_url"
        assert expected in plan and "Sort" not in plan, plan
        if key is not None:
            assert any("Index Cond" in line and "ROW(url, id) >" in line for line in plan.splitlines()), plan


def test_counts_per_field_come_from_the_stored_stats_unfiltered_and_are_grouped_otherwise(world):
    audit, _baseline, _rows = world
    with CaptureQueriesContext(connection) as queries:
        counts = changes.change_counts(audit=audit)
    assert len(queries) == 0  # Audit.stats["changes"]
    assert counts.total == len(CHANGES) and counts.as_dict()[Field.TITLE] == 1
    assert counts.as_dict()[Field.H1] == 0  # zero-filled
    assert [row.field for row in counts.shown] == [
        f for f in Field.values if f in {spec[1] for spec in CHANGES.values()}
    ]  # in the choices' order
    blog = changes.change_counts(audit=audit, segment=resolve_segment(audit=audit, param="/blog/"))
    assert blog.total == 4 and blog.as_dict()[Field.REMOVED] == 1 and blog.as_dict()[Field.ROBOTS_TXT] == 0
    audit.stats = {}
    assert changes.change_counts(audit=audit).as_dict() == counts.as_dict()  # not stored: grouped


def test_rows_find_their_page_here_or_in_the_baseline(world):
    audit, baseline, rows = world
    shown = {r.id: r for r in changes.changes_with_pages(changes.change_list(audit=audit))}
    title, removed, robots = shown[rows["title"].id], shown[rows["removed"].id], shown[rows["robots"].id]
    assert title.page_id is not None and title.page_audit_id == audit.id and title.field_label == "Title"
    assert removed.page_id is not None and removed.page_audit_id == baseline.id
    assert robots.page_id is None


def test_export_rows(world):
    audit, _baseline, rows = world
    exported = list(changes.change_export_rows(audit=audit, field=Field.INDEXABILITY))
    noindex = rows["noindex"]
    assert exported == [(noindex.url, "indexability", "down", "indexable", "non-indexable: noindex")]
    assert len(list(changes.change_export_rows(audit=audit))) == len(CHANGES)


def test_where_an_audit_stands():
    project = ProjectFactory()
    first = finished_audit(project, days_ago=9)
    assert changes.changes_status(audit=first).state == State.FIRST
    running = finished_audit(project, status="running", completed_at=None)
    assert changes.changes_status(audit=running).state == State.RUNNING
    failed = finished_audit(project, days_ago=1, status="failed")
    assert changes.changes_status(audit=failed).state == State.NOT_COMPLETED
    older = finished_audit(project, days_ago=2)  # completed before change detection: no baseline, no counts
    assert changes.changes_status(audit=older).state == State.NO_BASELINE
    unchanged = finished_audit(project)
    unchanged.baseline = first
    unchanged.stats = {"changes": {"baseline": str(first.id)}}
    status = changes.changes_status(audit=unchanged)
    assert (status.state, status.baseline) == (State.UNCHANGED, first)
    unchanged.baseline = older  # another baseline chosen: its changes are not written yet
    assert changes.changes_status(audit=unchanged).state == State.PENDING
    changed = finished_audit(project)
    changes_world(changed, first)
    assert changes.changes_status(audit=changed).state == State.CHANGED


def test_a_lists_total_is_read_from_the_counts_unless_a_direction_narrows_it(world):
    audit, _baseline, _rows = world
    counts = changes.change_counts(audit=audit)
    with CaptureQueriesContext(connection) as queries:
        assert changes.change_total(counts, audit=audit) == len(CHANGES)
        assert changes.change_total(counts, audit=audit, field=Field.TITLE) == 1
        assert changes.change_total(counts, audit=audit, field="nonsense") == 0
    assert len(queries) == 0
    assert changes.change_total(counts, audit=audit, direction=Direction.ADDED) == 3
    assert changes.change_total(counts, audit=audit, field=Field.TITLE, direction=Direction.ADDED) == 0
