"""audits.pipeline.flow, the pipeline's order: which step follows which state (a plan, a duplicate message, a chunk
that is not its round's last, an audit that ended), what the Celery side sends for each step, and on PostgreSQL
what the pipeline sends next when the crawl is over and when a round's last chunk closes it."""

import pytest

from audits import dispatch
from audits.limits import STEP_TIME_LIMIT_S, finalize_time_limit_s
from audits.models import Audit
from audits.pipeline import flow
from audits.pipeline.flow import Step, StepKind
from audits.pipeline.rounds import RoundPlan, chunk_task_id, round_plan
from audits.pipeline.start import audit_start
from audits.tasks import crawl_chunk
from scratchpad.models import CrawlChunk
from scratchpad.services import chunk_register
from tests.audits.pipeline.crawling import SMALL_QUOTA, crawling_audit
from tests.factories import ProjectFactory
from tests.support.sites import serve_generated
from tests.support.workers import flush_test_broker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    """What the pipeline hands to the broker (name and arguments), recorded instead of sent."""
    messages: list[tuple] = []
    monkeypatch.setattr(dispatch, "task_send", lambda name, *args, **options: messages.append((name, *args)))
    return messages


def _audit_with_nothing_to_crawl(*, lighthouse: bool):
    # A running audit whose frontier holds nothing claimable and no live lease: its crawl is over.
    return audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"),
        start_url="http://127.0.0.1:9/",
        lighthouse=lighthouse,
        dispatch=False,
    )


def test_a_crawl_that_is_over_goes_straight_to_finalize_when_the_audit_runs_no_lighthouse(sent):
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    flow.step_send(audit_id=str(audit.id), step=flow.round_step(audit_id=str(audit.id), round_no=1))
    assert sent == [(dispatch.FINALIZE, str(audit.id))]


def test_a_crawl_that_is_over_goes_to_the_lighthouse_step_when_the_audit_asked_for_it(sent):
    audit = _audit_with_nothing_to_crawl(lighthouse=True)
    flow.step_send(audit_id=str(audit.id), step=flow.round_step(audit_id=str(audit.id), round_no=1))
    assert sent == [(dispatch.LIGHTHOUSE, str(audit.id))]


