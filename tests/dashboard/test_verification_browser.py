"""Fix verification's screens in Debian's Chromium at 1440 and 390 px: the issue screen with its "Verify fix" button
and its "1 of 3 fixed" line, the result screen with each URL's outcome. Nothing overflows sideways and axe-core
finds no serious or critical violation. Screenshots go to artifacts/screenshots/ (28-verification-*) and, for
review, to SHOTS_DIR when it is set."""

import os
from pathlib import Path

import pytest

from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.dashboard.test_pages_browser import WIDTHS
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations
from tests.support.verification import verified_pair

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def _shoot(tab, name: str) -> None:
    for folder in filter(None, (SCREENSHOTS, os.environ.get("SHOTS_DIR"))):
        Path(folder).mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_the_issue_screen_and_the_result_screen_fit_and_read(browser, live_server):
    owner = UserFactory(username="vera")
    original, verification = verified_pair(ProjectFactory(owner=owner, name="Shop", base_url="http://127.0.0.1:1/"))
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        tab = context.new_page()
        sign_in(tab, live_server, "vera")
        screens = {
            "issue": f"/audits/{original.id}/issues/missing-h1/",
            "result": f"/audits/{verification.id}/verification/",
            "issues": f"/audits/{original.id}/issues/",
        }
        for name, path in screens.items():
            tab.goto(live_server.url + path)
            tab.wait_for_load_state()
            if name != "result":
                assert "1 of 3 fixed on" in tab.locator("[data-verified='missing-h1']").first.inner_text()
            else:
                assert tab.locator("#verification-urls tbody tr").count() == 3
            overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"{name} at {width} px overflows by {overflow} px"
            assert not serious_axe_violations(tab), name
            _shoot(tab, f"28-verification-{name}-{width}")
        context.close()
