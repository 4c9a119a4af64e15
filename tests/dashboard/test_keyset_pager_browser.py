"""The pages grid's keyset pager in Debian's Chromium at 1440 and 390 px: Next and Previous walk the list,
the page never overflows sideways, and axe-core finds no serious or critical violation. Screenshots go to
artifacts/screenshots/ (12h-*) and, for review, to SHOTS_DIR when it is set (e.g. /tmp/shots)."""

import os
from pathlib import Path

import pytest

from tests.dashboard.conftest import SITE, finished_audit, make_page
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.dashboard.test_pages_browser import AXE, WIDTHS
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PAGES = 120  # three screens of 50


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def _shoot(tab, name: str) -> None:
    for folder in filter(None, (SCREENSHOTS, os.environ.get("SHOTS_DIR"))):
        Path(folder).mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)


def test_pager_walks_the_grid_and_fits(browser, live_server):
    owner = UserFactory(username="dana")
    audit = finished_audit(ProjectFactory(owner=owner, name="Big catalogue"), pages_crawled=PAGES)
    for n in range(PAGES):
        make_page(audit, f"/catalogue/item-{n:04d}", depth=1 + n % 4, word_count=100 + n)
    errors = []
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        tab = context.new_page()
        tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        sign_in(tab, live_server, "dana")
        tab.goto(f"{live_server.url}/audits/{audit.id}/pages/?sort=-depth")
        assert f"({PAGES} pages)" in tab.content()
        tab.get_by_role("link", name="Next ›").click()
        tab.wait_for_load_state()
        first_row = tab.locator("table.pages tbody tr td.url a").first.inner_text()
        # Depth 4 (n % 4 == 3) fills 30 rows, depth 3 (n % 4 == 2) the next 20 by URL: row 51 is n = 82.
        assert first_row == f"{SITE}/catalogue/item-0082"
        pager = tab.get_by_role("navigation", name="Pages of the page list")
        assert pager.get_by_role("link", name="‹ Previous").is_visible()
        overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"pager at {width} px overflows by {overflow} px"
        tab.add_script_tag(content=AXE.read_text())
        found = tab.evaluate("async () => (await axe.run(document)).violations.map(v => [v.id, v.impact])")
        assert not [v for v in found if v[1] in ("serious", "critical")], found
        pager.scroll_into_view_if_needed()
        _shoot(tab, f"12h-pages-pager-{width}")
        tab.get_by_role("link", name="‹ Previous").click()
        tab.wait_for_load_state()
        assert tab.locator("table.pages tbody tr td.url a").first.inner_text() == f"{SITE}/catalogue/item-0003"
        assert not errors, errors
        context.close()
