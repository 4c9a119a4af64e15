"""Every dashboard screen in Debian's Chromium, at 1440 and 390 px wide: no horizontal overflow, no console
errors, and axe-core (the copy inside the pinned Lighthouse package) finds no serious or critical violation.

The data is an audit of a site with planted defects (tests/support/sites/crawled.py: every page case and
every site-check situation) crawled in-process by the real pipeline, a previous audit of the same project
to compare with, and audits that are running, failed and cancelled.

SCREENS is the list to extend: a helper who adds a screen adds a Screen to it (for a route outside
dashboard/urls.py, give `path`). `test_every_dashboard_route_is_a_screen` fails when a GET route of
dashboard/urls.py is neither a screen nor in NOT_SCREENS, so a new screen cannot be left out.
Screenshots go to SHOTS_DIR as 12d-<screen>-<width>.png.
"""

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db.models import Count
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils import timezone

from audits.checks.registry import PAGE_TYPES
from audits.models import Audit, AuditEvent, Issue, Page, PageChange
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.services import segment_create
from audits.sharing import share_link_create
from tests.dashboard.conftest import PASSWORD
from tests.factories import (
    AuditEventFactory,
    AuditFactory,
    ExternalLinkFactory,
    IssueFactory,
    LighthouseResultFactory,
    LinkEdgeFactory,
    PageChangeFactory,
    PageFactory,
    ProjectFactory,
    UserFactory,
)
from tests.support.browser import chromium_browser
from tests.support.sites.crawled import crawl_site_routes
from tests.support.sites.page_cases import page_cases
from tests.support.sites.pages import serve
from tests.support.workers import REPO_ROOT
from webhooks.models import WebhookDelivery
from webhooks.services import webhook_create

AXE = REPO_ROOT / "audits" / "lighthouse_runner" / "node_modules" / "axe-core" / "axe.min.js"
LIGHTHOUSE_FIXTURE = Path(__file__).parent / "fixtures" / "lighthouse_report_mobile.json"
SHOTS_DIR = Path(os.environ.get("SITEWARDEN_SHOTS_DIR", "/tmp/shots"))
WIDTHS = (1440, 390)
HEIGHT = 900
BLOCKING_IMPACTS = ("serious", "critical")
UI_TIMEOUT_MS = 15_000
SITE_MAX_PAGES = 200


@dataclass(frozen=True)
class Screen:
    """One screen: a dashboard route (its name in the `audits` namespace and how to get its arguments from
    the world the test built) or a literal path, plus a query string."""

    name: str
    route: str = ""
    args: Callable = lambda w: []
    query: str = ""
    path: Callable | None = None  # for routes outside dashboard/urls.py: world -> path
    signed_in: bool = True
    extra: dict = field(default_factory=dict)

    def url(self, world) -> str:
        base = self.path(world) if self.path else reverse(f"audits:{self.route}", args=self.args(world))
        return base + self.query


