"""PostgreSQL's planner statistics for the crawl tables, kept fresh while an audit grows them.

The planner picks an index by what it last sampled of a table. A table never analyzed since an audit began
(autovacuum off, as on the CI machine, or a large table whose new rows are under autovacuum's 10 % share)
says the audit has a few dozen rows: a frontier lookup of 70 URLs by (audit, url) then read all 100,000 rows
of the audit through an audit-only index (40 ms instead of 0.2), on every batch of every chunk, and a crawl
of 100,000 pages ran at half the speed of one of 10,000. The rounds refresh what went stale (`flow.step_send`);
finalize refreshes all before its joins."""

import logging

from django.db import DatabaseError, connection, transaction

from audits.limits import PLANNER_STATS_STALE_MIN_ROWS, PLANNER_STATS_STALE_SHARE
from audits.models import Issue, Page
from scratchpad.models import Frontier, LinkEdge

logger = logging.getLogger(__name__)

CRAWL_MODELS = (Page, LinkEdge, Frontier, Issue)
# What chunks query by the audit while they crawl. Not pages: a page is written by its id, and sampling its wide
# rows costs ~0.6 s at 100,000 pages. Not link edges either: a crawl only adds them, and deletes a replayed page's
# by its id (scratchpad.services.frontier._replace_edges), on the source page index whatever the statistics say;
# finalize, which joins them, refreshes them first. Their refreshes, ~30 rows a page sampled each time the table
# grew by half, were ~0.1 PostgreSQL CPU ms a page at 10,000 pages.
CRAWL_TIME_MODELS = (Frontier, Issue)
# One refresh at a time across workers: a second one would only wait for the first's lock, then sample again.
_REFRESH_LOCK_KEY = 0x5177_5354  # an arbitrary constant, the key of a transaction-scoped advisory lock


def planner_statistics_refresh(*models) -> None:
    """ANALYZE the crawl tables (or `models`' only) now."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        _analyze(cursor, [m._meta.db_table for m in (models or CRAWL_MODELS)])


def crawl_statistics_refresh_if_stale() -> list[str]:
    """ANALYZE the crawl tables that changed by more than PLANNER_STATS_STALE_SHARE of the rows they held when
    last analyzed (and by at least PLANNER_STATS_STALE_MIN_ROWS): each is analyzed about every time it grows by
    half, a few times over a whole crawl. Returns the tables analyzed; none while another refresh runs."""
    if connection.vendor != "postgresql":
        return []
    try:
        return _refresh_stale([m._meta.db_table for m in CRAWL_TIME_MODELS])
    except DatabaseError:
        # Only an optimisation: a refresh that fails (a statement timeout on a huge table, say) must not fail the
        # round that was just sent, nor have its task retried.
        logger.warning("planner statistics refresh failed", exc_info=True)
        return []


def _refresh_stale(tables: list[str]) -> list[str]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_REFRESH_LOCK_KEY])
        if not cursor.fetchone()[0]:
            return []
        # reltuples is -1 for a table never analyzed: its threshold is then the minimum.
        cursor.execute(
            """
            SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
            WHERE s.relname = ANY(%s) AND s.n_mod_since_analyze > GREATEST(%s, c.reltuples * %s)
            ORDER BY s.relname
            """,
            [tables, PLANNER_STATS_STALE_MIN_ROWS, PLANNER_STATS_STALE_SHARE],
        )
        stale = [name for (name,) in cursor.fetchall()]
        if stale:
            _analyze(cursor, stale)
    return stale


def _analyze(cursor, tables: list[str]) -> None:
    cursor.execute(f"ANALYZE {', '.join(tables)}")
