"""Liveness and fencing on PostgreSQL, in this process: a chunk run that was taken over or outlived its audit
writes nothing, a cancel leaves counters equal to rows and no frontier, a round whose chord callback was lost
is closed by its last chunk or by the heal sweep, a dead chunk is re-sent once per lease."""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from audits.models import Audit, AuditEvent, Issue, Page
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.lifecycle import audit_cancel
from audits.pipeline.reconcile import heal_sweep
from audits.pipeline.rounds import round_advance, round_plan
from audits.pipeline.start import audit_start
from audits.tasks import crawl_chunk
from bench.sitegen import generate_site
from scratchpad.models import CrawlChunk, Frontier, LinkEdge
from scratchpad.services import chunk_register
from tests.factories import ProjectFactory
from tests.support.sites import serve_generated
from tests.support.waits import wait_until
from tests.support.workers import flush_test_broker

pytestmark = pytest.mark.django_db(transaction=True)
GATE_TIMEOUT_S = 60
SMALL_QUOTA = 20


@pytest.fixture(scope="module")
def site_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("fencing-site")
    generate_site(root, pages=200, seed=5, page_kb=2)
    return root


@pytest.fixture
def no_renewal(settings):
    # The run under test must not renew its lease by itself while the test plays the clock.
    settings.CRAWL_LEASE_RENEW_EVERY_S = 3600
    settings.CRAWL_CHUNKS_PER_ROUND = 1
    yield settings
    flush_test_broker()  # what the services sent (next rounds) goes nowhere


class Gate:
    """Once armed, holds requests number `first`..`last` (1-based, across the whole server) until opened."""

    def __init__(self, first: int, last: int):
        self.first, self.last = first, last
        self.armed = False
        self.count = 0
        self.held = 0
        self.lock = threading.Lock()
        self.opened = threading.Event()

    def __call__(self, path):
        if not self.armed:
            return
        with self.lock:
            self.count += 1
            hold = self.first <= self.count <= self.last
            self.held += hold
        if hold:
            self.opened.wait(GATE_TIMEOUT_S)


def _crawling_audit(base, gate=None, *, min_quota: int = 30):
    """A crawling audit whose next round (audit.crawl_round) has at least `min_quota` URLs to plan: the rounds
    before it are crawled here, in this process."""
    audit = audit_start(
        project=ProjectFactory(base_url=base + "/"), start_url=base + "/", max_pages=1000, dispatch=False
    )
    assert audit_discover(audit_id=audit.id)
    round_no = 0
    while True:
        assert round_advance(audit_id=audit.id, from_round=round_no)
        round_no += 1
        plan = round_plan(audit_id=audit.id, round_no=round_no)
        if sum(q for _, q in plan.chunks) >= min_quota:
            break
        for key, quota in plan.chunks:
            crawl_chunk_run(audit_id=audit.id, lease_key=key, quota=quota, round_no=round_no)
    if gate is not None:
        gate.armed = True
    audit.refresh_from_db()
    return audit


def _start_chunk_in_thread(audit, key, quota):
    result = {}

    def run():
        from django.db import connection

        try:
            result.update(crawl_chunk_run(audit_id=audit.id, lease_key=key, quota=quota, round_no=audit.crawl_round))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def _page_rows(audit):
    return set(Page.objects.filter(audit=audit).values_list("id", "fetched_at", "response_time_ms"))


def _crawl_rows(audit):
    return (
        _page_rows(audit),
        set(Issue.objects.filter(audit=audit).values_list("id", flat=True)),
        LinkEdge.objects.filter(audit=audit).count(),
        set(Frontier.objects.filter(audit=audit).values_list("url", "state", "lease_key", "lease_gen")),
        Audit.objects.get(id=audit.id).pages_crawled,
    )


def test_a_run_whose_lease_was_taken_over_writes_nothing(site_root, no_renewal):
    # The chunk's first fetches (its whole starting window) are held.
    gate = Gate(first=1, last=2)
    with serve_generated(site_root, before_answer=gate) as (base, _):
        audit = _crawling_audit(base, gate)
        ((key, quota),) = round_plan(audit_id=audit.id, round_no=audit.crawl_round).chunks
        zombie, zombie_result = _start_chunk_in_thread(audit, key, quota)
        wait_until(lambda: gate.held >= 1, 30, "the first run's fetches held")
        # The first run stops renewing (paused, as by SIGSTOP) and its lease runs out.
        past = timezone.now() - timedelta(hours=1)
        CrawlChunk.objects.filter(audit=audit, lease_key=key).update(renewed_at=past)
        Frontier.objects.filter(audit=audit, lease_key=key).update(leased_until=past)
        # A re-sent message.
        taken_over = crawl_chunk_run(audit_id=audit.id, lease_key=key, quota=quota, round_no=audit.crawl_round)
        assert taken_over["finished"] >= 1 and taken_over["done"]
        before = _crawl_rows(audit)
        gate.opened.set()  # the first run resumes with its slow answers
        zombie.join(GATE_TIMEOUT_S)
    assert not zombie.is_alive()
    # What the first run wrote before it was taken over stays; after that it wrote nothing.
    assert zombie_result["fenced"] >= 1 and zombie_result["done"] is False
    assert _crawl_rows(audit) == before
    assert Audit.objects.get(id=audit.id).pages_crawled == Page.objects.filter(audit=audit).count()
    assert CrawlChunk.objects.get(audit=audit, lease_key=key).generation == 2


