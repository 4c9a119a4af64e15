"""Migration 0032_i29_page_counts: the counts finalize stored on each page move to its PageCounts row (an audit
counted before issues were has none, and is counted in the query), the page columns and their indexes go;
backwards, the page columns get the counts back."""

import uuid

import pytest
from django.db import connection

from audits.models import PageCounts
from tests.support.migrations import apps_at, migrate_to, project_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = "0031_i28_sitemap_changes"


def _migrate(target=None) -> None:
    migrate_to("audits", target)


def _fill(apps) -> dict:
    """A counted audit (inlinks, linking pages, issues on every page), one counted before linking pages were
    stored, and one counted before issues were (inlinks only)."""
    project = project_at(apps, "before-page-counts")
    Audit_, Page = (apps.get_model("audits", m) for m in ("Audit", "Page"))
    counts = {
        "counted": lambda n: {"inlinks_count": 10 + n, "inlink_pages_count": 1 + n, "issues_count": n},
        "no_pages": lambda n: {"inlinks_count": 20 + n, "inlink_pages_count": None, "issues_count": 2 * n},
        "inlinks_only": lambda n: {"inlinks_count": 30 + n, "inlink_pages_count": None, "issues_count": None},
    }
    pages = {}
    for name, made in counts.items():
        audit = Audit_.objects.create(
            id=uuid.uuid4(), project=project, start_url="https://docs.example/", status="completed"
        )
        for n in range(3):
            page = Page.objects.create(
                id=uuid.uuid4(), audit=audit, url=f"https://docs.example/{name}/{n}", fetch_class="ok", **made(n)
            )
            pages[page.id] = (name, made(n))
    return pages


def _page_columns(ids) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, inlinks_count, inlink_pages_count, issues_count FROM audits_page WHERE id = ANY(%s)",
            [list(ids)],
        )
        return {row[0]: row[1:] for row in cursor.fetchall()}


def test_stored_counts_move_to_their_rows_and_come_back_backwards():
    _migrate(BEFORE)
    try:
        pages = _fill(apps_at("audits", BEFORE))
    finally:
        _migrate()  # the newest migrations: the models below are today's
    rows = {c.page_id: c for c in PageCounts.objects.filter(page_id__in=pages)}
    moved = {pid for pid, (name, _) in pages.items() if name != "inlinks_only"}
    assert set(rows) == moved  # no row for an audit whose issues were not counted: it is counted in the query
    for page_id in moved:
        _name, made = pages[page_id]
        row = rows[page_id]
        assert (row.inlinks, row.inlink_pages, row.issues) == (
            made["inlinks_count"],
            made["inlink_pages_count"],
            made["issues_count"],
        )
        assert row.url == row.page.url and row.audit_id == row.page.audit_id
    columns = {c.name for c in connection.introspection.get_table_description(connection.cursor(), "audits_page")}
    assert not columns & {"inlinks_count", "inlink_pages_count", "issues_count"}

    _migrate(BEFORE)
    try:
        restored = _page_columns(pages)
    finally:
        _migrate()
    for page_id, (name, made) in pages.items():
        if name == "inlinks_only":
            assert restored[page_id] == (None, None, None)  # the migration kept nothing of it to give back
        else:
            assert restored[page_id] == (made["inlinks_count"], made["inlink_pages_count"], made["issues_count"])
