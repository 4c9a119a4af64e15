"""The Changes screen (dashboard.change_views): counts per field as filters, the rows (URL to its page, field in
words, before → after), filters by field, direction and segment, keyset pages, the baseline named and another one
picked, the empty states (first audit, no baseline, being computed, nothing changed, running, not completed),
account scoping and the exports."""

import csv
import io
import json
import os
import uuid
from pathlib import Path

import pytest
from django.urls import reverse

from audits import services
from audits.models import PageChange
from tests.dashboard.conftest import finished_audit
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.factories import PageChangeFactory, ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations
from tests.support.page_changes import CHANGES, LONG_TITLE, changes_world

pytestmark = pytest.mark.django_db

Field = PageChange.Field


@pytest.fixture
def world(owner):
    project = ProjectFactory(owner=owner)
    baseline = finished_audit(project, days_ago=7)
    audit = finished_audit(project, pages_crawled=4)
    rows, pages, old = changes_world(audit, baseline)
    return audit, baseline, rows, pages, old


def _screen(client, audit, query="", status=200):
    response = client.get(reverse("audits:audit-changes", args=[audit.id]) + query)
    assert response.status_code == status, response.content[:500]
    return response


def _shown(response, rows) -> list[str]:
    names = {row.id: name for name, row in rows.items()}
    return [names[row.id] for row in response.context["changes"]]


def test_the_screen_names_the_baseline_counts_fields_and_lists_each_change(owner_client, world):
    audit, baseline, rows, pages, old = world
    response = _screen(owner_client, audit)
    html = response.content.decode()
    assert response.context["tab"] == "changes" and 'aria-current="page">Changes</a>' in html
    assert sorted(_shown(response, rows)) == sorted(CHANGES)
    assert "Measured against the audit of" in html and reverse("audits:audit-detail", args=[baseline.id]) in html
    assert f'value="{baseline.id}" selected' in html  # the picker shows the current baseline
    assert f'<span class="n">{len(CHANGES)}</span> All fields' in html and '<span class="n">1</span> Title' in html
    assert '<span class="n">1</span> Sitemap</a>' in html and "error: HTTP 404" in html  # a sitemap now failing
    assert "H1</a>" not in html  # a field that did not change is not offered as a filter
    assert LONG_TITLE in html and "First post" in html  # before and after, whole
    assert "became non-indexable" in html and "URL gone" in html and "new URL" in html
    assert reverse("audits:page-detail", args=[audit.id, pages["/blog/a"].id]) in html
    assert reverse("audits:page-detail", args=[baseline.id, old["/blog/gone"].id]) in html  # removed: the baseline's
    assert "(the baseline&#x27;s page)" in html or "(the baseline's page)" in html
    assert "Disallow: /private/" in html and 'class="after code-value"' in html
    export = reverse("audits:audit-changes-export", args=[audit.id, "csv"])
    assert f'href="{export}"' in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?field=title", ["title"]),
        ("?direction=added", ["description", "added", "robots"]),
        ("?field=indexability&direction=down", ["noindex"]),
        ("?segment=/blog/", ["title", "description", "noindex", "removed"]),
        ("?segment=/blog/&field=removed", ["removed"]),
        ("?field=sitemap", ["sitemap"]),
        ("?field=no-such-field", []),
        ("?direction=sideways", []),
    ],
)
def test_filters(owner_client, world, query, expected):
    audit, _baseline, rows, _pages, _old = world
    response = _screen(owner_client, audit, query)
    assert sorted(_shown(response, rows)) == sorted(expected)
    html = response.content.decode()
    if "no-such" in query:
        assert "No field is called" in html
    if "sideways" in query:
        assert "No direction is called" in html


def test_a_segment_counts_its_own_changes_and_an_unknown_one_is_said(owner_client, world):
    audit, _baseline, _rows, _pages, _old = world
    response = _screen(owner_client, audit, "?segment=/blog/")
    assert response.context["counts"].total == 4 and "4 changes in /blog/" in response.content.decode()
    unknown = owner_client.get(reverse("audits:audit-changes", args=[audit.id]) + "?segment=/nope/")
    assert unknown.status_code == 400 and "Unknown segment" in unknown.content.decode()