SCREENS: list[Screen] = [
    Screen("sign-in", path=lambda w: reverse("login"), signed_in=False),
    Screen("projects", "project-list"),
    Screen("project", "project-detail", lambda w: [w.project.id]),
    Screen("project-new", "project-create"),
    Screen("project-edit", "project-edit", lambda w: [w.project.id]),
    Screen("webhooks", "project-webhooks", lambda w: [w.project.id]),
    Screen("segments", "project-segments", lambda w: [w.project.id]),
    Screen("segment-edit", "project-segment-edit", lambda w: [w.project.id, w.segment.id]),
    Screen("audit-start", "audit-new", lambda w: [w.project.id]),
    Screen("live-running", "audit-detail", lambda w: [w.running.id]),
    Screen("cancel-confirm", "audit-cancel", lambda w: [w.running.id]),
    Screen("failed", "audit-detail", lambda w: [w.failed.id]),
    Screen("cancelled", "audit-detail", lambda w: [w.cancelled.id]),
    Screen("overview", "audit-detail", lambda w: [w.audit.id]),
    Screen("issues", "audit-issues", lambda w: [w.audit.id]),
    Screen("issue-type", "audit-issue-type", lambda w: [w.audit.id, w.issue_type]),
    Screen("pages", "audit-pages", lambda w: [w.audit.id]),
    Screen("pages-filtered", "audit-pages", lambda w: [w.audit.id], query="?status=404"),
    Screen("pages-by-issue", "audit-pages", lambda w: [w.audit.id], query="?issue=broken-internal-link"),
    Screen("pages-unknown-filter", "audit-pages", lambda w: [w.audit.id], query="?issue=no-such-type"),
    Screen("structure", "audit-structure", lambda w: [w.audit.id]),
    Screen("external", "audit-external", lambda w: [w.audit.id]),
    Screen("external-problems", "audit-external", lambda w: [w.audit.id], query="?problems=1&sort=url"),
    Screen("external-none", "audit-external", lambda w: [w.previous.id]),
    Screen("external-link", "audit-external-link", lambda w: [w.audit.id, w.external_link.id]),
    Screen("bots", "audit-bots", lambda w: [w.audit.id]),
    Screen("changes", "audit-changes", lambda w: [w.audit.id]),  # issue 28
    Screen("changes-first", "audit-changes", lambda w: [w.previous.id]),
    Screen("changes-indexability", "audit-changes", lambda w: [w.audit.id], query="?field=indexability"),
    Screen("page-detail", "page-detail", lambda w: [w.audit.id, w.page.id]),
    Screen("page-detail-render", "page-detail", lambda w: [w.audit.id, w.rendered.id]),  # Issue 27 render
    Screen("performance", "audit-performance", lambda w: [w.audit.id]),
    Screen("events", "audit-events", lambda w: [w.audit.id]),
    Screen("compare", "audit-compare", lambda w: [w.audit.id]),
    Screen("tokens", "api-tokens"),
    Screen("report-branding", "report-branding"),
    Screen("share", "audit-share", lambda w: [w.audit.id]),
    Screen("report-preview", "audit-report-preview", lambda w: [w.audit.id]),
    Screen("shared-report", path=lambda w: reverse("shared-report", args=[w.share_token]), signed_in=False),
    Screen("fix-verification", "audit-verification", lambda w: [w.verification.id]),  # Issue 28
    Screen("alerts", "project-alerts", lambda w: [w.project.id]),  # Issue 28: rules, channels, deliveries
    Screen("notifications", "notifications"),
]

# Routes of dashboard/urls.py that are not screens: downloads, fragments, health, POST-only actions.
NOT_SCREENS = {
    "healthz",
    "audit-live",  # the live block alone (a fragment live.js swaps in), seen inside live-running
    "audit-export",
    "lighthouse-report",
    "lighthouse-report-html",  # Lighthouse's own page, not ours: tests/dashboard/test_lighthouse_report_browser.py
    "audit-delete",
    "project-schedule",
    "api-token-revoke",
    "project-webhook-toggle",
    "project-webhook-delete",
    "project-segment-delete",
    "audit-issue-type-export",
    "audit-pages-export",
    "audit-external-export",
    "audit-report-pdf",
    "audit-share-revoke",
    "audit-issue-verify",  # POST only: the "Verify fix" button of the issue-type screen
    "audit-changes-export",
    "audit-changes-baseline",  # POST only
    "notification-open",  # marks it read and redirects to what it points at
    "notifications-read",  # POST only
    "project-alert-channel-add",  # POST only, like the channel's toggle, test and delete
    "project-alert-channel-delete",
    "project-alert-channel-test",
    "project-alert-channel-toggle",
}


def test_every_dashboard_route_is_a_screen():
    from dashboard import urls

    routes = {p.name for p in urls.urlpatterns if isinstance(p, URLPattern) and p.name}
    covered = {s.route for s in SCREENS if s.route}
    missing = sorted(routes - covered - NOT_SCREENS)
    assert not missing, f"dashboard routes with no Screen in SCREENS (or NOT_SCREENS): {missing}"


# --- the world ------------------------------------------------------------------------------------------


