"""Headless Chromium for the browser tests: one launch recipe (Debian's Chromium, as root), used by every
browser fixture."""

import os
from contextlib import contextmanager

CHROMIUM = "/usr/bin/chromium"
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
