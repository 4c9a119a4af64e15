"""scratchpad.selectors.frontier_work: what planning a crawl round reads of the frontier, and that it reads it on
the claim index (the leased rows and the first claimable one) rather than counting every row of the audit."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scratchpad.models import Frontier
from scratchpad.selectors import FrontierWork, frontier_work
from scratchpad.services import NewURL, frontier_claim, frontier_seed, frontier_seed_sitemap
from tests.factories import AuditFactory

pytestmark = pytest.mark.django_db(transaction=True)
LEASE_S = 300
SITEMAP_ROWS = 3000  # a frontier many times larger than what planning may read


def _linked(audit, count):
    frontier_seed(
        audit_id=audit.id,
        urls=[NewURL(f"http://127.0.0.1:1/l{i}", depth=1, source="link") for i in range(count)],
    )


def _sitemap_only(audit, count):
    frontier_seed_sitemap(audit_id=audit.id, urls=[(f"http://127.0.0.1:1/s{i:05}", "/s*") for i in range(count)])


def test_an_empty_frontier_has_no_work():
    assert frontier_work(audit_id=AuditFactory().id) == FrontierWork(False, False, 0)


def test_sitemap_only_urls_are_claimable_but_not_linked():
    audit = AuditFactory()
    _sitemap_only(audit, 3)
    assert frontier_work(audit_id=audit.id) == FrontierWork(claimable=True, claimable_linked=False, leased_live=0)


def test_live_leases_are_counted_and_not_claimable():
    audit = AuditFactory()
    _linked(audit, 5)
    frontier_claim(audit_id=audit.id, lease_key="k", limit=5, lease_s=LEASE_S)
    assert frontier_work(audit_id=audit.id) == FrontierWork(claimable=False, claimable_linked=False, leased_live=5)


def test_expired_leases_are_claimable_again_and_linked_by_their_depth():
    audit = AuditFactory()
    _linked(audit, 4)
    frontier_claim(audit_id=audit.id, lease_key="k", limit=4, lease_s=LEASE_S)
    Frontier.objects.filter(audit=audit, url__endswith="/l0").update(leased_until=timezone.now() - timedelta(seconds=1))
    assert frontier_work(audit_id=audit.id) == FrontierWork(claimable=True, claimable_linked=True, leased_live=3)
    # An expired sitemap-only lease is claimable, not linked.
    Frontier.objects.filter(audit=audit, url__endswith="/l0").update(depth=None)
    assert frontier_work(audit_id=audit.id) == FrontierWork(claimable=True, claimable_linked=False, leased_live=3)


def test_done_urls_are_no_work():
    audit = AuditFactory()
    _linked(audit, 3)
    Frontier.objects.filter(audit=audit).update(state=Frontier.State.DONE)
    assert frontier_work(audit_id=audit.id) == FrontierWork(False, False, 0)


def _rows_read(sql: str) -> int:
    """Rows the executor took from tables and indexes for one statement (kept and filtered out), by EXPLAIN
    ANALYZE: what the statement costs whatever the machine's speed."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)  # the captured SQL has its values in it
        plan = cursor.fetchone()[0]
    plan = plan[0]["Plan"] if isinstance(plan, list) else plan

    def walk(node) -> int:
        read = 0
        if "Scan" in node["Node Type"]:
            loops = node.get("Actual Loops", 1)
            read += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops
            read += node.get("Rows Removed by Index Recheck", 0)
        return read + sum(walk(child) for child in node.get("Plans", []))

    return walk(plan)


def test_planning_reads_the_leased_rows_and_the_first_claimable_not_the_frontier():
    """A million-page audit whose sitemap seeded every URL: the plan of each round once counted them all."""
    audit = AuditFactory()
    _sitemap_only(audit, SITEMAP_ROWS)
    _linked(audit, 40)
    frontier_claim(audit_id=audit.id, lease_key="k", limit=20, lease_s=LEASE_S)
    # A crawl well under way: done rows, sitemap-only rows pending, a round's leases live.
    Frontier.objects.filter(audit=audit, depth__isnull=True, url__lt="http://127.0.0.1:1/s01000").update(
        state=Frontier.State.DONE
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Frontier._meta.db_table}")  # the statistics a long crawl's autovacuum keeps
    with CaptureQueriesContext(connection) as queries:
        work = frontier_work(audit_id=audit.id)
    assert work == FrontierWork(claimable=True, claimable_linked=True, leased_live=20)
    assert Frontier.objects.filter(audit=audit).count() == SITEMAP_ROWS + 40
    for query in queries:
        # The leased rows (20) and a first match or two for each existence test.
        assert _rows_read(query["sql"]) <= 40, query["sql"]
