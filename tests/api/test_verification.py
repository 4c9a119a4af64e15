"""Fix verification through the API: POST …/issues/{type}/verify/ starts it (202, the new audit), GET
…/verification/ reads the verdict per URL, the issue summary's rows carry the newest verification of each type,
and refusals keep their codes."""

import pytest
from django.urls import reverse

from audits.models import Audit
from tests.support.verification import VERIFIED_PATHS, verified_pair

pytestmark = pytest.mark.django_db


def test_the_verdict_per_url_and_the_issue_rows(api, project):
    original, verification = verified_pair(project)
    body = api.get(reverse("api:audit-verification", args=[verification.id])).json()
    assert body["verifies"] == str(original.id) and body["issue_type"] == "missing-h1"
    assert body["counts"] == {"fixed": 1, "still_present": 1, "unreachable": 1} and body["total"] == 3
    assert body["label"].startswith("1 of 3 fixed on ")
    assert {u["url"].removeprefix("http://127.0.0.1:1"): u["outcome"] for u in body["urls"]} == VERIFIED_PATHS

    rows = api.get(reverse("api:audit-issue-summary", args=[original.id])).json()
    (h1,) = [r for r in rows if r["type"] == "missing-h1"]
    assert h1["verification"]["audit"] == str(verification.id)
    assert (h1["verification"]["fixed"], h1["verification"]["total"]) == (1, 3)
    assert h1["verification"]["label"] == body["label"]

    missing = api.get(reverse("api:audit-verification", args=[original.id]))
    assert missing.status_code == 404 and missing.json()["code"] == "not_a_verification"


def test_verify_starts_a_list_audit_and_refusals_keep_their_codes(api, other_api, project):
    original, _ = verified_pair(project)
    answer = api.post(reverse("api:audit-issue-verify", args=[original.id, "missing-h1"]))
    assert answer.status_code == 202, answer.json()
    started = Audit.objects.get(id=answer.json()["id"])
    assert started.verifies_id == original.id and answer.json()["config"]["verify_issue_type"] == "missing-h1"
    assert answer["Location"].endswith(reverse("api:audit-verification", args=[started.id]))
    assert api.get(answer["Location"]).json()["status"] == "running"

    def code(issue_type: str, client=api) -> tuple[int, str]:
        refused = client.post(reverse("api:audit-issue-verify", args=[original.id, issue_type]))
        return refused.status_code, refused.json().get("code")

    assert code("missing-h1") == (409, "audit_already_running")
    assert code("orphan-page") == (400, "issue_type_not_verifiable")
    assert code("title-too-long") == (404, "issue_type_not_found")
    assert code("no-such-type") == (404, "issue_type_not_found")
    assert code("missing-h1", other_api)[0] == 404  # another account's audit
    assert api.post(reverse("api:audit-issue-verify", args=[started.id, "missing-h1"])).json()["code"] == (
        "audit_not_completed"
    )


def test_the_schema_documents_both_endpoints(api):
    schema = api.get(reverse("api:schema"), {"format": "json"}).json()
    assert "/api/v1/audits/{id}/issues/{issue_type}/verify/" in schema["paths"]
    assert "/api/v1/audits/{id}/verification/" in schema["paths"]
