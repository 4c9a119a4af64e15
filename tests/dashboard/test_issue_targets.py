"""A link type's evidence grouped by target URL (dashboard issue screen, `?view=targets`), on a real crawl of a
small site on 127.0.0.1 where several pages link to the same missing pages."""

import lxml.html
import pytest
from django.urls import reverse

from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from dashboard import selectors
from tests.factories import ProjectFactory, UserFactory
from tests.support.sites import serve_routes

pytestmark = pytest.mark.django_db(transaction=True)  # the inline pipeline commits from its own connections


def _page(title: str, links: list[str]) -> str:
    anchors = " ".join(f'<a href="{href}">{title} to {href}</a>' for href in links)
    return f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>{anchors}</body></html>"


@pytest.fixture
def crawled(client):
    owner = UserFactory(username="owner")
    client.force_login(owner)
    with serve_routes() as site:
        site.add("/", _page("Home", ["/a", "/b", "/c", "/d"]))
        for name in ("a", "b", "c"):
            site.add(f"/{name}", _page(name.upper(), ["/", "/gone"] + (["/gone-too"] if name == "a" else [])))
        site.add("/d", _page("D", ["/", "/gone-too", "/gone-too#again"]))  # two links on one page, one pair
        project = ProjectFactory(owner=owner, base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=50, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    return audit, site.url


def _rows(response) -> list[dict]:
    table = lxml.html.fromstring(response.content).get_element_by_id("evidence-by-target")
    rows = []
    for tr in table.xpath("./tbody/tr"):
        cell = {td.get("data-label"): td for td in tr.xpath("./td")}
        rows.append(
            {
                "target": cell["Target"].text_content().strip(),
                "status": cell["Target status"].text_content().strip(),
                "pages": int(cell["Linking pages"].text_content()),
                "links": cell["Links"].text_content().strip(),
                "sources": [a.text_content() for a in cell["Pages linking to it"].xpath(".//li/a")],
                "more": " ".join(p.text_content() for p in cell["Pages linking to it"].xpath(".//p")),
            }
        )
    return rows


def test_broken_links_grouped_by_target_list_each_target_once_with_its_pages(crawled, client, monkeypatch):
    audit, base = crawled
    url = reverse("audits:audit-issue-type", args=[audit.id, "broken-internal-link"])
    flat = client.get(url)
    assert flat.status_code == 200 and b"Grouped by target" in flat.content
    assert b"evidence-by-target" not in flat.content  # the per-link table stays the default

    rows = _rows(client.get(url, {"view": "targets"}))
    assert rows == [
        {
            "target": f"{base}/gone",
            "status": "404",
            "pages": 3,
            "links": "3",
            "sources": [f"{base}/a", f"{base}/b", f"{base}/c"],
            "more": "",
        },
        {
            "target": f"{base}/gone-too",
            "status": "404",
            "pages": 2,
            "links": "3",
            "sources": [f"{base}/a", f"{base}/d"],
            "more": "",
        },
    ]

    # A target with more linking pages than are listed says how many more, and where they all are.
    monkeypatch.setattr(selectors, "TARGET_SOURCES_SHOWN", 2)
    first = _rows(client.get(url, {"view": "targets"}))[0]
    assert first["sources"] == [f"{base}/a", f"{base}/b"] and first["pages"] == 3
    assert "and 1 more" in first["more"]


def test_a_type_whose_rows_are_not_links_has_no_grouped_view(crawled, client):
    audit, _ = crawled
    response = client.get(reverse("audits:audit-issue-type", args=[audit.id, "missing-meta-description"]))
    assert response.status_code == 200 and b"Grouped by target" not in response.content
    grouped = client.get(
        reverse("audits:audit-issue-type", args=[audit.id, "missing-meta-description"]), {"view": "targets"}
    )
    assert b"evidence-by-target" not in grouped.content
