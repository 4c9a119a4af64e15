"""The External screen (dashboard.external_views): counts per outcome as filters, the targets with their outcome,
status, final URL and linking pages, keyset pages, one target's linking pages with anchors, the empty states
(checking off, none found), account scoping and the exports."""

import csv
import io
import json

import pytest
from django.urls import reverse

from audits.models import ExternalLink
from tests.dashboard.conftest import finished_audit
from tests.factories import ExternalLinkFactory, ProjectFactory
from tests.support.external_links import external_world

pytestmark = pytest.mark.django_db

Outcome = ExternalLink.Outcome


@pytest.fixture
def world(owner):
    return external_world(finished_audit(ProjectFactory(owner=owner)))


def _screen(client, audit, query=""):
    response = client.get(reverse("audits:audit-external", args=[audit.id]) + query)
    assert response.status_code == 200
    return response


def _shown(response) -> list[str]:
    return [link.url for link in response.context["targets"]]


def test_the_screen_counts_outcomes_and_lists_targets_most_linked_first(owner_client, world):
    audit, links, _pages = world
    response = _screen(owner_client, audit)
    html = response.content.decode()
    assert response.context["tab"] == "external"
    assert _shown(response)[:2] == [links["dead"].url, links["ok"].url]  # two linking pages each, by URL
    assert 'aria-current="page">External</a>' in html  # the tab beside the other audit screens
    assert "Broken (4xx)" in html and "Host not found" in html and "Problems" in html
    assert "Timed out" not in html  # an outcome nobody got is not offered as a filter
    assert "https://moved.example/new" in html and "(2 hops)" in html  # final URL and hops
    detail = reverse("audits:audit-external-link", args=[audit.id, links["dead"].id])
    assert f'href="{detail}"' in html and "2 pages</a>" in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?outcome=client_error", ["dead"]),
        ("?problems=1", ["dead", "down", "nxdomain"]),
        ("?host=down.example", ["down"]),
        ("?q=MOVED", ["moved"]),
        ("?outcome=no-such-outcome", []),
    ],
)
def test_filters(owner_client, world, query, expected):
    audit, links, _pages = world
    response = _screen(owner_client, audit, query + "&sort=url")
    assert _shown(response) == sorted(links[name].url for name in expected)
    if not expected:
        assert "No outcome is called" in response.content.decode()


def test_keyset_pages_and_a_forged_cursor_goes_back_to_the_first(owner_client, world, monkeypatch):
    from audits.selectors import external

    audit, links, _pages = world
    monkeypatch.setattr(external, "EXTERNAL_PER_PAGE", 2)
    first = _screen(owner_client, audit, "?sort=url")
    seen = _shown(first)
    page = first.context["targets"]
    while page.has_next:
        response = _screen(owner_client, audit, f"?sort=url&cursor={page.next_cursor}")
        page = response.context["targets"]
        seen += _shown(response)
    assert seen == sorted(link.url for link in links.values())
    assert first.context["targets"].total == 5
    forged = owner_client.get(reverse("audits:audit-external", args=[audit.id]) + "?sort=url&cursor=forged")
    assert forged.status_code == 302 and "cursor" not in forged["Location"]


def test_one_target_lists_its_linking_pages_with_anchors(owner_client, world):
    audit, links, (a, b) = world
    response = owner_client.get(reverse("audits:audit-external-link", args=[audit.id, links["dead"].id]))
    assert response.status_code == 200
    html = response.content.decode()
    rows = [(e["source_page__url"], e["anchor_text"]) for e in response.context["pages"]]
    assert rows == [(a.url, "Gone"), (b.url, "Gone again")]
    assert response.context["pages"].total == 2
    assert reverse("audits:page-detail", args=[audit.id, a.id]) in html and "Broken (4xx)" in html


def test_empty_states_checking_off_and_none_found(owner_client, owner):
    off = finished_audit(ProjectFactory(owner=owner, check_external_links=False))
    assert "External link checking is off for this project" in _screen(owner_client, off).content.decode()
    on = finished_audit(ProjectFactory(owner=owner, check_external_links=True))
    html = _screen(owner_client, on).content.decode()
    assert "No external links found" in html and "checking is off" not in html
    running = finished_audit(
        ProjectFactory(owner=owner, check_external_links=True), status="running", completed_at=None
    )
    assert "checked once the crawl has ended" in _screen(owner_client, running).content.decode()


def test_another_accounts_audit_and_target_answer_404(client, stranger, world):
    audit, links, _pages = world
    client.force_login(stranger)
    urls = [
        reverse("audits:audit-external", args=[audit.id]),
        reverse("audits:audit-external-link", args=[audit.id, links["dead"].id]),
        reverse("audits:audit-external-export", args=[audit.id, "external-links", "csv"]),
    ]
    assert [client.get(url).status_code for url in urls] == [404, 404, 404]


def test_a_target_of_another_audit_answers_404(owner_client, owner, world):
    audit, _links, _pages = world
    other = ExternalLinkFactory(audit=finished_audit(ProjectFactory(owner=owner)))
    assert owner_client.get(reverse("audits:audit-external-link", args=[audit.id, other.id])).status_code == 404


def test_exports_stream_the_targets_and_their_linking_pages(owner_client, world):
    audit, links, _pages = world

    def body(what, fmt):
        response = owner_client.get(reverse("audits:audit-external-export", args=[audit.id, what, fmt]))
        assert response.status_code == 200 and response.streaming
        assert f"{what}.{fmt}" in response["Content-Disposition"]
        return b"".join(response.streaming_content).decode()

    targets = list(csv.DictReader(io.StringIO(body("external-links", "csv"))))
    assert len(targets) == 5 and {t["outcome"] for t in targets} >= {"client_error", "dns_error"}
    assert len(json.loads(body("external-link-pages", "json"))) == 7
    missing = reverse("audits:audit-external-export", args=[audit.id, "external-links", "xlsx"])
    assert owner_client.get(missing).status_code == 404


def test_a_nul_in_a_filter_is_left_out_and_said(owner_client, world):
    audit, links, _pages = world
    response = _screen(owner_client, audit, "?q=gone%00&host=%00&outcome=%00")
    assert len(_shown(response)) == len(links) and "it was left out" in response.content.decode()


def test_one_targets_linking_pages_are_keyset_paged(owner_client, world, monkeypatch):
    from audits.selectors import external

    audit, links, (a, b) = world
    monkeypatch.setattr(external, "LINKING_PAGES_PER_PAGE", 1)
    url = reverse("audits:audit-external-link", args=[audit.id, links["ok"].id])
    first = owner_client.get(url).context["pages"]
    assert [e["source_page__url"] for e in first] == [a.url] and first.has_next
    second = owner_client.get(url + f"?cursor={first.next_cursor}").context["pages"]
    assert [e["source_page__url"] for e in second] == [b.url] and not second.has_next
