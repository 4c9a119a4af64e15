"""Exact click depth in finalize (audits.pipeline.depth): a crawl without a barrier between depth layers may
find a page by a long path first; finalize's breadth-first pass over the stored links gives every page its
shortest depth, and deep-page is judged on it.

Then the pass on stored graphs written straight into the database: redirects cost no click however long the
chain, canonical and hreflang targets one, robots nofollow and nofollow edges none, rewritten query strings meet
their page, and a pagination chain 2,000 pages long keeps every depth."""

import threading

import numpy as np
import pytest
from django.db import connection

from audits.limits import DEPTH_SQL_WORK_MEM_MB
from audits.models import Audit, Issue, Page, page_id_for, set_issue_id_for
from audits.pipeline import depth
from audits.pipeline.depth import PAIR_SHIFT, _clicks_load, page_depths_store
from audits.pipeline.finalize import audit_finalize, audit_lighthouse
from audits.pipeline.inline import pipeline_crawl_inline, pipeline_run_inline
from audits.pipeline.start import audit_start
from scratchpad.models import LinkEdge
from tests.factories import AuditFactory, LinkEdgeFactory, PageFactory, ProjectFactory
from tests.support.sites import serve_routes

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_PAGE_WAIT_S = 20  # /b waits at most this long for the long path to reach /x (never, with a barrier)
CHAIN = ["/a", "/a1", "/a2", "/a3", "/a4"]  # depths 1..5
EXACT = {"/": 0, "/a": 1, "/b": 1, "/a1": 2, "/a2": 3, "/a3": 4, "/a4": 5, "/x": 2, "/y": 3, "/z": 4, "/w": 5}


def _page(title: str, links: list[str]) -> str:
    anchors = " ".join(f'<a href="{href}">{href}</a>' for href in links)
    return f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>{anchors}</body></html>"


def _shortcut_site(site, *, slow_wait_s: float = SLOW_PAGE_WAIT_S) -> threading.Event:
    """The start page links /a then /b. /a starts a chain of five pages whose last links /x (depth 6 that way);
    /b links /x directly (depth 2), but /b answers only once /x has been fetched: a crawl that keeps claiming
    while /b is in flight finds /x by the long path first. /x -> /y -> /z -> /w continue below /x."""
    x_fetched = threading.Event()
    site.add("/", _page("Home", ["/a", "/b"]))
    for here, after in zip(CHAIN, [*CHAIN[1:], "/x"], strict=True):
        site.add(here, _page(here, [after]))
    body = _page("B", ["/x"]).encode()

    def slow_b(handler):
        x_fetched.wait(slow_wait_s)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    site.handle("/b", slow_b)
    x_body = _page("X", ["/y"]).encode()

    def x_page(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(x_body)))
        handler.end_headers()
        handler.wfile.write(x_body)
        x_fetched.set()

    site.handle("/x", x_page)
    site.add("/y", _page("Y", ["/z"]))
    site.add("/z", _page("Z", ["/w"]))
    site.add("/w", _page("W", ["/"]))
    return x_fetched


def _depths(audit) -> dict:
    base = audit.start_url.rstrip("/")
    return {url.removeprefix(base) or "/": d for url, d in Page.objects.filter(audit=audit).values_list("url", "depth")}