def _crawl(project, base: str) -> Audit:
    audit = audit_start(project=project, start_url=base + "/", max_pages=SITE_MAX_PAGES, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


# External targets of every kind of answer, long URLs and errors included (the screen must hold them at 390 px).
EXTERNAL_TARGETS = (
    ("https://www.python.org/", "ok", 200, "", 0, "", 3),
    ("http://example.org/a/very/long/path/that/goes/on/and/on/to/a/page/moved-elsewhere?with=query&and=more",
     "redirected", 200, "https://example.org/a/very/long/path/that/goes/on/and/on/to/a/page/its-new-home", 2, "", 2),
    ("https://gone.example.com/old-article-about-something", "client_error", 404, "", 0, "", 2),
    ("https://broken.example.net/", "server_error", 503, "", 0, "", 1),
    ("https://no-such-host.invalid/", "dns_error", None, "", 0, "Name or service not known", 1),
    ("https://slow.example.com/report.pdf", "timeout", None, "", 0, "No answer within 10 s (read timeout)", 1),
    ("https://www.linkedin.com/company/example", "unverified", 999, "", 0, "Bot protection (999)", 1),
    ("https://loop.example.com/", "redirect_loop", 301, "https://loop.example.com/", 5, "Redirect loop", 1),
)  # fmt: skip


def _external_links(audit: Audit, pages: list[Page]):
    """ExternalLink rows (as the finalize pass leaves them) and their linking pages' edges; returns the busiest."""
    rows = []
    for url, outcome, status, final_url, hops, error, linking in EXTERNAL_TARGETS:
        rows.append(
            ExternalLinkFactory(
                audit=audit,
                url=url,
                outcome=outcome,
                status_code=status,
                final_url=final_url,
                redirect_hops=hops,
                error=error,
                method="GET" if outcome == "unverified" else "HEAD",
                linking_pages=min(linking, len(pages)),
            )
        )
        for n, page in enumerate(pages[:linking]):
            anchor = f"Read more on {url.split('/')[2]}" if n else ""
            LinkEdgeFactory(audit=audit, source_page=page, target_url=url, anchor_text=anchor, internal=False)
    return max(rows, key=lambda r: r.linking_pages)


def _page_changes(audit: Audit, previous: Audit) -> None:
    """Changes against the previous crawl as the changes stage leaves them, long values included, when the two crawls
    of one site left none (issue 28)."""
    if PageChange.objects.filter(audit=audit).exists():
        return
    home = audit.start_url
    long_title = "A title that grew much longer in the new release, " + "with more and more words " * 5
    rows = [
        (home, "title", "changed", "Home", long_title),
        (home + "about", "indexability", "down", "indexable", "non-indexable: noindex"),
        (home + "catalogue/" + "a-long-category-name/" * 5 + "item", "status", "changed", "200", "404"),
        (home + "robots.txt", "robots_txt", "added", "", "Disallow: /search/" + "filter-by-colour-and-size/" * 4),
    ]
    for url, field_, direction, before, after in rows:
        PageChangeFactory(
            audit=audit, baseline=previous, url=url, field=field_, direction=direction, before=before, after=after
        )
    counts = {field_: 1 for _url, field_, *_rest in rows}
    Audit.objects.filter(id=audit.id).update(
        baseline=previous, stats={**audit.stats, "changes": {**counts, "baseline": str(previous.id)}}
    )
    audit.refresh_from_db()


def _verification(audit: Audit) -> Audit:
    """A completed fix verification of the audit's first page-level issue type (issue 28): its URLs re-checked, the
    first half fixed, the rest still carrying it (the re-check itself is tests/audits/test_verification.py's)."""
    page_types = Issue.objects.filter(audit=audit, type__in=PAGE_TYPES).exclude(page=None)
    issue_type = page_types.order_by("type").values_list("type", flat=True).first()
    urls = sorted(set(page_types.filter(type=issue_type).values_list("page_url", flat=True)))
    now = timezone.now()
    verification = AuditFactory(
        project=audit.project,
        status=Audit.Status.COMPLETED,
        current_phase=Audit.Phase.COMPLETED,
        started_at=now,
        completed_at=now,
        verifies=audit,
        config={"mode": "list", "list_urls": urls, "verify_issue_type": issue_type, "max_pages": len(urls)},
    )
    for n, url in enumerate(urls):
        page = PageFactory(audit=verification, url=url)
        if n >= len(urls) // 2:
            IssueFactory(audit=verification, page=page, type=issue_type)
    return verification


def _world(owner, base: str, media_root: Path) -> SimpleNamespace:
    project = ProjectFactory(owner=owner, name="Planted defects", base_url=base + "/")
    previous = _crawl(project, base)
    audit = _crawl(project, base)
    # The issue type with the most rows, and the page with the most issues: the busiest screens.
    issue_type = (
        Issue.objects.filter(audit=audit).values("type").annotate(n=Count("id")).order_by("-n", "type")[0]["type"]
    )
    busiest = (
        Issue.objects.filter(audit=audit).exclude(page=None).values("page").annotate(n=Count("id")).order_by("-n")
    )[0]["page"]
    page = Page.objects.get(id=busiest)
    home = Page.objects.filter(audit=audit, depth=0).first() or page
    rendered = _as_rendered(home)
    report_path = ""
    if LIGHTHOUSE_FIXTURE.exists():
        report_path = f"lighthouse/{audit.id}/mobile.json"
        (media_root / report_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(LIGHTHOUSE_FIXTURE, media_root / report_path)
    LighthouseResultFactory(
        audit=audit,
        page=home,
        performance=71,
        accessibility=88,
        seo=92,
        lcp_ms=3100,
        cls_score=0.04,
        report_path=report_path,
    )
    external_link = _external_links(audit, list(Page.objects.filter(audit=audit).order_by("url")[:3]))
    now = timezone.now()
    running = AuditFactory(project=project, started_at=now, last_progress_at=now)
    Audit.objects.filter(id=running.id).update(current_phase=Audit.Phase.CRAWLING, pages_crawled=12, pages_total=40)
    failed = AuditFactory(
        project=project,
        status=Audit.Status.FAILED,
        current_phase=Audit.Phase.FAILED,
        failed_phase=Audit.Phase.CRAWLING,
        error_code="worker_lost",
        error_detail="WorkerLostError: Worker exited prematurely: signal 9 (SIGKILL).",
        started_at=now - timedelta(minutes=9),
        completed_at=now - timedelta(minutes=8),
        pages_crawled=0,
    )
    cancelled = AuditFactory(
        project=project,
        status=Audit.Status.CANCELLED,
        current_phase=Audit.Phase.CANCELLED,
        started_at=now - timedelta(minutes=7),
        completed_at=now - timedelta(minutes=6),
        pages_crawled=9,
        pages_total=30,
    )
    AuditEventFactory(audit=cancelled, kind=AuditEvent.Kind.PHASE, message="Phase crawling", data={"phase": "crawling"})
    webhook = webhook_create(project=project, url=base + "/hooks/sitewarden")
    WebhookDelivery.objects.create(
        webhook=webhook,
        audit=audit,
        audit_ref=audit.id,
        event="audit.finished",
        status="succeeded",
        attempts=1,
        last_response_code=200,
    )
    _link, share_token = share_link_create(audit=audit, created_by=owner, label="Client")
    segment = segment_create(project=project, name="Below the home page", kind="regex", value="^/.+")
    _page_changes(audit, previous)
    verification = _verification(audit)
    return SimpleNamespace(
        verification=verification,
        external_link=external_link,
        segment=segment,
        share_token=share_token,
        project=project,
        audit=audit,
        previous=previous,
        running=running,
        failed=failed,
        cancelled=cancelled,
        issue_type=issue_type,
        page=page,
        rendered=rendered,
    )


def _as_rendered(page: Page) -> Page:
    """`page` as if rendered, with served values that differ from its own (Issue 27 render: the page detail's
    "Response vs render" table, long values included)."""
    served = {
        "title": "",
        "meta_description": None,
        "canonical": page.url + "?served-canonical=" + "long-value-" * 12,
        "meta_robots": "noindex, nofollow",
        "h1": page.h1,
        "h1_count": page.h1_count,
        "word_count": max(page.word_count - 180, 0),
        "internal_links": page.internal_links,
        "external_links": page.external_links,
        "links_only_rendered": 3,
        "links_only_rendered_examples": [page.url + "from-script"],
        "links_only_raw": 0,
    }
    Page.objects.filter(id=page.id).update(raw_values=served)
    page.refresh_from_db()
    return page


# --- the browser ------------------------------------------------------------------------------------------


@pytest.fixture
def chromium():
    """Playwright's sync API keeps an event loop in this thread, which makes Django refuse ORM calls as
    "async-unsafe": the test's own ORM calls are plain synchronous code."""
    with chromium_browser() as browser:
        yield browser


def _context(browser, live_server, width: int, session: str | None, *, bypass_csp: bool = False):
    context = browser.new_context(viewport={"width": width, "height": HEIGHT}, bypass_csp=bypass_csp)
    context.set_default_timeout(UI_TIMEOUT_MS)
    if session:
        context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    return context


AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
}"""

OVERFLOW = """() => {
  const doc = document.documentElement, width = window.innerWidth;
  if (doc.scrollWidth <= width) return null;
  const wide = [...document.querySelectorAll("body *")].filter(el => {
    const r = el.getBoundingClientRect();
    return r.right > width + 1 && !el.closest(".table-wrap, .scroll-box");
  }).slice(0, 5).map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : ""));
  return {scrollWidth: doc.scrollWidth, innerWidth: width, widest: wide};
}"""

# Things a phone hides without overflowing the page: a tab scrolled out of its row, chart labels on each other.
TABS_OUT_OF_SIGHT = """() => [...document.querySelectorAll(".tabs a")].filter(a => {
  const r = a.getBoundingClientRect();
  return r.left < 0 || r.right > window.innerWidth + 1;
}).map(a => a.textContent.trim())"""

LABELS_OVERLAPPING = """() => {
  const out = [];
  for (const svg of document.querySelectorAll("svg.chart-svg")) {
    const boxes = [...svg.querySelectorAll("text.label")].map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, ra] = boxes[i], [b, rb] = boxes[j];
      if (ra.left < rb.right - 1 && rb.left < ra.right - 1 && ra.top < rb.bottom - 1 && rb.top < ra.bottom - 1) {
        out.push(svg.id || svg.getAttribute("aria-labelledby") + ": " + a + " / " + b);
      }
    }
  }
  return out;
}"""


def _check_screen(browser, live_server, world, screen: Screen, width: int, session: str) -> list[str]:
    problems = []
    url = live_server.url + screen.url(world)
    cookie = session if screen.signed_in else None
    context = _context(browser, live_server, width, cookie)
    tab = context.new_page()
    errors = []
    tab.on("console", lambda m: m.type == "error" and errors.append(m.text))
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    response = tab.goto(url, wait_until="networkidle" if screen.name != "live-running" else "load")
    if response is None or response.status >= 400:
        problems.append(f"{screen.name}@{width}: HTTP {response.status if response else '?'} for {url}")
    if screen.signed_in and "/accounts/login/" in tab.url:
        problems.append(f"{screen.name}@{width}: sent to sign-in")
    overflow = tab.evaluate(OVERFLOW)
    if overflow:
        problems.append(f"{screen.name}@{width}: horizontal overflow {overflow}")
    if hidden := tab.evaluate(TABS_OUT_OF_SIGHT):
        problems.append(f"{screen.name}@{width}: tabs out of sight {hidden}")
    if overlapping := tab.evaluate(LABELS_OVERLAPPING):
        problems.append(f"{screen.name}@{width}: chart labels overlap {overlapping}")
    tab.screenshot(path=str(SHOTS_DIR / f"12d-{screen.name}-{width}.png"), full_page=True)
    if errors:
        problems.append(f"{screen.name}@{width}: console errors {errors}")
    context.close()

    # axe-core needs its script injected: this second context bypasses the page's CSP for that alone.
    context = _context(browser, live_server, width, cookie, bypass_csp=True)
    tab = context.new_page()
    tab.goto(url, wait_until="load")
    tab.add_script_tag(path=str(AXE))
    violations = [v for v in tab.evaluate(AXE_RUN) if v["impact"] in BLOCKING_IMPACTS]
    if violations:
        problems.append(f"{screen.name}@{width}: axe {violations}")
    context.close()
    return problems


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_screen_fits_a_phone_and_passes_axe(chromium, live_server, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    SHOTS_DIR.mkdir(parents=True, exist_ok=True)
    owner = UserFactory(username="screens")
    owner.set_password(PASSWORD)
    owner.save()
    client = Client()
    client.force_login(owner)
    session = client.cookies["sessionid"].value
    routes: dict = {}
    with serve(routes) as base:
        routes.update(crawl_site_routes(base, page_cases(base)))
        world = _world(owner, base, tmp_path / "media")
        problems = []
        for width in WIDTHS:
            for screen in SCREENS:
                problems += _check_screen(chromium, live_server, world, screen, width, session)
    assert not problems, "\n".join(problems)