def test_keyset_pages_and_a_forged_cursor_goes_back_to_the_first(owner_client, world, monkeypatch):
    from audits.selectors import changes

    audit, _baseline, rows, _pages, _old = world
    monkeypatch.setattr(changes, "CHANGES_PER_PAGE", 3)
    first = _screen(owner_client, audit)
    seen, page = _shown(first, rows), first.context["changes"]
    while page.has_next:
        response = _screen(owner_client, audit, f"?cursor={page.next_cursor}")
        page = response.context["changes"]
        seen += _shown(response, rows)
    assert seen == sorted(CHANGES, key=lambda n: (rows[n].url, str(rows[n].id)))
    assert first.context["changes"].total == len(CHANGES)
    forged = owner_client.get(reverse("audits:audit-changes", args=[audit.id]) + "?field=title&cursor=forged")
    assert forged.status_code == 302 and "cursor" not in forged["Location"] and "field=title" in forged["Location"]


def test_empty_states_say_why(owner_client, owner):
    project = ProjectFactory(owner=owner)
    first = finished_audit(project, days_ago=9)
    assert "This is the first completed audit of the project" in _screen(owner_client, first).content.decode()
    older = finished_audit(project, days_ago=5)  # finished before change detection: no baseline
    html = _screen(owner_client, older).content.decode()
    assert "No baseline." in html and "Choose a baseline" in html
    unchanged = finished_audit(project, days_ago=1, baseline=first, stats={"changes": {"baseline": str(first.id)}})
    html = _screen(owner_client, unchanged).content.decode()
    assert "Nothing changed." in html and "Measured against the audit of" in html
    pending = finished_audit(project, baseline=older, stats={"changes": {"baseline": str(first.id)}})
    assert "are being computed" in _screen(owner_client, pending).content.decode()
    running = finished_audit(project, status="running", completed_at=None)
    html = _screen(owner_client, running).content.decode()
    assert "Changes are measured once the audit completes" in html and "Use as baseline" not in html
    failed = finished_audit(project, status="failed")
    assert "did not complete" in _screen(owner_client, failed).content.decode()


def _baseline_service():
    if not hasattr(services, "audit_baseline_set"):
        pytest.skip("audits.services.audit_baseline_set comes with the changes stage (branch i28-changes)")


def test_picking_another_baseline_has_the_changes_measured_again(owner_client, world):
    _baseline_service()
    audit, baseline, _rows, _pages, _old = world
    other = finished_audit(audit.project, days_ago=3)
    url = reverse("audits:audit-changes-baseline", args=[audit.id])
    response = owner_client.post(url, {"baseline": str(other.id)}, follow=True)
    html = response.content.decode()
    assert "The changes are being measured again, against the audit of" in html
    audit.refresh_from_db()
    assert audit.baseline_id == other.id
    assert "are being computed" in html and f'value="{other.id}" selected' in html  # until the task has run
    assert owner_client.get(url).status_code == 405


@pytest.mark.parametrize("chosen", ["", "self", "not-a-uuid", "elsewhere", "running"])
def test_a_refused_baseline_is_said_and_changes_nothing(owner_client, world, chosen):
    audit, baseline, _rows, _pages, _old = world
    if chosen:
        _baseline_service()
    values = {
        "self": str(audit.id),
        "elsewhere": str(finished_audit(ProjectFactory()).id),
        "running": str(finished_audit(audit.project, status="running", completed_at=None).id),
    }
    url = reverse("audits:audit-changes-baseline", args=[audit.id])
    html = owner_client.post(url, {"baseline": values.get(chosen, chosen)}, follow=True).content.decode()
    assert "message-error" in html
    assert "being measured again" not in html
    audit.refresh_from_db()
    assert audit.baseline_id == baseline.id


