"""The pipeline in-process against a generated site on 127.0.0.1: the reachable set, idempotent steps."""

import pytest

from audits.models import Audit, Page
from audits.pipeline.chunk import crawl_chunk_run
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.rounds import round_plan
from audits.pipeline.start import audit_start
from scratchpad.models import CrawlChunk, Frontier, LinkEdge
from scratchpad.services import frontier_claim
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


def test_chunk_executed_twice_leaves_no_duplicates(small_site):
    base, manifest = small_site
    project = ProjectFactory(base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=1000, dispatch=False)
    from audits.pipeline.discovery import audit_discover

    assert audit_discover(audit_id=audit.id)
    plan = round_plan(audit_id=audit.id, round_no=1)
    key, quota = plan.chunks[0]
    run = dict(audit_id=audit.id, lease_key=key, quota=quota, round_no=plan.round_no)
    first = crawl_chunk_run(**run)
    pages_after_first = Page.objects.filter(audit=audit).count()
    edges_after_first = LinkEdge.objects.filter(audit=audit).count()
    frontier_after_first = Frontier.objects.filter(audit=audit).count()
    # A redelivered message of a finished chunk does nothing.
    assert crawl_chunk_run(**run) == {"skipped": "chunk done"}
    # A chunk run again anyway (its row handed back), even after its URLs were put back in its lease.
    CrawlChunk.objects.filter(audit=audit, lease_key=key).update(state="queued")
    Frontier.objects.filter(audit=audit, state="done").update(state="leased", lease_key=key)
    assert [c.url for c in frontier_claim(audit_id=audit.id, lease_key=key, limit=quota, lease_s=300)]
    second = crawl_chunk_run(**run)
    assert first["finished"] >= 1 and second["finished"] == first["finished"]
    assert Page.objects.filter(audit=audit).count() == pages_after_first
    assert LinkEdge.objects.filter(audit=audit).count() == edges_after_first
    assert Frontier.objects.filter(audit=audit).count() == frontier_after_first
    assert Page.objects.filter(audit=audit).values("url").distinct().count() == pages_after_first


def test_unreachable_start_url_fails_with_a_reason():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connection refused
    audit = _run(f"http://127.0.0.1:{port}")
    assert audit.status == Audit.Status.FAILED
    assert audit.error_code == "start_url_unreachable"
    assert audit.failed_phase == "discovery"
    assert str(port) in audit.error_detail
