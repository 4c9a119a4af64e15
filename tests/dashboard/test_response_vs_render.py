"""Page detail and the API show a rendered page's values as served beside the rendered ones (Issue 27 render)."""

import re

from django.urls import reverse

from accounts.tokens import token_create
from tests.api.conftest import bearer_client
from tests.dashboard.conftest import SITE, finished_audit, make_page
from tests.factories import ProjectFactory

RAW = {
    "title": "Served title",
    "meta_description": "Served description.",
    "canonical": SITE + "/spa",
    "meta_robots": "index, follow",
    "h1": "Served heading",
    "h1_count": 1,
    "word_count": 12,
    "internal_links": 3,
    "external_links": 0,
    "links_only_rendered": 2,
    "links_only_rendered_examples": [SITE + "/x", SITE + "/y"],
    "links_only_raw": 0,
}


def _rendered_page(audit):
    return make_page(
        audit,
        "/spa",
        title="Served title",
        meta_description="Served description.",
        canonical_url=SITE + "/elsewhere",
        meta_robots="noindex",
        h1="Served heading",
        h1_count=1,
        word_count=412,
        internal_links=5,
        external_links=0,
        raw_values=RAW,
    )


def _rows(html: str) -> dict[str, str]:
    """The Response vs render table's rows: label cell (with its "changed" mark) -> the row's whole markup."""
    table = html.split('id="response-vs-render"', 1)[1].split("</table>", 1)[0]
    rows = table.split("<tr")[2:]  # past the head row
    return {re.sub(r"<[^>]+>", "", re.search(r'<th scope="row">(.*?)</th>', row).group(1)).strip(): row for row in rows}


def test_page_detail_shows_both_columns_and_marks_what_javascript_changed(owner_client, owner):
    audit = finished_audit(ProjectFactory(owner=owner))
    page = _rendered_page(audit)
    html = owner_client.get(reverse("audits:page-detail", args=[audit.id, page.id])).content.decode()
    assert "Response vs render" in html
    rows = _rows(html)
    assert (
        rows["Canonical URL changed"].count(SITE + "/spa") == 1 and SITE + "/elsewhere" in rows["Canonical URL changed"]
    )
    assert "noindex" in rows["Meta robots changed"] and "index, follow" in rows["Meta robots changed"]
    assert "Words changed" in rows and ">12<" in rows["Words changed"] and ">412<" in rows["Words changed"]
    assert "Title" in rows and "Served title" in rows["Title"]  # the same on both sides: not marked
    assert "First H1" in rows and "Link targets the other lacks changed" in rows
    assert "Raw values" not in html  # shown in its own section, not again under "Everything extracted"


def test_a_page_not_rendered_has_no_such_section(owner_client, owner):
    audit = finished_audit(ProjectFactory(owner=owner))
    page = make_page(audit, "/plain")
    html = owner_client.get(reverse("audits:page-detail", args=[audit.id, page.id])).content.decode()
    assert "Response vs render" not in html


def test_api_page_detail_exposes_raw_values(owner):
    audit = finished_audit(ProjectFactory(owner=owner))
    rendered, plain = _rendered_page(audit), make_page(audit, "/plain")
    api = bearer_client(token_create(user=owner, name="t")[1])
    url = "/api/v1/audits/{}/pages/{}/"
    body = api.get(url.format(audit.id, rendered.id)).json()
    assert body["raw_values"] == RAW and body["canonical_url"] == SITE + "/elsewhere"
    assert api.get(url.format(audit.id, plain.id)).json()["raw_values"] is None
