"""The resource pass, a stage of finalize (audits.pipeline.resources): each distinct script, stylesheet, icon and
@font-face font the crawled pages load is asked once (HEAD, GET where HEAD is refused; a stylesheet read for its
fonts), on the site or another origin; the resource checks judge the answers. A real crawl of sites served on
127.0.0.1 and 127.0.0.2, whose requests are counted at the servers."""

import pytest

from audits.checks.site import run_site_checks
from audits.models import Audit, Issue
from audits.pipeline import resources
from audits.pipeline.inline import pipeline_crawl_inline, pipeline_run_inline
from audits.pipeline.resources import resources_judge
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites.resources import ALSO_PAGE, BASIC, BROKEN_PAGE, PASSWORD, USER, resource_sites

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCE_TYPES = ("broken-script", "broken-stylesheet", "broken-font", "broken-icon")


def _crawl(site, **project_options) -> Audit:
    project = ProjectFactory(base_url=site.url + "/", **project_options)
    audit = audit_start(project=project, start_url=site.url + "/", max_pages=10, dispatch=False)
    assert pipeline_crawl_inline(audit.id)
    audit.refresh_from_db()
    return audit


def _found(audit, site) -> set[tuple]:
    """(type, page path, resource URL with the site's base as "~", status, error)"""
    return {
        (
            i.type,
            i.page_url.removeprefix(site.url),
            i.details["target_url"].replace(site.url, "~"),
            i.details["status_code"],
            i.details["fetch_error"],
        )
        for i in Issue.objects.filter(audit=audit, type__in=RESOURCE_TYPES)
    }


def test_each_resource_is_asked_once_and_the_broken_ones_are_reported_on_the_pages_loading_them():
    with resource_sites() as (site, cdn):
        audit = _crawl(site)
        assert _found(audit, site) == set()  # the crawl itself asks for no resource
        site.clear(), cdn.clear()
        resources_judge(audit)
        site_hits, cdn_hits = site.hits(), cdn.hits()
        site_heads, site_gets = site.hits("HEAD"), site.hits("GET")
    cdn_missing = cdn.url + "/mathjax/missing.js"
    assert _found(audit, site) == {
        ("broken-script", BROKEN_PAGE, "~/js/missing.js", 404, ""),
        ("broken-script", ALSO_PAGE, "~/js/missing.js", 404, ""),
        ("broken-script", BROKEN_PAGE, cdn_missing, 404, ""),
        ("broken-stylesheet", BROKEN_PAGE, "~/css/missing.css", 404, ""),
        ("broken-font", BROKEN_PAGE, "~/fonts/missing.woff2", 404, ""),
        ("broken-font", ALSO_PAGE, "~/fonts/missing.woff2", 404, ""),
        ("broken-icon", BROKEN_PAGE, "~/favicon-missing.ico", 404, ""),
    }  # the twin page (working script, stylesheets, font, icon, CDN script, HEAD-refused script): nothing
    font = Issue.objects.get(audit=audit, type="broken-font", page_url=site.url + BROKEN_PAGE)
    assert (font.details["kind"], font.details["stylesheet"]) == ("font", site.url + "/css/fonts.css")
    # Once per distinct URL, however many pages load it: HEAD, or GET for a stylesheet (its text is read) and
    # HEAD then GET where HEAD was refused. No page was fetched again.
    assert site_hits == {
        "/js/missing.js": 1, "/js/app.js": 1, "/favicon-missing.ico": 1, "/favicon.ico": 1,
        "/css/missing.css": 1, "/css/fonts.css": 1, "/css/site.css": 1, "/css/fonts-ok.css": 1,
        "/fonts/missing.woff2": 1, "/fonts/ok.woff2": 1, "/js/head-refused.js": 2,
    }  # fmt: skip
    assert site_heads["/js/head-refused.js"] == site_gets["/js/head-refused.js"] == 1
    assert {path for path, n in site_gets.items() if n} == {
        "/css/missing.css", "/css/fonts.css", "/css/site.css", "/css/fonts-ok.css", "/js/head-refused.js"
    }  # fmt: skip
    assert cdn_hits == {"/mathjax/missing.js": 1, "/mathjax/tex.js": 1}