def test_finalize_gives_exact_depths_when_the_first_found_path_is_not_the_shortest():
    with serve_routes() as site:
        _shortcut_site(site)
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        assert pipeline_crawl_inline(audit.id)
        crawled = _depths(audit)
        # Claiming went on while /b was in flight: /x was reached by the long path first.
        assert crawled["/x"] == 6 and crawled["/w"] == 9, crawled
        assert audit_lighthouse(audit_id=audit.id)
        assert audit_finalize(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    assert _depths(audit) == EXACT
    deep = Issue.objects.filter(audit=audit, type="deep-page").values_list("page_url", "details")
    assert {(url.removeprefix(site.url), details["depth"]) for url, details in deep} == {("/a4", 5), ("/w", 5)}


def test_depth_pass_is_idempotent_and_keeps_unlinked_pages_null():
    with serve_routes() as site:
        _shortcut_site(site)
        site.add("/robots.txt", f"Sitemap: {site.url}/sitemap.xml\n", content_type="text/plain")
        site.add(
            "/sitemap.xml",
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{site.url}/only-in-sitemap</loc></url></urlset>",
            content_type="application/xml",
        )
        site.add("/only-in-sitemap", _page("Only in the sitemap", ["/"]))
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    assert _depths(audit) == {**EXACT, "/only-in-sitemap": None}
    again = page_depths_store(audit_id=audit.id)
    assert again.changed == 0 and again.reached == len(EXACT) and again.deep_pages == 2
    assert _depths(audit) == {**EXACT, "/only-in-sitemap": None}
    assert Issue.objects.filter(audit=audit, type="deep-page").count() == 2


def test_deep_page_rows_are_written_from_the_page_rows_with_the_audits_threshold_and_severity():
    """The SQL path (PostgreSQL here) builds each row as the Python path would: set_issue_id_for's id, the page,
    its URL, the audit's severity, details with the exact depth and the threshold; only OK 2xx pages that deep."""
    audit = AuditFactory(config={"checks": {"thresholds": {"deep-page": {"min_depth": 3}},
                                            "severities": {"deep-page": "warning"}}})  # fmt: skip
    site = audit.start_url.rstrip("/")
    deep = {
        f"{site}/three": 3,
        f"{site}/caf\u00e9/\u65e5\u672c?q='x'&p=%20": 4,  # unicode, a quote, a percent sign
        f"{site}/nine": 9,
    }
    for url, d in deep.items():
        PageFactory(audit=audit, url=url, depth=d)
    PageFactory(audit=audit, url=f"{site}/shallow", depth=2)
    PageFactory(audit=audit, url=f"{site}/unreached", depth=None)
    PageFactory(audit=audit, url=f"{site}/missing", depth=5, status_code=404)
    PageFactory(audit=audit, url=f"{site}/moved", depth=5, status_code=301)
    PageFactory(audit=audit, url=f"{site}/failed", depth=5, fetch_class=Page.FetchClass.ERROR, status_code=None)

    assert depth._deep_pages_store(audit) == len(deep)

    rows = Issue.objects.filter(audit=audit, type="deep-page").order_by("page_url")
    assert [
        (i.id, i.page_id, i.page_url, i.severity, i.details, i.created_at is not None) for i in rows
    ] == [
        (set_issue_id_for(audit.id, url, "deep-page"), page_id_for(audit.id, url), url, "warning",
         {"depth": deep[url], "min_depth": 3}, True)
        for url in sorted(deep)
    ]  # fmt: skip
    assert depth._deep_pages_store(audit) == len(deep)  # replaced, not added to
    assert Issue.objects.filter(audit=audit, type="deep-page").count() == len(deep)


def test_deep_page_rows_go_when_the_check_is_disabled():
    audit = AuditFactory()
    PageFactory(audit=audit, depth=6)
    assert depth._deep_pages_store(audit) == 1
    audit.config = {"checks": {"disabled": ["deep-page"]}}
    assert depth._deep_pages_store(audit) == 0
    assert not Issue.objects.filter(audit=audit, type="deep-page").exists()


def test_the_pass_sorts_and_joins_with_its_own_work_mem_and_gives_it_back(monkeypatch):
    audit = AuditFactory(start_url="https://example.com/", status=Audit.Status.RUNNING)
    PageFactory(audit=audit, url="https://example.com/", status_code=200, depth=0)
    seen = []

    def load(audit, scope):
        with connection.cursor() as cursor:
            cursor.execute("SHOW work_mem")
            seen.append(cursor.fetchone()[0])
        return real_load(audit, scope)

    real_load = depth._graph_load
    monkeypatch.setattr(depth, "_graph_load", load)
    with connection.cursor() as cursor:
        cursor.execute("SHOW work_mem")
        before = cursor.fetchone()[0]
    assert page_depths_store(audit_id=audit.id).reached == 1
    assert seen == [f"{DEPTH_SQL_WORK_MEM_MB}MB"] != [before]
    with connection.cursor() as cursor:
        cursor.execute("SHOW work_mem")
        assert cursor.fetchone()[0] == before  # SET LOCAL: the worker's next task has the server's setting


def test_max_depth_is_judged_on_the_discovery_depth():
    """Max depth 2: the long path reaches /a2 at depth 3 (not crawled) and would reach /x at 6 (not queued);
    /b's direct link queues /x at depth 2, so /x is crawled, and nothing below it."""
    with serve_routes() as site:
        _shortcut_site(site, slow_wait_s=1)
        project = ProjectFactory(base_url=site.url + "/", max_depth=2)
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    assert _depths(audit) == {"/": 0, "/a": 1, "/b": 1, "/a1": 2, "/x": 2}


# --- stored graphs -----------------------------------------------------------------------------------------------

CHAIN_PAGES = 2_000  # /page/1 .. /page/2000, each linking the next
SHORTCUT_PAGE = 1_500  # the start page also links this one


def _graph_store(audit, pages: dict, links: dict) -> None:
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


def _graph_depths(audit) -> dict:
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
    _graph_store(audit, pages, links)
    result = page_depths_store(audit_id=audit.id)
    assert _graph_depths(audit) == {
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
    _graph_store(
        audit,
        {"/": {}, "/a": {}, "/b": {"meta_robots": "nofollow"}, "/c": {}},
        {"/": [("/a", True), "/b"], "/b": ["/c"]},
    )
    page_depths_store(audit_id=audit.id)
    assert _graph_depths(audit) == {"/": 0, "/a": 1, "/b": 1, "/c": None}


def test_a_pagination_chain_2000_pages_long_gets_every_depth():
    audit = AuditFactory(config={"max_pages": CHAIN_PAGES + 10})
    pages = {"/": {}, **{f"/page/{k}": {} for k in range(1, CHAIN_PAGES + 1)}}
    links = {"/": ["/page/1", f"/page/{SHORTCUT_PAGE}"]}
    links.update({f"/page/{k}": [f"/page/{k + 1}", "/"] for k in range(1, CHAIN_PAGES)})
    _graph_store(audit, pages, links)
    result = page_depths_store(audit_id=audit.id)
    depths = _graph_depths(audit)
    assert depths["/"] == 0
    for k in range(1, CHAIN_PAGES + 1):
        assert depths[f"/page/{k}"] == (k if k < SHORTCUT_PAGE else 1 + k - SHORTCUT_PAGE), k
    assert (result.pages, result.reached, result.edges) == (CHAIN_PAGES + 1, CHAIN_PAGES + 1, 2 + 2 * (CHAIN_PAGES - 1))


def test_list_mode_leaves_depths_alone():
    audit = AuditFactory(config={"max_pages": 10, "mode": "list"})
    _graph_store(audit, {"/": {"depth": 0}, "/a": {"depth": 0}}, {"/": ["/a"]})
    result = page_depths_store(audit_id=audit.id)
    assert (result.pages, result.changed) == (0, 0)
    assert _graph_depths(audit) == {"/": 0, "/a": 0}


# --- the graph as it is loaded -------------------------------------------------------------------------


def _pairs(*pairs: tuple[int, int]) -> np.ndarray:
    return np.array([source << PAIR_SHIFT | target for source, target in pairs], dtype=np.int64)


def test_click_pairs_in_source_order_become_a_graph_of_int32_targets():
    # Batches as the server-side cursor gives them: one page's edges may straddle two batches.
    batches = [_pairs((0, 1), (0, 2), (2, 0)), _pairs((2, 3), (2, 1)), _pairs((4, 4))]
    clicks = _clicks_load(5, iter(batches))
    assert clicks.indptr.tolist() == [0, 2, 2, 5, 5, 6]
    assert clicks.targets.dtype == np.int32  # 4 bytes an edge; the source is only counted
    assert clicks.indptr.dtype == np.int32  # 4 bytes a page while the offsets fit
    assert [clicks.targets[clicks.indptr[n] : clicks.indptr[n + 1]].tolist() for n in range(5)] == [
        [1, 2], [], [0, 3, 1], [], [4]
    ]  # fmt: skip


def test_link_pairs_from_pages_whose_links_are_not_followed_are_left_out():
    follows = np.array([True, False, True])
    clicks = _clicks_load(3, [_pairs((0, 1), (1, 2), (1, 0), (2, 1))], follows=follows)
    assert clicks.indptr.tolist() == [0, 1, 1, 2] and clicks.targets.tolist() == [1, 1]


def test_a_kind_without_edges_allocates_no_offsets():
    # A site without canonicals or hreflang: those kinds hold no offset array (8 MiB a kind at a million pages
    # before, freed but left on the heap), and read as a page without clicks.
    for batches in ([], [_pairs()], [_pairs((1, 0), (1, 2))]):  # the last: every source's links unfollowed
        clicks = _clicks_load(3, iter(batches), follows=np.array([True, False, True]))
        assert len(clicks.targets) == 0 and clicks.indptr.tolist() == [0, 0, 0, 0]
        assert clicks.indptr.base is not None and clicks.indptr.base.nbytes == 4  # one int32, broadcast


@pytest.mark.parametrize(
    "batches", [[_pairs((1, 0), (0, 1))], [_pairs((0, 1), (2, 0)), _pairs((1, 2))]], ids=["within", "across"]
)
def test_click_pairs_out_of_source_order_are_refused_not_misfiled(batches):
    with pytest.raises(ValueError, match="source order"):
        _clicks_load(3, iter(batches))
