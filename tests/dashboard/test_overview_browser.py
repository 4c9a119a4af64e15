"""The overview in Chromium: the health score and its pages without errors are on the first screen of a phone
(390 x 844) and of a desktop (1440 x 900), its breakdown opens in words without overflow, and a running audit's
live bar is never drawn full."""

import pytest
from django.urls import reverse
from django.utils import timezone

from audits.models import Audit
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.factories import AuditFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENS = ((390, 844), (1440, 900))  # an iPhone 12-14's CSS viewport, and a laptop's
UI_TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_health_score_is_on_the_first_screen(browser, live_server, results, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    sign_in(tab, live_server, "owner")
    tab.goto(live_server.url + reverse("audits:audit-detail", args=[results.audit.id]), wait_until="networkidle")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"overview-first-screen-{width}.png"))
    score = tab.locator("#summary .score .health")
    box = score.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height, box
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    assert serious_axe_violations(tab) == []
    context.close()


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_score_breakdown_opens_in_words_without_overflow(browser, live_server, results, width, height):
    """Pages without errors sits beside the score on the first screen; "How is this calculated?" opens the formula
    in words and the deductions, and the page still fits its width (axe-core: nothing serious)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    sign_in(tab, live_server, "owner")
    tab.goto(live_server.url + reverse("audits:audit-detail", args=[results.audit.id]), wait_until="networkidle")
    box = tab.locator("#error-free").bounding_box()
    assert box is not None and box["y"] + box["height"] <= height, box
    assert not tab.locator("#score-how p").is_visible()
    tab.locator("#score-how summary").click()
    assert "The site starts at 100 points" in tab.locator("#score-how p").first.inner_text()
    assert tab.locator("#score-how table.deductions tbody tr").count() == 4
    assert tab.locator(".category-scores li").count() >= 10
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"overview-score-breakdown-{width}.png"), full_page=True)
    tab.locator("#summary .ov-score").screenshot(path=str(SCREENSHOTS / f"overview-score-card-{width}.png"))
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    assert serious_axe_violations(tab) == []
    context.close()


@pytest.mark.parametrize("width, height", SCREENS)
def test_a_running_crawl_shows_crawled_of_found_with_a_bar_short_of_full(browser, live_server, owner, width, height):
    now = timezone.now()
    audit = AuditFactory(project__owner=owner, started_at=now, last_progress_at=now)
    Audit.objects.filter(id=audit.id).update(current_phase=Audit.Phase.CRAWLING, pages_crawled=94, pages_total=310)
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    sign_in(tab, live_server, "owner")
    tab.goto(live_server.url + reverse("audits:audit-detail", args=[audit.id]), wait_until="load")
    text = tab.locator("#live .progress-text").inner_text()
    assert "94 crawled of 310 found so far" in text and "page budget 1000" in text, text
    value, maximum = tab.evaluate(
        "[document.getElementById('crawl-progress').value, document.getElementById('crawl-progress').max]"
    )
    assert value < maximum
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"live-running-{width}.png"), full_page=True)
    assert tab.evaluate("document.documentElement.scrollWidth") <= width
    context.close()
