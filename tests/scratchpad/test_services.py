"""Leases on PostgreSQL with real concurrent connections: no URL handed to two claimers, none lost."""

import contextlib
import dataclasses
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audits.pipeline.traps import shape_traps_record
from crawler.shapes import url_pattern
from scratchpad.limits import MAX_HANDOUTS_PER_URL
from scratchpad.models import CrawlChunk, Frontier, ShapeText, SkippedURL
from scratchpad.selectors import frontier_work
from scratchpad.services import (
    Edge,
    FrontierCaps,
    NewURL,
    chunk_begin,
    chunk_finish,
    chunk_holder_sessions_end,
    chunk_renew,
    frontier_claim,
    frontier_hold,
    frontier_purge,
    frontier_record_batch,
    frontier_release,
    frontier_seed,
    frontier_seed_sitemap,
)
from scratchpad.services.chunks import chunk_session_name
from tests.factories import AuditFactory
from tests.support.waits import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
LEASE_S = 300


def _seed(audit, count, depth=1):
    frontier_seed(
        audit_id=audit.id,
        urls=[NewURL(f"http://127.0.0.1:1/p{i}", depth=depth, source="link") for i in range(count)],
    )


def test_four_concurrent_claimers_never_share_a_url_and_get_them_all():
    assert connection.vendor == "postgresql"
    audit = AuditFactory()
    _seed(audit, 1000)
    got: dict[str, list[str]] = {}
    barrier = threading.Barrier(4)
    errors = []

    def claimer(name):
        try:
            barrier.wait()
            mine = got.setdefault(name, [])
            round_no = 0
            while True:
                claimed = frontier_claim(audit_id=audit.id, lease_key=f"{name}:{round_no}", limit=37, lease_s=LEASE_S)
                if not claimed:
                    break
                mine.extend(c.url for c in claimed)
                round_no += 1
        except Exception as exc:  # surfaced below: a thread's exception would otherwise vanish
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    all_urls = [u for urls in got.values() for u in urls]
    assert len(all_urls) == 1000
    assert len(set(all_urls)) == 1000
    assert sum(1 for urls in got.values() if urls) >= 2, "claims should have been spread over claimers"


def test_same_key_gets_the_same_urls_back():
    audit = AuditFactory()
    _seed(audit, 50)
    first = frontier_claim(audit_id=audit.id, lease_key="k1", limit=20, lease_s=LEASE_S)
    again = frontier_claim(audit_id=audit.id, lease_key="k1", limit=20, lease_s=LEASE_S)
    other = frontier_claim(audit_id=audit.id, lease_key="k2", limit=20, lease_s=LEASE_S)
    assert [c.url for c in again] == [c.url for c in first]
    assert not {c.url for c in other} & {c.url for c in first}


def test_expired_lease_is_reclaimed_by_another_claimer():
    audit = AuditFactory()
    _seed(audit, 10)
    held = frontier_claim(audit_id=audit.id, lease_key="dead-worker", limit=10, lease_s=LEASE_S)
    assert frontier_claim(audit_id=audit.id, lease_key="live", limit=10, lease_s=LEASE_S) == []
    Frontier.objects.filter(audit=audit).update(leased_until=timezone.now() - timedelta(seconds=1))
    taken = frontier_claim(audit_id=audit.id, lease_key="live", limit=10, lease_s=LEASE_S)
    assert {c.url for c in taken} == {c.url for c in held}
    assert all(c.handouts == 2 for c in taken)
    assert Frontier.objects.filter(audit=audit, lease_key="live").count() == 10


def test_url_handed_out_too_often_is_exhausted():
    audit = AuditFactory()
    _seed(audit, 1)
    for n in range(MAX_HANDOUTS_PER_URL + 1):
        claimed = frontier_claim(audit_id=audit.id, lease_key=f"k{n}", limit=1, lease_s=LEASE_S)
        Frontier.objects.filter(audit=audit).update(leased_until=timezone.now() - timedelta(seconds=1))
    assert claimed[0].exhausted
    assert claimed[0].handouts == MAX_HANDOUTS_PER_URL + 1


