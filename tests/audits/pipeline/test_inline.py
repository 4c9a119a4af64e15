"""audits.pipeline.inline: the whole pipeline in this process against a generated site on 127.0.0.1: the reachable
set, the page budget, the same page ids when run again from scratch."""

import pytest

from audits.limits import STEP_TIME_LIMIT_S, finalize_time_limit_s
from audits.models import Audit, AuditEvent, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from scratchpad.models import Frontier, LinkEdge
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _run(base_url, max_pages=1000):
    project = ProjectFactory(base_url=base_url + "/")
    audit = audit_start(project=project, start_url=base_url + "/", max_pages=max_pages, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    return audit


def test_inline_audit_stores_exactly_the_reachable_set(small_site):
    base, manifest = small_site
    audit = _run(base)
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    urls = set(Page.objects.filter(audit=audit).values_list("url", flat=True))
    assert urls == manifest.expected_urls(base)
    assert audit.pages_crawled == len(urls)
    assert not any("/private/" in u for u in urls)
    old = Page.objects.get(audit=audit, url=base + "/old-page")
    assert (old.status_code, old.redirect_url) == (301, base + "/moved/page.html")
    assert Page.objects.get(audit=audit, url=base + "/missing.html").status_code == 404
    for path in manifest.sitemap_only:
        orphan = Page.objects.get(audit=audit, url=base + path)
        assert orphan.in_sitemap and orphan.depth is None and orphan.status_code == 200
    assert Page.objects.get(audit=audit, url=base + "/").depth == 0
    assert Frontier.objects.filter(audit=audit).count() == 0  # purged at finalize
    assert LinkEdge.objects.filter(audit=audit).exists()
    # finalize ran with the limit a worker's message would carry for the audit's pages (the external pass's budget)
    completed = AuditEvent.objects.get(audit=audit, kind=AuditEvent.Kind.COMPLETED)
    assert completed.data["finalize_time_limit_s"] == finalize_time_limit_s(audit.pages_crawled) > STEP_TIME_LIMIT_S


def test_max_pages_bounds_the_crawl(small_site):
    base, _ = small_site
    audit = _run(base, max_pages=40)
    assert audit.status == Audit.Status.COMPLETED
    assert Page.objects.filter(audit=audit).count() == 40
    depths = list(Page.objects.filter(audit=audit).values_list("depth", flat=True))
    assert None not in depths, "link-discovered URLs are crawled before sitemap-only ones"


def test_rerun_from_scratch_gives_the_same_page_ids(small_site):
    base, _ = small_site
    audit = _run(base)
    first = set(Page.objects.filter(audit=audit).values_list("id", "url"))
    Page.objects.filter(audit=audit).delete()
    Audit.objects.filter(id=audit.id).update(
        status="running", current_phase="discovery", crawl_round=0, pages_crawled=0, discovery={}
    )
    pipeline_run_inline(audit.id)
    assert set(Page.objects.filter(audit=audit).values_list("id", "url")) == first
