"""alert_findings: each rule judged against the audit's baseline, on factory rows (PageChange, issues, scores,
page counts, robots.txt)."""

import pytest

from alerts.models import AlertRule
from alerts.services import alert_findings, alert_rules_set
from audits.models import Audit
from tests.alerts.conftest import SITE, Direction, Field, change, completed
from tests.factories import IssueFactory, PageFactory, ProjectFactory

pytestmark = pytest.mark.django_db
Kind = AlertRule.Kind


def by_rule(audit):
    return {f.rule: f for f in alert_findings(audit)}


def test_nothing_changed_nothing_found(pair):
    _, _, audit = pair
    assert alert_findings(audit) == []


def test_no_baseline_a_failed_audit_or_a_fix_check_alert_nothing(pair):
    project, baseline, audit = pair
    change(audit, "/a", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")
    first = completed(project, minutes_ago=90)
    assert alert_findings(first) == []
    Audit.objects.filter(id=audit.id).update(status=Audit.Status.FAILED)
    audit.refresh_from_db()
    assert alert_findings(audit) == []
    Audit.objects.filter(id=audit.id).update(status=Audit.Status.COMPLETED, verifies=baseline)
    audit.refresh_from_db()
    assert alert_findings(audit) == []


def test_became_non_indexable_names_the_urls_and_links_the_changes(pair, settings):
    settings.DASHBOARD_BASE_URL = "https://sw.test"
    _, _, audit = pair
    for i in range(12):
        change(audit, f"/p{i:02}", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")
    change(audit, "/up", Field.INDEXABILITY, Direction.UP, "noindex", "indexable")
    change(audit, "/t", Field.TITLE, Direction.CHANGED, "A", "B")
    (finding,) = alert_findings(audit)
    assert finding.rule == Kind.BECAME_NON_INDEXABLE
    assert finding.count == 12 and finding.title == "12 indexable pages became non-indexable"
    assert finding.examples == [f"{SITE}/p{i:02}" for i in range(10)]
    assert finding.link == f"https://sw.test/audits/{audit.id}/changes/?field=indexability&direction=down"


def test_broken_and_redirected_pages_are_told_once_by_the_most_specific_rule(pair):
    _, _, audit = pair
    change(audit, "/gone", Field.STATUS, Direction.CHANGED, "200", "404")
    change(audit, "/gone", Field.INDEXABILITY, Direction.DOWN, "indexable", "non-indexable: 404")
    change(audit, "/err", Field.STATUS, Direction.CHANGED, "200", "503")
    change(audit, "/moved", Field.STATUS, Direction.CHANGED, "200", "301")
    change(audit, "/moved", Field.REDIRECT, Direction.ADDED, "", SITE + "/new")
    change(audit, "/moved", Field.INDEXABILITY, Direction.DOWN, "indexable", "redirect")
    change(audit, "/still-broken", Field.STATUS, Direction.CHANGED, "404", "410")
    change(audit, "/noindex", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")
    found = by_rule(audit)
    assert list(found) == [Kind.BECAME_NON_INDEXABLE, Kind.BECAME_BROKEN, Kind.BECAME_REDIRECT]
    assert found[Kind.BECAME_BROKEN].examples == [SITE + "/err", SITE + "/gone"]
    assert found[Kind.BECAME_BROKEN].link.endswith("?field=status")
    assert found[Kind.BECAME_REDIRECT].examples == [SITE + "/moved"]
    assert found[Kind.BECAME_REDIRECT].title == "1 page now redirects"
    assert found[Kind.BECAME_NON_INDEXABLE].examples == [SITE + "/noindex"]


def test_with_the_broken_rule_off_a_broken_page_is_told_as_non_indexable(pair):
    project, _, audit = pair
    alert_rules_set(project=project, rules={Kind.BECAME_BROKEN: {"enabled": False}})
    change(audit, "/gone", Field.STATUS, Direction.CHANGED, "200", "404")
    change(audit, "/gone", Field.INDEXABILITY, Direction.DOWN, "indexable", "non-indexable: 404")
    found = by_rule(audit)
    assert list(found) == [Kind.BECAME_NON_INDEXABLE]
    assert found[Kind.BECAME_NON_INDEXABLE].examples == [SITE + "/gone"]


def test_new_critical_issue_type_from_the_stored_counts(pair):
    _, baseline, audit = pair
    old = IssueFactory(audit=baseline, type="broken-internal-link", severity="critical")
    IssueFactory(audit=audit, type="broken-internal-link", severity="critical", page__url=old.page_url)
    for path in ("/b", "/a"):
        IssueFactory(audit=audit, type="http-status-5xx", severity="critical", page__url=SITE + path)
    IssueFactory(audit=audit, type="missing-h1", severity="warning")
    (finding,) = alert_findings(audit)
    assert finding.rule == Kind.NEW_CRITICAL and finding.count == 2
    assert finding.examples == [SITE + "/a", SITE + "/b"]
    assert finding.title.startswith("1 new critical issue type: ") and "(2 URLs)" in finding.title
    assert finding.details["types"][0]["type"] == "http-status-5xx"
    assert f"/audits/{audit.id}/compare/?base={baseline.id}&kind=new&type=http-status-5xx" in finding.link


def test_score_drop_at_the_threshold_and_not_below(pair):
    project, baseline, audit = pair
    Audit.objects.filter(id=audit.id).update(health_score=86)
    audit.refresh_from_db()
    assert alert_findings(audit) == []  # 4 points < 5
    Audit.objects.filter(id=audit.id).update(health_score=85)
    audit.refresh_from_db()
    (finding,) = alert_findings(audit)
    assert finding.rule == Kind.SCORE_DROP and finding.count is None
    assert finding.title == "The health score dropped 5 points, from 90 to 85"
    alert_rules_set(project=project, rules={Kind.SCORE_DROP: {"enabled": True, "threshold": 10}})
    assert alert_findings(audit) == []


def test_pages_changed_beyond_the_percentage(pair):
    _, _, audit = pair
    Audit.objects.filter(id=audit.id).update(pages_crawled=80)  # 20 %: not more than 20 %
    audit.refresh_from_db()
    assert alert_findings(audit) == []
    Audit.objects.filter(id=audit.id).update(pages_crawled=79)
    audit.refresh_from_db()
    for i in range(21):
        change(audit, f"/old{i:02}", Field.REMOVED, Direction.REMOVED, "200", "")
    (finding,) = alert_findings(audit)
    assert finding.rule == Kind.PAGES_CHANGED and finding.count == 21
    assert finding.title == "The crawl found 21 % fewer pages: 79 instead of 100"
    assert finding.examples[0] == SITE + "/old00" and len(finding.examples) == 10
    assert finding.link.endswith("?field=removed")


def test_robots_blocks_the_baseline_urls_it_allowed(pair):
    _, baseline, audit = pair
    Audit.objects.filter(id=baseline.id).update(robots_txt="User-agent: *\nDisallow: /private/\n")
    Audit.objects.filter(id=audit.id).update(robots_txt="User-agent: *\nDisallow: /private/\nDisallow: /shop/\n")
    for path in ("/shop/b", "/shop/a", "/blog/x", "/private/y"):
        PageFactory(audit=baseline, url=SITE + path)
    audit.refresh_from_db()
    (finding,) = alert_findings(audit)
    assert finding.rule == Kind.ROBOTS_BLOCKS
    assert (finding.count, finding.examples) == (2, [SITE + "/shop/a", SITE + "/shop/b"])
    assert finding.title == "robots.txt now blocks 2 URLs it allowed"
    assert finding.link.endswith("?field=robots_txt")


def test_disabled_rules_are_not_judged(pair):
    project, _, audit = pair
    change(audit, "/a", Field.INDEXABILITY, Direction.DOWN, "indexable", "noindex")
    alert_rules_set(project=project, rules={Kind.BECAME_NON_INDEXABLE: {"enabled": False}})
    assert alert_findings(audit) == []


def test_a_project_without_rules_alerts_nothing(db):
    project = ProjectFactory()
    baseline = completed(project, minutes_ago=60, pages_crawled=10)
    audit = completed(project, minutes_ago=1, pages_crawled=1, baseline=baseline)
    assert alert_findings(audit) == []
