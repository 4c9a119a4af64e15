"""Planner statistics kept fresh while a crawl grows its tables: a table is analyzed once it changed by half of
what it held, and the planner then expects the audit's real size, not a few dozen rows."""

import re

import psycopg
import pytest
from django.db import connection

from audits.limits import PLANNER_STATS_STALE_MIN_ROWS
from audits.models import page_id_for
from audits.pipeline.statistics import crawl_statistics_refresh_if_stale, planner_statistics_refresh
from scratchpad.models import Frontier, LinkEdge
from scratchpad.services import Edge, NewURL, frontier_seed
from scratchpad.services.frontier import _replace_edges
from tests.factories import AuditFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _flush_table_stats() -> None:
    # A backend reports its table counters when it goes idle, at most once a second: force the next report,
    # and let the idle moment after this statement make it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")


def _analyzed_count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def _estimated_rows(audit_id) -> int:
    """How many frontier rows the planner expects the audit to have."""
    plan = Frontier.objects.filter(audit_id=audit_id).explain()
    return int(re.search(r"rows=(\d+)", plan).group(1))


def test_a_grown_frontier_is_analyzed_once_and_the_planner_then_knows_the_audits_size():
    assert connection.vendor == "postgresql"
    table = Frontier._meta.db_table
    planner_statistics_refresh(Frontier)  # the table as other tests left it: (nearly) empty
    _flush_table_stats()
    crawl_statistics_refresh_if_stale()  # whatever else other tests left stale
    audit = AuditFactory()
    urls = [f"http://127.0.0.1:1/p/{n}.html" for n in range(PLANNER_STATS_STALE_MIN_ROWS * 3)]
    frontier_seed(audit_id=audit.id, urls=[NewURL(url, depth=1, source="link") for url in urls])
    _flush_table_stats()
    before = _analyzed_count(table)

    assert table in crawl_statistics_refresh_if_stale()
    _flush_table_stats()
    assert _analyzed_count(table) == before + 1
    assert table not in crawl_statistics_refresh_if_stale()  # fresh now: not sampled again
    # Not "a few dozen rows": the (audit, url) lookups are planned against the audit's real size.
    assert _estimated_rows(audit.id) > len(urls) // 2


def test_link_edges_are_not_sampled_while_a_crawl_adds_them_and_a_replay_still_deletes_by_page():
    """A crawl only adds link edges and deletes a replayed page's by its id: no refresh of theirs changes a plan of
    the crawl's, and each sampled ~30,000 rows. Finalize refreshes them before it joins them."""
    table = LinkEdge._meta.db_table
    planner_statistics_refresh(LinkEdge)
    _flush_table_stats()
    audit = AuditFactory()
    sources = [page_id_for(audit.id, f"http://127.0.0.1:1/p/{n}.html") for n in range(PLANNER_STATS_STALE_MIN_ROWS)]
    edges = [Edge(source, f"http://127.0.0.1:1/t/{k}.html", "a", False, True) for source in sources for k in range(3)]
    _replace_edges(audit.id, edges, replayed=set())
    _flush_table_stats()
    before = _analyzed_count(table)

    assert table not in crawl_statistics_refresh_if_stale()
    _flush_table_stats()
    assert _analyzed_count(table) == before
    # The replay's delete reads the source page index, with the table's statistics from before it grew 3x.
    plan = LinkEdge.objects.filter(source_page_id__in=sources[:3]).explain()
    assert "scratchpad_linkedge_source_page_id" in plan, plan
    _replace_edges(audit.id, edges[:3], replayed={sources[0]})
    assert LinkEdge.objects.filter(audit=audit).count() == len(edges)
    planner_statistics_refresh()  # finalize's refresh: every crawl table
    _flush_table_stats()
    assert _analyzed_count(table) == before + 1


def test_a_table_that_changed_little_is_not_analyzed_again():
    planner_statistics_refresh()
    _flush_table_stats()
    audit = AuditFactory()
    urls = [NewURL(f"http://127.0.0.1:1/{n}", depth=1, source="link") for n in range(50)]
    frontier_seed(audit_id=audit.id, urls=urls)
    _flush_table_stats()
    assert Frontier._meta.db_table not in crawl_statistics_refresh_if_stale()


def test_a_refresh_that_cannot_take_its_lock_gives_up_with_a_warning_and_leaves_the_connection_usable(caplog):
    planner_statistics_refresh(Frontier)
    _flush_table_stats()
    audit = AuditFactory()
    count = PLANNER_STATS_STALE_MIN_ROWS * 2
    urls = [NewURL(f"http://127.0.0.1:1/q/{n}", depth=1, source="link") for n in range(count)]
    frontier_seed(audit_id=audit.id, urls=urls)
    _flush_table_stats()
    settings = connection.settings_dict
    dsn = f"host={settings['HOST']} port={settings['PORT'] or 5432} user={settings['USER']} dbname={settings['NAME']}"
    with psycopg.connect(dsn) as other:
        # What ANALYZE needs, held by another session: this one's ANALYZE waits, then hits its lock timeout.
        other.execute(f"LOCK TABLE {Frontier._meta.db_table} IN SHARE UPDATE EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")
        try:
            assert crawl_statistics_refresh_if_stale() == []
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    assert "planner statistics refresh failed" in caplog.text
    assert Frontier.objects.filter(audit=audit).count() == len(urls)  # the connection still answers
