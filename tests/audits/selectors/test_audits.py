"""audits/selectors/audits.py: the crawl bar the dashboard's live block and the CLI draw from an audit's counters."""

import itertools
from datetime import timedelta

import pytest

from audits.comparison import baseline_choices, comparison_baseline
from audits.models import Audit
from audits.selectors.audits import audit_crawl_bar, crawl_bar, previous_audit
from tests.factories import AuditFactory


@pytest.mark.parametrize(
    "crawled, found, budget", list(itertools.product((0, 1, 94, 400, 500), (0, 1, 310, 400, 900), (1, 400, 500)))
)
def test_a_running_crawl_never_shows_more_done_than_known_nor_a_full_bar(crawled, found, budget):
    bar = crawl_bar(crawled=crawled, found=found, budget=budget, crawl_state="running")
    assert bar.running and bar.value < bar.maximum and bar.percent < 100
    assert bar.crawled <= bar.found and bar.crawled <= bar.total <= max(budget, crawled)


def test_the_total_is_what_was_found_up_to_the_page_budget():
    growing = crawl_bar(crawled=94, found=310, budget=500, crawl_state="running")
    assert (growing.total, growing.value, growing.maximum, growing.at_budget) == (310, 94, 310, False)
    capped = crawl_bar(crawled=94, found=900, budget=500, crawl_state="running")
    assert (capped.total, capped.found, capped.at_budget) == (500, 900, True)
    # counters read between a batch's pages and the next count: never fewer found than crawled
    stale = crawl_bar(crawled=94, found=1, budget=500, crawl_state="running")
    assert (stale.found, stale.total, stale.value, stale.maximum) == (94, 94, 94, 95)


def test_a_done_crawl_is_full_and_a_stopped_one_shows_what_was_known():
    done = crawl_bar(crawled=300, found=310, budget=500, crawl_state="done")
    assert (done.value, done.maximum, done.percent, done.running) == (300, 300, 100, False)
    stopped = crawl_bar(crawled=9, found=30, budget=1000, crawl_state="stopped")
    assert (stopped.total, stopped.value, stopped.maximum, stopped.percent) == (30, 9, 30, 30)
    nothing = crawl_bar(crawled=0, found=0, budget=1000, crawl_state="stopped")
    assert (nothing.value, nothing.maximum) == (0, 1)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "status, phase, state",
    [
        (Audit.Status.RUNNING, Audit.Phase.DISCOVERY, True),
        (Audit.Status.RUNNING, Audit.Phase.CRAWLING, True),
        (Audit.Status.RUNNING, Audit.Phase.LIGHTHOUSE, False),
        (Audit.Status.RUNNING, Audit.Phase.FINALIZING, False),
        (Audit.Status.COMPLETED, Audit.Phase.COMPLETED, False),
        (Audit.Status.CANCELLED, Audit.Phase.CANCELLED, False),
    ],
)
def test_the_bar_runs_only_in_discovery_and_the_crawl(status, phase, state):
    audit = AuditFactory(status=status, current_phase=phase, pages_crawled=40, pages_total=40)
    bar = audit_crawl_bar(audit=audit)
    assert bar.running is state and (bar.value < bar.maximum) is state


@pytest.mark.django_db
def test_a_fix_verification_is_never_the_previous_audit_nor_a_baseline():
    # A verification re-checks a few URLs of an earlier audit: comparing the next crawl with it would call every
    # other page new, and its score says nothing of the site.
    crawl = AuditFactory(status=Audit.Status.COMPLETED)
    verification = AuditFactory(project=crawl.project, status=Audit.Status.COMPLETED, verifies=crawl)
    latest = AuditFactory(project=crawl.project, status=Audit.Status.COMPLETED)
    Audit.objects.filter(id=crawl.id).update(created_at=latest.created_at - timedelta(hours=2))
    Audit.objects.filter(id=verification.id).update(created_at=latest.created_at - timedelta(hours=1))
    latest.refresh_from_db()
    assert previous_audit(audit=latest) == crawl
    assert comparison_baseline(audit=latest) == crawl
    assert verification not in baseline_choices(audit=latest)
    assert comparison_baseline(audit=latest, base_id=str(verification.id)) == verification  # chosen on purpose
