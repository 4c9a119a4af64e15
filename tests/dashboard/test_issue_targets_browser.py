"""Broken links grouped by target in Debian's Chromium at 1440 and 390 px: the table fits (no sideways overflow,
long URLs included), a target's linking pages open under it, and axe-core finds no serious or critical violation.
Screenshots go to artifacts/screenshots/ (25-issue-targets-*) and, for review, to SHOTS_DIR when it is set."""

import os
from pathlib import Path

import pytest

from tests.dashboard.conftest import SITE, finished_audit, make_page
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.dashboard.test_pages_browser import WIDTHS
from tests.factories import IssueFactory, ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

LONG_TARGET = "/docs/api/v2/reference/" + "very-long-segment-" * 6 + "missing.html"


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def _broken_link(audit, page, target: str, **details) -> None:
    """One (source page, target) row, as the link check stores it (the target is its dedupe key)."""
    IssueFactory(
        audit=audit, page=page, type="broken-internal-link", severity="critical", dedupe_key=target,
        details={"target_url": SITE + target, "links": 1, **details},
    )  # fmt: skip


def _shoot(tab, name: str) -> None:
    for folder in filter(None, (SCREENSHOTS, os.environ.get("SHOTS_DIR"))):
        Path(folder).mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_targets_table_fits_and_lists_the_linking_pages(browser, live_server):
    owner = UserFactory(username="erin")
    audit = finished_audit(ProjectFactory(owner=owner, name="Docs"), pages_crawled=12)
    pages = [make_page(audit, f"/guide/chapter-{n:02d}") for n in range(12)]
    for n, page in enumerate(pages):
        _broken_link(audit, page, "/old-logo.png", status_code=404, anchor_text="Logo")
        if n % 3 == 0:
            _broken_link(audit, page, LONG_TARGET, status_code=410, links=2, anchor_text="API")
    _broken_link(audit, pages[5], "/down", status_code=None, fetch_error="RemoteDisconnected: Remote end closed")
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        tab = context.new_page()
        sign_in(tab, live_server, "erin")
        tab.goto(f"{live_server.url}/audits/{audit.id}/issues/broken-internal-link/")
        tab.get_by_role("link", name="Grouped by target").click()
        tab.wait_for_load_state()
        table = tab.locator("#evidence-by-target")
        assert table.locator("tbody tr").count() == 3
        first = table.locator("tbody tr").first
        assert SITE + "/old-logo.png" in first.inner_text()
        first.locator("summary").click()
        assert first.locator("li a").count() == 12
        overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"grouped evidence at {width} px overflows by {overflow} px"
        assert not serious_axe_violations(tab)
        _shoot(tab, f"25-issue-targets-{width}")
        context.close()
