"""How a function becomes an MCP tool: `tool(...)` registers `fn(caller, **arguments)` in TOOLS, and each call
gets a fresh database connection, the caller's token as a `Caller` and the API's throttles. And what the tools
share: their paging and id arguments, and the caller's project or audit (another account's is `not_found`). The
tools themselves are in assistants.audit_tools and assistants.result_tools; assistants.server serves them."""

import inspect
from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

from django.db import close_old_connections
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import Field

from accounts.models import ApiToken
from api.permissions import READ_ONLY_SENTENCE
from assistants.errors import VALIDATION_ERROR, CodedTool, Refused, not_found
from assistants.identity import caller_token, stdio_caller, throttle
from audits.checks.registry import CHECKS_BY_TYPE
from audits.errors import ErrorCode
from audits.models import Audit, Project
from audits.selectors import audits as audit_reads
from audits.selectors.projects import project_list_for
from config.inputs import ID_MAX, ID_MIN, PAGE_NUMBER_MAX


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


# --- what the tools share: their paging and id arguments, the caller's objects -----------------------------

PAGE_SIZE_DEFAULT = 50  # rows per page of every list a tool answers
PAGE_SIZE_MAX = 200  # an assistant's context is the scarce resource, not the database

PageNumber = Annotated[
    int, Field(ge=1, le=PAGE_NUMBER_MAX, description=f"1 for the first page (at most {PAGE_NUMBER_MAX})")
]
PageSize = Annotated[int, Field(ge=1, le=PAGE_SIZE_MAX, description=f"Rows per page, at most {PAGE_SIZE_MAX}")]
ProjectId = Annotated[int, Field(ge=ID_MIN, le=ID_MAX, description="The project's id (list_projects)")]
AuditId = Annotated[UUID, Field(description="An audit's id (from start_audit or list_audits)")]


def _paged(queryset, page: int, page_size: int) -> tuple[int, list, bool]:
    count = queryset.count()
    start = (page - 1) * page_size
    rows = list(queryset[start : start + page_size])
    return count, rows, start + len(rows) < count


def _project(caller: Caller, project_id: int) -> Project:
    project = project_list_for(caller.user).filter(pk=project_id).first()
    if project is None:
        raise not_found("project", "list_projects")
    return project


def _audit(caller: Caller, audit_id: UUID) -> Audit:
    audit = audit_reads.audit_list_for(caller.user).select_related("project").filter(pk=audit_id).first()
    if audit is None:
        raise not_found("audit", "list_audits")
    return audit


def _issue_type(value: str, field: str = "issue_type") -> str:
    if value not in CHECKS_BY_TYPE:
        raise Refused(
            VALIDATION_ERROR,
            f"Unknown issue type {value!r}. The resource sitewarden://checks lists every type.",
            field=field,
        )
    return value
