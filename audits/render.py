"""JavaScript rendering with Playwright and Debian's Chromium, for projects that ask for it.

A Renderer owns one browser on one thread (Playwright's sync API is bound to its thread); fetch threads
hand it URLs through a queue. Rendering is bounded per audit by a budget kept in the Throttle row, and
per page by a timeout. With ALLOW_PRIVATE_TARGETS off, the browser's own requests to non-public
addresses are aborted, as the crawler's are.
"""

import logging
import os
import queue
import shutil
import socket
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from audits.models import Audit
from crawler.urls import is_public_address
from scratchpad.models import Throttle

logger = logging.getLogger(__name__)

RENDER_TIMEOUT_S = 20  # navigation + network idle, per page
RENDER_START_TIMEOUT_S = 30  # browser launch
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def find_chromium() -> str | None:
    path = os.environ.get("CHROME_PATH")
    if path:
        return path if os.path.exists(path) else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(candidate):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _host_is_allowed(url: str) -> bool:
    host = urlsplit(url).hostname
    if not host:
        return True  # data:, blob: and the like stay inside the browser
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return all(is_public_address(info[4][0]) for info in infos)


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
            from playwright.sync_api import sync_playwright

            playwright = sync_playwright().start()
            browser = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        except Exception as exc:  # missing package or browser: rendering is skipped, the crawl goes on
            self.error = f"rendering unavailable: {exc}"[:300]
            self._ready.set()
            return
        self._ready.set()
        context = browser.new_context(user_agent=self.user_agent) if self.user_agent else browser.new_context()
        if not self.allow_private:
            context.route("**/*", self._guard)
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    break
                url, future = job
                page = context.new_page()
                try:
                    page.goto(url, wait_until="networkidle", timeout=RENDER_TIMEOUT_S * 1000)
                    future.set_result(page.content())
                except Exception as exc:
                    logger.info("render failed: %s", exc, extra={"url": url})
                    future.set_result(None)
                finally:
                    page.close()
        finally:
            context.close()
            browser.close()
            playwright.stop()

    @staticmethod
    def _guard(route) -> None:
        if _host_is_allowed(route.request.url):
            route.continue_()
        else:
            route.abort("addressunreachable")

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
    if find_chromium() is None:
        _note(audit, "JavaScript rendering skipped: Chromium not found (apt-get install chromium)")
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