def test_claim_order_shallow_first_and_sitemap_only_last():
    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id,
        urls=[
            NewURL("http://127.0.0.1:1/sitemap-only", depth=None, source="sitemap", in_sitemap=True),
            NewURL("http://127.0.0.1:1/deep", depth=3, source="link"),
            NewURL("http://127.0.0.1:1/", depth=0, source="start"),
        ],
    )
    urls = [c.url for c in frontier_claim(audit_id=audit.id, lease_key="k", limit=3, lease_s=LEASE_S)]
    assert urls == ["http://127.0.0.1:1/", "http://127.0.0.1:1/deep"]
    # sitemap-only URLs only once no link-discovered URL is left to claim
    assert frontier_claim(audit_id=audit.id, lease_key="k2", limit=3, lease_s=LEASE_S) == []
    Frontier.objects.filter(audit=audit, depth__isnull=False).update(state="done")
    assert [c.url for c in frontier_claim(audit_id=audit.id, lease_key="k3", limit=3, lease_s=LEASE_S)] == [
        "http://127.0.0.1:1/sitemap-only"
    ]


def test_an_expired_lease_is_claimed_in_its_place_in_the_claim_order_among_pending_urls():
    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id,
        urls=[NewURL(f"http://127.0.0.1:1/d{depth}", depth=depth, source="link") for depth in (0, 1, 2, 3)],
    )
    first = frontier_claim(audit_id=audit.id, lease_key="dead", limit=2, lease_s=LEASE_S)
    assert [c.url for c in first] == ["http://127.0.0.1:1/d0", "http://127.0.0.1:1/d1"]
    Frontier.objects.filter(audit=audit, url__endswith="/d1").update(leased_until=timezone.now() - timedelta(seconds=1))
    # the expired d1 comes back before the pending d2 and d3; the live lease on d0 stays where it is
    again = frontier_claim(audit_id=audit.id, lease_key="other", limit=2, lease_s=LEASE_S, resume=False)
    assert [c.url for c in again] == ["http://127.0.0.1:1/d1", "http://127.0.0.1:1/d2"]
    assert [c.url for c in frontier_claim(audit_id=audit.id, lease_key="third", limit=5, lease_s=LEASE_S)] == [
        "http://127.0.0.1:1/d3"
    ]


def test_release_returns_urls_without_counting_the_handout():
    audit = AuditFactory()
    _seed(audit, 5)
    claimed = frontier_claim(audit_id=audit.id, lease_key="k", limit=5, lease_s=LEASE_S)
    assert frontier_release(audit_id=audit.id, lease_key="k", ids=[c.id for c in claimed[:3]]) == 3
    assert Frontier.objects.filter(audit=audit, state="pending").count() == 3
    assert frontier_work(audit_id=audit.id).leased_live == 2
    assert set(Frontier.objects.filter(audit=audit, state="pending").values_list("attempts", flat=True)) == {0}


def test_record_batch_is_idempotent_and_learns_link_depth_of_sitemap_urls():
    from audits.models import Page, page_id_for

    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id,
        urls=[
            NewURL("http://127.0.0.1:1/", depth=0, source="start"),
            NewURL("http://127.0.0.1:1/from-sitemap", depth=None, source="sitemap", in_sitemap=True),
        ],
    )
    claimed = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    page = Page.objects.create(
        id=page_id_for(audit.id, claimed[0].url), audit=audit, url=claimed[0].url, fetch_class="ok"
    )
    edges = [Edge(page.id, "http://127.0.0.1:1/from-sitemap", "a", False, True)]
    discovered = [
        NewURL("http://127.0.0.1:1/from-sitemap", depth=1, source="link"),
        NewURL("http://127.0.0.1:1/new", depth=1, source="link"),
    ]
    args = dict(audit_id=audit.id, lease_key="k", done_ids=[claimed[0].id], discovered=discovered, edges=edges)
    assert frontier_record_batch(**args).finished == 1
    assert frontier_record_batch(**args).finished == 0  # a replayed batch finishes nothing twice
    assert page.outlinks.count() == 1
    rows = {f.url: f for f in Frontier.objects.filter(audit=audit)}
    assert len(rows) == 3
    assert rows["http://127.0.0.1:1/from-sitemap"].depth == 1
    assert rows["http://127.0.0.1:1/from-sitemap"].in_sitemap
    assert rows["http://127.0.0.1:1/new"].depth == 1


