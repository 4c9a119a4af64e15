"""The release gate (audits/gate.py): rule sets parsed and refused, each rule fired and passed on factory rows,
no baseline, the JUnit report parsed back."""

from xml.etree import ElementTree

import pytest
from django.utils import timezone
from lxml import etree

from audits.errors import AuditRefused
from audits.gate import (
    GATE_EXAMPLES_MAX,
    JUDGES,
    RULE_VALUES,
    GateRule,
    gate_baseline,
    gate_evaluate,
    gate_junit_xml,
    gate_rules_parse,
    gate_unjudged,
)
from audits.models import Audit, Issue, Page, PageChange
from tests.factories import AuditFactory, IssueFactory, PageChangeFactory, PageFactory, ProjectFactory

pytestmark = pytest.mark.django_db

CRITICAL, WARNING = Issue.Severity.CRITICAL, Issue.Severity.WARNING
SITE = "https://gate.example/"


def completed(project, **fields) -> Audit:
    """A completed audit whose finalize recorded its changes against `baseline` (none: a first audit)."""
    baseline = fields.get("baseline")
    fields.setdefault("stats", {"changes": {"baseline": str(baseline.id) if baseline else None}})
    return AuditFactory(project=project, status=Audit.Status.COMPLETED, current_phase=Audit.Phase.COMPLETED, **fields)


@pytest.fixture
def pair():
    """(baseline, audit): two completed audits of one project, the second measured against the first."""
    project = ProjectFactory(base_url=SITE)
    base = completed(project, health_score=90, pages_crawled=10)
    audit = completed(project, health_score=90, pages_crawled=10, baseline=base)
    return base, audit


def issue(audit, path, issue_type="broken-page", severity=CRITICAL, page=True):
    if not page:
        return IssueFactory(audit=audit, page=None, page_url="", type=issue_type, severity=severity)
    row = Page.objects.filter(audit=audit, url=SITE + path).first() or PageFactory(audit=audit, url=SITE + path)
    return IssueFactory(audit=audit, page=row, type=issue_type, severity=severity)


def change(audit, path, field, direction, before="", after=""):
    return PageChangeFactory(
        audit=audit, baseline=audit.baseline, url=SITE + path, field=field, direction=direction, before=before,
        after=after,
    )  # fmt: skip


def judge(audit, rules: str):
    return {r.rule: r for r in gate_evaluate(audit=audit, rules=gate_rules_parse(rules)).rules}


# --- parsing -----------------------------------------------------------------------------------------------------


def test_a_rule_set_is_parsed_in_order_once_each_with_spaces_and_any_case():
    rules = gate_rules_parse(" New-Critical, score-drop = 5,became-noindex,,new-broken,score-drop=5, pages-drop=20% ")
    assert [r.text for r in rules] == ["new-critical", "score-drop=5", "became-noindex", "new-broken", "pages-drop=20"]
    assert gate_rules_parse("new-issue=missing-title,score-below=70") == [
        GateRule("new-issue", "missing-title"),
        GateRule("score-below", 70),
    ]


@pytest.mark.parametrize(
    "text, words",
    [
        ("new-critical,no-such-rule", ["'no-such-rule'", "new-critical, new-issue=TYPE, score-drop=N"]),
        ("score-drop", ["score-drop needs a number from 1 to 100", "score-drop=N"]),
        ("score-drop=", ["score-drop needs"]),
        ("score-drop=0", ["'score-drop=0'", "1 to 100"]),
        ("score-drop=101", ["'score-drop=101'"]),
        ("score-drop=-3", ["'score-drop=-3'"]),
        ("score-drop=five", ["'score-drop=five'"]),
        ("pages-drop=20.5%", ["'pages-drop=20.5%'", "percentage"]),
        ("new-critical=1", ["new-critical takes no value", "'new-critical=1'"]),
        ("new-issue", ["new-issue needs an issue type", "new-issue=TYPE"]),
        ("new-issue=no-such-type", ["'new-issue=no-such-type'", "names no issue type"]),
        ("", ["at least one gate rule"]),
        (" , ,", ["at least one gate rule"]),
        (",".join(f"score-below={n}" for n in range(1, 30)), ["At most 20"]),
    ],
)
def test_a_bad_rule_is_refused_naming_it(text, words):
    with pytest.raises(AuditRefused) as refused:
        gate_rules_parse(text)
    assert refused.value.code == "invalid_gate_rule" and refused.value.field == "rules"
    for word in words:
        assert word in refused.value.message, refused.value.message
    assert "\n" not in refused.value.message


