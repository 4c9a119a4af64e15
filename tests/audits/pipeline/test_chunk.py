"""audits.pipeline.chunk on PostgreSQL, in this process: a chunk run that was taken over or outlived its audit
writes nothing (a cancel leaves counters equal to rows and no frontier, a deletion no row at all), a chunk run twice
leaves no duplicate, and a chunk's fetches overlap while its pages are built one at a time."""

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from audits.limits import CHUNK_CLAIM_SLICE_MAX_URLS, CHUNK_CLAIM_SLICE_URLS
from audits.models import Audit, Issue, Page, PageCounts
from audits.pipeline import chunk
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.discovery import audit_discover
from audits.pipeline.lifecycle import audit_cancel, audit_delete
from audits.pipeline.rounds import round_plan
from audits.pipeline.start import audit_start
from scratchpad.models import CrawlChunk, Frontier, LinkEdge, ShapeText
from scratchpad.services import NewURL, frontier_claim, frontier_seed
from tests.audits.pipeline.crawling import GATE_TIMEOUT_S, Gate, chunk_in_thread, crawl_rows, crawling_audit
from tests.factories import AuditFactory, ProjectFactory
from tests.support.sites import serve_generated
from tests.support.waits import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# The rows a crawl writes for its audit
AUDIT_ROWS = (Page, Issue, PageCounts, Frontier, LinkEdge, ShapeText)


def test_a_run_whose_lease_was_taken_over_writes_nothing(site_root, no_renewal):
    # The chunk's first fetches (its whole starting window) are held.
    gate = Gate(first=1, last=2)
    with serve_generated(site_root, before_answer=gate) as (base, _):
        audit = crawling_audit(base, gate)
        ((key, quota),) = round_plan(audit_id=audit.id, round_no=audit.crawl_round).chunks
        zombie, zombie_result = chunk_in_thread(audit, key, quota)
        wait_until(lambda: gate.held >= 1, 30, "the first run's fetches held")
        # The first run stops renewing (paused, as by SIGSTOP) and its lease runs out.
        past = timezone.now() - timedelta(hours=1)
        CrawlChunk.objects.filter(audit=audit, lease_key=key).update(renewed_at=past)
        Frontier.objects.filter(audit=audit, lease_key=key).update(leased_until=past)
        # A re-sent message.
        taken_over = crawl_chunk_run(audit_id=audit.id, lease_key=key, quota=quota, round_no=audit.crawl_round)
        assert taken_over["finished"] >= 1 and taken_over["done"]
        before = crawl_rows(audit)
        gate.opened.set()  # the first run resumes with its slow answers
        zombie.join(GATE_TIMEOUT_S)
    assert not zombie.is_alive()
    # What the first run wrote before it was taken over stays; after that it wrote nothing.
    assert zombie_result["fenced"] >= 1 and zombie_result["done"] is False
    assert crawl_rows(audit) == before
    assert Audit.objects.get(id=audit.id).pages_crawled == Page.objects.filter(audit=audit).count()
    assert CrawlChunk.objects.get(audit=audit, lease_key=key).generation == 2


def _ended_after_its_first_batch(site_root, end) -> Audit:
    """A chunk run whose first batch is persisted and whose next fetches are held while `end(audit)` runs (a cancel,
    a deletion); then they pass, and the run writes none of them. The audit as it was."""
    gate = Gate(first=28, last=10_000)
    with serve_generated(site_root, before_answer=gate) as (base, _):
        audit = crawling_audit(base, gate)
        ((key, quota),) = round_plan(audit_id=audit.id, round_no=audit.crawl_round).chunks
        run, result = chunk_in_thread(audit, key, quota)
        wait_until(lambda: gate.held >= 1, 30, "fetches held after the first batch")
        assert Page.objects.filter(audit=audit).exists() and LinkEdge.objects.filter(audit=audit).exists()
        end(Audit.objects.get(id=audit.id))
        gate.opened.set()
        run.join(GATE_TIMEOUT_S)
    assert not run.is_alive()
    assert result["fenced"] >= 1, "the run had records after the end and wrote none of them"
    return audit


def test_cancel_during_a_batch_leaves_counters_equal_to_rows_and_no_frontier(site_root, no_renewal):
    audit = _ended_after_its_first_batch(site_root, lambda audit: audit_cancel(audit=audit))
    audit.refresh_from_db()
    assert audit.status == "cancelled"
    assert audit.pages_crawled == Page.objects.filter(audit=audit).count()
    assert not Frontier.objects.filter(audit=audit).exists()
    assert not CrawlChunk.objects.filter(audit=audit).exists()
    # No database constraint ties an edge to its audit or page: the fence does. Edges came only with their pages.
    edges = LinkEdge.objects.filter(audit=audit)
    assert edges.exists()
    assert not edges.exclude(source_page_id__in=Page.objects.filter(audit=audit).values("id")).exists()


