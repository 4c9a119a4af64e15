"""The issues table: ranked by audits.priority (severity weight × share of pages affected), sortable, filtered by
severity and category, new issues against the previous audit, per-type evidence and exports; its queries
do not grow with the audit."""

import csv
import io
import json

import pytest
from django.urls import reverse

from audits.priority import PRIORITY_RULE, SEVERITY_WEIGHTS, issue_summary
from tests.dashboard.conftest import finished_audit, make_issue, make_page
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

PAGES = 20


@pytest.fixture
def planted(owner):
    """20 pages; a critical on 1 page, a warning on 10, an info on every page, a site-wide info, and a
    previous audit that already had the warning on 5 of the 10 pages."""
    project = ProjectFactory(owner=owner, name="Planted")
    previous = finished_audit(project, days_ago=3, health_score=60)
    audit = finished_audit(project, health_score=70, pages_crawled=PAGES)
    pages = [make_page(audit, f"/p{i:02d}") for i in range(PAGES)]
    make_issue(audit, pages[0], "missing-title", "critical")
    for i, page in enumerate(pages[:10]):
        make_issue(audit, page, "missing-meta-description", "warning")
        if i < 5:
            make_issue(previous, make_page(previous, f"/p{i:02d}"), "missing-meta-description", "warning")
    for page in pages:
        make_issue(audit, page, "missing-viewport", "info")
    make_issue(audit, None, "sitemap-missing", "info")
    return audit


def test_top_issues_order_matches_the_priority_rule(planted):
    rows = issue_summary(audit=planted)
    assert SEVERITY_WEIGHTS == {"critical": 100, "warning": 10, "info": 1}
    assert "critical 100, warning 10, info 1" in PRIORITY_RULE
    expected = {
        "missing-title": 100 * 1 / PAGES,  # 5.0
        "missing-meta-description": 10 * 10 / PAGES,  # 5.0
        "missing-viewport": 1 * 20 / PAGES,  # 1.0
        "sitemap-missing": 1 * 1.0,  # site-wide: every page
    }
    assert {r.type: r.priority for r in rows} == pytest.approx(expected)
    # a critical on one page in twenty is fixed before any notice, even one on every page; ties go to the
    # more severe type (the critical before the warning on half the pages), then to more pages affected
    assert [r.type for r in rows] == [
        "missing-title",
        "missing-meta-description",
        "missing-viewport",
        "sitemap-missing",
    ]
    by_type = {r.type: r for r in rows}
    assert (by_type["missing-meta-description"].pages, by_type["missing-meta-description"].percent) == (10, 50.0)
    assert by_type["sitemap-missing"].site_wide and by_type["sitemap-missing"].unit == "site-wide findings"


def test_table_sorts_filters_and_counts_new_issues(owner_client, planted):
    url = reverse("audits:audit-issues", args=[planted.id])

    def listed(query=""):
        return [r.type for r in owner_client.get(url + query).context["rows"]]

    assert listed() == ["missing-title", "missing-meta-description", "missing-viewport", "sitemap-missing"]
    assert listed("?sort=-severity")[0] == "missing-title"
    assert listed("?sort=-pages")[:2] == ["missing-viewport", "missing-meta-description"]
    assert listed("?sort=priority")[:2] == ["missing-viewport", "sitemap-missing"]
    assert listed("?severity=info") == ["missing-viewport", "sitemap-missing"]
    assert listed("?category=metadata") == ["missing-title", "missing-meta-description", "missing-viewport"]
    assert listed("?category=crawlability&severity=info") == ["sitemap-missing"]
    assert listed("?severity=banana&sort=nonsense") == listed()
    rows = {r.type: r for r in owner_client.get(url).context["rows"]}
    assert rows["missing-meta-description"].new == 5 and rows["missing-viewport"].new == 20
    assert listed("?sort=-new")[0] == "missing-viewport"
    html = owner_client.get(url).content.decode()
    assert "10 pages" in html and "(50.0%)" in html and "whole site" in html


def test_issue_type_page_shows_evidence_columns_and_exports_them(owner_client, planted):
    page = owner_client.get(reverse("audits:audit-issue-type", args=[planted.id, "missing-meta-description"]))
    html = page.content.decode()
    assert '<table class="evidence' in html and "Meta description tag" in html and "<pre" not in html
    assert "10 pages" in html
    export = reverse("audits:audit-issue-type-export", args=[planted.id, "missing-meta-description", "csv"])
    body = b"".join(owner_client.get(export).streaming_content).decode()
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0] == ["page_url", "meta_tag"] and len(rows) == 11
    export = reverse("audits:audit-issue-type-export", args=[planted.id, "missing-meta-description", "json"])
    objects = json.loads(b"".join(owner_client.get(export).streaming_content))
    assert len(objects) == 10 and set(objects[0]) == {"page_url", "meta_tag"}
    bad = reverse("audits:audit-issue-type-export", args=[planted.id, "no-such-type", "csv"])
    assert owner_client.get(bad).status_code == 404


def test_issues_screens_do_not_query_per_row(owner_client, planted, django_assert_max_num_queries):
    audit = finished_audit(planted.project, pages_crawled=300)
    for i in range(300):
        page = make_page(audit, f"/big{i:03d}")
        make_issue(audit, page, "missing-h1", "warning")
        make_issue(audit, page, "thin-content", "warning", words=10, min_words=150)
    with django_assert_max_num_queries(12):
        owner_client.get(reverse("audits:audit-issues", args=[audit.id]))
    with django_assert_max_num_queries(14):
        response = owner_client.get(reverse("audits:audit-issue-type", args=[audit.id, "thin-content"]) + "?page=3")
    assert len(response.context["evidence"]["rows"]) == 50