def test_a_long_bad_rule_is_echoed_cut_short():
    with pytest.raises(AuditRefused) as refused:
        gate_rules_parse("x" * 500)
    assert "x" * 61 not in refused.value.message and "…" in refused.value.message


def test_every_rule_has_a_judge():
    assert set(JUDGES) == set(RULE_VALUES)


# --- each rule fires and passes ----------------------------------------------------------------------------------


def test_new_critical_fires_on_a_critical_issue_the_baseline_did_not_have(pair):
    base, audit = pair
    issue(base, "old")
    issue(audit, "old")  # still there: not new
    issue(audit, "new")
    issue(audit, "fresh-warning", "missing-meta-description", WARNING)  # new, but not critical
    issue(audit, "moved", "missing-title", CRITICAL)  # a page the baseline did not crawl: new
    result = judge(audit, "new-critical")["new-critical"]
    assert not result.passed and result.judged
    assert result.count == 2
    assert sorted(result.examples) == [SITE + "moved", SITE + "new"]
    assert result.reason == "2 new critical issues: broken-page on 1 URL, missing-title on 1 URL"


def test_a_url_new_in_two_critical_types_counts_twice_and_is_one_example(pair):
    _base, audit = pair
    issue(audit, "both")
    issue(audit, "both", "missing-title", CRITICAL)
    result = judge(audit, "new-critical")["new-critical"]
    assert result.count == 2 and result.examples == [SITE + "both"]


def test_new_critical_passes_when_every_critical_issue_was_in_the_baseline(pair):
    base, audit = pair
    for a in (base, audit):
        issue(a, "old")
        issue(a, "", "search-bot-blocked-robots", CRITICAL, page=False)  # site-wide, matched by (type, "")
    issue(base, "fixed")
    result = judge(audit, "new-critical")["new-critical"]
    assert result.passed and result.count == 0 and result.examples == []
    assert result.reason == "no new critical issues"


def test_new_critical_names_the_site_for_a_new_site_wide_issue(pair):
    _base, audit = pair
    issue(audit, "", "search-bot-blocked-robots", CRITICAL, page=False)
    result = judge(audit, "new-critical")["new-critical"]
    assert not result.passed and result.examples == [audit.site_url]


def test_new_critical_gives_at_most_ten_examples_and_the_whole_count(pair):
    _base, audit = pair
    for n in range(14):
        issue(audit, f"p{n:02d}")
    result = judge(audit, "new-critical")["new-critical"]
    assert result.count == 14 and len(result.examples) == GATE_EXAMPLES_MAX
    assert result.examples == [SITE + f"p{n:02d}" for n in range(10)]


def test_new_critical_against_a_summarised_baseline_matches_by_type(pair):
    base, audit = pair
    Audit.objects.filter(id=base.id).update(
        summarised_at=timezone.now(),
        stats={"issue_types": [{"type": "broken-page", "severity": "critical", "n": 3, "pages": 3, "site": 0}]},
    )
    issue(audit, "a")  # broken-page: the baseline had the type, its rows are gone
    issue(audit, "b", "missing-title", CRITICAL)
    Audit.objects.filter(id=audit.id).update(stats={"changes": {"baseline": str(base.id)}})  # issue types: live
    audit.refresh_from_db()
    result = judge(audit, "new-critical")["new-critical"]
    assert not result.passed and result.count == 1 and result.examples == [SITE + "b"]
    assert "matched by issue type" in result.reason


