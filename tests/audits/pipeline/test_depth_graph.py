"""The exact-depth pass (audits.pipeline.depth) on stored graphs written straight into the database: redirects
cost no click however long the chain, canonical and hreflang targets one, robots nofollow and nofollow edges
none, rewritten query strings meet their page, and a pagination chain 2,000 pages long keeps every depth."""

import pytest

from audits.models import Page
from audits.pipeline.depth import page_depths_store
from scratchpad.models import LinkEdge
from tests.factories import AuditFactory, LinkEdgeFactory, PageFactory

pytestmark = pytest.mark.django_db(transaction=True)

CHAIN_PAGES = 2_000  # /page/1 .. /page/2000, each linking the next
SHORTCUT_PAGE = 1_500  # the start page also links this one


def _site(audit, pages: dict, links: dict) -> None:
    """pages: path -> Page fields over the factory's (a fetched 2xx HTML page, depth NULL);
    links: path -> [target path, or (target path, nofollow)]."""
    base = audit.start_url.rstrip("/")
    rows = {
        path: PageFactory.build(audit=audit, url=base + path, **{"depth": None, **fields})
        for path, fields in pages.items()
    }
    Page.objects.bulk_create(rows.values())
    edges = []
    for path, targets in links.items():
        for target in targets:
            target, nofollow = target if isinstance(target, tuple) else (target, False)
            edges.append(
                LinkEdgeFactory.build(audit=audit, source_page=rows[path], target_url=base + target, nofollow=nofollow)
            )
    LinkEdge.objects.bulk_create(edges)


def _depths(audit) -> dict:
    base = audit.start_url.rstrip("/")
    return {url.removeprefix(base): d for url, d in Page.objects.filter(audit=audit).values_list("url", "depth")}


def _redirect(target_path: str, audit) -> dict:
    return {"status_code": 301, "redirect_url": audit.start_url.rstrip("/") + target_path, "content_type": ""}


def test_redirect_chains_cost_no_click_and_extra_targets_one():
    audit = AuditFactory(config={"max_pages": 100, "query_policy": "strip"})
    base = audit.start_url.rstrip("/")
    pages = {
        "/": {},
        "/r1": _redirect("/r2", audit),
        "/r2": _redirect("/r3", audit),
        "/r3": _redirect("/final", audit),
        "/final": {"canonical_url": base + "/canonical", "hreflang": [["de", base + "/de"], ["fr"]]},
        "/canonical": {},
        "/de": {},
        "/below": {},
        "/robots-nofollow": {"meta_robots": "noindex, nofollow", "canonical_url": base + "/nf-canonical"},
        "/nf-canonical": {},
        "/not-linked-by-nofollow": {},
        "/nofollow-target": {},
        "/q": {},  # linked only as /q?sort=price: the strip policy meets it
        "/q-child": {},
        "/broken": {"status_code": 404, "canonical_url": base + "/never"},
        "/never": {},
        "/sitemap-only": {},
        "/loop-a": _redirect("/loop-b", audit),
        "/loop-b": _redirect("/loop-a", audit),
    }
    links = {
        "/": ["/r1", "/robots-nofollow", ("/nofollow-target", True), "/q?sort=price", "/broken", "/loop-a"],
        "/final": ["/below"],
        "/robots-nofollow": ["/not-linked-by-nofollow"],
        "/q": ["/q-child"],
    }
    _site(audit, pages, links)
    result = page_depths_store(audit_id=audit.id)
    assert _depths(audit) == {
        "/": 0,
        **{path: 1 for path in ["/r1", "/r2", "/r3", "/final", "/robots-nofollow", "/q", "/broken"]},
        **{path: 1 for path in ["/loop-a", "/loop-b"]},
        **{path: 2 for path in ["/canonical", "/de", "/below", "/nf-canonical", "/q-child"]},
        **{path: None for path in ["/not-linked-by-nofollow", "/nofollow-target", "/never", "/sitemap-only"]},
    }
    # Followable edges between stored pages: the start page's five (its nofollow one and the unrewritten
    # /q?sort=price are not), /final's and /q's; the robots-nofollow page's edge is not followed.
    assert (result.pages, result.reached, result.edges, result.changed) == (19, 15, 7, 15)
    assert page_depths_store(audit_id=audit.id).changed == 0


def test_follow_nofollow_takes_nofollow_edges_but_not_robots_nofollow():
    audit = AuditFactory(config={"max_pages": 100, "follow_nofollow": True})
    _site(
        audit,
        {"/": {}, "/a": {}, "/b": {"meta_robots": "nofollow"}, "/c": {}},
        {"/": [("/a", True), "/b"], "/b": ["/c"]},
    )
    page_depths_store(audit_id=audit.id)
    assert _depths(audit) == {"/": 0, "/a": 1, "/b": 1, "/c": None}


def test_a_pagination_chain_2000_pages_long_gets_every_depth():
    audit = AuditFactory(config={"max_pages": CHAIN_PAGES + 10})
    pages = {"/": {}, **{f"/page/{k}": {} for k in range(1, CHAIN_PAGES + 1)}}
    links = {"/": ["/page/1", f"/page/{SHORTCUT_PAGE}"]}
    links.update({f"/page/{k}": [f"/page/{k + 1}", "/"] for k in range(1, CHAIN_PAGES)})
    _site(audit, pages, links)
    result = page_depths_store(audit_id=audit.id)
    depths = _depths(audit)
    assert depths["/"] == 0
    for k in range(1, CHAIN_PAGES + 1):
        assert depths[f"/page/{k}"] == (k if k < SHORTCUT_PAGE else 1 + k - SHORTCUT_PAGE), k
    assert (result.pages, result.reached, result.edges) == (CHAIN_PAGES + 1, CHAIN_PAGES + 1, 2 + 2 * (CHAIN_PAGES - 1))


def test_list_mode_leaves_depths_alone():
    audit = AuditFactory(config={"max_pages": 10, "mode": "list"})
    _site(audit, {"/": {"depth": 0}, "/a": {"depth": 0}}, {"/": ["/a"]})
    result = page_depths_store(audit_id=audit.id)
    assert (result.pages, result.changed) == (0, 0)
    assert _depths(audit) == {"/": 0, "/a": 0}
