"""The MCP tools of fix verification: verify_fix starts the re-check (a write: a read-only token is refused),
fix_verification reads each URL's verdict; refusals carry the API's codes."""

import anyio
import pytest
from mcp import Client

from accounts.models import ApiToken
from accounts.tokens import token_authenticate, token_create
from assistants.identity import stdio_caller
from assistants.server import server
from audits.models import Audit
from tests.factories import ProjectFactory
from tests.support.verification import VERIFIED_PATHS, verified_pair

pytestmark = pytest.mark.django_db(transaction=True)  # the SDK runs each tool in a worker thread


def calls(*steps) -> list:
    async def run():
        async with Client(server) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in steps]

    return anyio.run(run)


def test_verify_fix_then_read_the_verdict(token, monkeypatch):
    monkeypatch.setattr(stdio_caller, "plaintext", token)
    project = ProjectFactory(owner=token_authenticate(token).user, base_url="http://127.0.0.1:1/")
    original, verification = verified_pair(project)

    (read,) = calls(("fix_verification", {"audit_id": str(verification.id), "page_size": 2}))
    body = read.structured_content
    assert body["counts"] == {"fixed": 1, "still_present": 1, "unreachable": 1} and body["has_more"] is True
    assert [u["outcome"] for u in body["urls"]] == list(VERIFIED_PATHS.values())[:2]

    started, refused, not_one = calls(
        ("verify_fix", {"audit_id": str(original.id), "issue_type": "missing-h1"}),
        ("verify_fix", {"audit_id": str(original.id), "issue_type": "orphan-page"}),
        ("fix_verification", {"audit_id": str(original.id)}),
    )
    assert not started.is_error, started
    assert started.structured_content["status"] == "running" and started.structured_content["urls"] == []
    assert Audit.objects.get(id=started.structured_content["audit_id"]).verifies_id == original.id
    assert refused.is_error and refused.structured_content["code"] == "issue_type_not_verifiable"
    assert not_one.is_error and not_one.structured_content["code"] == "not_found"


def test_a_read_only_token_cannot_verify(monkeypatch, transactional_db):
    project = ProjectFactory(base_url="http://127.0.0.1:1/")
    original, _ = verified_pair(project)
    read_only = token_create(user=project.owner, name="ro", scope=ApiToken.Scope.READ)[1]
    monkeypatch.setattr(stdio_caller, "plaintext", read_only)
    (result,) = calls(("verify_fix", {"audit_id": str(original.id), "issue_type": "missing-h1"}))
    assert result.is_error and result.structured_content["code"] == "token_read_only"
    assert not Audit.objects.filter(verifies=original, status=Audit.Status.RUNNING).exists()
