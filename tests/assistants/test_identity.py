"""assistants.identity: the MCP gate in front of /mcp/ refuses what the API refuses (accounts.tokens decides),
with the reason in its 401 problem JSON; a tool call re-checks the token every time."""

import json
from datetime import timedelta

import anyio
import pytest
from django.utils import timezone

from accounts.models import ApiToken, Membership
from accounts.tokens import token_create
from assistants.identity import SCOPE_TOKEN_KEY, BearerGate
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the gate looks tokens up in a worker thread


def _through_gate(authorization: str | None) -> tuple[int, dict]:
    """(status, body) the gate answers; 200 {"token_id"} when it lets the request through to the app."""
    sent: list[dict] = []

    async def app(scope, receive, send):
        body = json.dumps({"token_id": scope[SCOPE_TOKEN_KEY]}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    headers = [(b"authorization", authorization.encode())] if authorization else []
    scope = {"type": "http", "method": "POST", "path": "/mcp/", "headers": headers}
    anyio.run(BearerGate(app), scope, receive, send)
    return sent[0]["status"], json.loads(sent[1]["body"])


def test_the_gate_refuses_expired_tokens_and_users_who_lost_access_saying_why():
    user = UserFactory()
    token, plaintext = token_create(user=user, name="assistant", scope=ApiToken.Scope.READ)
    assert _through_gate(f"Bearer {plaintext}") == (200, {"token_id": token.id})  # read-only tokens get in

    ApiToken.objects.filter(id=token.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    status, body = _through_gate(f"Bearer {plaintext}")
    assert (status, body["code"]) == (401, "authentication_failed") and "expired" in body["detail"]

    ApiToken.objects.filter(id=token.id).update(expires_at=None)
    Membership.objects.filter(user=user).delete()
    status, body = _through_gate(f"Bearer {plaintext}")
    assert status == 401 and "no longer in the account" in body["detail"]
    assert _through_gate(None)[1]["code"] == "not_authenticated"
