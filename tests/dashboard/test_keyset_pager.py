"""The pages grid's keyset pager (audits.selectors.pagination.keyset_paginate): every row once in the sort's order,
ties broken by URL and NULLs last whichever way the column is sorted; next/previous links that keep the sort
and filters; a cursor from another audit or sort, or an altered or forged one (cursors are signed), sends
to the first page."""

import base64
import json
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import signing
from django.urls import reverse

from audits.models import Page
from scratchpad.models import LinkEdge
from tests.dashboard.conftest import SITE, finished_audit, make_page
from tests.factories import ProjectFactory

PAGE_SIZE = 4


def api_cursor() -> str:
    """A well-signed cursor of the API's paginator: another salt, so no good here."""
    return signing.Signer(salt="api.pagination.keyset").sign_object({"t": "", "k": ["a"], "b": 0})


def _unsigned(data) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _payload(value: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))


@pytest.fixture
def tied(owner, monkeypatch):
    """23 pages whose depth ties in runs (0, 1, 2, 3 and NULL), so only the URL orders rows within a run."""
    monkeypatch.setattr("audits.selectors.pagination.PAGE_SIZE", PAGE_SIZE)
    audit = finished_audit(ProjectFactory(owner=owner, base_url=SITE + "/"), pages_crawled=23)
    for n in range(23):
        make_page(audit, f"/p{n:02d}", depth=None if n % 5 == 4 else n % 5, status_code=404 if n % 3 == 0 else 200)
    return audit


def _expected(audit, *, descending: bool, status=None) -> list[str]:
    pages = Page.objects.filter(audit=audit)
    if status:
        pages = pages.filter(status_code=status)
    rows = sorted(pages.values_list("depth", "url"), key=lambda r: r[1])
    with_depth = sorted((r for r in rows if r[0] is not None), key=lambda r: r[0], reverse=descending)
    return [url for _, url in with_depth] + [url for depth, url in rows if depth is None]  # NULLs last


def _walk(client, url: str, params: dict, link_rel: str = "next"):
    """Rows of every page, following the pager's rel=next (or rel=prev) links; and the last response."""
    pages = []
    response = client.get(url, params)
    while True:
        pages.append([p.url for p in response.context["pages"]])
        html = response.content.decode()
        link = re.search(rf'<a href="([^"]+)" rel="{link_rel}">', html)
        if not link:
            return pages, response
        response = client.get(url + unescape(link.group(1)))


@pytest.mark.parametrize("sort", ["depth", "-depth"])
def test_every_row_once_in_order_with_ties_and_nulls(owner_client, tied, sort):
    url = reverse("audits:audit-pages", args=[tied.id])
    pages, last = _walk(owner_client, url, {"sort": sort})
    assert [len(p) for p in pages] == [4, 4, 4, 4, 4, 3]
    assert [u for p in pages for u in p] == _expected(tied, descending=sort.startswith("-"))
    assert "23 pages" in last.content.decode()  # the audit's counter, no COUNT(*)


def test_previous_links_walk_back_over_the_same_pages(owner_client, tied):
    url = reverse("audits:audit-pages", args=[tied.id])
    forward, last = _walk(owner_client, url, {"sort": "-depth"})
    html = last.content.decode()
    prev = unescape(re.search(r'<a href="([^"]+)" rel="prev">', html).group(1))
    backward, first = _walk(owner_client, url + prev, {}, link_rel="prev")
    assert list(reversed(backward)) == forward[:-1]
    assert 'rel="prev"' not in first.content.decode() and 'rel="next"' in first.content.decode()


def test_links_keep_the_filters_and_the_count_is_exact_when_filtered(owner_client, tied):
    url = reverse("audits:audit-pages", args=[tied.id])
    pages, last = _walk(owner_client, url, {"sort": "-depth", "status": "404"})
    assert [u for p in pages for u in p] == _expected(tied, descending=True, status=404)
    assert "8 pages" in last.content.decode()
    link = re.search(r'<a href="([^"]+)" rel="prev">', last.content.decode()).group(1)
    assert "status=404" in link and "sort=-depth" in link


