"""End to end with a real Celery worker process, Redis and PostgreSQL against a generated site."""

import pytest

from audits.limits import STEP_TIME_LIMIT_S, finalize_time_limit_s
from audits.models import Audit, AuditEvent, Page
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.waits import wait_audit_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

AUDIT_WAIT_S = 240


def test_worker_audit_of_generated_site(small_site, celery_worker_process):
    base, manifest = small_site
    project = ProjectFactory(base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=1000)
    audit = wait_audit_finished(audit, AUDIT_WAIT_S)
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    pages = {p.url: p for p in Page.objects.filter(audit=audit)}
    assert set(pages) == manifest.expected_urls(base)
    assert audit.crawl_round >= 2, "the crawl ran as several chord rounds"
    # finalize ran under the time limit its message carried, the one the audit's pages call for
    completed = AuditEvent.objects.get(audit=audit, kind=AuditEvent.Kind.COMPLETED)
    assert completed.data["finalize_time_limit_s"] == finalize_time_limit_s(audit.pages_crawled) > STEP_TIME_LIMIT_S
    # robots.txt Disallow honoured
    assert manifest.disallowed and not any(base + path in pages for path in manifest.disallowed)
    # the sitemap index's gzipped child was read: the orphan is only listed there
    assert audit.discovery["sitemap_documents"] >= 3
    for path in manifest.sitemap_only:
        assert pages[base + path].in_sitemap and pages[base + path].depth is None
    # the XHTML page (XML declaration first) was parsed: the page only it links to was found
    assert pages[base + manifest.xhtml_path].status_code == 200
    assert pages[base + manifest.xhtml_only_target].depth == pages[base + manifest.xhtml_path].depth + 1