def test_new_issue_fires_on_one_type_whatever_its_severity(pair):
    base, audit = pair
    issue(base, "a", "missing-meta-description", WARNING)
    issue(audit, "a", "missing-meta-description", WARNING)
    issue(audit, "b", "missing-meta-description", WARNING)
    issue(audit, "c", "broken-page", CRITICAL)
    results = judge(audit, "new-issue=missing-meta-description,new-issue=title-too-long")
    fired = results["new-issue=missing-meta-description"]
    assert not fired.passed and fired.count == 1 and fired.examples == [SITE + "b"]
    assert fired.reason == "1 new missing-meta-description issue: missing-meta-description on 1 URL"
    assert results["new-issue=title-too-long"].passed


@pytest.mark.parametrize(
    "before, now, limit, passed, count",
    [(90, 84, 5, False, 6), (90, 85, 5, False, 5), (90, 86, 5, True, 4), (80, 95, 5, True, 0)],
)
def test_score_drop_fires_when_the_score_fell_by_n_or_more(pair, before, now, limit, passed, count):
    base, audit = pair
    Audit.objects.filter(id=base.id).update(health_score=before)
    audit.health_score = now
    result = judge(audit, f"score-drop={limit}")[f"score-drop={limit}"]
    assert (result.passed, result.count) == (passed, count)
    assert result.reason.startswith(f"health score {before} → {now}")
    if not passed:
        assert result.reason == f"health score {before} → {now}: down {before - now}, the limit is {limit}"


def test_score_drop_without_a_score_passes_unjudged(pair):
    base, audit = pair
    Audit.objects.filter(id=base.id).update(health_score=None)
    result = judge(audit, "score-drop=1")["score-drop=1"]
    assert result.passed and not result.judged and result.reason == "the baseline has no health score"
    gate = gate_evaluate(audit=audit, rules=gate_rules_parse("score-drop=1"))
    assert gate.reason == "gate passed: 1 rule (1 not judged: the baseline has no health score)"


def test_score_below_is_a_floor_that_needs_no_baseline():
    audit = completed(ProjectFactory(base_url=SITE), health_score=64)
    results = judge(audit, "score-below=70,score-below=60,new-critical")
    assert not results["score-below=70"].passed and results["score-below=70"].judged
    assert results["score-below=70"].reason == "health score 64, below 70"
    assert results["score-below=60"].passed and results["score-below=60"].judged
    assert results["new-critical"].passed and not results["new-critical"].judged


def test_became_noindex_fires_on_indexability_going_down_only(pair):
    _base, audit = pair
    down, up = PageChange.Direction.DOWN, PageChange.Direction.UP
    change(audit, "blog/", PageChange.Field.INDEXABILITY, down, "indexable", "non-indexable: noindex")
    change(audit, "shop/", PageChange.Field.INDEXABILITY, down, "indexable", "non-indexable: redirect")
    change(audit, "team/", PageChange.Field.INDEXABILITY, down, "indexable", "non-indexable: noindex")
    change(audit, "about/", PageChange.Field.INDEXABILITY, up, "non-indexable: noindex", "indexable")
    change(audit, "about/", PageChange.Field.ROBOTS, PageChange.Direction.CHANGED, "noindex", "")
    result = judge(audit, "became-noindex")["became-noindex"]
    assert not result.passed and result.count == 3
    assert result.examples == [SITE + "blog/", SITE + "shop/", SITE + "team/"]
    assert result.reason == "3 URLs became non-indexable (noindex: 2, redirect: 1)"
    PageChange.objects.filter(direction=PageChange.Direction.DOWN).delete()
    assert judge(audit, "became-noindex")["became-noindex"].passed


def test_a_rule_on_changes_passes_unjudged_when_the_audit_has_no_changes_recorded(pair):
    _base, audit = pair
    Audit.objects.filter(id=audit.id).update(stats={})
    audit.refresh_from_db()
    change(audit, "blog/", PageChange.Field.INDEXABILITY, PageChange.Direction.DOWN)
    for result in judge(audit, "became-noindex,new-broken").values():
        assert result.passed and not result.judged and "no changes recorded" in result.reason


