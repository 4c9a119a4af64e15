"""The dashboard in a real browser: Debian's Chromium driven by Playwright against the live server, with a
real Celery worker crawling a generated site on 127.0.0.1. Screenshots go to artifacts/screenshots/."""

import contextlib
import csv
import io
import threading
import time
from pathlib import Path

import pytest

from audits.models import Audit, Issue, Page
from bench.sitegen import generate_site
from scratchpad.models import LinkEdge
from tests.dashboard.conftest import PASSWORD, finished_audit, make_issue, make_page
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser
from tests.support.sites import serve_generated
from tests.support.waits import wait_until
from tests.support.workers import REPO_ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e, pytest.mark.browser]

SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"
SITE_PAGES = 150
GATED_DELAY_S = 0.4  # until the test opens the gate, each page answer waits this long...
GATED_CONCURRENCY = 3  # ...and at most this many are answered at once (about 7 pages/s)
AUDIT_TIMEOUT_MS = 180_000
UI_TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module. Playwright's sync API keeps an event loop in this thread, which makes
    Django refuse ORM calls as "async-unsafe": the tests' own ORM calls are plain synchronous code."""
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(UI_TIMEOUT_MS)
    tab = context.new_page()
    yield tab
    context.close()


def shot(tab, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@contextlib.contextmanager
def gated_site(root: Path):
    """Serve a generated site whose pages answer slowly until `gate.set()`, so a test can watch an audit
    run before letting it finish, whatever the crawler's concurrency. Yields (base_url, gate)."""
    gate = threading.Event()
    slots = threading.BoundedSemaphore(GATED_CONCURRENCY)

    def pace(path: str) -> None:
        if not gate.is_set() and path.endswith((".html", "/")):
            with slots:  # a few slow answers at a time, however many fetches the crawler runs
                if not gate.is_set():
                    time.sleep(GATED_DELAY_S)

    with serve_generated(root, before_answer=pace) as (base_url, _hits):
        try:
            yield base_url, gate
        finally:
            gate.set()  # before the server stops, so no answer is left sleeping


def sign_in(tab, live_server, username: str) -> None:
    tab.goto(live_server.url + "/")
    assert "/accounts/login/" in tab.url
    tab.get_by_label("Username").fill(username)
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    tab.get_by_role("heading", name="Projects").wait_for()


def live_state(tab) -> dict:
    return tab.evaluate(
        """() => {
            const live = document.getElementById("live"), bar = document.getElementById("crawl-progress");
            return {status: live.dataset.status, phase: live.dataset.phase,
                    crawled: Number(bar.dataset.crawled), total: Number(bar.dataset.total),
                    marker: window.__sitewardenNoReload === true};
        }"""
    )


def test_happy_path_in_the_browser(page, live_server, celery_worker_process, tmp_path):
    UserFactory(username="alice")
    generate_site(tmp_path / "site", pages=SITE_PAGES, seed=11, page_kb=4)
    with gated_site(tmp_path / "site") as (base, gate):
        # Sign in (anonymous visitors are sent to the sign-in page).
        page.goto(live_server.url + "/")
        shot(page, "01-sign-in")
        sign_in(page, live_server, "alice")
        shot(page, "02-projects-empty")

        # Create a project.
        page.get_by_role("link", name="Create your first project").click()
        page.get_by_label("Name").fill("Widgets")
        page.get_by_label("Base URL").fill(base + "/")
        page.get_by_label("Max pages per audit").fill("1000")
        shot(page, "03-project-form")
        page.get_by_role("button", name="Create project").click()
        page.get_by_role("heading", name="Widgets").wait_for()
        shot(page, "04-project")

        # Start an audit of the site: the form is prefilled from the project.
        page.get_by_role("link", name="Start an audit").click()
        assert page.get_by_label("Start URL").input_value() == base + "/"
        shot(page, "05-start-audit")
        page.get_by_role("button", name="Start audit").click()
        page.wait_for_url("**/audits/*/")
        audit = Audit.objects.get(project__name="Widgets")
        navigations = []
        page.on("framenavigated", lambda frame: frame == page.main_frame and navigations.append(frame.url))
        page.evaluate("window.__sitewardenNoReload = true")

        # Watch it run: the live block is replaced every 2 s, the progress bar moves, no reload.
        seen = []

        def moved_or_ended() -> bool:
            state = live_state(page)
            if not seen or (state["crawled"], state["phase"]) != (seen[-1]["crawled"], seen[-1]["phase"]):
                seen.append(state)
            running = [s for s in seen if s["status"] == "running"]
            return len({s["crawled"] for s in running if s["crawled"] > 0}) >= 2 or state["status"] != "running"

        wait_until(
            moved_or_ended,
            90,
            "two crawled counts while running, or the end of the audit",
            every_s=0.25,
            sleep=lambda s: page.wait_for_timeout(s * 1000),
        )
        assert seen[0]["status"] == "running", seen
        crawled_while_running = [s["crawled"] for s in seen if s["status"] == "running"]
        assert len(set(crawled_while_running)) >= 2, f"the progress bar did not move while running: {seen}"
        assert crawled_while_running == sorted(crawled_while_running)
        feed = page.locator("#feed li")
        assert feed.count() >= 1 and feed.count() <= 10
        shot(page, "06-audit-running")

        gate.set()
        page.locator('#live[data-status="completed"]').wait_for(timeout=AUDIT_TIMEOUT_MS)
        final = live_state(page)
        assert final["marker"] and not navigations, "the page was reloaded"
        audit.refresh_from_db()
        assert audit.status == Audit.Status.COMPLETED
        assert final["crawled"] == audit.pages_crawled > SITE_PAGES // 2
        assert page.locator("#audit-status").inner_text() == "Completed"
        assert page.locator("#summary").is_visible() and page.locator("svg.chart-svg").first.is_visible()
        assert page.get_by_role("link", name="Cancel audit…").is_hidden()
        assert page.locator("#live-announce").inner_text().startswith("Audit completed")
        shot(page, "07-audit-completed")

        # Issues as a table ranked by priority; a row leads to the type's evidence with the registry's texts.
        page.get_by_role("link", name="Issues", exact=True).click()
        page.locator("#issues-table").wait_for()
        broken = page.locator('#issues-table tr[data-type="broken-page"]')
        assert broken.is_visible() and Issue.objects.filter(audit=audit, type="broken-page").exists()
        shot(page, "08-issues")
        broken.get_by_role("link").first.click()
        page.wait_for_url("**/issues/broken-page/**")
        assert "/missing" in page.locator("main").inner_text()
        page.go_back()

        # Pages: filter by status code, then open the page's detail.
        page.get_by_role("link", name="Pages", exact=True).click()
        total_rows = page.locator("table.pages tbody tr").count()
        assert total_rows == min(audit.pages_crawled, 50)
        page.get_by_label("Status code").fill("404")
        page.get_by_role("button", name="Apply").click()
        page.wait_for_url("**status=404**")
        rows = page.locator("table.pages tbody tr")
        expected = list(Page.objects.filter(audit=audit, status_code=404).values_list("url", flat=True))
        assert rows.count() == len(expected) >= 1
        assert rows.first.locator("td.url").inner_text() == expected[0]
        shot(page, "09-pages-filtered")
        rows.first.locator("td.url a").click()
        page.get_by_role("heading", name="Everything extracted").wait_for()
        assert page.locator("#page-url").inner_text() == expected[0]
        assert page.locator("#inlinks tbody tr").count() >= 1  # the home page links to the missing page
        shot(page, "10-page-detail")

        # Download the pages CSV and check its rows against the database.
        page.get_by_role("link", name="Pages", exact=True).click()
        with page.expect_download() as download:
            page.get_by_role("link", name="CSV").click()
        body = Path(download.value.path()).read_text(encoding="utf-8")
        rows = list(csv.DictReader(io.StringIO(body)))
        assert len(rows) == audit.pages_crawled
        assert {r["url"] for r in rows} == set(Page.objects.filter(audit=audit).values_list("url", flat=True))
        assert {r["status_code"] for r in rows} >= {"200", "404"}

        for tab, name in (("Events", "11-events"), ("Comparison", "12-comparison"), ("Performance", "13-perf")):
            page.get_by_role("link", name=tab, exact=True).click()
            page.get_by_role("heading", name=tab).wait_for()
            shot(page, name)


XSS_TITLE = "<script>alert(1)</script>"
XSS_ANCHOR = '"><img src=x onerror=alert(1)>'


def test_crawled_markup_renders_as_text(page, live_server):
    owner = UserFactory(username="bob")
    audit = finished_audit(ProjectFactory(owner=owner, name="Hostile"))
    evil = make_page(audit, "/evil?q=<b>x</b>", title=XSS_TITLE, meta_description=XSS_ANCHOR)
    home = make_page(audit, "/", title="Home")
    LinkEdge.objects.create(audit=audit, source_page=home, target_url=evil.url, anchor_text=XSS_ANCHOR)
    LinkEdge.objects.create(audit=audit, source_page=evil, target_url="javascript:alert(1)", anchor_text=XSS_ANCHOR)
    make_issue(audit, evil, "missing-h1", "warning", note=XSS_ANCHOR)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, live_server, "bob")

    base = f"{live_server.url}/audits/{audit.id}"
    page.goto(f"{base}/pages/")
    assert page.get_by_text(XSS_TITLE, exact=True).is_visible()
    page.goto(f"{base}/pages/{evil.id}/")
    assert page.locator("#page-title").inner_text() == XSS_TITLE
    assert page.locator("#inlinks td.anchor").inner_text() == XSS_ANCHOR
    assert page.locator("#outlinks td.anchor").inner_text() == XSS_ANCHOR
    # a javascript: URL is shown, never linked
    assert page.locator('a[href^="javascript:"]').count() == 0
    assert page.get_by_text("javascript:alert(1)", exact=True).is_visible()
    shot(page, "14-hostile-page-detail")
    for path in ("/", "/issues/", "/issues/missing-h1/", "/events/", "/compare/"):
        page.goto(base + path)
    page.goto(f"{base}/pages/{home.id}/")
    assert page.locator("#outlinks td.anchor").inner_text() == XSS_ANCHOR
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:text('alert')").count() == 0
    assert dialogs == [], f"crawled markup ran: {dialogs}"
