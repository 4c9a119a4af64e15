"""The health score (audits/checks/score.py): one test per severity's weight, the site-wide share, the score per
category, pages without errors, a restriction to some pages, the stored figures of a completed audit, and real
crawls of small sites served on 127.0.0.1 (H1 and meta description missing everywhere < 90; a clean site 100)."""

import pytest

from audits.checks.registry import UNSCORED_TYPES
from audits.checks.score import (
    DEDUCTION_POINTS,
    SCORE_FORMULA_VERSION,
    SCORE_FORMULA_WORDS,
    health_score,
    score_breakdown,
)
from audits.models import Audit, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import AuditFactory, IssueFactory, PageFactory, ProjectFactory
from tests.support.sites.pages import html_route, page, serve

pytestmark = pytest.mark.django_db

PAGES = 8


@pytest.fixture
def audit():
    return AuditFactory()


@pytest.fixture
def pages(audit):
    return [PageFactory(audit=audit) for _ in range(PAGES)]


def _issue(audit, type_, severity, page=None):
    return IssueFactory(audit=audit, page=page, type=type_, severity=severity)


@pytest.mark.parametrize(
    "severity, type_, points",
    [("critical", "broken-page", 25), ("warning", "missing-h1", 8), ("info", "url-underscores", 2)],
)
def test_each_severity_takes_its_weight_off_in_proportion_to_the_pages_it_affects(
    audit, pages, severity, type_, points
):
    assert DEDUCTION_POINTS[severity] == points
    for p in pages:  # on every page: the whole weight
        _issue(audit, type_, severity, p)
    assert score_breakdown(audit=audit).score == 100 - points
    Issue.objects.filter(page__in=pages[: PAGES // 2]).delete()  # on half the pages: half of it
    b = score_breakdown(audit=audit)
    assert b.score == 100 - points // 2
    assert [(d.type, d.severity, d.share, d.points) for d in b.deductions] == [(type_, severity, 0.5, points / 2)]


def test_no_finding_scores_100_and_no_page_is_not_scored(audit, pages):
    b = score_breakdown(audit=audit)
    assert (b.score, b.pages, b.pages_without_errors, b.error_free_percent) == (100, PAGES, PAGES, 100.0)
    assert b.deductions == [] and b.words.startswith("100 out of 100: no issue")
    empty = score_breakdown(audit=AuditFactory())
    assert (empty.score, empty.pages, empty.categories) == (None, 0, [])
    assert empty.words == "Not scored: no page was crawled."
    assert health_score(AuditFactory().id) == (None, 0)


def test_h1_and_meta_description_missing_on_every_page_is_clearly_below_90(audit, pages):
    for p in pages:
        _issue(audit, "missing-h1", "warning", p)
        _issue(audit, "missing-meta-description", "warning", p)
    b = score_breakdown(audit=audit)
    assert b.score == 84 < 90
    assert b.pages_without_errors == PAGES  # warnings are no errors: Ahrefs' measure stays at 100 %
    assert b.words == (
        "84 out of 100: most points are taken off by Missing H1 (a warning on every page, −8) and "
        "Missing meta description (a warning on every page, −8); 8 of 8 pages (100 %) have no error."
    )


def test_one_error_type_repeated_cannot_swing_the_score_end_to_end(audit, pages):
    for p in pages[: PAGES // 2]:
        _issue(audit, "broken-internal-link", "critical", p)
    b = score_breakdown(audit=audit)
    assert b.score == 88  # 100 - 25 x 0.5 = 87.5, rounded half up
    assert (b.pages_without_errors, b.error_free_percent) == (PAGES // 2, 50.0)


def test_a_site_wide_finding_counts_as_every_page_and_the_score_is_floored_at_0(audit, pages):
    _issue(audit, "sitemap-missing", "info")  # tied to no page
    assert score_breakdown(audit=audit).score == 98
    d = score_breakdown(audit=audit).deductions[0]
    assert (d.site_wide, d.share, d.pages) == (True, 1.0, 0)
    for type_ in ("broken-page", "server-error", "fetch-error", "blocked-page", "redirect-loop"):
        _issue(audit, type_, "critical")
    assert score_breakdown(audit=audit).score == 0  # 5 x 25 + 2 points off: not below 0


@pytest.mark.parametrize("type_", sorted(UNSCORED_TYPES))
def test_a_finding_the_site_may_have_chosen_or_the_audit_could_not_verify_takes_no_points(audit, pages, type_):
    _issue(audit, type_, "info")  # site-wide
    for p in pages:
        _issue(audit, type_, "warning", p)  # even raised to a warning on every page by an override
    b = score_breakdown(audit=audit)
    assert (b.score, b.deductions) == (100, [])
    _issue(audit, "sitemap-missing", "info")  # a scored notice beside it still counts
    assert score_breakdown(audit=audit).score == 98


def test_the_severity_stored_on_the_rows_counts_not_the_registry_default(audit, pages):
    for p in pages:  # a project override made missing-h1 critical
        _issue(audit, "missing-h1", "critical", p)
    assert score_breakdown(audit=audit).score == 75


def test_a_score_per_category_uses_the_same_formula_on_its_own_types(audit, pages):
    for p in pages:
        _issue(audit, "missing-h1", "warning", p)  # content
        _issue(audit, "missing-meta-description", "warning", p)  # metadata
    _issue(audit, "title-too-long", "warning", pages[0])  # metadata, 1 page of 8: 1 point
    categories = {c.category: (c.score, c.issues) for c in score_breakdown(audit=audit).categories}
    assert categories["content"] == (92, PAGES)
    assert categories["metadata"] == (91, PAGES + 1)
    assert categories["security"] == (100, 0)
    # Lighthouse's accessibility findings and custom extraction were not run: no score claims they passed.
    assert "accessibility" not in categories and "custom" not in categories
    with_lighthouse = AuditFactory(config={"lighthouse": True, "extractors": [{"name": "price"}]})
    PageFactory(audit=with_lighthouse)
    names = [c.category for c in score_breakdown(audit=with_lighthouse).categories]
    assert "accessibility" in names and "custom" in names


def test_pages_without_errors_is_the_share_of_pages_with_no_critical_issue(audit, pages):
    _issue(audit, "broken-page", "critical", pages[0])
    _issue(audit, "missing-title", "critical", pages[0])
    _issue(audit, "server-error", "critical", pages[1])
    _issue(audit, "missing-h1", "warning", pages[2])
    _issue(audit, "redirect-loop", "critical")  # site-wide: no page of its own
    b = score_breakdown(audit=audit)
    assert (b.pages_without_errors, b.error_free_percent) == (6, 75.0)


def test_pages_restricts_the_score_to_those_pages_and_leaves_site_wide_findings_out(audit, pages):
    blog = [PageFactory(audit=audit, url=f"{audit.site_url}blog/post-{n}") for n in range(4)]
    for p in blog:
        _issue(audit, "broken-page", "critical", p)
    _issue(audit, "missing-h1", "warning", pages[0])
    _issue(audit, "sitemap-missing", "info")
    other = AuditFactory()  # a queryset reaching past the audit counts only the audit's pages
    PageFactory(audit=other, url=f"{other.site_url}blog/elsewhere")
    in_blog = score_breakdown(audit=audit, pages=Page.objects.filter(url__contains="/blog/"))
    assert (in_blog.score, in_blog.pages, in_blog.pages_without_errors) == (75, 4, 0)
    assert [d.type for d in in_blog.deductions] == ["broken-page"]
    rest = score_breakdown(audit=audit, pages=Page.objects.exclude(url__contains="/blog/"))
    assert (rest.score, rest.pages, rest.pages_without_errors) == (99, PAGES, PAGES)  # 8 / 8 x 1: -1
    whole = score_breakdown(audit=audit)
    assert whole.pages == PAGES + 4 and {d.type for d in whole.deductions} == {
        "broken-page",
        "missing-h1",
        "sitemap-missing",
    }


def test_a_completed_audit_is_read_from_its_stored_figures_without_a_query(audit, pages, django_assert_num_queries):
    from audits.pipeline.finalize import audit_finalize

    for p in pages:
        _issue(audit, "missing-h1", "warning", p)
    Audit.objects.filter(id=audit.id).update(current_phase=Audit.Phase.CRAWLING, status=Audit.Status.RUNNING)
    assert audit_finalize(audit_id=audit.id)
    audit.refresh_from_db()
    assert (audit.health_score, audit.score_formula) == (92, SCORE_FORMULA_VERSION)
    stored = audit.stats["score"]
    assert stored["formula"] == SCORE_FORMULA_VERSION and stored["score"] == 92
    assert stored["pages_without_errors"] == PAGES
    assert {"category": "content", "label": "Content", "score": 92, "issues": PAGES} in stored["categories"]
    with django_assert_num_queries(0):
        b = score_breakdown(audit=audit)
    assert b.score == audit.health_score and b.pages_without_errors == PAGES


def test_the_formula_is_stated_in_words_once(audit):
    for words in ("25 points for an error", "8 for a warning", "2 for a notice", "whole site", "never drops below 0"):
        assert words in SCORE_FORMULA_WORDS
    assert "×" not in SCORE_FORMULA_WORDS and "÷" not in SCORE_FORMULA_WORDS


# --- real crawls ------------------------------------------------------------------------------------


def _crawl(routes: dict) -> Audit:
    with serve(routes) as base:
        routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, f"Sitemap: {base}/sitemap.xml\n".encode())
        urls = "".join(f"<url><loc>{base}{path}</loc></url>" for path in routes if not path.endswith((".txt", ".xml")))
        sitemap = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        routes["/sitemap.xml"] = (200, {"Content-Type": "application/xml"}, sitemap.encode())
        project = ProjectFactory(base_url=base + "/")
        audit = audit_start(project=project, start_url=base + "/", max_pages=50, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


SECURE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "strict-origin-when-cross-origin",
}


def _site(**page_kwargs) -> dict:
    """Five pages linking to each other, with the security headers a clean site sends."""
    names = ["home", "alpha", "beta", "gamma", "delta"]
    links = [(f"/{n}", f"Read about {n}") for n in names[1:]]
    routes = {
        ("/" if n == "home" else f"/{n}"): html_route(page(n, links=links, **page_kwargs), headers=SECURE_HEADERS)
        for n in names
    }
    # and the llms.txt a clean site publishes (llms-txt-missing otherwise)
    routes["/llms.txt"] = (200, {"Content-Type": "text/markdown"}, b"# Test site\n\n## Pages\n- [Alpha](/alpha)\n")
    return routes


@pytest.mark.django_db(transaction=True)
def test_a_crawled_site_without_h1_and_meta_description_anywhere_scores_below_90():
    audit = _crawl(_site(h1=None, description=None))
    found = set(Issue.objects.filter(audit=audit).values_list("type", flat=True))
    assert found == {"missing-h1", "missing-meta-description"}
    b = score_breakdown(audit=audit)
    assert audit.health_score == b.score == 84 < 90  # two warnings on every page: 8 points each
    assert audit.score_formula == SCORE_FORMULA_VERSION
    assert b.pages_without_errors == b.pages == 5  # no error: the old formula gave this site 100


@pytest.mark.django_db(transaction=True)
def test_a_crawled_clean_site_scores_100():
    audit = _crawl(_site())
    assert list(Issue.objects.filter(audit=audit).values_list("type", flat=True)) == []
    assert audit.health_score == 100
    assert score_breakdown(audit=audit).error_free_percent == 100.0


def test_a_restricted_or_running_audit_costs_two_queries_whatever_its_size(audit, pages, django_assert_num_queries):
    for p in pages:
        _issue(audit, "missing-h1", "warning", p)
    with django_assert_num_queries(2):  # pages without errors; issue rows per type
        score_breakdown(audit=audit, pages=Page.objects.filter(url__contains="/page-"))
    with django_assert_num_queries(2):
        score_breakdown(audit=audit)
    for _ in range(40):
        _issue(audit, "server-error", "critical", PageFactory(audit=audit))
    with django_assert_num_queries(2):
        assert score_breakdown(audit=audit, pages=Page.objects.all()).pages == PAGES + 40
