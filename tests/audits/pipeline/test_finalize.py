"""Finalize on crawled test sites: identical issue rows when it runs again, the health score, the page limit."""

import json

import pytest

from audits.checks import health_score, score_breakdown
from audits.checks.site import run_site_checks
from audits.events import FINALIZE_STAGES
from audits.models import Audit, AuditEvent, Issue
from audits.pipeline.depth import page_depths_store
from audits.pipeline.finalize import audit_finalize
from audits.pipeline.images import images_judge
from audits.pipeline.inline import pipeline_crawl_inline, pipeline_run_inline
from audits.pipeline.start import audit_start
from scratchpad.models import Frontier
from tests.factories import ProjectFactory
from tests.support.sites.crawled import HOME_LINKS, site_check_routes
from tests.support.sites.pages import html_route, page, serve

pytestmark = pytest.mark.django_db(transaction=True)


def _start(base: str, max_pages: int = 200) -> Audit:
    project = ProjectFactory(base_url=base + "/")
    return audit_start(project=project, start_url=base + "/", max_pages=max_pages, dispatch=False)


def _snapshot(audit) -> list[tuple]:
    return sorted(
        (str(i.id), i.type, i.severity, str(i.page_id), i.page_url, json.dumps(i.details, sort_keys=True))
        for i in Issue.objects.filter(audit=audit)
    )


def test_finalize_run_twice_gives_identical_issue_rows():
    routes = {}
    with serve(routes) as base:
        routes.update(site_check_routes(base))
        routes["/"] = html_route(page("home", links=[(p, f"Go to {p}") for p in HOME_LINKS], words=100))
        audit = _start(base)
        assert pipeline_crawl_inline(audit.id)
    audit.refresh_from_db()
    assert Frontier.objects.filter(audit=audit).exists()

    page_depths_store(audit_id=audit.id)  # finalize's first step: exact depths, deep-page judged on them
    run_site_checks(audit)
    images_judge(audit)  # the site-check step's image pass (a pipeline stage: checks do no network I/O)
    first = _snapshot(audit)
    types = {row[1] for row in first}
    assert types >= {"redirect-chain", "redirect-loop", "orphan-page", "duplicate-title", "broken-internal-link"}
    run_site_checks(audit)
    images_judge(audit)
    assert _snapshot(audit) == first

    assert audit_finalize(audit_id=audit.id)  # runs the site checks again, then purges the frontier
    assert _snapshot(audit) == first
    # the completed event says how long each stage took, every stage named (jsonb keeps no key order)
    timed = AuditEvent.objects.get(audit=audit, kind=AuditEvent.Kind.COMPLETED).data["finalize_stages_s"]
    assert set(timed) == set(FINALIZE_STAGES)
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in timed.values())
    assert not Frontier.objects.filter(audit=audit).exists()
    assert not audit_finalize(audit_id=audit.id)  # a duplicated finalize message finds the audit completed
    run_site_checks(audit)  # and a retried site-check step after the purge changes nothing either
    images_judge(audit)
    assert _snapshot(audit) == first


def test_health_score_on_a_known_site():
    routes = {
        "/": html_route(page("home", links=[("/a", "Page A"), ("/b", "Page B"), ("/c", "Page C")])),
        "/a": html_route(page("a", links=[("/", "Home page"), ("/missing", "A missing page")])),
        "/b": html_route(page("b", title=None)),
        "/c": html_route(page("c")),
    }
    with serve(routes) as base:
        audit = _start(base)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    critical = set(
        Issue.objects.filter(audit=audit, severity="critical", page__isnull=False).values_list("page__url", "type")
    )
    assert critical == {
        (base + "/a", "broken-internal-link"),
        (base + "/b", "missing-title"),
        (base + "/missing", "broken-page"),
    }
    assert Issue.objects.filter(audit=audit, page__isnull=True, type="sitemap-missing").exists()
    site_wide = set(Issue.objects.filter(audit=audit, page__isnull=True).values_list("type", "severity"))
    assert site_wide == {
        ("sitemap-missing", "info"),
        ("llms-txt-missing", "info"),
        ("missing-referrer-policy", "info"),
        ("missing-x-content-type-options", "info"),
        ("missing-x-frame-options", "info"),
    }
    # 5 URLs crawled (/, /a, /b, /c, /missing): 3 critical types on 1 page each (3 x 25 / 5 = 15 points) and
    # 4 site-wide notices (4 x 2 = 8 points) take 23 off: llms-txt-missing is stated but not scored
    # (registry.UNSCORED_TYPES); 2 of the 5 pages have no critical issue.
    assert audit.health_score == 77
    assert health_score(audit.id) == (77, 5)
    assert "llms-txt-missing" not in {d.type for d in score_breakdown(audit=audit).deductions}
    assert score_breakdown(audit=audit).pages_without_errors == 2


def test_page_limit_reported_and_orphans_not_judged():
    links = [(f"/p{n}", f"Page number {n}") for n in range(10)]
    routes = {f"/p{n}": html_route(page(f"p{n}")) for n in range(10)}
    routes["/"] = html_route(page("home", links=links))
    routes["/lonely"] = html_route(page("lonely"))
    with serve(routes) as base:
        routes["/sitemap.xml"] = (
            200,
            {"Content-Type": "application/xml"},
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{base}/lonely</loc></url>'
            f"</urlset>".encode(),
        )
        audit = _start(base, max_pages=4)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    (limit,) = Issue.objects.filter(audit=audit, type="max-pages-reached")
    assert limit.page_id is None
    assert limit.details["max_pages"] == 4 and limit.details["pages_crawled"] == 4
    assert limit.details["urls_pending"] == 8  # 10 linked pages + the sitemap URL, less 3 crawled besides home
    assert not Issue.objects.filter(audit=audit, type="orphan-page").exists()
    assert not Issue.objects.filter(audit=audit, type="sitemap-missing").exists()
