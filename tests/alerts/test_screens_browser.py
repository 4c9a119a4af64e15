"""The alert screens in Chromium at a phone's and a laptop's width: the project's alert settings (rules, channels,
a failed delivery), the project screen's failing deliveries, the notifications list with the unread count in the
header; no sideways scrolling, no serious or critical axe-core violation. Screenshots under /tmp/shots/i28-alerts/."""

from pathlib import Path

import pytest
from django.urls import reverse

from alerts.models import AlertChannel
from alerts.services import alert_defaults_create
from tests.alerts.conftest import completed
from tests.dashboard.test_browser import sign_in
from tests.factories import AlertDeliveryFactory, NotificationFactory, ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCREENS = ((390, 844), (1440, 900))
UI_TIMEOUT_MS = 15_000
SHOTS = Path("/tmp/shots/i28-alerts")


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture
def project():
    owner = UserFactory(username="owner", email="owner@shop.test")
    project = ProjectFactory(owner=owner, name="Shop", base_url="https://shop.test/")
    alert_defaults_create(project=project)
    audit = completed(project, minutes_ago=5, pages_crawled=120, health_score=81)
    slack = AlertChannel.objects.create(
        project=project, kind="slack", target="https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX"
    )
    AlertDeliveryFactory(channel=project.alert_channels.get(kind="email"), audit=audit, status="succeeded", attempts=1)
    AlertDeliveryFactory(
        channel=slack, audit=audit, status="failed", attempts=6,
        last_error="HTTP 500: upstream connect error or disconnect/reset before headers",
    )  # fmt: skip
    titles = (
        "Shop: 3 indexable pages became non-indexable (and 2 more)",
        "Shop: The health score dropped 6 points, from 87 to 81",
    )
    for title in titles:
        NotificationFactory(
            user=owner, project=project, audit=completed(project, minutes_ago=10), title=title,
            body="3 indexable pages became non-indexable\n1 page became broken (4xx or 5xx)\n"
                 "robots.txt now blocks 12 URLs it allowed",
        )  # fmt: skip
    return project


@pytest.mark.parametrize("width, height", SCREENS)
def test_alert_screens(browser, live_server, project, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    sign_in(tab, live_server, "owner")
    SHOTS.mkdir(parents=True, exist_ok=True)
    screens = {
        "alerts": reverse("audits:project-alerts", args=[project.id]),
        "project": reverse("audits:project-detail", args=[project.id]),
        "notifications": reverse("audits:notifications"),
    }
    for name, path in screens.items():
        tab.goto(live_server.url + path, wait_until="networkidle")
        tab.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        assert tab.evaluate("document.documentElement.scrollWidth") <= width, name
        assert serious_axe_violations(tab) == [], name
        assert tab.locator("#unread-count").inner_text().startswith("2")
    tab.goto(live_server.url + screens["project"])
    assert "HTTP 500: upstream connect error" in tab.locator("#alert-failures").inner_text()
    context.close()
