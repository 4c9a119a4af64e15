"""JavaScript rendering with Playwright and Debian's Chromium, for projects that ask for it.

A Renderer owns one browser on one thread (Playwright's sync API is bound to its thread); fetch threads
hand it URLs through a queue. Rendering is bounded per audit by a budget kept in the Throttle row, and
per page by a timeout. With ALLOW_PRIVATE_TARGETS off, the browser sends every request through the
egress proxy (crawler.egress, flags from audits.pipeline.chromium), which refuses non-public addresses as the
crawler does: documents, redirects, subresources and WebSockets alike.
"""

import logging
import queue
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from audits.models import Audit, Page
from audits.pipeline.chromium import chromium_flags, find_chromium
from crawler.parse import PageData
from scratchpad.models import Throttle

logger = logging.getLogger(__name__)

RENDER_TIMEOUT_S = 20  # navigation + network idle, per page
RENDER_START_TIMEOUT_S = 30  # browser launch
# Page fields kept in Page.raw_values as the HTML as served gave them (audits/checks/render.py compares them).
RAW_VALUE_FIELDS = (
    "title", "meta_description", "canonical_url", "meta_robots", "h1", "h1_count", "word_count",
)  # fmt: skip
RAW_LINK_EXAMPLES_MAX = 5  # link targets only the rendered page has, listed in raw_values


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class Renderer:
    def __init__(self, *, audit_id, budget: int, user_agent: str | None, allow_private: bool):
        self.audit_id = audit_id
        self.budget = budget
        self.used = 0
        self.user_agent = user_agent
        self.allow_private = allow_private
        self.error: str | None = None
        self._lock = threading.Lock()
        self._jobs: queue.Queue = queue.Queue()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="render", daemon=True)
        self._thread.start()
        if not self._ready.wait(RENDER_START_TIMEOUT_S):
            self.error = "Chromium did not start"

    def _run(self) -> None:
        try:
            # A missing Playwright must cost the render, not the import of the crawl (recorded below).
            # why: only projects that render need it, and it is loaded on the renderer's own thread.
            from playwright.sync_api import sync_playwright

            playwright = sync_playwright().start()
            chromium, reason = find_chromium()
            if chromium is None:
                raise RuntimeError(reason)
            # The egress proxy is the address guard: a route handler would not see WebSockets nor the
            # hops of a redirect, and Chromium would connect to them all the same.
            flags = chromium_flags(allow_private=self.allow_private)
            browser = playwright.chromium.launch(executable_path=chromium, args=flags)
        except Exception as exc:  # missing package or browser: rendering is skipped, the crawl goes on
            self.error = f"rendering unavailable: {exc}"[:300]
            self._ready.set()
            return
        self._ready.set()
        context = browser.new_context(user_agent=self.user_agent) if self.user_agent else browser.new_context()
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    break
                url, future = job
                page = context.new_page()
                try:
                    page.goto(url, wait_until="networkidle", timeout=RENDER_TIMEOUT_S * 1000)
                    # A script that navigated elsewhere left another origin's page (or the egress proxy's
                    # refusal) in the tab: that is not this URL's content, the fetched HTML stands.
                    future.set_result(page.content() if _origin(page.url) == _origin(url) else None)
                except Exception as exc:
                    logger.info("render failed: %s", exc, extra={"url": url})
                    future.set_result(None)
                finally:
                    page.close()
        finally:
            context.close()
            browser.close()
            playwright.stop()

    def render(self, url: str) -> str | None:
        """The rendered DOM of `url`, or None (budget spent, browser unavailable, timeout, error)."""
        with self._lock:
            if self.error or self.used >= self.budget:
                return None
            self.used += 1
        future: Future = Future()
        self._jobs.put((url, future))
        try:
            return future.result(timeout=RENDER_TIMEOUT_S + 10)
        except FutureTimeout:
            return None

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=15)
        unused = self.budget - self.used
        if unused > 0:
            # Give back what this chunk reserved and did not render.
            with transaction.atomic():
                throttle = Throttle.objects.select_for_update().get(audit_id=self.audit_id)
                throttle.renders_used = max(0, throttle.renders_used - unused)
                throttle.save(update_fields=["renders_used", "updated_at"])


def render_session_for(audit: Audit) -> Renderer | None:
    """A Renderer with a share of the audit's render budget, or None when the project does not render
    (or the budget is spent, or no Chromium is installed: recorded on the audit once)."""
    config = audit.config or {}
    if not config.get("render_js"):
        return None
    chromium, reason = find_chromium()
    if chromium is None:
        _note(audit, f"JavaScript rendering skipped: {reason}")
        return None
    with transaction.atomic():
        throttle, _ = Throttle.objects.select_for_update().get_or_create(audit=audit)
        left = int(config.get("render_budget_pages", 200)) - throttle.renders_used
        share = max(0, min(left, settings.CRAWL_RENDER_PAGES_PER_CHUNK))
        if share == 0:
            return None
        throttle.renders_used += share
        throttle.save(update_fields=["renders_used", "updated_at"])
    renderer = Renderer(
        audit_id=audit.id,
        budget=share,
        user_agent=config.get("user_agent") or None,
        allow_private=settings.ALLOW_PRIVATE_TARGETS,
    )
    if renderer.error:
        _note(audit, f"JavaScript rendering skipped: {renderer.error}")
    return renderer


def _note(audit: Audit, note: str) -> None:
    if audit.discovery.get("render_note") != note:
        Audit.objects.filter(id=audit.id).update(discovery={**audit.discovery, "render_note": note})


def raw_values_for(raw_page: Page, raw: PageData, rendered: PageData) -> dict:
    """Page.raw_values of a rendered page: `raw_page` is a Page filled from the HTML as served by the same code that
    filled the rendered one (audits.pipeline.page_record), so both columns are measured alike; and the link targets
    only the rendered page has."""
    values = {name: getattr(raw_page, name) for name in RAW_VALUE_FIELDS}
    values["canonical"] = values.pop("canonical_url")
    served = {link.url for link in raw.links}
    only_rendered = [link.url for link in rendered.links if link.url not in served]
    rendered_urls = {link.url for link in rendered.links}
    return {
        **values,
        "internal_links": raw.internal_links_total,
        "external_links": raw.external_links_total,
        "links_only_rendered": len(only_rendered),
        "links_only_rendered_examples": only_rendered[:RAW_LINK_EXAMPLES_MAX],
        "links_only_raw": sum(1 for url in served if url not in rendered_urls),
    }
