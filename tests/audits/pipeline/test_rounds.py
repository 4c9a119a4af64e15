"""audits.pipeline.rounds: a round's plan splits the page budget into at most K chunks whose quotas never overshoot
it, a chunk's lease key names its round (read back only for a message sent by an older version), and the round
counter moves once."""

import pytest

from audits.models import Audit
from audits.pipeline.rounds import chunk_round_no, chunk_task_id, round_advance, round_plan
from audits.pipeline.start import audit_start
from scratchpad.services import NewURL, frontier_claim, frontier_seed, frontier_seed_sitemap
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_lease_key_names_its_round_and_another_shape_names_none():
    assert chunk_task_id("0f3c", 7, 2) == "0f3c:r7:c2"
    assert chunk_round_no(chunk_task_id("0f3c", 7, 2)) == 7
    assert chunk_round_no("chunk-a") == 0


def _running_audit(*, max_pages: int, linked_urls: int) -> Audit:
    audit = audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"),
        start_url="http://127.0.0.1:9/",
        max_pages=max_pages,
        dispatch=False,
    )
    urls = [NewURL(f"http://127.0.0.1:9/p{i}", depth=1, source="link") for i in range(linked_urls)]
    frontier_seed(audit_id=audit.id, urls=urls)
    return audit


def test_the_plan_splits_the_budget_into_at_most_k_chunks_that_add_up_to_it(settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 4
    audit = _running_audit(max_pages=450, linked_urls=10)
    plan = round_plan(audit_id=audit.id, round_no=2)
    assert plan.round_no == 2
    # 200 pages a chunk: three chunks for 450 pages, their quotas as even as they come.
    assert plan.chunks == [(chunk_task_id(audit.id, 2, i), 150) for i in range(3)]


def test_the_budget_left_is_the_page_limit_less_the_pages_crawled_and_the_live_leases(settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 4
    audit = _running_audit(max_pages=450, linked_urls=30)
    frontier_claim(audit_id=audit.id, lease_key="dead-run", limit=10, lease_s=300)  # leased, still live
    Audit.objects.filter(id=audit.id).update(pages_crawled=240)  # what the batches counted
    plan = round_plan(audit_id=audit.id, round_no=3)
    assert [quota for _key, quota in plan.chunks] == [200]  # 450 - 240 - 10
    assert plan.pages_done == 240


def test_live_leases_and_only_sitemap_urls_left_wait_instead_of_planning():
    audit = _running_audit(max_pages=100, linked_urls=2)
    frontier_seed_sitemap(audit_id=audit.id, urls=[("http://127.0.0.1:9/s1", "/s1")])
    frontier_claim(audit_id=audit.id, lease_key="running", limit=2, lease_s=300)
    plan = round_plan(audit_id=audit.id, round_no=4)
    assert plan.chunks == [] and plan.wait_s > 0  # the link crawl may still give the sitemap URL a depth


def test_a_full_page_budget_ends_the_crawl_with_urls_still_queued():
    audit = _running_audit(max_pages=100, linked_urls=5)
    Audit.objects.filter(id=audit.id).update(pages_crawled=100)
    assert round_plan(audit_id=audit.id, round_no=5) is None


def test_nothing_claimable_and_no_live_lease_is_the_end_of_the_crawl():
    audit = _running_audit(max_pages=100, linked_urls=0)
    assert round_plan(audit_id=audit.id, round_no=1) is None


def test_the_round_counter_moves_once():
    audit = _running_audit(max_pages=100, linked_urls=0)
    assert round_advance(audit_id=audit.id, from_round=0)
    assert not round_advance(audit_id=audit.id, from_round=0)
    assert Audit.objects.get(id=audit.id).crawl_round == 1
