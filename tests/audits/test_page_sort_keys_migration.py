"""Migrations 0033_i29_page_sort_keys and 0034_i29_page_url_rank: the counts rows an audit already has get a copy of
their pages' sort keys (status, depth, title and H1 with their lengths, the description's length, H1s, time, size,
words, and whether the text views list the page) and their URL's rank among the audit's, so its grid sorts on them
as on a newly finalized audit's."""

import uuid

import pytest

from audits.models import Page, PageCounts
from tests.support.migrations import apps_at, migrate_to, project_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = "0032_i29_page_counts"

PAGES = {
    "home": {"status_code": 200, "depth": 0, "title": "Home", "meta_description": "Welcome", "h1": "Shop"},
    "pdf": {"status_code": 200, "depth": 1, "content_type": "application/pdf", "bytes": 5_000},
    "gone": {"status_code": 404, "depth": 2, "title": "Not found", "meta_description": None, "h1_count": 2},
    "refused": {"status_code": None, "depth": None, "response_time_ms": None, "word_count": 0},
}


def _fill(apps) -> None:
    project = project_at(apps, "before-sort-keys")
    Audit_, Page_, PageCounts_ = (apps.get_model("audits", m) for m in ("Audit", "Page", "PageCounts"))
    audit = Audit_.objects.create(
        id=uuid.uuid4(), project=project, start_url="https://docs.example/", status="completed"
    )
    for name, fields in PAGES.items():
        made = {"content_type": "text/html", "response_time_ms": 80, "bytes": 1_000, "word_count": 250, **fields}
        page = Page_.objects.create(id=uuid.uuid4(), audit=audit, url=f"https://docs.example/{name}", **made)
        PageCounts_.objects.create(page=page, audit=audit, url=page.url, inlinks=1, inlink_pages=1, issues=0)
    other = Audit_.objects.create(
        id=uuid.uuid4(), project=project, start_url="https://blog.example/", status="completed"
    )
    for name in ("b", "a"):  # URLs of another audit, ranked on their own
        page = Page_.objects.create(id=uuid.uuid4(), audit=other, url=f"https://blog.example/{name}")
        PageCounts_.objects.create(page=page, audit=other, url=page.url, inlinks=0, inlink_pages=0, issues=0)


def test_the_stored_rows_get_their_pages_sort_keys():
    migrate_to("audits", BEFORE)
    try:
        _fill(apps_at("audits", BEFORE))
    finally:
        migrate_to("audits")  # the newest migrations: the models below are today's
    rows = {c.url.rsplit("/", 1)[1]: c for c in PageCounts.objects.filter(url__startswith="https://docs.example/")}
    assert set(rows) == set(PAGES)
    for name, row in rows.items():
        page = Page.objects.get(id=row.page_id)
        copied = ("status_code", "depth", "title", "h1", "h1_count", "response_time_ms", "bytes", "word_count")
        assert {key: getattr(row, key) for key in copied} == {key: getattr(page, key) for key in copied}, name
        assert (row.title_len, row.h1_len) == (len(page.title), len(page.h1))
        assert row.description_len == len(page.meta_description or "")
    assert [name for name, _row in sorted(rows.items(), key=lambda item: item[1].url_rank)] == sorted(PAGES)
    assert sorted(row.url_rank for row in rows.values()) == [1, 2, 3, 4]  # counted within the audit, from 1
    other = PageCounts.objects.filter(url__startswith="https://blog.example/").order_by("url_rank")
    assert list(other.values_list("url", "url_rank")) == [("https://blog.example/a", 1), ("https://blog.example/b", 2)]
    assert {name: row.html for name, row in rows.items()} == {
        "home": True,
        "pdf": False,
        "gone": False,
        "refused": False,
    }
