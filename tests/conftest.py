"""Shared fixtures: a generated site served on 127.0.0.1, pytest-httpserver's address, a real Celery worker
process, a project.

The helpers behind them (sites, waits, worker processes, `manage.py` runs) live in `tests/support/`.
"""

import pytest

from bench.serve import serve_site
from bench.sitegen import generate_site
from tests.factories import ProjectFactory
from tests.support.workers import WorkerProcess, flush_test_broker


def pytest_collection_modifyitems(items):
    """A test that starts a real worker is end-to-end whatever its module says (`make test-fast` skips it)."""
    for item in items:
        if "celery_worker_process" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def small_site(tmp_path_factory):
    """A generated site of 300 pages with robots.txt, a sitemap index with a gzipped child, an XHTML
    page, a redirect, a 404 and a sitemap-only orphan; yields (base_url, manifest)."""
    root = tmp_path_factory.mktemp("site300")
    manifest = generate_site(root, pages=300, seed=7, page_kb=8)
    with serve_site(root) as base_url:
        yield base_url, manifest


@pytest.fixture(scope="session")
def httpserver_listen_address():
    """pytest-httpserver on 127.0.0.1 (not `localhost`): the address the crawl tests' sites use."""
    return ("127.0.0.1", 0)


@pytest.fixture
def project(db):
    return ProjectFactory()


@pytest.fixture
def celery_worker_process(transactional_db):
    """Start a real worker (2 prefork processes) against Redis; stopped before the database is flushed."""
    flush_test_broker()
    worker = WorkerProcess().start()
    yield worker
    worker.stop()
    flush_test_broker()