def test_new_broken_fires_on_urls_that_answered_below_400_before_and_on_added_broken_urls(pair):
    _base, audit = pair
    status, added = PageChange.Field.STATUS, PageChange.Field.ADDED
    PageFactory(audit=audit, url=SITE + "now-404", status_code=404)
    change(audit, "now-404", status, PageChange.Direction.UP, "200", "404")
    PageFactory(audit=audit, url=SITE + "was-redirect", status_code=500)
    change(audit, "was-redirect", status, PageChange.Direction.UP, "301", "500")
    PageFactory(audit=audit, url=SITE + "no-answer", status_code=None, fetch_class=Page.FetchClass.ERROR)
    change(audit, "no-answer", status, PageChange.Direction.CHANGED, "200", "")
    PageFactory(audit=audit, url=SITE + "added-broken", status_code=410)
    change(audit, "added-broken", added, PageChange.Direction.ADDED)
    # not new: broken before too, an added page that answers, a page broken before and unchanged, one fixed
    PageFactory(audit=audit, url=SITE + "still-broken", status_code=500)
    change(audit, "still-broken", status, PageChange.Direction.UP, "404", "500")
    PageFactory(audit=audit, url=SITE + "added-fine", status_code=200)
    change(audit, "added-fine", added, PageChange.Direction.ADDED)
    PageFactory(audit=audit, url=SITE + "unchanged-404", status_code=404)
    PageFactory(audit=audit, url=SITE + "fixed", status_code=200)
    change(audit, "fixed", status, PageChange.Direction.DOWN, "404", "200")
    result = judge(audit, "new-broken")["new-broken"]
    assert not result.passed and result.count == 4
    assert result.examples == [SITE + p for p in ("added-broken", "no-answer", "now-404", "was-redirect")]
    assert result.reason == "4 URLs newly broken (4xx/5xx or no answer)"


def test_new_broken_passes_when_nothing_broke(pair):
    _base, audit = pair
    PageFactory(audit=audit, url=SITE + "unchanged-404", status_code=404)
    result = judge(audit, "new-broken")["new-broken"]
    assert result.passed and result.reason == "no URL newly broken"


def test_pages_drop_fires_on_n_percent_fewer_pages_and_names_removed_urls(pair):
    base, audit = pair
    Audit.objects.filter(id=base.id).update(pages_crawled=200)
    audit.pages_crawled = 150
    change(audit, "gone", PageChange.Field.REMOVED, PageChange.Direction.REMOVED)
    results = judge(audit, "pages-drop=25,pages-drop=26")
    fired = results["pages-drop=25"]
    assert not fired.passed and fired.count == 50 and fired.examples == [SITE + "gone"]
    assert fired.reason == "200 → 150 pages crawled: down 25 %, the limit is 25 %"
    assert results["pages-drop=26"].passed and results["pages-drop=26"].reason == "200 → 150 pages crawled"


# --- baselines and audits the gate cannot judge -----------------------------------------------------------------


def test_without_a_baseline_every_rule_that_needs_one_passes_with_the_reason_no_baseline():
    audit = completed(ProjectFactory(base_url=SITE), health_score=50)
    issue(audit, "a")
    rules = "new-critical,new-issue=broken-page,score-drop=5,became-noindex,new-broken,pages-drop=10"
    result = gate_evaluate(audit=audit, rules=gate_rules_parse(rules))
    assert result.passed and result.baseline_id is None
    for r in result.rules:
        assert r.passed and not r.judged and r.reason == "no baseline", r
    assert result.reason == "gate passed: 6 rules (6 not judged: no baseline)"


def test_the_baseline_is_the_audits_own_else_none_when_finalize_found_none_else_the_previous_completed_audit():
    project = ProjectFactory(base_url=SITE)
    first = completed(project)
    second = completed(project, baseline=first)
    AuditFactory(project=project, status=Audit.Status.FAILED)
    third = completed(project, stats={})  # finished before change detection
    assert gate_baseline(audit=third) == second
    assert gate_baseline(audit=first) is None
    assert gate_baseline(audit=second) == first
    third.baseline = first
    assert gate_baseline(audit=third) == first
    late = completed(project)  # finalize found no baseline (it ran alone): none, though audits came before it
    assert gate_baseline(audit=late) is None