def test_cancel_during_a_batch_leaves_counters_equal_to_rows_and_no_frontier(site_root, no_renewal):
    # The first batch's fetches pass; the next ones are held until after the cancel.
    gate = Gate(first=28, last=10_000)
    with serve_generated(site_root, before_answer=gate) as (base, _):
        audit = _crawling_audit(base, gate)
        ((key, quota),) = round_plan(audit_id=audit.id, round_no=audit.crawl_round).chunks
        run, result = _start_chunk_in_thread(audit, key, quota)
        wait_until(lambda: gate.held >= 1, 30, "fetches held after the first batch")
        assert Page.objects.filter(audit=audit).exists(), "a batch was persisted before the cancel"
        assert audit_cancel(audit=Audit.objects.get(id=audit.id))
        gate.opened.set()
        run.join(GATE_TIMEOUT_S)
    assert not run.is_alive()
    audit.refresh_from_db()
    assert audit.status == "cancelled"
    assert audit.pages_crawled == Page.objects.filter(audit=audit).count()
    assert result["fenced"] >= 1, "the run had records after the cancel and wrote none of them"
    assert not Frontier.objects.filter(audit=audit).exists()
    assert not CrawlChunk.objects.filter(audit=audit).exists()


def test_the_last_chunk_of_a_round_closes_it_without_the_chord_callback(site_root, settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 2
    try:
        with serve_generated(site_root) as (base, _):
            audit = _crawling_audit(base)
            round_no = audit.crawl_round
            plan = round_plan(audit_id=audit.id, round_no=round_no)
            assert len(plan.chunks) == 2
            chunk_register(audit_id=audit.id, round_no=round_no, chunks=plan.chunks)
            for key, _ in plan.chunks:
                assert Audit.objects.get(id=audit.id).crawl_round == round_no, "not closed before its last chunk"
                # The task body; no chord callback ever runs. A small quota: chunks claim without a barrier,
                # and with the planned one the round would crawl the whole site, leaving no next round.
                crawl_chunk.run(str(audit.id), key, SMALL_QUOTA)
        assert Audit.objects.get(id=audit.id).crawl_round == round_no + 1
        assert CrawlChunk.objects.filter(audit=audit, round_no=round_no + 1).exists(), "the next round was sent"
    finally:
        flush_test_broker()


def test_heal_sweep_closes_a_round_whose_callback_was_lost(site_root, no_renewal):
    with serve_generated(site_root) as (base, _):
        audit = _crawling_audit(base)
        Audit.objects.filter(id=audit.id).update(current_phase="crawling")
        round_no = audit.crawl_round
        ((key, quota),) = round_plan(audit_id=audit.id, round_no=round_no).chunks
        chunk_register(audit_id=audit.id, round_no=round_no, chunks=[(key, quota)])
        # Done; its chord callback is lost.
        crawl_chunk_run(audit_id=audit.id, lease_key=key, quota=quota, round_no=round_no)
        assert Audit.objects.get(id=audit.id).crawl_round == round_no
        verdicts = heal_sweep()
    assert [v.action for v in verdicts] == ["healed"]
    audit.refresh_from_db()
    assert audit.crawl_round == round_no + 1 and audit.status == "running"
    assert AuditEvent.objects.filter(audit=audit, kind="reconciled", message__contains="callback never ran").exists()
    heal_sweep()
    assert Audit.objects.get(id=audit.id).crawl_round == round_no + 1, "closed once: the next round's chunks are fresh"


def test_a_chunk_whose_run_stopped_renewing_is_re_sent_once_per_lease(site_root, no_renewal):
    audit = audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"),
        start_url="http://127.0.0.1:9/",
        max_pages=100,
        dispatch=False,
    )
    Audit.objects.filter(id=audit.id).update(current_phase="crawling", crawl_round=1)
    chunk_register(audit_id=audit.id, round_no=1, chunks=[(f"{audit.id}:r1:c0", 50), (f"{audit.id}:r1:c1", 50)])
    past = timezone.now() - timedelta(seconds=no_renewal.CRAWL_LEASE_DURATION_S + 5)
    fresh = timezone.now()
    CrawlChunk.objects.filter(lease_key__endswith="c0").update(
        state="running", generation=1, renewed_at=past, sent_at=past
    )
    CrawlChunk.objects.filter(lease_key__endswith="c1").update(
        state="running", generation=1, renewed_at=fresh, sent_at=past
    )
    try:
        assert [v.action for v in heal_sweep()] == ["healed"]
        assert heal_sweep() == [], "not re-sent again within the same lease"
    finally:
        flush_test_broker()
    sends = dict(CrawlChunk.objects.filter(audit=audit).values_list("lease_key", "sends"))
    assert sends == {f"{audit.id}:r1:c0": 2, f"{audit.id}:r1:c1": 1}
    assert AuditEvent.objects.filter(audit=audit, kind="lease_expired", message__contains="re-sent 1").exists()