def test_a_shorter_path_lowers_a_queued_urls_depth_and_a_longer_one_does_not():
    # Chunks claim without a barrier between depth layers: a URL first found deep may be reached by a shorter
    # path later. Its queued row takes the shorter depth (what it links stays within max_depth).
    from audits.models import Page, page_id_for

    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id,
        urls=[
            NewURL("http://127.0.0.1:1/", depth=0, source="start"),
            NewURL("http://127.0.0.1:1/deep", depth=6, source="link"),
            NewURL("http://127.0.0.1:1/shallow", depth=1, source="link"),
        ],
    )
    claimed = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    assert claimed[0].url == "http://127.0.0.1:1/"
    Page.objects.create(id=page_id_for(audit.id, claimed[0].url), audit=audit, url=claimed[0].url, fetch_class="ok")
    discovered = [
        NewURL("http://127.0.0.1:1/deep", depth=1, source="link"),
        NewURL("http://127.0.0.1:1/shallow", depth=4, source="link"),
    ]
    frontier_record_batch(audit_id=audit.id, lease_key="k", done_ids=[claimed[0].id], discovered=discovered, edges=[])
    depths = dict(Frontier.objects.filter(audit=audit).values_list("url", "depth"))
    assert depths == {"http://127.0.0.1:1/": 0, "http://127.0.0.1:1/deep": 1, "http://127.0.0.1:1/shallow": 1}


def test_a_url_keeps_the_page_that_gave_it_its_depth_and_the_claim_hands_it_over():
    # found_from is set with the row and moves with the depth (a shorter path, a first link to a sitemap URL),
    # so following it back always walks one click closer to the start page.
    from audits.models import Page, page_id_for

    base = "http://127.0.0.1:1"
    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id,
        urls=[
            NewURL(f"{base}/", depth=0, source="start"),
            NewURL(f"{base}/listed", depth=None, source="sitemap", in_sitemap=True),
            NewURL(f"{base}/deep", depth=5, source="link", found_from=f"{base}/far"),
        ],
    )
    claimed = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    assert (claimed[0].url, claimed[0].source, claimed[0].found_from) == (f"{base}/", "start", "")
    Page.objects.create(id=page_id_for(audit.id, claimed[0].url), audit=audit, url=claimed[0].url, fetch_class="ok")
    discovered = [
        NewURL(f"{base}/new", depth=1, source="link", found_from=f"{base}/"),
        NewURL(f"{base}/listed", depth=1, source="link", found_from=f"{base}/"),
        NewURL(f"{base}/deep", depth=1, source="link", found_from=f"{base}/"),
    ]
    frontier_record_batch(audit_id=audit.id, lease_key="k", done_ids=[claimed[0].id], discovered=discovered, edges=[])
    rows = {url: (source, found_from) for url, source, found_from in Frontier.objects.filter(audit=audit).values_list(
        "url", "source", "found_from")}  # fmt: skip
    assert rows == {
        f"{base}/": ("start", ""),
        f"{base}/new": ("link", f"{base}/"),
        f"{base}/listed": ("sitemap", f"{base}/"),  # found in the sitemap first, reached by a link since
        f"{base}/deep": ("link", f"{base}/"),  # a shorter path: its source page too
    }
    # A longer path changes neither the depth nor where the URL came from.
    frontier_record_batch(
        audit_id=audit.id,
        lease_key="k",
        done_ids=[],
        discovered=[NewURL(f"{base}/new", depth=3, source="link", found_from=f"{base}/deep")],
        edges=[],
    )
    assert Frontier.objects.get(audit=audit, url=f"{base}/new").found_from == f"{base}/"
    claimed = frontier_claim(audit_id=audit.id, lease_key="k2", limit=5, lease_s=LEASE_S)
    assert {(c.url, c.source, c.found_from) for c in claimed} >= {(f"{base}/listed", "sitemap", f"{base}/")}


def test_pattern_cap_drops_new_link_urls_beyond_the_cap_but_not_sitemap_ones():
    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id,
        urls=[
            NewURL(f"http://127.0.0.1:1/cal/{i}", depth=None, source="sitemap", pattern="/cal/{n}") for i in range(3)
        ],
    )
    claimed = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    found = [NewURL(f"http://127.0.0.1:1/cal/{i}", depth=2, source="link", pattern="/cal/{n}") for i in range(10)]
    outcome = frontier_record_batch(
        audit_id=audit.id, lease_key="k", done_ids=[], discovered=found, edges=[], caps=FrontierCaps(max_per_pattern=5)
    )
    assert outcome.capped == 5  # 3 known + 2 new reach the cap of 5; the other 5 new ones are dropped
    assert Frontier.objects.filter(audit=audit, pattern="/cal/{n}").count() == 5
    assert claimed  # the known ones were not touched by the cap