@pytest.mark.parametrize(
    "forged",
    [
        "%%%",
        _unsigned({"t": "url", "k": [10**30, "x"], "b": 0}),  # the unsigned format of before, huge integer
        _unsigned({"t": "depth", "k": ["x", "x"], "b": 0}),  # wrong type: once `depth < 'x'`, a 500
        "x" * 20_000,
    ],
)
def test_a_forged_cursor_sends_to_the_first_page_with_the_same_sort_and_filters(owner_client, tied, forged):
    url = reverse("audits:audit-pages", args=[tied.id])
    response = owner_client.get(url, {"sort": "-depth", "status": "404", "cursor": forged})
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert target.path == url and parse_qs(target.query) == {"sort": ["-depth"], "status": ["404"]}
    first = owner_client.get(response["Location"])
    assert [p.url for p in first.context["pages"]] == _expected(tied, descending=True, status=404)[:PAGE_SIZE]
    assert "no longer valid" in first.content.decode()


def test_a_cursor_of_another_sort_or_audit_or_a_tampered_one_is_refused(owner_client, owner, tied):
    url = reverse("audits:audit-pages", args=[tied.id])
    by_depth = owner_client.get(url, {"sort": "depth"}).context["pages"].next_cursor
    assert owner_client.get(url, {"sort": "depth", "cursor": by_depth}).status_code == 200
    other = finished_audit(ProjectFactory(owner=owner, base_url=SITE + "/"), pages_crawled=23)
    for n in range(23):
        make_page(other, f"/p{n:02d}", depth=n % 5)
    value, signature = by_depth.rsplit(":", 1)
    tampered = _unsigned({**_payload(value), "k": [0, SITE + "/p00"]}) + ":" + signature
    for where, params in (
        (url, {"sort": "url", "cursor": by_depth}),  # another sort
        (reverse("audits:audit-pages", args=[other.id]), {"sort": "depth", "cursor": by_depth}),  # another audit
        (url, {"sort": "depth", "cursor": tampered}),
    ):
        response = owner_client.get(where, params)
        assert response.status_code == 302 and "cursor" not in response["Location"], params


def test_page_detail_pages_inlinks_by_source_url(owner_client, tied, monkeypatch):
    monkeypatch.setattr("audits.selectors.links.LINKS_PER_PAGE", 5)
    target = Page.objects.get(audit=tied, url=SITE + "/p00")
    for page in Page.objects.filter(audit=tied).exclude(id=target.id):
        LinkEdge.objects.create(audit=tied, source_page=page, target_url=target.url, anchor_text="to p00")
    url = reverse("audits:page-detail", args=[tied.id, target.id])
    seen, params = [], {}
    while True:
        response = owner_client.get(url, params)
        inlinks = response.context["inlinks"]
        seen += [link["source_page__url"] for link in inlinks]
        assert inlinks.total == 22 and "22 links from 22 pages" in response.content.decode()
        if not inlinks.has_next:
            break
        params = {"in": inlinks.next_cursor}
    assert seen == [SITE + f"/p{n:02d}" for n in range(1, 23)]


def test_page_detail_link_lists_refuse_a_forged_or_foreign_cursor(owner_client, tied):
    target = Page.objects.get(audit=tied, url=SITE + "/p00")
    url = reverse("audits:page-detail", args=[tied.id, target.id])
    inlinks_cursor = _unsigned({"t": "", "k": ["x"], "b": 0})
    other_page = reverse("audits:page-detail", args=[tied.id, Page.objects.get(audit=tied, url=SITE + "/p01").id])
    for forged in (_unsigned({"t": "", "k": ["x"], "b": 0}), _unsigned({"t": "", "k": [10**30], "b": 0})):
        response = owner_client.get(url, {"out": forged, "keep": "1"})
        assert response.status_code == 302 and parse_qs(urlsplit(response["Location"]).query) == {"keep": ["1"]}
    assert owner_client.get(url, {"in": inlinks_cursor}).status_code == 302
    # a genuine cursor of one page's outlinks is foreign to another page's
    LinkEdge.objects.bulk_create(
        LinkEdge(audit=tied, source_page=target, target_url=f"{SITE}/x{n}", anchor_text="x") for n in range(60)
    )
    genuine = owner_client.get(url).context["outlinks"].next_cursor
    assert genuine and owner_client.get(url, {"out": genuine}).status_code == 200
    assert owner_client.get(other_page, {"out": genuine}).status_code == 302
