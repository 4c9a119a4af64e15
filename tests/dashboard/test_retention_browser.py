"""A summarised audit in Chromium at a phone's and a laptop's width: the overview's note, the audit list's tag, the
pages tab's empty state and the comparison's stored counts; no sideways scrolling, no serious or critical axe-core
violation. Screenshots go to /tmp/shots/i28-retention/ (SITEWARDEN_SHOTS to change)."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from audits.retention import audits_prune
from tests.dashboard.test_browser import sign_in
from tests.factories import ProjectFactory
from tests.support.browser import chromium_browser, serious_axe_violations
from tests.support.retention import SITE, audit_with_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENS = ((390, 844), (1440, 900))
UI_TIMEOUT_MS = 15_000
SHOTS = Path(os.environ.get("SITEWARDEN_SHOTS", "/tmp/shots/i28-retention"))


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture
def pruned(owner):
    project = ProjectFactory(owner=owner, name="Shop", base_url=SITE + "/", keep_page_rows=1)
    audits = [audit_with_rows(project, days_ago=days, pages=8) for days in (30, 20, 10)]
    audits_prune(project=project)
    for audit in audits:
        audit.refresh_from_db()
    return project, audits


@pytest.mark.parametrize("width, height", SCREENS)
def test_a_summarised_audit_says_so_on_every_screen(browser, live_server, pruned, width, height):
    project, (_old, middle, latest) = pruned
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    sign_in(tab, live_server, "owner")
    SHOTS.mkdir(parents=True, exist_ok=True)
    screens = {
        "overview": (reverse("audits:audit-detail", args=[middle.id]), "#summarised-note"),
        "audit-list": (reverse("audits:project-detail", args=[project.id]), ".tag.summarised"),
        "pages": (reverse("audits:audit-pages", args=[middle.id]), "#summarised-h"),
        "issue-evidence": (reverse("audits:audit-issue-type", args=[middle.id, "missing-h1"]), "#summarised-h"),
        "compare": (reverse("audits:audit-compare", args=[latest.id]) + f"?base={middle.id}", "#summarised-note"),
        "compare-urls": (
            reverse("audits:audit-compare", args=[latest.id]) + f"?base={middle.id}&kind=persisting&type=missing-h1",
            "#listing-gone",
        ),
    }
    for name, (path, marker) in screens.items():
        tab.goto(live_server.url + path, wait_until="networkidle")
        assert tab.locator(marker).first.is_visible(), name
        assert tab.evaluate("document.documentElement.scrollWidth") <= width, name
        assert serious_axe_violations(tab) == [], name
        tab.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    context.close()
