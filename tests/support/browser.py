"""Headless Chromium for the browser tests: one launch recipe (Debian's Chromium, as root), used by every
browser fixture."""

import os
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# axe-core comes with the Lighthouse npm package (make lighthouse-install).
AXE = Path(__file__).resolve().parents[2] / "audits/lighthouse_runner/node_modules/axe-core/axe.min.js"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


@contextmanager
def chromium_browser():
    """A launched Playwright Chromium, closed afterwards. While it runs, Django may be called from this
    thread although Playwright's event loop lives in it too: the tests' own ORM calls are plain synchronous
    code, which Django would otherwise refuse as "async-unsafe"."""
    from playwright.sync_api import sync_playwright  # why: only browser tests pay for importing Playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        yield browser
    finally:
        browser.close()
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def serious_axe_violations(tab) -> list[str]:
    """axe-core's serious and critical findings on the tab's page, one "rule: targets" line each."""
    tab.evaluate(AXE.read_text())
    return tab.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".filter(v => ['serious', 'critical'].includes(v.impact))"
        ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))"
    )
