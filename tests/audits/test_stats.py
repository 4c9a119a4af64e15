"""The figures finalize stores (audits.stats, PageCounts): equal to a recount of the rows they sum up, read
without a query once the audit completed, counted for any other audit, and the screens that read them show
the same figures either way."""

import pytest
from django.db import connection
from django.db.models import Count, Value
from django.db.models.functions import Coalesce
from django.test.utils import CaptureQueriesContext

from audits import stats
from audits.checks.score import score_breakdown
from audits.models import Audit, Issue, Page, PageCounts
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.priority import issue_summary
from audits.selectors.audits import audit_progress
from audits.selectors.issues import issues_by_severity, issues_by_type
from audits.selectors.links import page_inlinks_subquery
from audits.selectors.pages import page_filter
from dashboard.report import report_summary
from dashboard.selectors import page_distributions
from tests.factories import ProjectFactory
from tests.support.sites.crawled import HOME_LINKS, site_check_routes
from tests.support.sites.pages import html_route, page, serve

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def crawled(transactional_db):
    """A site with every site-check situation, crawled and finalized by the real pipeline."""
    routes = {}
    with serve(routes) as base:
        routes.update(site_check_routes(base))
        routes["/"] = html_route(page("home", links=[(p, f"Go to {p}") for p in HOME_LINKS], words=100))
        project = ProjectFactory(base_url=base + "/")
        audit = audit_start(project=project, start_url=base + "/", max_pages=200, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _without_stats(audit: Audit) -> Audit:
    """The same audit as one completed before its figures were stored: everything is counted."""
    audit = Audit.objects.get(id=audit.id)
    audit.stats = {}
    return audit


def test_finalize_stores_figures_equal_to_a_recount(crawled, django_assert_num_queries):
    audit = crawled
    stored = dict(audit.stats)
    # The score's figures (audits.checks.score), stored beside the counts, equal the score worked out by queries.
    assert stored.pop("score") == score_breakdown(audit=_without_stats(audit)).as_stats()
    assert stored.pop("comparisons") == {}  # the project's first audit (tests/audits/test_comparison.py)
    assert stored == stats.audit_stats_count(audit_id=audit.id)
    assert audit.stats["pages"] == audit.pages_crawled == Page.objects.filter(audit=audit).count()
    assert sum(audit.stats["bars"][stats.bar_key("status", label)] for label, *_ in stats.STATUS_BARS) == (
        audit.pages_crawled
    )
    assert {row["type"] for row in audit.stats["issue_types"]} == set(
        Issue.objects.filter(audit=audit).values_list("type", flat=True)
    )
    assert sum(row["n"] for row in audit.stats["issue_types"]) == Issue.objects.filter(audit=audit).count()
    # Each page's issue rows and inlinks, as the grid counted them before finalize stored them.
    pages = Page.objects.filter(audit=audit).order_by("url")
    counted = Coalesce(page_inlinks_subquery(), Value(0))  # from the link edges, not the stored counts
    recount = pages.annotate(rows=Count("issues"), counted=counted).values_list("url", "rows", "counted")
    stored = PageCounts.objects.filter(audit=audit).order_by("url")
    assert list(stored.values_list("url", "issues", "inlinks")) == list(recount)
    assert stored.filter(issues__gt=1).exists() and stored.filter(issues=0).exists()
    # A completed audit reads them without a query.
    with django_assert_num_queries(0):
        assert stats.page_stats(audit=audit) is audit.stats
        assert stats.issue_type_counts(audit=audit) is audit.stats["issue_types"]


def test_the_screens_show_the_same_figures_stored_or_counted(crawled):
    stored, counted = crawled, _without_stats(crawled)
    assert issues_by_type(audit=stored) == issues_by_type(audit=counted)
    assert issues_by_severity(audit=stored) == issues_by_severity(audit=counted)
    assert issue_summary(audit=stored) == issue_summary(audit=counted)
    assert page_distributions(audit=stored) == page_distributions(audit=counted)
    assert audit_progress(audit=stored)["rate"] == audit_progress(audit=counted)["rate"]
    report, recounted = report_summary(audit=stored), report_summary(audit=counted)
    assert report["charts"] == recounted["charts"] and report["severity_counts"] == recounted["severity_counts"]
    assert report["pages"] == recounted["pages"] and report["top_issues"] == recounted["top_issues"]
    # A completed audit's report: no aggregate over pages or issues (its comparison with the previous audit is
    # counted once, then cached), only bounded reads: the branding, the previous audit, ten examples per top issue,
    # the project's segments (at most audits.segments.MAX_SEGMENTS_PER_PROJECT; their figures are cached once counted).
    with CaptureQueriesContext(connection) as seen:
        report_summary(audit=stored)
    sqls = [q["sql"] for q in seen.captured_queries if 'FROM "audits_segment"' not in q["sql"]]  # ≤ 50 rows
    assert not [q for q in sqls if "COUNT(" in q.upper()], sqls
    assert not [q for q in sqls if " LIMIT " not in q], sqls


def test_figures_are_counted_not_read_unless_the_audit_completed_with_these_bars(crawled):
    """Stored figures are trusted only on a completed audit (any other's pages may still change) and only for
    the bars they name (a bar renamed since is recounted)."""
    for status in (Audit.Status.RUNNING, Audit.Status.FAILED, Audit.Status.CANCELLED):
        audit = Audit.objects.get(id=crawled.id)
        audit.status = status
        audit.stats = {**audit.stats, "pages": -1, "issue_types": []}  # what a stale copy would say
        assert stats.page_stats(audit=audit)["pages"] == crawled.pages_crawled
        assert stats.issue_type_counts(audit=audit) == crawled.stats["issue_types"]
    audit = Audit.objects.get(id=crawled.id)
    bars = dict(audit.stats["bars"])
    bars["status:2xx"] = bars.pop(stats.bar_key("status", "2xx OK"))  # as stored under an older label
    audit.stats = {**audit.stats, "bars": bars}
    assert stats.page_stats(audit=audit)["bars"] == crawled.stats["bars"]


@pytest.mark.parametrize("status", ["200", "404", "301", "4xx", "3xx", "2xx", "5xx", "none", "418"])
def test_a_status_filters_pages_are_read_from_the_stored_counts_per_code(crawled, status, django_assert_num_queries):
    """The pages grid's and the API's count of a status filter (audits.stats.page_status_total): what the filter
    selects, read without a query once the audit completed; not read for any other audit."""
    selected = page_filter(audit=crawled, status=status).count()
    with django_assert_num_queries(0):
        assert stats.page_status_total(audit=crawled, status=status) == selected
    assert sum(crawled.stats["status_codes"].values()) == crawled.pages_crawled
    running = Audit.objects.get(id=crawled.id)
    running.status = Audit.Status.RUNNING
    assert stats.page_status_total(audit=running, status=status) is None
    assert stats.page_status_total(audit=_without_stats(crawled), status=status) is None


def test_the_status_counts_cover_the_crawled_codes(crawled):
    codes = crawled.stats["status_codes"]
    assert {"200", "404", "301"} <= set(codes) and codes["200"] > 1
    assert stats.page_status_total(audit=crawled, status="bogus") is None