def test_the_last_chunk_of_a_round_closes_it_without_the_chord_callback(site_root, settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 2
    try:
        with serve_generated(site_root) as (base, _):
            audit = crawling_audit(base)
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


# --- the order as data -------------------------------------------------------------------------------------------


def test_a_plan_with_chunks_is_a_crawl_round_carrying_them():
    plan = RoundPlan(3, [("a:r3:c0", 100), ("a:r3:c1", 99)], pages_done=250)
    assert flow.step_after_plan(plan, lighthouse=True) == Step(
        StepKind.CRAWL_ROUND, round_no=3, chunks=(("a:r3:c0", 100), ("a:r3:c1", 99)), pages_done=250
    )


def test_a_plan_without_chunks_is_a_replan_of_the_same_round_after_its_wait():
    step = flow.step_after_plan(RoundPlan(4, [], wait_s=12.5), lighthouse=False)
    assert (step.kind, step.round_no, step.wait_s, step.chunks) == (StepKind.REPLAN, 4, 12.5, ())


def test_no_plan_ends_the_crawl_with_lighthouse_only_when_asked():
    assert flow.step_after_plan(None, lighthouse=True) == flow.LIGHTHOUSE
    assert flow.step_after_plan(None, lighthouse=False) == flow.FINALIZE


def test_lighthouse_is_followed_by_finalize_unless_the_audit_ended():
    assert flow.next_after_lighthouse(ran=True) == flow.FINALIZE
    assert flow.next_after_lighthouse(ran=False) == flow.STOP


def test_a_discovery_that_ended_the_audit_stops_and_leaves_the_round_counter():
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    assert flow.next_after_discovery(audit_id=str(audit.id), discovered=False) == flow.STOP
    assert Audit.objects.get(id=audit.id).crawl_round == 0


def test_discovery_goes_on_to_round_1_once_and_a_duplicate_stops():
    audit = _audit_with_nothing_to_crawl(lighthouse=True)
    # Nothing to crawl: round 1's plan is the end of the crawl, and the audit asked for Lighthouse.
    assert flow.next_after_discovery(audit_id=str(audit.id), discovered=True) == flow.LIGHTHOUSE
    assert Audit.objects.get(id=audit.id).crawl_round == 1
    assert flow.next_after_discovery(audit_id=str(audit.id), discovered=True) == flow.STOP


def test_a_round_ends_once_and_a_duplicated_round_done_message_stops():
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    Audit.objects.filter(id=audit.id).update(crawl_round=2)
    assert flow.next_after_round(audit_id=str(audit.id), round_no=2) == flow.FINALIZE
    assert flow.next_after_round(audit_id=str(audit.id), round_no=2) == flow.STOP
    assert flow.next_after_round(audit_id=str(audit.id), round_no=1) == flow.STOP  # a stale round
    assert Audit.objects.get(id=audit.id).crawl_round == 3


def test_only_the_last_done_chunk_of_a_round_goes_on():
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    audit_id = str(audit.id)
    Audit.objects.filter(id=audit.id).update(crawl_round=1)
    keys = [chunk_task_id(audit_id, 1, i) for i in range(2)]
    chunk_register(audit_id=audit_id, round_no=1, chunks=[(key, 10) for key in keys])
    assert flow.next_after_chunk(audit_id=audit_id, round_no=1, outcome={"done": False}) == flow.STOP
    CrawlChunk.objects.filter(lease_key=keys[0]).update(state=CrawlChunk.State.DONE)
    assert flow.next_after_chunk(audit_id=audit_id, round_no=1, outcome={"done": True}) == flow.STOP
    CrawlChunk.objects.filter(lease_key=keys[1]).update(state=CrawlChunk.State.DONE)
    assert flow.next_after_chunk(audit_id=audit_id, round_no=1, outcome={"done": True}) == flow.FINALIZE
    assert flow.next_after_chunk(audit_id=audit_id, round_no=1, outcome={"done": True}) == flow.STOP
    assert Audit.objects.get(id=audit.id).crawl_round == 2


def test_an_audit_that_ended_is_finalized_by_nobody():
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    Audit.objects.filter(id=audit.id).update(status=Audit.Status.CANCELLED)
    assert flow.next_after_discovery(audit_id=str(audit.id), discovered=True) == flow.STOP
    assert flow.next_after_round(audit_id=str(audit.id), round_no=0) == flow.STOP


# --- what the Celery side sends for a step -------------------------------------------------------------------


@pytest.fixture
def sends(monkeypatch) -> list[tuple]:
    """Every send of the pipeline, with its options, recorded instead of sent."""
    messages: list[tuple] = []
    monkeypatch.setattr(dispatch, "task_send", lambda name, *args, **options: messages.append((name, args, options)))
    monkeypatch.setattr(dispatch, "round_send", lambda **round_: messages.append(("round", round_)))
    return messages


def test_a_crawl_round_is_registered_then_sent_as_one_chord_with_its_round(sends):
    audit = _audit_with_nothing_to_crawl(lighthouse=False)
    audit_id = str(audit.id)
    chunks = ((chunk_task_id(audit_id, 2, 0), 60), (chunk_task_id(audit_id, 2, 1), 40))
    flow.step_send(audit_id=audit_id, step=Step(StepKind.CRAWL_ROUND, round_no=2, chunks=chunks, pages_done=7))
    assert sends == [("round", dict(audit_id=audit_id, round_no=2, chunks=list(chunks), pages_done=7))]
    rows = set(CrawlChunk.objects.filter(audit=audit).values_list("lease_key", "round_no", "quota", "state"))
    assert rows == {(key, 2, quota, CrawlChunk.State.QUEUED) for key, quota in chunks}


def test_a_replan_is_the_rounds_end_sent_after_its_wait_and_stop_sends_nothing(sends):
    flow.step_send(audit_id="a", step=Step(StepKind.REPLAN, round_no=5, wait_s=30.0))
    flow.step_send(audit_id="a", step=flow.STOP)
    assert sends == [(dispatch.CRAWL_ROUND_DONE, ([], "a", 5), {"countdown": 30.0})]


def test_lighthouse_and_finalize_are_one_message_each_finalize_with_the_time_limit_of_the_audits_pages(sends):
    audit = _audit_with_nothing_to_crawl(lighthouse=True)
    Audit.objects.filter(id=audit.id).update(pages_crawled=250_000)
    audit_id = str(audit.id)
    flow.step_send(audit_id=audit_id, step=flow.LIGHTHOUSE)
    flow.step_send(audit_id=audit_id, step=flow.FINALIZE)
    assert sends == [
        (dispatch.LIGHTHOUSE, (audit_id,), {}),
        (dispatch.FINALIZE, (audit_id,), {"time_limit": finalize_time_limit_s(250_000)}),
    ]
    assert finalize_time_limit_s(250_000) == STEP_TIME_LIMIT_S + 400


def test_a_rounds_chunk_messages_carry_their_round_as_an_argument(monkeypatch):
    header = []
    monkeypatch.setattr(dispatch, "chord", lambda chunks: header.extend(chunks) or (lambda body: None))
    dispatch.round_send(audit_id="a", round_no=3, chunks=[("a:r3:c0", 10)])
    assert [(tuple(s.args), s.kwargs, s.options["task_id"]) for s in header] == [
        (("a", "a:r3:c0", 10), {"round_no": 3}, "a:r3:c0")
    ]