def test_a_chunk_is_taken_by_one_run_at_a_time_and_fences_the_run_it_replaced():
    audit = AuditFactory()
    _seed(audit, 10)
    first = chunk_begin(audit_id=audit.id, lease_key="k", round_no=1, quota=10, lease_s=LEASE_S)
    assert first.generation == 1
    held = chunk_begin(audit_id=audit.id, lease_key="k", round_no=1, quota=10, lease_s=LEASE_S)
    assert held.generation is None and 0 < held.held_for_s <= LEASE_S  # a duplicate waits for the lease
    ids = [c.id for c in frontier_claim(audit_id=audit.id, lease_key="k", limit=10, lease_s=LEASE_S, lease_gen=1)]
    # The first run stops renewing; one lease later a new run takes the chunk and the same URLs.
    CrawlChunk.objects.filter(audit=audit).update(renewed_at=timezone.now() - timedelta(seconds=LEASE_S + 1))
    second = chunk_begin(audit_id=audit.id, lease_key="k", round_no=1, quota=10, lease_s=LEASE_S)
    assert second.generation == 2
    retaken = frontier_claim(audit_id=audit.id, lease_key="k", limit=10, lease_s=LEASE_S, lease_gen=2)
    assert sorted(c.id for c in retaken) == sorted(ids)
    with transaction.atomic():
        assert frontier_hold(audit_id=audit.id, lease_key="k", lease_gen=1, ids=ids) == set()
    assert not chunk_renew(audit_id=audit.id, lease_key="k", generation=1, lease_s=LEASE_S)
    assert not chunk_finish(audit_id=audit.id, lease_key="k", generation=1)
    assert frontier_release(audit_id=audit.id, lease_key="k", ids=ids, lease_gen=1) == 0
    assert chunk_renew(audit_id=audit.id, lease_key="k", generation=2, lease_s=LEASE_S)
    with transaction.atomic():
        assert frontier_hold(audit_id=audit.id, lease_key="k", lease_gen=2, ids=ids) == set(ids)
    assert chunk_finish(audit_id=audit.id, lease_key="k", generation=2)
    done = chunk_begin(audit_id=audit.id, lease_key="k", round_no=1, quota=10, lease_s=LEASE_S)
    assert (done.generation, done.held_for_s) == (None, 0.0)


def _session(application_name: str, dbname: str = "") -> psycopg.Connection:
    """Another database session of the test database (or of `dbname` on its server), as a worker's would be."""
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=dbname or settings["NAME"],
        application_name=application_name,
    )


def test_taking_over_a_chunk_ends_the_session_its_run_left_stalled_inside_a_copy():
    audit = AuditFactory()
    _seed(audit, 3)
    assert chunk_begin(audit_id=audit.id, lease_key="k", round_no=1, quota=3, lease_s=LEASE_S).generation == 1
    row = Frontier.objects.filter(audit=audit).order_by("id").first()
    stalled = _session(chunk_session_name(lease_key="k", generation=1))
    other_run = _session(chunk_session_name(lease_key="other", generation=1))
    try:
        # Generation 1 locks a URL's row, then stops in the middle of a COPY (SIGSTOP): an active statement that
        # waits for its client, which neither idle_in_transaction_session_timeout nor statement_timeout ends.
        stalled.execute("SET idle_in_transaction_session_timeout = '1s'")
        stalled.execute(f"SELECT id FROM {Frontier._meta.db_table} WHERE id = %s FOR UPDATE", [row.id])
        stalled.execute("CREATE TEMPORARY TABLE stalled_copy (n int)")
        copying = stalled.cursor().copy("COPY stalled_copy FROM STDIN")  # kept: its exit would end the COPY
        copying.__enter__().write_row((1,))
        stalled.pgconn.flush()
        other_run.execute("SELECT 1")  # in a transaction too, but of another chunk: left alone
        time.sleep(1.5)
        with pytest.raises(DatabaseError):
            with transaction.atomic():
                Frontier.objects.select_for_update(nowait=True).get(id=row.id)

        CrawlChunk.objects.filter(audit=audit).update(renewed_at=timezone.now() - timedelta(seconds=LEASE_S + 1))
        assert chunk_begin(audit_id=audit.id, lease_key="k", round_no=1, quota=3, lease_s=LEASE_S).generation == 2

        # The row is free again once the ended session's backend has exited: pg_terminate_backend only signals it,
        # and on a loaded machine the exit (and the lock's release) can trail the call by a moment.
        assert wait_until(lambda: _row_lockable(row), 10)
        assert wait_until(lambda: stalled.pgconn.status != psycopg.pq.ConnStatus.OK or _ended(stalled), 10)
        assert other_run.execute("SELECT 1").fetchone() == (1,)
        # Nothing of the kind is open any more: a second look ends nothing.
        assert chunk_holder_sessions_end(lease_key="k", generation=1) == 0
    finally:
        for session in (stalled, other_run):
            with contextlib.suppress(Exception):
                session.close()


