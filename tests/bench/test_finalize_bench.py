"""The finalize benchmark's synthetic crawl is honest: finalize writes exactly the site issues it planted."""

import pytest

from audits.models import Audit, Issue
from bench.finalize import finalize_measure, planted_mismatches, synthetic_crawl_create
from scratchpad.models import Frontier, LinkEdge

PAGES = 300


@pytest.mark.django_db(transaction=True)
def test_finalize_on_the_synthetic_crawl_finds_what_was_planted():
    crawl = synthetic_crawl_create(pages=PAGES, seed=3)
    assert crawl.pages == PAGES
    assert LinkEdge.objects.filter(audit_id=crawl.audit_id).count() == crawl.link_edges
    assert crawl.link_edges == pytest.approx(50 * PAGES, rel=0.1)
    assert Frontier.objects.filter(audit_id=crawl.audit_id).count() == PAGES
    assert not Frontier.objects.filter(audit_id=crawl.audit_id).exclude(state=Frontier.State.DONE).exists()

    result = finalize_measure(audit_id=crawl.audit_id)

    assert result["completed"] and result["status"] == Audit.Status.COMPLETED
    assert result["pages_crawled"] == PAGES
    assert result["frontier_left"] == 0
    assert 0 < result["health_score"] < 100
    assert result["site_issues_before"] == {}
    written = result["site_issues"]
    assert planted_mismatches(crawl.expected, written) == {}
    # The planted features by name, so an empty plan cannot pass the comparison above.
    assert written["duplicate-title"] == crawl.expected["duplicate-title"] >= 4
    assert written["broken-internal-link"] >= 3
    assert written["orphan-page"] >= 2
    assert written["hreflang-missing-return-link"] >= 1
    assert written["canonical-target-not-ok"] >= 3
    assert "sitemap-missing" not in written and "max-pages-reached" not in written
    issues = Issue.objects.filter(audit_id=crawl.audit_id)
    chains = issues.filter(type="redirect-chain")
    assert sorted(i.details["hops_count"] for i in chains) == [2, 3]
    assert all(i.details["final_status_code"] == 200 for i in chains)
    (loop,) = issues.filter(type="redirect-loop")
    assert loop.page_url.endswith("/loop/a") and loop.details["loops_back_to"] == loop.page_url
