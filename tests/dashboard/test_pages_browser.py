"""The pages grid (every view), a page's detail and the performance screen in Debian's Chromium at 1440
and 390 px: no horizontal overflow of the page, no console errors, and axe-core (shipped inside the pinned
Lighthouse package) finds no serious or critical violation. Screenshots go to artifacts/screenshots/."""

import json
import random
from pathlib import Path

import pytest

from audits.models import Audit, LighthouseResult
from audits.pipeline.lighthouse import parse_report
from audits.pipeline.page_totals import page_counts_store
from audits.stats import audit_stats_count
from scratchpad.models import LinkEdge
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.factories import IssueFactory, LighthouseResultFactory, ProjectFactory, UserFactory
from tests.support.browser import chromium_browser
from tests.support.workers import REPO_ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

AXE = REPO_ROOT / "audits" / "lighthouse_runner" / "node_modules" / "axe-core" / "axe.min.js"
REPORT = Path(__file__).parent / "fixtures" / "lighthouse_report_mobile.json"
WIDTHS = (1440, 390)
SECTIONS = ("catalogue", "blog", "help", "about-us", "shop/category")


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def _site(owner, media_root: Path):
    """A finished audit of a small shop with the defects the views filter for, links and Lighthouse runs."""
    rng = random.Random(7)
    audit = finished_audit(ProjectFactory(owner=owner, name="Outdoor shop"), config={"lighthouse": True})
    home = make_page(
        audit,
        "/",
        title="Outdoor shop – tents, sleeping bags and everything for a long walk in the hills",
        meta_description="Tents, sleeping bags, stoves and rain gear, tested on long walks. Free delivery from 50 €.",
        h1="Outdoor gear for long walks",
        h1_count=1,
        headings=[
            [1, "Outdoor gear for long walks"],
            [2, "New this season"],
            [3, "Tents"],
            [3, "Stoves"],
            [2, "Guides"],
            [4, "Choosing a sleeping bag"],
            [2, "Newsletter"],
        ],  # fmt: skip
        response_headers={
            "content-type": "text/html; charset=utf-8",
            "cache-control": "public, max-age=300",
            "server": "nginx",
            "strict-transport-security": "max-age=31536000; includeSubDomains",
            "content-security-policy": "default-src 'self'; img-src 'self' data: https://images.example-cdn.test; "
            "script-src 'self' https://analytics.example.test",
        },
        response_time_ms=182,
        word_count=640,
        depth=0,
    )
    pages = [home]
    for n in range(40):
        section = SECTIONS[n % len(SECTIONS)]
        title = rng.choice(["Tent", "Sleeping bag", "Stove", "Rain jacket", "Boots"]) + f" model {n}"
        if n % 7 == 0:
            title = "Product"  # duplicate and short
        if n % 11 == 0:
            title = f"{title} – the lightest and most comfortable choice for a week of walking in the rain"
        pages.append(
            make_page(
                audit,
                f"/{section}/item-{n:03d}-with-a-rather-long-slug-for-the-product",
                title="" if n == 5 else title,
                meta_description=None if n % 4 == 0 else f"All about {title.lower()}: sizes, weight and prices.",
                h1="" if n % 9 == 0 else title,
                h1_count=0 if n % 9 == 0 else (2 if n == 10 else 1),
                canonical_url=""
                if n % 6 == 0
                else f"{SITE}/{section}/item-{n:03d}-with-a-rather-long-slug-for-the-product",
                meta_robots="noindex, follow" if n in (12, 13) else "",
                is_indexable=n not in (12, 13),
                status_code=404 if n == 30 else 200,
                response_time_ms=rng.randint(40, 1400),
                word_count=rng.randint(20, 1500),
                depth=1 + n % 4,
            )
        )
    for source in pages[:20]:
        for target in rng.sample(pages, 6):
            LinkEdge.objects.create(
                audit=audit, source_page=source, target_url=target.url, anchor_text=target.title[:40]
            )
    LinkEdge.objects.create(audit=audit, source_page=home, target_url="https://elsewhere.test/partners", internal=False)
    for n, page in enumerate(pages[1:]):
        if page.meta_description is None:
            make_issue(audit, page, "missing-meta-description", "warning")
        if n % 9 == 0:
            make_issue(audit, page, "missing-h1", "warning", h1_count=0)
    for n in range(4):
        details = {
            "target_url": f"{SITE}/old/page-{n}",
            "status_code": 404,
            "anchor_text": f"Old {n}",
            "links": 1,
        }
        IssueFactory(audit=audit, page=home, type="broken-internal-link", severity="critical", details=details,
                     dedupe_key=str(n))  # fmt: skip
    make_issue(audit, home, "title-too-long", "warning", title=home.title, chars=len(home.title), max_chars=60)

    report = json.loads(REPORT.read_text())
    parsed = parse_report(report)
    for page, strategy in ((home, "mobile"), (home, "desktop"), (pages[3], "mobile"), (pages[3], "desktop")):
        rel = f"lighthouse/{audit.id}/{page.id}-{strategy}.json"
        (media_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (media_root / rel).write_bytes(REPORT.read_bytes())
        fields = {k: v for k, v in parsed.items() if k not in ("status", "error", "cls")}
        if strategy == "desktop":  # a faster desktop run, for contrast
            fields.update(performance=81, lcp_ms=2900, fcp_ms=900, tbt_ms=150)
        LighthouseResultFactory(audit=audit, page=page, url=page.url, strategy=strategy, report_path=rel,
                                report_bytes=len(REPORT.read_bytes()), cls_score=parsed["cls"], **fields)  # fmt: skip
    assert LighthouseResult.objects.filter(audit=audit).count() == 4
    # The counters a crawl keeps equal to its page rows: the grid's unfiltered total and export label read them.
    Audit.objects.filter(id=audit.id).update(pages_crawled=len(pages), pages_total=len(pages))
    # Its counts and figures stored as finalize stores them: the grid sorts on PageCounts.
    page_counts_store(audit_id=audit.id)
    Audit.objects.filter(id=audit.id).update(stats=audit_stats_count(audit_id=audit.id))
    audit.refresh_from_db()
    return audit, home


def _check(tab, name: str, width: int) -> None:
    overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{name} at {width} px overflows by {overflow} px"
    tab.add_script_tag(content=AXE.read_text())
    result = tab.evaluate("async () => (await axe.run(document)).violations.map(v => [v.id, v.impact, v.nodes.length])")
    bad = [v for v in result if v[1] in ("serious", "critical")]
    assert not bad, f"{name} at {width} px: axe {bad}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"12b-{name}-{width}.png"), full_page=True)


def test_pages_detail_and_performance_screens_fit_and_pass_axe(browser, live_server, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    owner = UserFactory(username="carol")
    audit, home = _site(owner, tmp_path / "media")
    base = f"{live_server.url}/audits/{audit.id}"
    screens = [("pages", "/pages/")]
    screens += [
        (f"pages-{view}", f"/pages/?view={view}")
        for view in ("titles", "descriptions", "h1", "canonicals", "directives")
    ]
    counts = "cols=inlinks&cols=issues"  # sorted on the stored counts, most inlinks and fewest issues first
    screens += [
        ("pages-by-inlinks", f"/pages/?sort=-inlinks&{counts}"),
        ("pages-by-issues", f"/pages/?sort=issues&{counts}"),
    ]
    screens += [("page-detail", f"/pages/{home.id}/"), ("performance", "/performance/")]
    for width in WIDTHS:
        _visit(browser, live_server, base, screens, width)


def _visit(browser, live_server, base: str, screens: list, width: int) -> None:
    # bypass_csp lets the test inject axe-core; the pages' own CSP violations still show as console errors.
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    tab = context.new_page()
    errors = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    sign_in(tab, live_server, "carol")
    for name, path in screens:
        response = tab.goto(base + path)
        assert response.status == 200, (name, response.status)
        _check(tab, name, width)
    assert not errors, errors
    context.close()
