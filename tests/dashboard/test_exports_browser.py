"""The export links in Debian's Chromium at 1440 and 390 px: the overview and the issues screen offer the issues
workbook beside the CSV and JSON, fit without horizontal overflow and pass axe-core; the workbook downloaded
through the link opens with openpyxl. Screenshots go to artifacts/screenshots/."""

import io

import openpyxl
import pytest

from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

WIDTHS = (1440, 390)


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def test_export_links_fit_pass_axe_and_download_the_workbook(browser, live_server):
    owner = UserFactory(username="dora")
    audit = finished_audit(ProjectFactory(owner=owner, name="Walking shop"))
    home, about = make_page(audit, "/"), make_page(audit, "/about")
    make_issue(audit, home, "missing-h1", "warning", h1_count=0)
    make_issue(audit, about, "broken-internal-link", "critical", target_url=SITE + "/gone", status_code=404)
    make_issue(audit, None, "sitemap-missing", "info", sitemaps_tried=[SITE + "/sitemap.xml"])
    base = f"{live_server.url}/audits/{audit.id}"
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True, accept_downloads=True)
        tab = context.new_page()
        sign_in(tab, live_server, "dora")
        for name, path, link in (
            ("overview", "/", "issues workbook (XLSX)"),
            ("issues", "/issues/", "Workbook (XLSX)"),
        ):
            assert tab.goto(base + path).status == 200
            overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"{name} at {width} px overflows by {overflow} px"
            assert serious_axe_violations(tab) == [], (name, width)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(SCREENSHOTS / f"exports-{name}-{width}.png"), full_page=True)
            if width == WIDTHS[0]:
                with tab.expect_download() as download:
                    tab.get_by_role("link", name=link).click()
                assert download.value.suggested_filename.endswith("-issues.xlsx")
                book = openpyxl.load_workbook(io.BytesIO(open(download.value.path(), "rb").read()), read_only=True)
                assert book.sheetnames == ["Overview", "broken-internal-link", "missing-h1", "sitemap-missing"]
        context.close()
