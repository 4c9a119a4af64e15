"""Fair sharing between audits (audits.dispatch priorities, issue 15), with a real worker on Redis: a small audit
started while a big one crawls is served before the big one's queued chunks, and both complete exactly.

The worker has one process, so the order in which it takes messages is the order in which pages are fetched
(`Page.fetched_at`): the assertions are on that order, never on a duration."""

import pytest
from django.db.models import Count, Max, Min

from audits.dispatch import chunk_urgency, message_priority
from audits.limits import CHUNK_TARGET_PAGES
from audits.models import Audit, Page
from audits.pipeline.start import audit_start
from bench.serve import serve_site
from bench.sitegen import generate_site
from tests.factories import ProjectFactory
from tests.support.waits import wait_audit_finished, wait_until
from tests.support.workers import WorkerProcess, flush_test_broker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e, pytest.mark.slow]

BIG_SITE_PAGES = 2500
SMALL_LIST_URLS = 120
# The big audit is past its first rounds (its chunks are less urgent than a new audit's) and has a backlog.
BIG_ROUND_BEFORE_SMALL = 3
AUDIT_WAIT_S = 400


@pytest.fixture(scope="module")
def big_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site-big")
    manifest = generate_site(root, pages=BIG_SITE_PAGES, seed=11, page_kb=4)
    with serve_site(root) as base_url:
        yield base_url, manifest


@pytest.fixture
def one_process_worker(transactional_db):
    """One worker process: it takes one message at a time, the most urgent first."""
    flush_test_broker()
    worker = WorkerProcess(concurrency=1).start()
    yield worker
    worker.stop()
    flush_test_broker()


def test_urgency_falls_as_an_audit_grows_and_maps_to_the_broker():
    assert chunk_urgency(round_no=1) < chunk_urgency(round_no=5) < chunk_urgency(round_no=40) == 9
    assert chunk_urgency(round_no=1, pages_done=0) == 1
    assert chunk_urgency(round_no=1, pages_done=600) < chunk_urgency(round_no=1, pages_done=50_000) == 9
    assert message_priority(0) == 0 and message_priority(9) == 9  # the tests' broker is Redis: lowest first


def test_a_small_audit_started_during_a_big_one_is_not_queued_behind_it(big_site, small_site, one_process_worker):
    big_base, big_manifest = big_site
    small_base, small_manifest = small_site
    big_expected = big_manifest.expected_urls(big_base)
    big = audit_start(
        project=ProjectFactory(base_url=big_base + "/"), start_url=big_base + "/", max_pages=len(big_expected) + 50
    )
    wait_until(
        lambda: Audit.objects.filter(id=big.id, crawl_round__gte=BIG_ROUND_BEFORE_SMALL).exists(),
        timeout_s=AUDIT_WAIT_S,
    )
    listed = sorted(small_base + path for path in small_manifest.pages)[:SMALL_LIST_URLS]
    small = audit_start(project=ProjectFactory(base_url=small_base + "/"), urls=listed)
    small = wait_audit_finished(small, AUDIT_WAIT_S)
    big_while_small_ran = Audit.objects.get(id=big.id)
    big = wait_audit_finished(big, AUDIT_WAIT_S)

    # Both complete, each page stored once, exactly the expected ones.
    assert small.status == big.status == Audit.Status.COMPLETED, (small.error_detail, big.error_detail)
    assert big_while_small_ran.status == Audit.Status.RUNNING, "the small audit ended while the big one crawled"
    for audit, expected in ((small, set(listed)), (big, big_expected)):
        urls = list(Page.objects.filter(audit=audit).values_list("url", flat=True))
        assert len(urls) == len(set(urls)) == audit.pages_crawled
        assert set(urls) == expected
    assert not Page.objects.values("audit", "url").annotate(n=Count("id")).filter(n__gt=1).exists()

    span = Page.objects.filter(audit=small).aggregate(first=Min("fetched_at"), last=Max("fetched_at"))
    big_pages = Page.objects.filter(audit=big)
    # Before the small audit's first page: at most what remained of the big chunk running when it started
    # (FIFO would first run the big audit's whole queued backlog: several chunks of CHUNK_TARGET_PAGES).
    waited_behind = big_pages.filter(fetched_at__gt=small.started_at, fetched_at__lt=span["first"]).count()
    assert waited_behind <= CHUNK_TARGET_PAGES
    # While it crawled, every free turn of the worker went to it: no big page in between.
    assert not big_pages.filter(fetched_at__gt=span["first"], fetched_at__lt=span["last"]).exists()
    # And the big audit went on crawling afterwards (it was not starved or stopped).
    assert big_pages.filter(fetched_at__gt=span["last"]).exists()
