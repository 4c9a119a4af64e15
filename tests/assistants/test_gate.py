"""The MCP tool check_gate: the release gate as the API and the CLI judge it (audits/gate.py)."""

import pytest

from accounts.tokens import token_authenticate
from assistants.identity import stdio_caller
from audits.models import Audit
from tests.api.conftest import finished_audit
from tests.assistants.test_tools import calls
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the SDK runs each tool in a worker thread


@pytest.fixture
def pair(token, monkeypatch):
    monkeypatch.setattr(stdio_caller, "plaintext", token)
    project = ProjectFactory(owner=token_authenticate(token).user, base_url="http://127.0.0.1:1/")
    base = finished_audit(project, pages={"/": 200, "/a": 200}, issues=[], ago_min=60)
    new_critical = [("missing-title", "critical", "/a")]
    audit = finished_audit(project, pages={"/": 200, "/a": 200}, issues=new_critical, ago_min=5)
    Audit.objects.filter(id=audit.id).update(health_score=70)
    return base, audit


def test_check_gate_answers_each_rule_and_refuses_a_bad_one_naming_it(pair):
    base, audit = pair
    gate, first, bad = calls(
        ("check_gate", {"audit_id": str(audit.id), "rules": "new-critical,score-drop=5,score-drop=20"}),
        ("check_gate", {"audit_id": str(base.id), "rules": "new-critical"}),
        ("check_gate", {"audit_id": str(audit.id), "rules": "new-critical,sometimes"}),
    )
    body = gate.structured_content
    assert body["passed"] is False and body["baseline_id"] == str(base.id)
    assert [(r["rule"], r["passed"]) for r in body["rules"]] == [
        ("new-critical", False),
        ("score-drop=5", False),
        ("score-drop=20", True),
    ]
    assert body["rules"][0]["examples"] == ["http://127.0.0.1:1/a"] and body["rules"][0]["count"] == 1
    assert body["reason"].startswith("gate failed: new-critical: 1 new critical issue: missing-title on 1 URL; ")
    assert first.structured_content["passed"] is True
    assert first.structured_content["rules"][0]["reason"] == "no baseline"
    assert bad.is_error and bad.structured_content["code"] == "invalid_gate_rule"
    assert "'sometimes'" in bad.structured_content["detail"] and bad.structured_content["status"] == 400