def _row_lockable(row: Frontier) -> bool:
    try:
        with transaction.atomic():
            return Frontier.objects.select_for_update(nowait=True).get(id=row.id) == row
    except DatabaseError:
        return False


def _ended(session: psycopg.Connection) -> bool:
    try:
        session.pgconn.flush()
        session.pgconn.consume_input()
    except psycopg.OperationalError:
        return True
    return session.pgconn.status != psycopg.pq.ConnStatus.OK


def test_edges_are_one_row_per_target_with_their_link_count_and_a_replay_keeps_them_single():
    from audits.models import Page, page_id_for

    audit = AuditFactory()
    frontier_seed(audit_id=audit.id, urls=[NewURL("http://127.0.0.1:1/", depth=0, source="start")])
    (claimed,) = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    page = Page.objects.create(id=page_id_for(audit.id, claimed.url), audit=audit, url=claimed.url, fetch_class="ok")
    edges = [
        Edge(page.id, "http://127.0.0.1:1/a", "First A", False, True, 3),
        Edge(page.id, "http://127.0.0.1:1/b", "", True, True, 1),
        Edge(page.id, "http://127.0.0.1:1/a", "Again", False, True, 3),  # the same page twice in one batch
        Edge(page.id, "https://other.test/", "Out", False, False, 2),
    ]
    args = dict(audit_id=audit.id, lease_key="k", done_ids=[claimed.id], discovered=[], edges=edges)
    frontier_record_batch(**args)
    frontier_record_batch(**args)  # a replayed batch
    rows = sorted(page.outlinks.values_list("target_url", "anchor_text", "nofollow", "internal", "link_count"))
    assert rows == [
        ("http://127.0.0.1:1/a", "First A", False, True, 3),
        ("http://127.0.0.1:1/b", "", True, True, 1),
        ("https://other.test/", "Out", False, False, 2),
    ]


def test_only_urls_the_frontier_does_not_know_are_shaped_and_they_are_capped_by_their_shape():
    audit = AuditFactory()
    _seed(audit, 2)  # p0 and p1, known
    asked = []

    def shape(new):
        asked.append(new.url)
        return dataclasses.replace(new, pattern="/p{n}")

    found = [NewURL(f"http://127.0.0.1:1/p{i}", depth=2, source="link") for i in range(5)]
    outcome = frontier_record_batch(
        audit_id=audit.id, lease_key="k", done_ids=[], discovered=found, edges=[], caps=FrontierCaps(max_per_pattern=2),
        shape=shape,
    )  # fmt: skip
    assert sorted(asked) == [f"http://127.0.0.1:1/p{i}" for i in (2, 3, 4)]
    assert outcome.capped == 1  # the shape's cap counts the shaped rows: p2 and p3 go in, p4 is over
    assert sorted(Frontier.objects.filter(audit=audit, pattern="/p{n}").values_list("url", flat=True)) == [
        "http://127.0.0.1:1/p2",
        "http://127.0.0.1:1/p3",
    ]