def test_another_accounts_audit_answers_404(client, stranger, world):
    audit, baseline, _rows, _pages, _old = world
    client.force_login(stranger)
    urls = [
        reverse("audits:audit-changes", args=[audit.id]),
        reverse("audits:audit-changes-export", args=[audit.id, "csv"]),
    ]
    assert [client.get(url).status_code for url in urls] == [404, 404]
    post = client.post(reverse("audits:audit-changes-baseline", args=[audit.id]), {"baseline": str(baseline.id)})
    assert post.status_code == 404


def test_exports_stream_the_filtered_changes(owner_client, world):
    audit, _baseline, rows, _pages, _old = world

    def body(fmt, query=""):
        response = owner_client.get(reverse("audits:audit-changes-export", args=[audit.id, fmt]) + query)
        assert response.status_code == 200 and response.streaming
        return response, b"".join(response.streaming_content).decode()

    response, text = body("csv")
    every = list(csv.DictReader(io.StringIO(text)))
    assert list(every[0]) == ["url", "field", "direction", "before", "after"] and len(every) == len(CHANGES)
    assert {(r["field"], r["direction"]) for r in every} >= {("indexability", "down"), ("removed", "removed")}
    assert "changes.csv" in response["Content-Disposition"]
    response, text = body("json", "?field=title&segment=/blog/")
    assert json.loads(text) == [
        {
            "url": rows["title"].url,
            "field": "title",
            "direction": "changed",
            "before": "First post",
            "after": LONG_TITLE,
        }
    ]
    assert "changes-title-segment-blog.json" in response["Content-Disposition"]
    assert owner_client.get(reverse("audits:audit-changes-export", args=[audit.id, "xlsx"])).status_code == 404


def test_a_nul_in_a_filter_is_left_out_and_said(owner_client, world):
    audit, _baseline, rows, _pages, _old = world
    response = _screen(owner_client, audit, "?field=title%00&direction=%00")
    assert len(_shown(response, rows)) == len(CHANGES) and "it was left out" in response.content.decode()


def test_the_comparison_with_the_baseline_counts_changes_per_field_and_links_the_changes_view(owner_client, world):
    audit, baseline, _rows, _pages, _old = world
    compare = reverse("audits:audit-compare", args=[audit.id])
    html = owner_client.get(compare + f"?base={baseline.id}").content.decode()
    changes = reverse("audits:audit-changes", args=[audit.id])
    assert 'id="compare-changes"' in html and f'href="{changes}?field=title"' in html
    assert '<span class="n">1</span> Indexability' in html
    in_blog = owner_client.get(compare + f"?base={baseline.id}&segment=/blog/").content.decode()
    assert f'href="{changes}?field=removed&amp;segment=%2Fblog%2F"' in in_blog
    assert "Canonical</a>" not in in_blog  # /docs/x is not in /blog/
    other = finished_audit(audit.project, days_ago=3)
    html = owner_client.get(compare + f"?base={other.id}").content.decode()
    assert 'id="compare-changes"' not in html and 'id="compare-changes-elsewhere"' in html


LONG_ROBOTS_LINE = "Disallow: /search/results/" + "filter-by-colour-and-size-and-price/" * 4 + "*?sessionid="


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_the_screen_reads_well_at_1440_and_390_px(live_server):
    """In Chromium: no sideways overflow (long titles, URLs and robots.txt lines wrap), the counts filter, and axe-core
    finds no serious or critical violation. Screenshots: artifacts/screenshots/28-changes-* and SHOTS_DIR."""
    owner = UserFactory(username="rosa")
    project = ProjectFactory(owner=owner, name="Shop")
    baseline = finished_audit(project, days_ago=7)
    audit = finished_audit(project, pages_crawled=4)
    rows, _pages, _old = changes_world(audit, baseline, store_counts=False)
    PageChangeFactory(
        audit=audit, baseline=baseline, url=rows["robots"].url, field=Field.ROBOTS_TXT,
        direction=PageChange.Direction.REMOVED, before=LONG_ROBOTS_LINE, after="",
        id=uuid.uuid4(),
    )  # fmt: skip
    long_url = audit.start_url + "catalogue/" + "a-very-long-product-category-name/" * 4 + "item"
    PageChangeFactory(audit=audit, baseline=baseline, url=long_url, field=Field.STATUS, before="200", after="404")
    first = finished_audit(ProjectFactory(owner=owner, name="New site"))
    with chromium_browser() as browser:
        for width in (1440, 390):
            context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
            tab = context.new_page()
            sign_in(tab, live_server, "rosa")
            tab.goto(f"{live_server.url}/audits/{audit.id}/changes/")
            assert tab.locator("#change-table tbody tr").count() == len(CHANGES) + 2
            overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"the Changes screen at {width} px overflows by {overflow} px"
            assert not serious_axe_violations(tab)
            _shoot(tab, f"28-changes-{width}")
            tab.get_by_role("link", name="Indexability").click()
            tab.wait_for_load_state()
            assert tab.locator("#change-table tbody tr").count() == 1
            assert "became non-indexable" in tab.locator("#change-table").inner_text()
            tab.goto(f"{live_server.url}/audits/{first.id}/changes/")
            assert "first completed audit" in tab.locator("#changes-empty").inner_text()
            assert not serious_axe_violations(tab)
            _shoot(tab, f"28-changes-first-{width}")
            context.close()


