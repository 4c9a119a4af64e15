"""Refusals as MCP tool errors: the API's stable codes (audits.errors.ErrorCode and DRF's own) with a
sentence a person can act on, in `structuredContent` for programs and in the text for the model.

A tool raises the domain's own errors (AuditRefused, ProjectInvalid, Http404) or `Refused`; `CodedTool`
turns them, and the SDK's argument-validation failures, into one `is_error` result shape:

    {"code": "not_found", "status": 404, "detail": "...", "field": null}

Text the database cannot store (a NUL character, a lone surrogate) in any string argument, however nested, is
refused as validation_error naming the argument, before the tool runs (config.inputs).

Anything else is a crash: the SDK answers "Error executing tool <name>" and logs the traceback.
"""

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

from audits.errors import AuditRefused, ErrorCode
from audits.services import ProjectInvalid
from config.inputs import first_text_problem

# DRF's codes the API answers with, and their statuses (api.errors keeps the same ones).
NOT_FOUND, VALIDATION_ERROR, THROTTLED = "not_found", "validation_error", "throttled"
AUTHENTICATION_FAILED, PERMISSION_DENIED = "authentication_failed", "permission_denied"
_STATUS = {NOT_FOUND: 404, VALIDATION_ERROR: 400, THROTTLED: 429, AUTHENTICATION_FAILED: 401, PERMISSION_DENIED: 403}
NOT_FOUND_SENTENCE = "No such {what} in your account. List them with the {tool} tool to see the ids you can use."


class Refused(ToolError):
    """A refusal a tool raises itself, with a stable code."""

    def __init__(self, code: str, detail: str, *, field: str | None = None, **extra: Any):
        super().__init__(detail)
        self.code, self.detail, self.field, self.extra = code, detail, field, extra


def not_found(what: str, tool: str) -> Refused:
    return Refused(NOT_FOUND, NOT_FOUND_SENTENCE.format(what=what, tool=tool))


def _from_validation(exc: ValidationError) -> Refused:
    """The first argument the schema refused, named, with pydantic's reason (no echo of the value)."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0] if errors else {"loc": (), "msg": "invalid"}
    field = ".".join(str(part) for part in first["loc"]) or None
    fields = sorted({".".join(str(p) for p in e["loc"]) for e in errors})
    detail = f"Argument {field!r}: {first['msg']}." if field else f"The arguments are not valid: {first['msg']}."
    return Refused(VALIDATION_ERROR, detail + " Check the tool's input schema.", field=field, fields=fields)


def refusal_for(exc: BaseException | None) -> Refused | None:
    """The refusal an exception stands for, or None when it is a crash."""
    if isinstance(exc, Refused):
        return exc
    if isinstance(exc, ProjectInvalid):
        # The API answers a project's field errors as validation_error with the service's code per field.
        return Refused(VALIDATION_ERROR, exc.message, field=exc.field, errors={exc.field: [{"code": exc.code}]})
    if isinstance(exc, AuditRefused):
        return Refused(exc.code, exc.message, field=exc.field)
    if isinstance(exc, Http404 | ObjectDoesNotExist):
        return Refused(NOT_FOUND, "Not found in your account.")
    if isinstance(exc, ValidationError):
        return _from_validation(exc)
    if isinstance(exc, DjangoValidationError):
        return Refused(VALIDATION_ERROR, "; ".join(exc.messages))
    return None


def error_result(refusal: Refused) -> CallToolResult:
    status = _STATUS.get(refusal.code) or ErrorCode.status_for(refusal.code)
    body = {"code": refusal.code, "status": status, "detail": refusal.detail, "field": refusal.field, **refusal.extra}
    return CallToolResult(
        content=[TextContent(type="text", text=f"{refusal.code}: {refusal.detail}")],
        structured_content=body,
        is_error=True,
    )


class CodedTool(Tool):
    """A tool whose anticipated failures come back with a stable code (see the module docstring)."""

    async def run(self, arguments, context, convert_result: bool = False):
        problem = first_text_problem(arguments)
        if problem:  # before the schema: pydantic takes a NUL or a lone surrogate as any other character
            field, code, message = problem
            detail = f"Argument {field!r}: {message}" if field else message
            return error_result(
                Refused(VALIDATION_ERROR, detail, field=field or None, errors={field: [{"code": code}]})
            )
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and isinstance(exc, UnexpectedToolError):
                raise  # a validator of ours crashed: not the caller's argument
            refusal = refusal_for(cause)
            if refusal is None:
                raise
            return error_result(refusal)
