"""Issue 14c: structured data (JSON-LD, microdata, RDFa against the rich-result table), image attributes,
pagination sequences (a small crawl on 127.0.0.1) and accessibility failures from the Lighthouse phase.

The planted page cases with their clean twins live in tests/support/sites/ and run through
test_page_checks.py (unit) and test_crawled_site.py (crawled); this file checks what those cannot."""

import uuid

import pytest

from audits.checks import CheckSettings
from audits.checks.page import page_issues
from audits.checks.registry import CHECKS_BY_TYPE
from audits.checks.structured_data import RICH_RESULT_PROPERTIES, missing_properties, rich_type
from audits.models import Issue, LighthouseResult, Page, lighthouse_id_for, page_id_for
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.lighthouse import accessibility_violations, lighthouse_issues_for_audit, parse_report
from audits.pipeline.start import audit_start
from crawler.fetch import FetchResult
from crawler.parse import parse_html
from tests.factories import AuditFactory, ProjectFactory
from tests.support.sites.crawled import IMAGES_PAGE, IMAGES_TWIN, PAGINATION, image_routes, pagination_routes
from tests.support.sites.pages import html_route, page, serve
from tests.support.sites.structured_image_cases import LONG_ALT

pytestmark = pytest.mark.django_db
AUDIT_ID = uuid.UUID("00000000-0000-0000-0000-0000000014c0")

# --- parsing -------------------------------------------------------------------------------------------


def test_entities_of_all_three_syntaxes_with_their_filled_properties():
    html = b"""<html><head>
    <script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
      {"@type": "Organization", "name": "Acme", "url": ""},
      {"@type": ["Product", "Thing"], "name": "Kettle", "offers": {"@type": "Offer", "price": "3"}}]}</script>
    <script type="application/ld+json">{"@type": "Article", </script>
    </head><body>
    <div itemscope itemtype="http://schema.org/Event"><span itemprop="name">Gig</span>
      <div itemprop="location" itemscope itemtype="https://schema.org/Place"><span itemprop="name">Hall</span></div>
    </div>
    <div vocab="https://schema.org/" typeof="VideoObject"><span property="name">Clip</span></div>
    </body></html>"""
    data = parse_html(html, "http://x.test/p")
    assert data.jsonld_blocks == 2 and data.jsonld_invalid == 1
    items = [(i["syntax"], i["type"], i["properties"]) for i in data.structured_items]
    assert items == [
        ("json-ld", "Organization", ["name"]),  # an empty url is not a property given
        ("json-ld", "Product", ["name", "offers"]),
        ("json-ld", "Thing", ["name", "offers"]),
        ("microdata", "Event", ["location", "name"]),  # the nested Place is a value, not an entity of its own
        ("rdfa", "VideoObject", ["name"]),
    ]


def test_image_attributes_and_pagination_links_are_read():
    html = f"""<html><head><link rel="next" href="?page=3"><link rel="prev" href="/list?page=1"></head><body>
    <img src="/a.png" alt="A" width="10" height="10"><img src="/b.png" alt="{LONG_ALT}" width="5">
    <img src="data:image/png;base64,AAAA" alt=""><img src="/a.png" height="3"></body></html>""".encode()
    data = parse_html(html, "http://x.test/list?page=2")
    assert data.rel_next == "http://x.test/list?page=3" and data.rel_prev == "http://x.test/list?page=1"
    assert data.image_urls == ["http://x.test/a.png", "http://x.test/b.png"]  # distinct, no data: URLs
    assert data.images_missing_size == 3
    assert data.images_missing_size_srcs[0] == "http://x.test/b.png"
    assert ("http://x.test/b.png", len(LONG_ALT.strip())) in data.image_alts


def test_the_rich_result_table():
    assert rich_type("BlogPosting") == "Article" and rich_type("Restaurant") == "LocalBusiness"
    assert rich_type("WebPage") is None
    assert missing_properties("Product", ["name", "review"]) == ([], ["image", "description", "brand", "sku|gtin|mpn"])
    assert missing_properties("Product", ["name"])[0] == ["offers|review|aggregateRating"]
    assert missing_properties("VideoObject", [])[0] == ["name", "thumbnailUrl", "uploadDate"]
    for type_name in ("Article", "Product", "BreadcrumbList", "FAQPage", "Organization", "LocalBusiness", "Event",
                      "Recipe", "VideoObject"):  # fmt: skip
        assert type_name in RICH_RESULT_PROPERTIES


def test_every_new_type_is_in_the_registry_with_texts():
    for issue_type in (
        "structured-data-missing-required", "structured-data-missing-recommended", "image-missing-size",
        "image-alt-too-long", "pagination-broken-sequence", "pagination-url-not-ok", "pagination-loop",
        "accessibility-violation",
    ):  # fmt: skip
        spec = CHECKS_BY_TYPE[issue_type]
        assert spec.title and spec.explanation and spec.how_to_fix and spec.category != "other"
    assert CHECKS_BY_TYPE["image-alt-too-long"].thresholds == {"max_chars": 100}