def _shoot(tab, name: str) -> None:
    for folder in filter(None, (SCREENSHOTS, os.environ.get("SHOTS_DIR"))):
        Path(folder).mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.django_db(transaction=True)
def test_a_site_in_two_versions_the_screen_api_and_export_list_exactly_its_changes(client, owner):
    """Two real audits of a site served in two versions (tests.support.sites.versions, the changes stage's): the
    Changes screen, the API and the CSV export list exactly the changes of version 2 against version 1, and an
    unchanged rerun says nothing changed."""
    versions = pytest.importorskip(
        "tests.support.sites.versions", reason="the two-version site comes with the changes stage (i28-changes)"
    )
    from rest_framework.test import APIClient

    from accounts.tokens import token_create

    with versions.serve_versions() as site:
        project = ProjectFactory(owner=owner, base_url=site.url + "/")
        first = versions.audit_versions(site, project=project)
        site.version = 2
        second = versions.audit_versions(site, project=project)
        rerun = versions.audit_versions(site, project=project)
    expected = {(url, field, direction, before, after) for field, url, direction, before, after in
                versions.expected_changes(site)}  # fmt: skip
    client.force_login(owner)

    screen = client.get(reverse("audits:audit-changes", args=[second.id]))
    shown = {(r.url, r.field, r.direction, r.before, r.after) for r in screen.context["changes"]}
    assert shown == expected and screen.context["counts"].total == len(expected)
    assert screen.context["baseline"] == first and "Measured against the audit of" in screen.content.decode()

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=owner, name='ci')[1]}")
    body = api.get(f"/api/v1/audits/{second.id}/changes/", {"page_size": 500}).json()
    assert {(r["url"], r["field"], r["direction"], r["before"], r["after"]) for r in body["results"]} == expected
    assert body["count"] == len(expected)

    export = client.get(reverse("audits:audit-changes-export", args=[second.id, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert {(r["url"], r["field"], r["direction"], r["before"], r["after"]) for r in rows} == expected

    unchanged = client.get(reverse("audits:audit-changes", args=[rerun.id]))
    assert unchanged.context["state"] == "unchanged" and "Nothing changed." in unchanged.content.decode()
    assert api.get(f"/api/v1/audits/{rerun.id}/changes/").json()["count"] == 0
    first_screen = client.get(reverse("audits:audit-changes", args=[first.id])).content.decode()
    assert "This is the first completed audit of the project" in first_screen


def test_a_summarised_audit_keeps_its_changes_and_offers_no_other_baseline(owner_client, world):
    from django.utils import timezone

    audit, _baseline, rows, _pages, _old = world
    audit.summarised_at = timezone.now()
    audit.save(update_fields=["summarised_at"])
    response = _screen(owner_client, audit)
    html = response.content.decode()
    assert len(response.context["changes"]) == len(rows) and 'id="changes-summarised"' in html
    assert "Use as baseline" not in html
