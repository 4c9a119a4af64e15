"""Politeness (audits.pipeline.politeness): requests to one site are spaced by the project's minimum interval
and by robots.txt's Crawl-delay, across every chunk of a round. A real crawl of a site served on 127.0.0.1 whose
requests are timed."""

import pytest

from tests.support.sites.small import audit_small, request_gaps, serve_small

pytestmark = pytest.mark.django_db(transaction=True)


def test_minimum_interval_holds_between_every_two_requests(settings):
    settings.CRAWL_CHUNKS_PER_ROUND = 4  # several chunks at once must still share one spacing
    with serve_small() as (_, base, seen):
        audit_small(base, min_request_interval_ms=300, max_concurrency=8)
    gaps = request_gaps(seen)
    assert len(gaps) >= 10
    assert min(gaps) >= 0.300, gaps


def test_robots_crawl_delay_is_honoured():
    with serve_small(robots="User-agent: *\nCrawl-delay: 0.4\n") as (_, base, seen):
        audit_small(base)
    assert min(request_gaps(seen)) >= 0.4