def test_run_again_it_replaces_its_issues_with_the_same_rows():
    with resource_sites() as (site, _cdn):
        audit = _crawl(site)
        resources_judge(audit)
        first = sorted(Issue.objects.filter(audit=audit, type__in=RESOURCE_TYPES).values_list("id", "type", "details"))
        resources_judge(audit)
    again = sorted(Issue.objects.filter(audit=audit, type__in=RESOURCE_TYPES).values_list("id", "type", "details"))
    assert len(first) == 7
    assert again == first


def test_site_credentials_go_to_the_site_only():
    with resource_sites() as (site, cdn):
        audit = _crawl(site, auth_username=USER, auth_password=PASSWORD)
        site.clear(), cdn.clear()
        resources_judge(audit)
    assert site.seen and all(auth == BASIC for _method, _path, auth in site.seen)
    assert cdn.seen and all(auth == "" for _method, _path, auth in cdn.seen)


def test_disabled_checks_ask_nothing_and_the_font_check_alone_reads_stylesheets():
    with resource_sites() as (site, cdn):
        audit = _crawl(site)
        audit.config = {**audit.config, "checks": {"disabled": list(RESOURCE_TYPES)}}
        audit.save(update_fields=["config"])
        site.clear(), cdn.clear()
        resources_judge(audit)
        assert (site.seen, cdn.seen, _found(audit, site)) == ([], [], set())

        audit.config = {**audit.config, "checks": {"disabled": ["broken-script", "broken-stylesheet", "broken-icon"]}}
        audit.save(update_fields=["config"])
        resources_judge(audit)
        assert cdn.seen == []
        assert set(site.hits()) == {
            "/css/missing.css", "/css/fonts.css", "/css/site.css", "/css/fonts-ok.css", "/fonts/missing.woff2",
            "/fonts/ok.woff2",
        }  # fmt: skip
    assert {t for t, *_ in _found(audit, site)} == {"broken-font"}


def test_the_pass_asks_for_at_most_its_bound_of_urls(monkeypatch):
    monkeypatch.setattr(resources, "RESOURCE_REQUESTS_MAX_PER_AUDIT", 3)
    with resource_sites() as (site, cdn):
        audit = _crawl(site)
        site.clear(), cdn.clear()
        resources_judge(audit)
        asked = set(site.hits()) | set(cdn.hits())
    assert len(asked) == 3


def test_a_full_audit_reports_them_and_the_site_checks_keep_them():
    with resource_sites() as (site, _cdn):
        project = ProjectFactory(base_url=site.url + "/")
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=10, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    found = _found(audit, site)
    assert len(found) == 7
    run_site_checks(audit)  # a rerun of the site checks leaves the pass's issues alone
    assert _found(audit, site) == found


def test_past_its_time_budget_the_pass_asks_nothing_more_and_judges_nothing_unasked(monkeypatch):
    monkeypatch.setattr(resources, "RESOURCE_PASS_BUDGET_S", 0)
    with resource_sites() as (site, cdn):
        audit = _crawl(site)
        site.clear(), cdn.clear()
        resources_judge(audit)
        assert (site.seen, cdn.seen) == ([], [])
    assert _found(audit, site) == set()


def test_the_egress_guard_holds_for_every_resource(settings):
    """With private targets refused (production), no resource on a private address is asked, and what the guard
    refused is not reported as broken (the guard's rule, not the site's fault)."""
    with resource_sites() as (site, cdn):
        audit = _crawl(site)
        site.clear(), cdn.clear()
        settings.ALLOW_PRIVATE_TARGETS = False
        resources_judge(audit)
        assert (site.seen, cdn.seen) == ([], [])
    assert _found(audit, site) == set()
