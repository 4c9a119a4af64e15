"""How a function becomes an MCP tool: `tool(...)` registers `fn(caller, **arguments)` in TOOLS, and each call
gets a fresh database connection, the caller's token as a `Caller` and the API's throttles. The tools themselves
are in assistants.server."""

import inspect
from dataclasses import dataclass

from django.db import close_old_connections
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations

from accounts.models import ApiToken
from api.permissions import READ_ONLY_SENTENCE
from assistants.errors import CodedTool, Refused
from assistants.identity import caller_token, stdio_caller, throttle
from audits.errors import ErrorCode


@dataclass(frozen=True)
class Caller:
    token: ApiToken
    base_url: str  # where this instance's API answers, for links

    @property
    def user(self):
        return self.token.user


TOOLS: list[CodedTool] = []


def tool(*, title: str, read_only: bool, destructive: bool = False, action: str | None = None):
    """Register `fn(caller, **arguments)` as a tool: the SDK sees its signature without `caller` (plus the
    request context), and each call gets a fresh database connection, the caller's token and the
    throttles (`action`: the stricter API scope, e.g. audit_start).

    `read_only` has no default: every tool says whether it writes (starts, cancels, creates, changes or
    deletes anything). A write tool refuses a read-only token with `token_read_only`, as the API does
    (api.permissions). Read-only tokens still see the write tools in the list: the SDK lists the same tools
    to every caller, and a refusal that names the token's scope tells an assistant more than a missing tool.
    """

    def register(fn):
        params = list(inspect.signature(fn).parameters.values())[1:]

        def run(ctx: Context, **arguments):
            close_old_connections()  # as Django does around a request: no connection outlives its call
            try:
                token = caller_token(ctx)
                if not read_only and token.read_only:
                    raise Refused(ErrorCode.TOKEN_READ_ONLY.value, READ_ONLY_SENTENCE)
                throttle(token, action=action)
                return fn(Caller(token=token, base_url=_base_url(ctx)), **arguments)
            finally:
                close_old_connections()

        ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
        signature = inspect.Signature([ctx_param, *(p.replace(kind=p.KEYWORD_ONLY) for p in params)])
        run.__signature__ = signature.replace(return_annotation=inspect.signature(fn).return_annotation)
        run.__name__, run.__doc__ = fn.__name__, fn.__doc__
        hints = ToolAnnotations(
            title=title, read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=read_only
        )
        TOOLS.append(
            CodedTool.from_function(run, name=fn.__name__, title=title, context_kwarg="ctx", annotations=hints)
        )
        return fn

    return register


def _base_url(ctx) -> str:
    request = getattr(ctx.request_context, "request", None)
    if request is not None and hasattr(request, "base_url"):
        return str(request.base_url).rstrip("/")
    return stdio_caller.base_url.rstrip("/")
