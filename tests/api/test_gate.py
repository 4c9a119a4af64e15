"""GET /api/v1/audits/{id}/gate/?rules=…: the release gate through the API (audits/gate.py judges)."""

import pytest
from drf_spectacular.generators import SchemaGenerator

from audits.models import Audit, PageChange
from tests.api.conftest import assert_problem, finished_audit
from tests.factories import AuditFactory, PageChangeFactory

pytestmark = pytest.mark.django_db


def gate_url(audit, rules: str | None) -> str:
    return f"/api/v1/audits/{audit.id}/gate/" + ("" if rules is None else f"?rules={rules}")


@pytest.fixture
def later(project, results):
    """A second audit of the project: a new critical issue on /b, /a became non-indexable, the score 80 → 70."""
    audit = finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/b": 200, "/gone": 404},
        issues=[
            ("missing-title", "critical", "/a"),
            ("missing-title", "critical", "/b"),
            ("broken-page", "critical", "/gone"),
            ("broken-internal-link", "critical", "/"),
        ],
        ago_min=10,
    )
    Audit.objects.filter(id=audit.id).update(health_score=70, baseline=results, stats={"changes": {"indexability": 1}})
    PageChangeFactory(
        audit=audit,
        baseline=results,
        url=project.base_url.rstrip("/") + "/a",
        field=PageChange.Field.INDEXABILITY,
        direction=PageChange.Direction.DOWN,
        before="indexable",
        after="non-indexable: noindex",
    )
    audit.refresh_from_db()
    return audit


def test_the_gate_judges_each_rule_against_the_baseline(api, project, results, later):
    response = api.get(gate_url(later, "new-critical,score-drop=5,became-noindex,new-broken,score-drop=20"))
    assert response.status_code == 200, response.content
    body = response.json()
    base = project.base_url.rstrip("/")
    assert body["audit"] == str(later.id) and body["baseline"] == str(results.id)
    assert body["passed"] is False
    rules = {r["rule"]: r for r in body["rules"]}
    assert list(rules) == ["new-critical", "score-drop=5", "became-noindex", "new-broken", "score-drop=20"]
    assert rules["new-critical"] == {
        "rule": "new-critical",
        "passed": False,
        "judged": True,
        "reason": "1 new critical issue: missing-title on 1 URL",
        "count": 1,
        "examples": [base + "/b"],
    }
    assert rules["score-drop=5"]["passed"] is False and rules["score-drop=5"]["count"] == 10
    assert rules["became-noindex"]["examples"] == [base + "/a"] and not rules["became-noindex"]["passed"]
    assert rules["new-broken"]["passed"] and rules["new-broken"]["reason"] == "no URL newly broken"
    assert rules["score-drop=20"]["passed"] and rules["score-drop=20"]["reason"] == "health score 80 → 70 (down 10)"
    assert body["reason"].startswith("gate failed: new-critical: 1 new critical issue")


def test_the_first_audit_passes_every_rule_with_the_reason_no_baseline(api, results):
    body = api.get(gate_url(results, "new-critical,score-drop=5")).json()
    assert body["passed"] is True and body["baseline"] is None
    assert [(r["passed"], r["judged"], r["reason"]) for r in body["rules"]] == [(True, False, "no baseline")] * 2


@pytest.mark.parametrize(
    "rules, words",
    [("new-critical,nope", "'nope'"), ("score-drop=0", "'score-drop=0'"), ("", "at least one"), (None, "at least one")],
)
def test_a_bad_rule_set_is_a_400_problem_naming_the_rule(api, results, rules, words):
    body = assert_problem(api.get(gate_url(results, rules)), 400, "invalid_gate_rule", field="rules")
    assert words in body["detail"]


def test_a_running_audit_is_refused_and_anothers_audit_is_not_found(api, other_api, project, results):
    running = AuditFactory(project=project)
    assert_problem(api.get(gate_url(running, "new-critical")), 400, "audit_not_completed")
    assert_problem(other_api.get(gate_url(results, "new-critical")), 404, "not_found")


def test_the_gate_is_in_the_openapi_schema(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/audits/{id}/gate/"]["get"]
    assert [p["name"] for p in operation["parameters"] if p["in"] == "query"] == ["rules"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/Gate")
    assert "application/problem+json" in operation["responses"]["400"]["content"]
    rule = schema["components"]["schemas"]["GateRuleResult"]["properties"]
    assert set(rule) == {"rule", "passed", "judged", "reason", "count", "examples"}