def test_an_audit_deleted_during_a_batch_leaves_no_row_behind(site_root, no_renewal):
    """A batch whose audit was deleted meanwhile holds none of its frontier rows (gone with the audit) and its
    conditional update of the running audit row finds none: nothing of it lands for an audit that is gone."""
    audit = _ended_after_its_first_batch(site_root, lambda audit: audit_delete(audit=audit))
    assert not Audit.objects.filter(id=audit.id).exists()
    left = {model._meta.label: model.objects.filter(audit_id=audit.id).count() for model in AUDIT_ROWS}
    assert left == dict.fromkeys(left, 0)


def _first_chunk(base: str) -> tuple[Audit, dict]:
    """A discovered audit of the site at `base` and the arguments of its first round's first chunk."""
    project = ProjectFactory(base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=1000, dispatch=False)
    assert audit_discover(audit_id=audit.id)
    plan = round_plan(audit_id=audit.id, round_no=1)
    key, quota = plan.chunks[0]
    return audit, dict(audit_id=audit.id, lease_key=key, quota=quota, round_no=plan.round_no)


def test_chunk_executed_twice_leaves_no_duplicates(small_site):
    base, manifest = small_site
    audit, run = _first_chunk(base)
    key, quota = run["lease_key"], run["quota"]
    first = crawl_chunk_run(**run)
    pages_after_first = Page.objects.filter(audit=audit).count()
    edges_after_first = LinkEdge.objects.filter(audit=audit).count()
    issues_after_first = Issue.objects.filter(audit=audit).count()
    frontier_after_first = Frontier.objects.filter(audit=audit).count()
    # A redelivered message of a finished chunk does nothing.
    assert crawl_chunk_run(**run) == {"skipped": "chunk done"}
    # A chunk run again anyway (its row handed back), even after its URLs were put back in its lease.
    CrawlChunk.objects.filter(audit=audit, lease_key=key).update(state="queued")
    Frontier.objects.filter(audit=audit, state="done").update(state="leased", lease_key=key)
    assert [c.url for c in frontier_claim(audit_id=audit.id, lease_key=key, limit=quota, lease_s=300)]
    second = crawl_chunk_run(**run)
    assert first["finished"] >= 1 and second["finished"] == first["finished"]
    assert Page.objects.filter(audit=audit).count() == pages_after_first
    assert LinkEdge.objects.filter(audit=audit).count() == edges_after_first
    # The replayed pages' edges and page issues are replaced, not added to.
    assert issues_after_first and Issue.objects.filter(audit=audit).count() == issues_after_first
    assert Frontier.objects.filter(audit=audit).count() == frontier_after_first
    assert Page.objects.filter(audit=audit).values("url").distinct().count() == pages_after_first


class _Overlap:
    """Wraps a function and records how many calls of it ran at once, at most."""

    def __init__(self, fn, hold_s: float):
        self.fn, self.hold_s = fn, hold_s
        self.running = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.hold_s)  # long enough for another thread's call to come in meanwhile, if it may
            return self.fn(*args, **kwargs)
        finally:
            with self.lock:
                self.running -= 1


def test_a_chunk_builds_one_page_at_a_time_while_its_fetches_overlap(small_site, monkeypatch):
    # Fetch threads that built pages side by side spent ~15 % more CPU a page on the GIL (bench/README.md): the
    # builds take turns, the fetches do not.
    builds = _Overlap(chunk.build_page_record, hold_s=0.01)
    fetches = _Overlap(chunk.fetch, hold_s=0.05)
    monkeypatch.setattr(chunk, "build_page_record", builds)
    monkeypatch.setattr(chunk, "fetch", fetches)
    base, _manifest = small_site
    _audit, run = _first_chunk(base)
    outcome = crawl_chunk_run(**run)
    assert outcome["finished"] >= 10
    assert fetches.most >= 2
    assert builds.most == 1


class _NothingToPersist:
    """The persister a run's claims flush before each claim, with nothing in it."""

    batch: list = []
    stopped = False

    def flush(self) -> None:
        pass


def test_claims_grow_while_they_come_back_full_and_start_narrow_again_after_a_short_one():
    audit = AuditFactory()
    frontier_seed(
        audit_id=audit.id, urls=[NewURL(f"http://127.0.0.1:1/p{i}", depth=1, source="link") for i in range(400)]
    )
    claims = chunk._Claims(audit.id, None, "k", 1, 1000, _NothingToPersist())
    deadline = time.monotonic() + 60
    sizes = []
    while claims.more(deadline):
        sizes.append(len(claims.todo))
        claims.todo.clear()
    assert sizes == [20, 40, 80, 100, 100, 60]  # the frontier's 400 URLs, in growing claims, the last one short
    assert (CHUNK_CLAIM_SLICE_URLS, CHUNK_CLAIM_SLICE_MAX_URLS) == (20, 100)
    assert claims.slice == CHUNK_CLAIM_SLICE_URLS  # a narrow frontier is claimed in narrow slices again
    assert Frontier.objects.filter(audit=audit, state="leased", lease_key="k").count() == 400