def test_edges_of_pages_not_replayed_are_inserted_without_looking_for_earlier_ones():
    from audits.models import Page, page_id_for

    audit = AuditFactory()
    frontier_seed(audit_id=audit.id, urls=[NewURL("http://127.0.0.1:1/", depth=0, source="start")])
    (claimed,) = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    page = Page.objects.create(id=page_id_for(audit.id, claimed.url), audit=audit, url=claimed.url, fetch_class="ok")
    first = [Edge(page.id, "http://127.0.0.1:1/a", "A", False, True, 1)]
    frontier_record_batch(audit_id=audit.id, lease_key="k", done_ids=[], discovered=[], edges=first)
    again = [Edge(page.id, "http://127.0.0.1:1/b", "B", False, True, 1)]
    args = dict(audit_id=audit.id, lease_key="k", done_ids=[], discovered=[], edges=again)
    with CaptureQueriesContext(connection) as queries:
        frontier_record_batch(**args, replayed=set())  # the caller says the page is new: nothing is deleted
    assert not [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert sorted(page.outlinks.values_list("target_url", flat=True)) == [
        "http://127.0.0.1:1/a",
        "http://127.0.0.1:1/b",
    ]
    frontier_record_batch(**args, replayed={page.id})  # a replay of the page: its edges are replaced
    assert list(page.outlinks.values_list("target_url", flat=True)) == ["http://127.0.0.1:1/b"]


def _found(url, **kw):
    return NewURL(url, depth=1, source="link", pattern=kw.pop("pattern", url_pattern(url)), **kw)


def test_skipped_urls_are_counted_once_per_url_under_their_rule_and_shape():
    audit = AuditFactory()
    frontier_seed(audit_id=audit.id, urls=[NewURL("http://127.0.0.1:1/s?a=1&b=2", depth=0, source="start")])
    batch = [
        _found("http://127.0.0.1:1/events/2031-01", trap="calendar"),
        _found("http://127.0.0.1:1/events/2031-02", trap="calendar"),
        _found("http://127.0.0.1:1/x/x/x", trap="repeating-path"),
        *[_found(f"http://127.0.0.1:1/f?c={i}", path_key="http://127.0.0.1:1/f") for i in range(5)],
        *[_found(f"http://127.0.0.1:1/day/2026-01-{i:02d}", dated=True) for i in range(1, 6)],
        # a sitemap URL is never skipped, whatever its shape
        NewURL("http://127.0.0.1:1/events/2040-01", depth=None, source="sitemap", in_sitemap=True, trap="calendar"),
    ]
    caps = FrontierCaps(max_query_variants=3, max_dated_per_pattern=4)
    args = dict(audit_id=audit.id, lease_key="k", done_ids=[], edges=[], caps=caps)
    first = frontier_record_batch(discovered=batch, **args)
    assert first.capped == 2 + 1 + 2 + 1
    assert {(f.rule, f.pattern) for f in first.first_skips} == {
        ("calendar", "/events/{date}"),
        ("repeating-path", "/x/x/x"),
        ("query-variants", "/f?c"),
        ("calendar-dates", "/day/{date}"),
    }
    # Found again by another page: counted once, and no (rule, shape) fires a second time.
    again = frontier_record_batch(discovered=batch, **args)
    assert again.capped == 0 and again.first_skips == ()
    counts = dict(
        SkippedURL.objects.filter(audit=audit).values("rule").annotate(n=Count("id")).values_list("rule", "n")
    )
    assert counts == {
        "calendar": 2,
        "repeating-path": 1,
        "query-variants": 2,
        "calendar-dates": 1,
    }
    queued = set(Frontier.objects.filter(audit=audit).values_list("url", flat=True))
    assert "http://127.0.0.1:1/events/2040-01" in queued
    assert not queued & set(SkippedURL.objects.filter(audit=audit).values_list("url", flat=True))
    assert Frontier.objects.filter(audit=audit, path_key="http://127.0.0.1:1/f").count() == 3


def test_without_a_cap_a_catalogue_of_one_shape_is_queued_whole():
    audit = AuditFactory()
    found = [_found(f"http://127.0.0.1:1/p/{i}.html") for i in range(3000)]
    outcome = frontier_record_batch(audit_id=audit.id, lease_key="k", done_ids=[], discovered=found, edges=[])
    assert outcome.capped == 0
    assert Frontier.objects.filter(audit=audit, pattern="/p/{n}.html").count() == 3000


def _texts(audit, pages, max_identical=5, share=0.9):
    with transaction.atomic():
        return shape_traps_record(audit_id=audit.id, pages=pages, max_identical=max_identical, share=share)


def test_a_shape_whose_pages_keep_one_main_text_is_trapped_and_its_new_links_skipped():
    audit = AuditFactory()
    frontier_seed(audit_id=audit.id, urls=[NewURL("http://127.0.0.1:1/", depth=0, source="start")])
    shape = "/list/{n}/"
    assert _texts(audit, [(shape, "same")] * 3) == []
    assert _texts(audit, [(shape, "same")] + [("/p/{n}.html", "other")]) == []  # 4 of 5: under the count
    assert _texts(audit, [(shape, "same")]) == [shape]  # 5 identical pages, all of the shape's: trapped
    assert _texts(audit, [(shape, "same")]) == []  # said once; the row stays trapped
    assert ShapeText.objects.get(audit=audit, pattern=shape, text_hash="").pages == 6
    assert ShapeText.objects.get(audit=audit, pattern=shape, text_hash="same").pages == 6

    found = [_found(f"http://127.0.0.1:1/list/{n}/") for n in range(10, 13)] + [_found("http://127.0.0.1:1/p/9.html")]
    sitemap = NewURL("http://127.0.0.1:1/list/99/", depth=None, source="sitemap", in_sitemap=True, pattern=shape)
    outcome = frontier_record_batch(
        audit_id=audit.id,
        lease_key="k",
        done_ids=[],
        discovered=[*found, sitemap],
        edges=[],
        caps=FrontierCaps(identical_rule=True),
    )
    assert outcome.capped == 3
    assert [(f.rule, f.pattern) for f in outcome.first_skips] == [("identical-pages", shape)]
    queued = set(Frontier.objects.filter(audit=audit).values_list("url", flat=True))
    assert "http://127.0.0.1:1/p/9.html" in queued and "http://127.0.0.1:1/list/99/" in queued  # the site asked
    assert not {u.url for u in found[:3]} & queued
    # The rule off (a persister without trap settings): nothing skipped.
    off = frontier_record_batch(
        audit_id=audit.id, lease_key="k", done_ids=[], discovered=[_found("http://127.0.0.1:1/list/50/")], edges=[]
    )
    assert off.capped == 0
    frontier_purge(audit_id=audit.id)
    assert not ShapeText.objects.filter(audit=audit).exists()


def test_a_catalogue_where_some_pages_share_a_text_is_not_a_trap():
    audit = AuditFactory()
    shape = "/p/{n}.html"
    # 20 "out of stock" pages with one text among 60 distinct products: the count is reached, the share is not.
    pages = [(shape, "out-of-stock")] * 20 + [(shape, f"product-{i}") for i in range(60)]
    assert _texts(audit, pages) == []
    assert not ShapeText.objects.get(audit=audit, pattern=shape, text_hash="").trapped


def test_two_batches_counting_one_shape_at_once_lose_no_page():
    audit = AuditFactory()
    barrier = threading.Barrier(2)
    errors = []

    def batch(text):
        try:
            barrier.wait()
            for _ in range(10):
                _texts(audit, [("/a/{n}", text), ("/b/{n}", text)] * 5, max_identical=1000)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=batch, args=(t,)) for t in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    totals = dict(ShapeText.objects.filter(audit=audit, text_hash="").values_list("pattern", "pages"))
    assert totals == {"/a/{n}": 100, "/b/{n}": 100}


