"""The audit page says what the crawl skipped: one line per trap rule or cap and URL shape, the count and the
setting that raises it, from the issues finalize's site checks made. Screenshot at desktop and phone widths."""

import os
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from audits.checks.site import run_site_checks
from audits.selectors.audits import audit_urls_skipped
from scratchpad.models import Frontier, SkippedURL
from scratchpad.services import frontier_purge
from tests.dashboard.conftest import SITE, finished_audit, make_page
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser

SHOTS_DIR = Path(os.environ.get("SITEWARDEN_SHOTS_DIR", "/tmp/shots"))
OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def _audit_with_skips(owner):
    """A finished audit whose crawl skipped URLs, through the real finalize path: skipped-URL records, the site
    checks that turn them into issues, the purge that drops the records."""
    audit = finished_audit(ProjectFactory(owner=owner, name="Shop", base_url=SITE + "/"))
    make_page(audit, "/")
    Frontier.objects.create(audit=audit, url=SITE + "/", depth=0, source="start", state="done")
    rows = [(f"/events/{2030 + i}-01", "calendar", "/events/{date}") for i in range(3)]
    rows += [("/x/x/x", "repeating-path", "/x/x/x")]
    rows += [
        (f"/very/long/{'segment/' * 20}{i}", "path-too-deep", "/very/long/" + "segment/" * 20 + "{n}") for i in range(2)
    ]
    SkippedURL.objects.bulk_create(
        [SkippedURL(audit=audit, url=SITE + path, rule=rule, pattern=pattern) for path, rule, pattern in rows]
    )
    run_site_checks(audit)
    frontier_purge(audit_id=audit.id)
    return audit


@pytest.mark.django_db
def test_the_audit_page_names_each_rule_its_count_and_the_setting(client):
    owner = UserFactory(username="owner")
    audit = _audit_with_skips(owner)
    client.force_login(owner)
    html = client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert 'id="urls-skipped"' in html
    assert "3 URLs</strong> skipped by\n            <code>calendar</code>" in html
    assert "<code>calendar_years_ahead</code>" in html and "<code>max_path_segments</code>" in html
    listed = audit_urls_skipped(audit=audit)
    assert [(s["rule"], s["urls_skipped"]) for s in listed] == [
        ("calendar", 3),
        ("path-too-deep", 2),
        ("repeating-path", 1),
    ]
    assert listed[0]["examples"] == [f"{SITE}/events/{2030 + i}-01" for i in range(3)]


@pytest.mark.django_db
def test_an_audit_that_skipped_nothing_shows_no_notice(client):
    owner = UserFactory(username="owner")
    audit = finished_audit(ProjectFactory(owner=owner, base_url=SITE + "/"))
    client.force_login(owner)
    html = client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert 'id="urls-skipped"' not in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_notice_fits_a_phone_screenshots(live_server):
    SHOTS_DIR.mkdir(parents=True, exist_ok=True)
    owner = UserFactory(username="shots")
    audit = _audit_with_skips(owner)
    client = Client()
    client.force_login(owner)
    session = client.cookies["sessionid"].value
    url = live_server.url + reverse("audits:audit-detail", args=[audit.id])
    with chromium_browser() as browser:
        for width in (1440, 390):
            context = browser.new_context(viewport={"width": width, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
            tab = context.new_page()
            tab.goto(url, wait_until="networkidle")
            notice = tab.locator("#urls-skipped")
            assert notice.is_visible()
            assert tab.evaluate(OVERFLOW) <= 0, f"horizontal overflow at {width} px"
            tab.screenshot(path=str(SHOTS_DIR / f"h2-urls-skipped-{width}.png"), full_page=True)
            context.close()


@pytest.mark.django_db
def test_the_page_budget_leaving_urls_uncrawled_is_said_too(client):
    owner = UserFactory(username="owner")
    audit = finished_audit(ProjectFactory(owner=owner, base_url=SITE + "/"))
    make_page(audit, "/")
    Frontier.objects.create(audit=audit, url=SITE + "/", depth=0, source="start", state="done")
    for i in range(4):
        Frontier.objects.create(audit=audit, url=f"{SITE}/left/{i}", depth=1, source="link")
    run_site_checks(audit)
    frontier_purge(audit_id=audit.id)
    [budget] = audit_urls_skipped(audit=audit)
    assert budget["rule"] == "max-pages" and budget["urls_skipped"] == 4 and budget["setting"] == "max_pages"
    assert budget["message"].endswith("4 URLs not crawled (raise max_pages)")
    client.force_login(owner)
    html = client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert 'id="urls-skipped"' in html and "<code>max_pages</code>" in html