def test_a_running_or_failed_audit_is_refused_and_a_summarised_one_too(pair):
    _base, audit = pair
    for status in (Audit.Status.RUNNING, Audit.Status.FAILED):
        audit.status = status
        with pytest.raises(AuditRefused) as refused:
            gate_evaluate(audit=audit, rules=[GateRule("new-critical")])
        assert refused.value.code == "audit_not_completed" and status in refused.value.message
    audit.status, audit.summarised_at = Audit.Status.COMPLETED, timezone.now()
    with pytest.raises(AuditRefused) as refused:
        gate_evaluate(audit=audit, rules=[GateRule("new-critical")])
    assert refused.value.code == "audit_summarised"


def test_the_one_line_reason_names_each_rule_that_fired(pair):
    base, audit = pair
    issue(audit, "new")
    Audit.objects.filter(id=base.id).update(health_score=99)
    result = gate_evaluate(audit=audit, rules=gate_rules_parse("new-critical,score-drop=5,new-broken"))
    assert not result.passed
    assert result.reason == (
        "gate failed: new-critical: 1 new critical issue: broken-page on 1 URL; "
        "score-drop=5: health score 99 → 90: down 9, the limit is 5"
    )


# --- JUnit -------------------------------------------------------------------------------------------------------


def test_the_junit_report_has_one_testcase_per_rule_and_a_failure_with_the_examples(pair):
    base, audit = pair
    for n in range(12):
        issue(audit, f"p{n:02d}")
    issue(audit, "ctl\x01char")  # a control character XML 1.0 cannot carry
    result = gate_evaluate(audit=audit, rules=gate_rules_parse("new-critical,score-drop=5"))
    report = gate_junit_xml(result, timestamp="2026-12-04T05:00:00")
    assert report.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    root = ElementTree.fromstring(report)
    assert etree.fromstring(report, etree.XMLParser(recover=False)).tag == "testsuites"  # libxml2 reads it too
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    (suite,) = root.findall("testsuite")
    counts = ("tests", "failures", "errors", "skipped", "timestamp")
    assert [suite.get(name) for name in counts] == ["2", "1", "0", "0", "2026-12-04T05:00:00"]
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"audit": str(audit.id), "baseline": str(base.id)}
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["new-critical", "score-drop=5"]
    failure = cases[0].find("failure")
    assert failure.get("message") == result.rules[0].reason == "13 new critical issues: broken-page on 13 URLs"
    assert failure.get("type") == "new-critical"
    lines = failure.text.splitlines()
    assert lines[0] == result.rules[0].reason and lines[-1] == "… and 3 more"
    assert SITE + "ctl\ufffdchar" in lines
    assert cases[1].find("failure") is None and cases[1].find("system-out").text == "health score 90 → 90"


def test_the_junit_report_skips_rules_without_a_baseline_and_errors_on_an_audit_that_did_not_complete():
    audit = completed(ProjectFactory(base_url=SITE), health_score=50)
    result = gate_evaluate(audit=audit, rules=gate_rules_parse("new-critical,score-below=40"))
    suite = ElementTree.fromstring(gate_junit_xml(result)).find("testsuite")
    assert suite.get("skipped") == "1" and suite.get("failures") == "0" and "timestamp" not in suite.attrib
    assert suite.find("testcase/skipped").get("message") == "no baseline"
    audit.status, audit.error_code = Audit.Status.FAILED, "start_url_unreachable"
    failed = gate_unjudged(audit=audit, rules=gate_rules_parse("new-critical,score-drop=5"))
    suite = ElementTree.fromstring(gate_junit_xml(failed)).find("testsuite")
    assert (suite.get("errors"), suite.get("failures")) == ("2", "0")
    assert suite.find("testcase/error").get("message") == "not judged: the audit failed (start_url_unreachable)"
    assert not failed.passed