# --- pagination and images: a small crawl ---------------------------------------------------------------


@pytest.fixture
def small_crawl():
    routes: dict = {}
    with serve(routes) as base:
        routes.update(pagination_routes(base))
        routes.update(image_routes())
        links = [(path, f"Go to {path}") for path in [*PAGINATION, "/pgn/missing", IMAGES_PAGE, IMAGES_TWIN]]
        routes["/"] = html_route(page("home", links=links, words=len(links) * 3 + 20))
        project = ProjectFactory(base_url=base + "/")
        audit = audit_start(project=project, start_url=base + "/", max_pages=50, dispatch=False)
        pipeline_run_inline(audit.id)
        found: dict = {}
        types = ("pagination-broken-sequence", "pagination-url-not-ok", "pagination-loop", "broken-image",
                 "image-too-large")  # fmt: skip
        for issue in Issue.objects.filter(audit=audit, type__in=types):
            found.setdefault(issue.type, {})[issue.page_url.removeprefix(base)] = issue.details
        yield base, audit, found


def test_pagination_sequences(small_crawl):
    base, audit, found = small_crawl
    stored = Page.objects.get(audit=audit, url=base + "/pg/2")
    assert (stored.rel_prev, stored.rel_next) == (base + "/pg/1", base + "/pg/3")
    broken = found["pagination-broken-sequence"]
    assert set(broken) == {"/pgb/1", "/pgb/2"}  # the clean /pg/ series is the twin
    assert broken["/pgb/1"]["target_points_to"] == base + "/pg/1"
    not_ok = found["pagination-url-not-ok"]
    assert set(not_ok) == {"/pgn/1", "/pgn/2"}
    assert not_ok["/pgn/1"]["status_code"] == 404 and not not_ok["/pgn/2"]["indexable"]
    assert found["pagination-loop"] == {"/pgl/a": {"loop_length": 2, "urls": [base + "/pgl/a", base + "/pgl/b"]}}


# --- accessibility from Lighthouse -----------------------------------------------------------------------


def _report(failures: dict) -> dict:
    """A Lighthouse report whose accessibility category holds `failures` {rule: (score, impact, nodes)}."""
    audits = {
        rule: {"score": score, "title": f"Rule {rule}", "details": {"debugData": {"impact": impact}, "items": [{}] * n}}
        for rule, (score, impact, n) in failures.items()
    }
    refs = [{"id": rule} for rule in failures]
    return {"categories": {"performance": {"score": 0.99}, "accessibility": {"auditRefs": refs}}, "audits": audits}


def test_serious_and_critical_axe_failures_become_issues_per_page_and_rule():
    report = _report(
        {
            "image-alt": (0, "critical", 2),
            "color-contrast": (0, "serious", 5),
            "region": (0, "moderate", 9),  # not serious enough
            "label": (1, "critical", 0),  # passed
        }
    )
    assert [(v["rule"], v["impact"], v["nodes"]) for v in accessibility_violations(report)] == [
        ("image-alt", "critical", 2),
        ("color-contrast", "serious", 5),
    ]
    audit = AuditFactory(start_url="https://x.test/", site_url="https://x.test/")
    url = "https://x.test/"
    page_row = Page.objects.create(id=page_id_for(audit.id, url), audit=audit, url=url, fetch_class="ok")
    for strategy in ("mobile", "desktop"):  # the same failures on both: one issue per page and rule
        LighthouseResult.objects.create(
            id=lighthouse_id_for(audit.id, page_row.id, strategy),
            audit=audit,
            page=page_row,
            url=url,
            strategy=strategy,
            status="ok",
            summary=parse_report(report)["summary"],
        )
    lighthouse_issues_for_audit(audit=audit)
    issues = {i.details["rule"]: i for i in Issue.objects.filter(audit=audit, type="accessibility-violation")}
    assert set(issues) == {"image-alt", "color-contrast"}
    assert issues["image-alt"].severity == "critical" and issues["color-contrast"].severity == "warning"
    assert issues["color-contrast"].details["nodes"] == 5 and issues["color-contrast"].page_id == page_row.id

    audit.config = {"checks": {"disabled": ["accessibility-violation"]}}
    audit.save()
    lighthouse_issues_for_audit(audit=audit)
    assert not Issue.objects.filter(audit=audit, type="accessibility-violation").exists()


def test_broken_and_too_large_images_from_one_request_each(small_crawl):
    base, audit, found = small_crawl
    assert found["broken-image"] == {
        IMAGES_PAGE: {
            "images_count": 1,
            "images": [{"src": base + "/img/missing.png", "status_code": 404, "error": ""}],
        }
    }
    assert found["image-too-large"] == {
        IMAGES_PAGE: {"images_count": 1, "max_kb": 300, "images": [{"src": base + "/img/big.png", "kb": 400}]}
    }  # the twin shows only the small image
    assert Page.objects.get(audit=audit, url=base + IMAGES_TWIN).image_urls == [base + "/img/small.png"]