def test_two_batches_skipping_under_one_rule_and_shape_at_once_say_it_once():
    # The first batch has recorded its skip but not committed when the second records another URL of the same
    # rule and shape: the second must look for earlier skips only once the first committed.
    audit = AuditFactory()
    recorded, errors, firsts = threading.Event(), [], {}

    def batch(name, url, wait_for=None):
        try:
            if wait_for is not None:
                wait_for.wait(timeout=30)
            with transaction.atomic():
                outcome = frontier_record_batch(
                    audit_id=audit.id, lease_key=name, done_ids=[], edges=[], discovered=[_found(url, trap="calendar")]
                )
                firsts[name] = outcome.first_skips
                if wait_for is None:
                    recorded.set()
                    threading.Event().wait(0.5)  # hold the transaction open while the other batch runs
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=batch, args=("a", "http://127.0.0.1:1/events/2090-01")),
        threading.Thread(target=batch, args=("b", "http://127.0.0.1:1/events/2090-02", recorded)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(firsts["a"]) == 1 and firsts["b"] == ()
    assert SkippedURL.objects.filter(audit=audit, rule="calendar").count() == 2


def test_a_url_queued_by_rel_next_that_a_link_reaches_is_found_via_the_link():
    # Issue 27: 'pagination' says a URL only a rel=next/prev link leads to. Within a batch a link wins at the same
    # depth; a queued pagination row a later link reaches becomes a link's (with the page that links it).
    from audits.models import Page, page_id_for

    audit = AuditFactory()
    home = "http://127.0.0.1:1/"
    frontier_seed(audit_id=audit.id, urls=[NewURL(home, depth=0, source="start")])
    (claimed,) = frontier_claim(audit_id=audit.id, lease_key="k", limit=1, lease_s=LEASE_S)
    Page.objects.create(id=page_id_for(audit.id, home), audit=audit, url=home, fetch_class="ok")
    discovered = [
        NewURL(home + "list?page=2", depth=1, source="pagination", found_from=home + "list"),
        NewURL(home + "list?page=3", depth=1, source="pagination", found_from=home + "list?page=2"),
        NewURL(home + "list?page=3", depth=1, source="link", found_from=home),
    ]
    frontier_record_batch(audit_id=audit.id, lease_key="k", done_ids=[claimed.id], discovered=discovered, edges=[])
    sources = dict(Frontier.objects.filter(audit=audit).values_list("url", "source"))
    assert sources[home + "list?page=2"] == "pagination" and sources[home + "list?page=3"] == "link"
    later = [NewURL(home + "list?page=2", depth=2, source="link", found_from=home + "about")]
    frontier_record_batch(audit_id=audit.id, lease_key="k", done_ids=[], discovered=later, edges=[])
    row = Frontier.objects.get(audit=audit, url=home + "list?page=2")
    # A link, but a deeper one: the row keeps its depth and the page that gave it (found_from one click closer).
    assert (row.source, row.found_from, row.depth) == ("link", home + "list", 1)
    assert Frontier.objects.get(audit=audit, url=home + "list?page=3").found_from == home


def test_a_session_of_the_same_name_in_another_database_of_the_server_is_left_alone():
    # Another database on the same server: a staging copy restored from production, another test slot. Its
    # workers name their sessions the same way, and its lease keys are the same when its rows are a copy.
    elsewhere = _session(chunk_session_name(lease_key="k", generation=1), dbname="postgres")
    try:
        elsewhere.execute("SELECT 1")  # inside a transaction, as a stalled run's session is
        assert chunk_holder_sessions_end(lease_key="k", generation=1) == 0
        assert elsewhere.execute("SELECT 1").fetchone() == (1,)
    finally:
        elsewhere.close()


def test_sitemap_seeds_go_in_by_one_upsert_and_known_urls_only_learn_they_are_in_the_sitemap():
    audit = AuditFactory()
    home, base = "http://127.0.0.1:1/", "http://127.0.0.1:1/p"
    frontier_seed(audit_id=audit.id, urls=[NewURL(home, depth=0, source="start")])
    rows = [(home, "/"), (f"{base}1", "/p{n}"), (f"{base}2", "/p{n}"), (f"{base}1", "/p{n}")]
    with CaptureQueriesContext(connection) as queries:
        assert frontier_seed_sitemap(audit_id=audit.id, urls=rows) == 3  # two new, the home page marked
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    assert statements.count("INSERT") == 1 and "SELECT" not in statements  # no lookup of the known URLs
    stored = Frontier.objects.filter(audit=audit).values_list(
        "url", "depth", "source", "in_sitemap", "pattern", "state"
    )
    assert sorted(stored) == [
        (home, 0, "start", True, "", "pending"),  # keeps its depth, source and pattern
        (f"{base}1", None, "sitemap", True, "/p{n}", "pending"),
        (f"{base}2", None, "sitemap", True, "/p{n}", "pending"),
    ]
    assert frontier_seed_sitemap(audit_id=audit.id, urls=rows) == 0  # a second run of discovery changes nothing
    assert Frontier.objects.filter(audit=audit).count() == 3
