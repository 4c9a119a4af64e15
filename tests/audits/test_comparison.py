"""The comparison of two audits (audits.comparison) as finalize stores it for the whole site against the default
baseline (Audit.stats["comparison"]): equal to a recount, read without a query by the Compare tab, the API and the
report, and counted again whenever the stored one is not the comparison asked for."""

from datetime import timedelta

import pytest
from django.db.models import Q

from audits.comparison import comparison_count, comparison_pages, comparison_summary
from audits.models import Audit
from audits.stats import audit_stats_count
from tests.api.conftest import finished_audit


@pytest.fixture
def pair(project):
    """A baseline and a later audit of the project: issues new, fixed, persisting and no longer crawled."""
    base = finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/gone": 404},
        issues=[
            ("missing-title", "critical", "/a"),
            ("title-too-long", "warning", "/"),
            ("broken-page", "critical", "/gone"),
            ("broken-internal-link", "critical", "/"),
        ],
    )
    later = finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/new": 200},
        issues=[
            ("missing-title", "critical", "/a"),
            ("missing-title", "critical", "/new"),
            ("title-too-long", "warning", "/"),
        ],
        ago_min=5,
    )
    return base, later


def _figures(audit, previous, **segment) -> tuple:
    rows = comparison_summary(audit=audit, previous=previous, issues_q=segment.get("issues_q"))
    pages = comparison_pages(audit=audit, previous=previous, pages_q=segment.get("pages_q"))
    return [(r.type, r.new, r.fixed, r.persisting, r.not_crawled) for r in rows], pages


def _store(audit) -> Audit:
    """What finalize does: the comparison with the default baseline, stored on the audit's figures."""
    Audit.objects.filter(id=audit.id).update(stats={**(audit.stats or {}), "comparison": comparison_count(audit=audit)})
    return Audit.objects.get(id=audit.id)


def test_the_stored_comparison_equals_a_recount_and_is_read_without_a_query(pair, django_assert_num_queries):
    base, later = pair
    counted = _figures(later, base)
    stored = _store(later)
    assert stored.stats["comparison"]["base"] == str(base.id)
    with django_assert_num_queries(0):
        assert _figures(stored, base) == counted
    assert counted[1] == {"both": 2, "not_crawled": 1, "only_now": 1}
    assert ("missing-title", 1, 0, 1, 0) in counted[0] and ("broken-page", 0, 0, 0, 1) in counted[0]


def test_the_stored_comparison_is_the_one_read(pair):
    base, later = pair
    stored = _store(later)
    comparison = stored.stats["comparison"]
    comparison["rows"] = [["missing-title", 40, 0, 1, 0]]
    comparison["pages"] = {"both": 9, "not_crawled": 0, "only_now": 0}
    Audit.objects.filter(id=later.id).update(stats={**stored.stats, "comparison": comparison})
    rows, pages = _figures(Audit.objects.get(id=later.id), base)
    assert rows == [("missing-title", 40, 0, 1, 0)] and pages["both"] == 9


def test_a_comparison_other_than_the_stored_one_is_counted(pair, project):
    base, later = pair
    counted = _figures(later, base)
    stored = _store(later)
    wrong = {"rows": [["missing-title", 40, 0, 1, 0]], "pages": {"both": 9, "not_crawled": 0, "only_now": 0}}
    Audit.objects.filter(id=later.id).update(
        stats={**stored.stats, "comparison": {**stored.stats["comparison"], **wrong}}
    )
    stored = Audit.objects.get(id=later.id)
    # A segment's: counted on its pages (here every page).
    assert _figures(stored, base, issues_q=Q(page_url__contains="/"), pages_q=Q(url__contains="/")) == counted
    # The baseline finalized again since: counted.
    Audit.objects.filter(id=base.id).update(completed_at=base.completed_at + timedelta(seconds=1))
    assert _figures(stored, Audit.objects.get(id=base.id)) == counted
    # Another baseline: counted.
    other = finished_audit(project, pages={"/": 200}, issues=[], ago_min=30)
    assert _figures(stored, other)[1] == {"both": 1, "not_crawled": 0, "only_now": 2}
    # An audit that is not completed: counted.
    stored.status = Audit.Status.FAILED
    assert _figures(stored, Audit.objects.get(id=base.id)) == counted


def test_finalize_counts_the_comparison_with_the_default_baseline(pair):
    base, later = pair
    assert audit_stats_count(audit_id=base.id)["comparison"] is None  # the project's first audit
    figures = audit_stats_count(audit_id=later.id)["comparison"]
    assert figures == comparison_count(audit=later) and figures["base"] == str(base.id)