def test_project_overrides_reach_the_new_page_checks():
    html = page("over", body=f'<img src="/a.png" alt="{LONG_ALT}">').encode()
    url = "http://x.test/over"
    row = Page(id=page_id_for(AUDIT_ID, url), audit_id=AUDIT_ID, url=url, status_code=200, is_indexable=True)
    result = FetchResult(url=url, status_code=200, content_type="text/html", body=html, bytes_read=len(html))
    data = parse_html(html, url)

    def types(settings):
        return {i.type for i in page_issues(row, data, result, settings)}

    assert {"image-alt-too-long", "image-missing-size"} <= types(CheckSettings())
    raised = CheckSettings(thresholds={"image-alt-too-long": {"max_chars": 200}}, disabled={"image-missing-size"})
    assert not {"image-alt-too-long", "image-missing-size"} & types(raised)


# --- issue 27: pagination targets are crawled -------------------------------------------------------------

# Reached only through <link rel="next"/"prev">: the home page links the first page of each series and nothing
# else. /only/* is clean (the twin), /to404, /toredirect and /tonoindex each point at a page that is not an
# indexable 200; /toprivate's next page is disallowed by robots.txt and is never fetched.
ONLY_PAGINATION = {
    "/only/1": (None, "/only/2"), "/only/2": ("/only/1", "/only/3"), "/only/3": ("/only/2", None),
    "/to404/1": (None, "/to404/2"),
    "/toredirect/1": (None, "/toredirect/2"),
    "/tonoindex/1": (None, "/tonoindex/2"), "/tonoindex/2": ("/tonoindex/1", None),
    "/toprivate/1": (None, "/private/2"),
}  # fmt: skip


@pytest.fixture
def pagination_only_crawl():
    routes: dict = {}
    with serve(routes) as base:
        for path, (prev, nxt) in ONLY_PAGINATION.items():
            head = "".join(f'<link rel="{rel}" href="{base}{to}">' for rel, to in (("prev", prev), ("next", nxt)) if to)
            if path == "/tonoindex/2":
                head += '<meta name="robots" content="noindex">'
            routes[path] = html_route(page("series" + path.replace("/", "-"), head=head))
        routes["/toredirect/2"] = (301, {"Location": base + "/toredirect/moved"}, b"")
        routes["/toredirect/moved"] = html_route(page("series-moved"))
        routes["/private/2"] = html_route(page("series-private"))
        routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private/\n")
        firsts = ["/only/1", "/to404/1", "/toredirect/1", "/tonoindex/1", "/toprivate/1"]
        routes["/"] = html_route(page("home", links=[(p, f"Series {p}") for p in firsts], words=40))
        project = ProjectFactory(base_url=base + "/")
        audit = audit_start(project=project, start_url=base + "/", max_pages=50, dispatch=False)
        pipeline_run_inline(audit.id)
        found = {
            issue.page_url.removeprefix(base): issue.details
            for issue in Issue.objects.filter(audit=audit, type="pagination-url-not-ok")
        }
        pages = {p.url.removeprefix(base): p for p in Page.objects.filter(audit=audit)}
        yield base, found, pages


def test_pagination_targets_are_crawled_and_judged(pagination_only_crawl):
    base, found, pages = pagination_only_crawl
    assert pages["/only/2"].found_via == "pagination" and pages["/only/3"].found_via == "pagination"
    assert pages["/only/2"].found_from == base + "/only/1"
    assert pages["/only/1"].found_via == "link"  # linked from the home page: a link, whatever else names it
    assert pages["/to404/2"].status_code == 404
    assert pages["/toredirect/2"].status_code == 301 and "/toredirect/moved" in pages  # the redirect followed
    assert "/private/2" not in pages or pages["/private/2"].status_code is None  # robots.txt: never fetched
    assert set(found) == {"/to404/1", "/toredirect/1", "/tonoindex/1"}  # the /only/ series is the clean twin
    assert found["/to404/1"]["status_code"] == 404 and found["/to404/1"]["rel"] == "next"
    assert found["/toredirect/1"]["status_code"] == 301
    assert found["/tonoindex/1"]["status_code"] == 200 and not found["/tonoindex/1"]["indexable"]


def test_pagination_targets_count_in_the_page_budget():
    routes: dict = {}
    with serve(routes) as base:
        for n in range(1, 30):
            head = f'<link rel="next" href="{base}/long/{n + 1}">'
            routes[f"/long/{n}"] = html_route(page(f"long-{n}", head=head))
        routes["/"] = html_route(page("home", links=[("/long/1", "Long series")], words=40))
        audit = audit_start(
            project=ProjectFactory(base_url=base + "/"), start_url=base + "/", max_pages=6, dispatch=False
        )
        pipeline_run_inline(audit.id)
        crawled = Page.objects.filter(audit=audit).exclude(status_code=None)
        assert crawled.count() == 6
        assert crawled.filter(found_via="pagination").count() == 4  # /long/2 … /long/5
