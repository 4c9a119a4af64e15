"""Who is calling: an API token (accounts.tokens), the same as the REST API's, and its throttles.

Over HTTP the gate (`BearerGate`, ASGI) checks `Authorization: Bearer <token>` before the request reaches
the MCP app and puts the token's id on the ASGI scope; a tool reads it back from the request the SDK
hands it. Over stdio the token was given once to `manage.py mcp --token` and is looked up again on every
call, so a revoked token stops working at once there too.

Throttles are the API's own classes (api.throttling) with the same cache keys, so the API and the MCP
server share one budget per token: `api` for every call, `audit_start` for starting audits.
"""

import json
from types import SimpleNamespace

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from accounts.models import ApiToken
from accounts.tokens import TokenRefused, token_authenticate, token_live
from api.throttling import ActionRateThrottle, ApiRateThrottle, rate_sentence
from assistants.errors import AUTHENTICATION_FAILED, THROTTLED, Refused

SCOPE_TOKEN_KEY = "sitewarden.api_token_id"  # set by BearerGate on the ASGI scope
PROBLEM_CONTENT_TYPE = b"application/problem+json"
NOT_AUTHENTICATED_SENTENCE = "Send Authorization: Bearer <API token> (create one under API tokens in the dashboard)."


class _StdioCaller:
    """The token a stdio server was started with (one process, one person)."""

    plaintext: str | None = None
    base_url: str = "http://127.0.0.1:8000"  # where the web process answers, for export links


stdio_caller = _StdioCaller()


def caller_token(ctx) -> ApiToken:
    """The working token of this call; Refused(authentication_failed) when it was revoked, expired or its user
    lost access meanwhile (accounts.tokens decides, as for the API)."""
    request = getattr(ctx.request_context, "request", None) if ctx is not None else None
    scope = getattr(request, "scope", None)
    try:
        if scope is not None and scope.get(SCOPE_TOKEN_KEY):
            return token_live(scope[SCOPE_TOKEN_KEY])
        if scope is None and stdio_caller.plaintext:
            return token_authenticate(stdio_caller.plaintext)
    except TokenRefused as exc:
        raise Refused(AUTHENTICATION_FAILED, exc.detail) from None
    raise Refused(AUTHENTICATION_FAILED, "This token is unknown or was revoked; create one under API tokens.")


def throttle(token: ApiToken, *, action: str | None = None) -> None:
    """Count the call against the token's API budget (and `action`'s, e.g. audit_start); Refused(throttled)
    with the wait when it is spent."""
    request = SimpleNamespace(method="POST", auth=token, user=token.user, META={})
    view = SimpleNamespace(throttle_scope=action)
    checks = [ApiRateThrottle()] + ([ActionRateThrottle()] if action else [])
    for check in checks:
        if not check.allow_request(request, view):
            wait_s = int(check.wait() or 1)
            raise Refused(
                THROTTLED,
                f"Too many requests with this token ({check.scope}); try again in {wait_s} s. "
                + rate_sentence(check.scope, check.rate),
                retry_after_s=wait_s,
            )


def _token_for_header(value: bytes) -> tuple[ApiToken | None, str, str]:
    """(token, "", "") when the header carries a working token, else (None, code, detail)."""
    parts = value.split()
    if len(parts) != 2 or parts[0].lower() not in (b"bearer", b"token"):
        return None, "not_authenticated", NOT_AUTHENTICATED_SENTENCE
    try:
        plaintext = parts[1].decode("ascii")
    except UnicodeDecodeError:
        return None, AUTHENTICATION_FAILED, "The token has characters a token never has."
    close_old_connections()
    try:
        return token_authenticate(plaintext), "", ""
    except TokenRefused as exc:
        return None, AUTHENTICATION_FAILED, exc.detail
    finally:
        close_old_connections()


class BearerGate:
    """ASGI middleware in front of the MCP app: 401 problem JSON (as the API answers) without a valid token."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers") or ()).get(b"authorization", b"")
        token, code, detail = await sync_to_async(_token_for_header, thread_sensitive=False)(header)
        if token is None:
            return await _unauthorized(send, code, detail)
        scope = {**scope, SCOPE_TOKEN_KEY: token.pk}
        return await self.app(scope, receive, send)


async def _unauthorized(send, code: str, detail: str) -> None:
    body = json.dumps({"code": code, "status": 401, "detail": detail, "field": None}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", PROBLEM_CONTENT_TYPE),
                (b"www-authenticate", b'Bearer realm="mcp"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
