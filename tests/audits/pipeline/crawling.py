"""Crawl helpers shared by the chunk, flow and reconcile tests (their fixtures, site_root and no_renewal, are in
conftest.py): a gate that holds fetches, a crawling audit whose next round is planned, a chunk run in a thread,
the rows a crawl writes."""

import threading

from audits.models import Audit, Issue, Page
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.rounds import round_advance, round_plan
from audits.pipeline.start import audit_start
from scratchpad.models import Frontier, LinkEdge
from tests.factories import ProjectFactory

GATE_TIMEOUT_S = 60
SMALL_QUOTA = 20


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


def crawling_audit(base, gate=None, *, min_quota: int = 30):
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


def chunk_in_thread(audit, key, quota):
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


def page_rows(audit):
    return set(Page.objects.filter(audit=audit).values_list("id", "fetched_at", "response_time_ms"))


def crawl_rows(audit):
    return (
        page_rows(audit),
        set(Issue.objects.filter(audit=audit).values_list("id", flat=True)),
        LinkEdge.objects.filter(audit=audit).count(),
        set(Frontier.objects.filter(audit=audit).values_list("url", "state", "lease_key", "lease_gen")),
        Audit.objects.get(id=audit.id).pages_crawled,
    )
