"""Segments in Chromium at a phone's and a laptop's width: the picker above the audit's tabs reads the overview for
/blog/ (and the tabs keep it), and the project's segments screen shows a refusal next to its field; no sideways
scrolling, no serious or critical axe-core violation, the health score still on the first screen."""

import pytest
from django.urls import reverse

from audits.services import segment_create
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.factories import ProjectFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENS = ((390, 844), (1440, 900))
UI_TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture
def audit(owner):
    project = ProjectFactory(owner=owner, name="Shop", base_url=SITE + "/")
    audit = finished_audit(project, pages_crawled=5)
    pages = {path: make_page(audit, path) for path in ("/", "/blog/a", "/blog/b", "/docs/guide", "/docs/api")}
    make_issue(audit, pages["/blog/a"], "missing-h1", "warning")
    make_issue(audit, pages["/blog/b"], "broken-page", "critical", status_code=404)
    make_issue(audit, pages["/docs/api"], "missing-meta-description", "warning")
    return audit


def _tab(browser, live_server, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    sign_in(tab, live_server, "owner")
    return context, tab


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_picker_reads_the_overview_for_a_segment(browser, live_server, audit, width, height):
    context, tab = _tab(browser, live_server, width, height)
    tab.goto(live_server.url + reverse("audits:audit-detail", args=[audit.id]), wait_until="networkidle")
    tab.select_option("#segment-select", "/blog/")
    tab.click("#segment-picker button[type=submit]")
    tab.wait_for_load_state("networkidle")
    assert "segment=%2Fblog%2F" in tab.url
    assert tab.eval_on_selector("#segment-select", "e => e.value") == "/blog/"
    assert tab.locator("#segments-table tr[aria-current=true]").get_attribute("data-segment") == "/blog/"
    titles = tab.locator("#top-issues .top-title").all_inner_texts()
    assert "Missing meta description" not in " ".join(titles) and len(titles) == 2, titles
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"segments-overview-{width}.png"), full_page=True)
    score = tab.locator("#summary .score").bounding_box()
    assert score is not None and score["y"] + score["height"] <= height, score
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    assert serious_axe_violations(tab) == []
    tab.click("nav.tabs >> text=Issues")
    tab.wait_for_load_state("networkidle")
    assert "segment=%2Fblog%2F" in tab.url
    assert tab.locator("#issues-table tbody tr").count() == 2
    tab.screenshot(path=str(SCREENSHOTS / f"segments-issues-{width}.png"), full_page=True)
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    context.close()


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_segments_screen_shows_a_refusal_by_its_field(browser, live_server, audit, width, height):
    segment_create(project=audit.project, name="Documentation", kind="prefix", value="/docs/")
    context, tab = _tab(browser, live_server, width, height)
    tab.goto(live_server.url + reverse("audits:project-segments", args=[audit.project.id]), wait_until="networkidle")
    tab.fill("#id_name", "Articles")
    tab.check("#id_kind_1")  # regular expression: its field shows, the prefix's hides
    assert tab.locator("#id_pattern").is_visible() and not tab.locator("#id_prefix").is_visible()
    tab.fill("#id_pattern", "^/blog/(?=x)")
    tab.click("button[value=save]")
    tab.wait_for_load_state("networkidle")
    assert "lookahead" in tab.locator("#id_pattern_error").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"segments-screen-{width}.png"), full_page=True)
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    assert serious_axe_violations(tab) == []
    context.close()
