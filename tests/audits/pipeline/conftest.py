"""Fixtures of the pipeline's crawl tests (test_chunk, test_flow, test_reconcile): a generated site, no lease
renewal while a test plays the clock."""

import pytest

from bench.sitegen import generate_site
from tests.support.workers import flush_test_broker


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
