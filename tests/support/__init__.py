"""Helpers the tests share (fixtures stay in the conftest.py files):

- `sites`: small HTTP sites on 127.0.0.1 (a routed site, any handler class, a generated tree with a
  slow answer or a client-killing page, a gzip bomb). Where a routed site with request checks is
  enough, pytest-httpserver's `httpserver` fixture is simpler (see tests/api/test_webhook_sweep.py).
  Its modules build the sites themselves: `sites.pages` (page builder, routes, `Case`), the page-check
  cases (`sites.page_cases` and the two it gathers), `sites.crawled`, `sites.hostile`.
- `waits`: poll until a condition holds (`wait_until`, `wait_audit_finished`).
- `workers`: a real `celery worker` process, `manage.py` as a child process, the environment that
  points both at this session's database and Redis db.

The RSS sampler is `bench.rss.RssSampler`, shared with the benchmark (bench does not import tests).
"""
