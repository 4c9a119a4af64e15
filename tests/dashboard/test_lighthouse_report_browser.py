"""Lighthouse's own HTML report of a real run, served by the dashboard under its sandbox CSP, renders in Debian's
Chromium at 1440 and 390 px (its script runs, its gauges show the run's scores) in an opaque origin.
Screenshots go to artifacts/screenshots/ (25-lighthouse-report-*) and to SHOTS_DIR when it is set."""

import os
from pathlib import Path

import pytest

from audits.pipeline.lighthouse import lighthouse_run_page
from bench.serve import serve_site
from tests.audits.pipeline.test_lighthouse import SQUARE_SVG, TEST_PAGE_HTML, requires_lighthouse
from tests.dashboard.conftest import finished_audit, make_page
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.dashboard.test_pages_browser import WIDTHS
from tests.factories import LighthouseResultFactory, ProjectFactory, UserFactory
from tests.support.browser import chromium_browser

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, requires_lighthouse]


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def test_the_html_report_renders_in_its_sandbox(browser, live_server, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    owner = UserFactory(username="frank")
    audit = finished_audit(ProjectFactory(owner=owner, name="Perf"), config={"lighthouse": True})
    page = make_page(audit, "/")
    rel = f"lighthouse/{audit.id}/mobile.json"
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(TEST_PAGE_HTML)
    (root / "square.svg").write_text(SQUARE_SVG)
    with serve_site(root) as base_url:  # one real Lighthouse run: the report the renderer gets is a whole one
        run = lighthouse_run_page(base_url + "/", "mobile", report_to=tmp_path / "media" / rel)
    assert run["status"] == "ok", run.get("error")
    fields = {k: v for k, v in run.items() if k in ("performance", "accessibility", "best_practices", "seo")}
    result = LighthouseResultFactory(audit=audit, page=page, url=page.url, strategy="mobile", report_path=rel,
                                     **fields)  # fmt: skip
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})  # the report's own CSP applies
        tab = context.new_page()
        errors = []
        tab.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
        sign_in(tab, live_server, "frank")
        tab.goto(f"{live_server.url}/audits/{audit.id}/performance/{result.id}/report.html")
        gauge = tab.locator(".lh-category .lh-gauge__percentage").first
        gauge.wait_for()
        # The run's performance score, drawn by the report's own script.
        assert gauge.inner_text().strip() == str(run["performance"])
        assert tab.evaluate("() => self.origin") == "null"  # sandboxed: an opaque origin
        assert tab.evaluate("() => { try { return document.cookie; } catch (e) { return 'blocked'; } }") in (
            "",
            "blocked",
        )
        assert not errors, errors
        for folder in filter(None, (SCREENSHOTS, os.environ.get("SHOTS_DIR"))):
            Path(folder).mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(Path(folder) / f"25-lighthouse-report-{width}.png"))
        context.close()
