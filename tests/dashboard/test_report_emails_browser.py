"""The project screen's schedule with its report recipients and the last report e-mails (sent, retrying, given up)
in Debian's Chromium at 1440 and 390 px: nothing overflows sideways, axe-core finds no serious or critical
violation. Screenshots go to artifacts/screenshots/ (28-report-emails-*) and to SHOTS_DIR when it is set."""

import os
from pathlib import Path

import pytest
from django.utils import timezone

from audits.models import Audit, ReportEmail, Schedule
from audits.services import schedule_report_recipients_set, schedule_set
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.dashboard.test_pages_browser import WIDTHS
from tests.factories import AuditFactory, ProjectFactory, ReportEmailFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_schedule_shows_its_recipients_and_the_report_emails(live_server):
    owner = UserFactory(username="rita")
    project = ProjectFactory(owner=owner, name="Client Shop", base_url="https://shop.example.test/")
    schedule_set(project=project, kind=Schedule.Kind.WEEKLY)
    schedule_report_recipients_set(project=project, recipients=["ops@client.test", "marketing-team@client.test"])
    states = [
        {"status": ReportEmail.Status.SENT, "sent_at": timezone.now(), "attempts": 1},
        {"status": ReportEmail.Status.PENDING, "attempts": 2, "last_error": "SMTPServerDisconnected: Connection lost"},
        {"status": ReportEmail.Status.FAILED, "attempts": 5, "last_error": "ConnectionRefusedError: [Errno 111]"},
    ]
    for fields in states:
        audit = AuditFactory(project=project, status=Audit.Status.COMPLETED, scheduled=True)
        ReportEmailFactory(audit=audit, recipients=["ops@client.test"], **fields)
    with chromium_browser() as browser:
        for width in WIDTHS:
            context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
            tab = context.new_page()
            sign_in(tab, live_server, "rita")
            tab.goto(f"{live_server.url}/projects/{project.id}/")
            assert tab.locator("#report-emails li").count() == 3
            assert "ops@client.test" in tab.locator("textarea[name=report_recipients]").input_value()
            overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"project screen at {width} px overflows by {overflow} px"
            assert not serious_axe_violations(tab)
            for folder in filter(None, (SCREENSHOTS, os.environ.get("SHOTS_DIR"))):
                Path(folder).mkdir(parents=True, exist_ok=True)
                tab.locator("#schedule-h").scroll_into_view_if_needed()
                tab.screenshot(path=str(Path(folder) / f"28-report-emails-{width}.png"), full_page=True)
            context.close()
