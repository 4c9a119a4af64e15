"""Every link counts and big pages are read whole: a crawl of a 4,000-link index and a 3 MB page, on PostgreSQL."""

import pytest

from audits.models import Audit, Issue, Page, PageCounts
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from bench.rss import RssSampler
from scratchpad.models import LinkEdge
from tests.factories import ProjectFactory
from tests.support.sites.pages import html_route, page, serve

pytestmark = pytest.mark.django_db(transaction=True)

TARGETS = [f"/p{n}" for n in range(10)]
INDEX_LINKS = 4_000
BROKEN_AT = 3_000  # far past the 500 links per page the link graph kept before
BIG_PAGE_BYTES = 3 * 1024 * 1024  # three times the 1 MiB read limit there was before
WORKER_RSS_BOUND_BYTES = 600 * 1024 * 1024  # generous: a 3 MB page must not cost a worker anywhere near this


def _audit(base: str, max_pages: int = 50) -> Audit:
    project = ProjectFactory(base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=max_pages, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _index_routes() -> dict:
    links = [(TARGETS[i % len(TARGETS)], f"Page {i % len(TARGETS)}") for i in range(INDEX_LINKS)]
    links[BROKEN_AT] = ("/gone", "An old page")
    routes = {"/": html_route(page("index", links=links, words=10))}
    routes.update({path: html_route(page(path.strip("/"))) for path in TARGETS})
    return routes  # /gone is not routed: 404


def test_a_broken_link_at_position_3000_of_4000_is_found_and_every_link_is_counted():
    with serve(_index_routes()) as base:
        audit = _audit(base)
    home = Page.objects.get(audit=audit, url=base + "/")
    assert (home.internal_links, home.external_links) == (INDEX_LINKS, 0)

    (broken,) = Issue.objects.filter(audit=audit, type="broken-internal-link")
    assert broken.page_url == base + "/"
    assert broken.details == {
        "target_url": base + "/gone",
        "status_code": 404,
        "links": 1,
        "anchor_text": "An old page",
    }

    # One edge per distinct target, with its link count: 3,999 links to ten pages, one to /gone.
    edges = dict(LinkEdge.objects.filter(source_page=home).values_list("target_url", "link_count"))
    assert len(edges) == len(TARGETS) + 1 and sum(edges.values()) == INDEX_LINKS and edges[base + "/gone"] == 1
    # Inlinks count every link: /p0 is linked from the index 400 times less the one replaced by /gone.
    inlinks = dict(PageCounts.objects.filter(audit=audit).values_list("url", "inlinks"))
    assert inlinks[base + "/p0"] == INDEX_LINKS // len(TARGETS) - 1
    assert inlinks[base + "/p1"] == INDEX_LINKS // len(TARGETS)
    assert inlinks[base + "/"] == len(TARGETS)  # each target page links home once


def _big_page() -> str:
    # Link-dense and text-heavy, with the one link to /last at the very end.
    links = "".join(f'<a href="{TARGETS[n % len(TARGETS)]}">Page {n % len(TARGETS)}</a> ' for n in range(30_000))
    filler = "<p>" + "lorem words of a long contents page " * 1_000 + "</p>"
    body = links
    while len(body) < BIG_PAGE_BYTES:
        body += filler
    head = "<!DOCTYPE html><html lang='en'><head><title>Contents</title></head>"
    return f"{head}<body>{body}<a href='/last'>The last page</a></body></html>"


def test_the_last_link_of_a_3mb_page_is_followed_in_bounded_memory():
    big = _big_page()
    assert len(big) > BIG_PAGE_BYTES
    routes = {
        "/": html_route(page("home", links=[("/contents", "Contents")])),
        "/contents": html_route(big),
        "/last": html_route(page("last")),
        **{path: html_route(page(path.strip("/"))) for path in TARGETS},
    }
    with serve(routes) as base, RssSampler(tree=False, interval_s=0.05) as rss:
        audit = _audit(base)
    contents = Page.objects.get(audit=audit, url=base + "/contents")
    assert not contents.truncated and contents.bytes == len(big.encode())
    assert contents.internal_links == 30_001
    last = Page.objects.get(audit=audit, url=base + "/last")
    assert (last.status_code, last.depth) == (200, 2)
    assert not Issue.objects.filter(audit=audit, page_id=contents.id, type="no-outgoing-links").exists()
    assert rss.peak < WORKER_RSS_BOUND_BYTES, f"peak RSS {rss.peak / 2**20:.0f} MiB"
