"""Issues, link edges and page counts point at their page without a database constraint (the note above
audits.models.Page): the two ways a page row goes, deleting its audit and retention's prune, leave no row pointing
at a page that is gone. Real PostgreSQL, on an audit with rows in every table that points at a page."""

import pytest
from django.db import connection

from audits.models import Audit, Issue, Page, PageCounts
from audits.pipeline.lifecycle import audit_delete
from audits.retention import audit_prune
from scratchpad.models import LinkEdge
from tests.factories import ProjectFactory
from tests.support.retention import SITE, audit_with_rows

pytestmark = pytest.mark.django_db(transaction=True)

# (model, its column that names the page)
PAGE_REFERENCES = ((Issue, "page_id"), (LinkEdge, "source_page_id"), (PageCounts, "page_id"))


def _pointing_at_missing_pages() -> dict[str, int]:
    """Rows of every audit, per table, whose page is not (or no longer) stored."""
    found = {}
    with connection.cursor() as cursor:
        for model, column in PAGE_REFERENCES:
            cursor.execute(
                f"SELECT COUNT(*) FROM {model._meta.db_table} r WHERE r.{column} IS NOT NULL "
                f"AND NOT EXISTS (SELECT 1 FROM {Page._meta.db_table} p WHERE p.id = r.{column})"
            )
            found[model._meta.label] = cursor.fetchone()[0]
    return found


def _rows_of(audit) -> dict[str, int]:
    return {model._meta.label: model.objects.filter(audit_id=audit.id).count() for model, _ in PAGE_REFERENCES}


def test_the_page_references_carry_no_database_constraint():
    with connection.cursor() as cursor:
        for model, column in PAGE_REFERENCES:
            constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
            assert not [name for name, c in constraints.items() if c["foreign_key"] and c["columns"] == [column]], (
                model._meta.label
            )
            # ... and keep their index: the cascades and the page's own lists look them up by page
            indexed = [c for c in constraints.values() if (c["index"] or c["primary_key"]) and c["columns"] == [column]]
            assert indexed, model._meta.label


def test_link_edges_name_their_audit_without_a_database_constraint():
    """~30 edges a page crawled: their audit's foreign key check was most of a crawl's (scratchpad.models.LinkEdge).
    The other audit references keep theirs."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, LinkEdge._meta.db_table)
        assert not [c for c in constraints.values() if c["foreign_key"] and c["columns"] == ["audit_id"]]
        # ... and lookups by audit keep an index that starts with it (linkedge_audit_target)
        assert [c for c in constraints.values() if c["index"] and c["columns"][:1] == ["audit_id"]]
        page_constraints = connection.introspection.get_constraints(cursor, Page._meta.db_table)
        assert [c for c in page_constraints.values() if c["foreign_key"] and c["columns"] == ["audit_id"]]


def test_deleting_an_audit_leaves_nothing_pointing_at_its_pages():
    project = ProjectFactory(base_url=SITE + "/")
    audit = audit_with_rows(project, days_ago=3, pages=9)
    other = audit_with_rows(project, days_ago=1, pages=4)
    before = _rows_of(audit)
    assert all(before.values()), before  # something of each kind to leave behind
    audit_delete(audit=audit)
    assert not Audit.objects.filter(id=audit.id).exists()
    assert _rows_of(audit) == dict.fromkeys(before, 0)
    assert _pointing_at_missing_pages() == dict.fromkeys(before, 0)
    assert all(_rows_of(other).values())  # the other audit keeps its rows


def test_a_prune_leaves_nothing_pointing_at_the_pages_it_deleted():
    project = ProjectFactory(base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=9)
    audit_with_rows(project, days_ago=10, pages=3)
    assert all(_rows_of(old).values())
    result = audit_prune(audit=old, batch_rows=4)  # batches that end between a page's rows
    assert old.id in result.audits
    assert not Page.objects.filter(audit_id=old.id).exists()
    assert _rows_of(old) == dict.fromkeys(_rows_of(old), 0)
    assert _pointing_at_missing_pages() == dict.fromkeys(_rows_of(old), 0)
