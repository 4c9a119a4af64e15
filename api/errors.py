"""The one place where an error becomes an HTTP answer: RFC 7807 problem details with a stable `code`.

Every API error body is

    {"type": "urn:sitewarden:error:<code>", "title": ..., "status": ..., "detail": ..., "code": ...,
     "field": <the input it is about, or null>}

plus `errors` ({field: [{"code", "message"}]}) for validation errors, served as application/problem+json.

Refusals of the domain (audits.errors.AuditRefused) keep their own code; the status says what kind of
refusal it is:

- 400: everything about the request itself (invalid_url, invalid_port, unsupported_scheme,
  credentials_in_url, private_address, dns_failure, url_too_long, invalid_max_pages, invalid_url_list,
  start_url_off_site, invalid_schedule, invalid_webhook_secret, comparison_*) and any code not listed below;
- 402: insufficient_credits: the month's credits do not cover the audit (a quota that money or the next
  month lifts, which a client must be able to tell from a permission problem);
- 403: audit_page_limit_exceeded: the plan does not allow an audit that large; token_read_only: a read-only
  API token asked for a write (api.permissions);
- 409: audit_already_running, audit_not_running, project_name_taken: the resource's state conflicts;
- 429: audit_capacity_reached (the account's or the instance's running audits; Retry-After: 60).

A refused value of a project or segment field (audits.services.ProjectInvalid, audits.segments.SegmentInvalid) is
answered like the serializer's own
field errors: 400 validation_error, with the service's code in `errors[field][0].code` (invalid_port,
invalid_pattern, invalid_user_agent, invalid_max_concurrency, ...), so a client reads every field error of
a project write the same way.

A body larger than DATA_UPLOAD_MAX_MEMORY_SIZE is 413 request_too_large; a JSON body that does not parse,
or is nested too deeply to parse, is 400 parse_error (api.parsers).

DRF's own errors keep their codes: validation_error (400), parse_error (400), not_authenticated and
authentication_failed (401), permission_denied (403), not_found (404), method_not_allowed (405),
not_acceptable (406), unsupported_media_type (415), throttled (429).
"""

import json

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpResponse
from django.views.defaults import bad_request as default_bad_request
from django.views.defaults import page_not_found as default_page_not_found
from django.views.defaults import permission_denied as default_permission_denied
from django.views.defaults import server_error as default_server_error
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error

from api.throttling import REFUSED_ATTR, rate_sentence
from audits.errors import AuditRefused, ErrorCode
from audits.segments import SegmentInvalid
from audits.services import ProjectInvalid

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:sitewarden:error:"

# The refusal codes answered with something other than 400; the statuses live on audits.errors.ErrorCode.
REFUSAL_STATUS = {code.value: int(code.status) for code in ErrorCode if code.status != status.HTTP_400_BAD_REQUEST}
CAPACITY_RETRY_AFTER_S = 60

TITLES = {
    "validation_error": "Invalid input",
    "not_found": "Not found",
    "not_authenticated": "Authentication required",
    "authentication_failed": "Authentication failed",
    "permission_denied": "Permission denied",
    "throttled": "Too many requests",
    "insufficient_credits": "Not enough credits",
    "audit_page_limit_exceeded": "Over the plan's page limit",
    "token_read_only": "Read-only token",
    "audit_already_running": "An audit is already running",
    "audit_not_running": "The audit is not running",
    "audit_capacity_reached": "No capacity for another audit",
    "project_name_taken": "Project name taken",
    "request_too_large": "Request body too large",
    "bad_request": "Bad request",
    "server_error": "Server error",
    "invalid_cursor": "Invalid cursor",
    "invalid_gate_rule": "Invalid gate rule",
    "audit_not_completed": "The audit has not completed",
    "audit_summarised": "The audit's pages were pruned",
}


def refusal_status(code: str) -> int:
    return ErrorCode.status_for(code)


def problem(*, status_code: int, code: str, detail: str, field: str | None = None, headers=None, **extra) -> Response:
    body = {
        "type": TYPE_PREFIX + code,
        "title": TITLES.get(code) or code.replace("_", " ").capitalize(),
        "status": status_code,
        "detail": detail,
        "code": code,
        "field": field,
        **extra,
    }
    return Response(body, status=status_code, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def _field_errors(detail) -> dict:
    """DRF's nested ErrorDetail structure as {field: [{"code", "message"}]}, nested fields dotted."""
    out: dict[str, list] = {}

    def walk(prefix: str, value):
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), sub)
        elif isinstance(value, list):
            if all(isinstance(v, exceptions.ErrorDetail | str) for v in value):
                for v in value:
                    out.setdefault(prefix or "non_field_errors", []).append(
                        {"code": getattr(v, "code", "invalid"), "message": str(v)}
                    )
            else:
                for i, sub in enumerate(value):
                    walk(f"{prefix}.{i}" if prefix else str(i), sub)
        else:
            out.setdefault(prefix or "non_field_errors", []).append(
                {"code": getattr(value, "code", "invalid"), "message": str(value)}
            )

    walk("", detail)
    return out


def exception_handler(exc, context):
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]. Anything not handled here is a bug and stays a 500."""
    if isinstance(exc, ProjectInvalid | SegmentInvalid) and exc.field:
        exc = exceptions.ValidationError({exc.field: [exceptions.ErrorDetail(exc.message, code=exc.code)]})
    elif isinstance(exc, RequestDataTooBig):
        # Raised by Django when DRF reads the body; left alone it would be Django's HTML 400 page.
        return problem(
            status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            code="request_too_large",
            detail=f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE).",
        )
    if isinstance(exc, AuditRefused):
        code = exc.code
        status_code = refusal_status(code)
        headers = {"Retry-After": str(CAPACITY_RETRY_AFTER_S)} if code == "audit_capacity_reached" else None
        return problem(status_code=status_code, code=code, detail=exc.message, field=exc.field, headers=headers)
    if isinstance(exc, exceptions.Throttled) and (refused := getattr(context.get("request"), REFUSED_ATTR, None)):
        exc = exceptions.Throttled(wait=exc.wait, detail=f"Request was throttled. {rate_sentence(*refused)}")
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    if not isinstance(exc, exceptions.APIException):
        return None

    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))

    if isinstance(exc, exceptions.ValidationError):
        errors = _field_errors(exc.detail)
        field = next(iter(errors), None)
        first = errors[field][0]["message"] if field else "The input is not valid."
        if field == "non_field_errors":
            field = None
        return problem(
            status_code=exc.status_code,
            code="validation_error",
            detail=first,
            field=field,
            errors=errors,
            headers=headers,
        )
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    code = exc.default_code if not isinstance(exc.detail, exceptions.ErrorDetail) else exc.detail.code
    if code in (None, "error", "invalid"):
        code = exc.default_code
    return problem(status_code=exc.status_code, code=code, detail=detail, headers=headers)


class FieldErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class ProblemSerializer(serializers.Serializer):
    """RFC 7807 problem details, as every API error is answered (application/problem+json).

    `code` is stable. Refusals to start an audit: 400 invalid_url, invalid_port, unsupported_scheme,
    credentials_in_url, private_address, dns_failure, url_too_long, invalid_max_pages, invalid_url_list
    (list mode: each bad line named by its number), start_url_off_site (not on the project's site); 402
    insufficient_credits; 403 audit_page_limit_exceeded; 409 audit_already_running; 429
    audit_capacity_reached (Retry-After). Others: 400 validation_error (see `errors`; a project's field
    errors carry the service's code there, e.g. invalid_port, invalid_pattern, invalid_user_agent),
    parse_error, invalid_cursor (a keyset cursor altered, or made for another list or sort), invalid_schedule,
    invalid_webhook_secret, comparison_same_audit,
    comparison_project_mismatch, unknown_segment (a `?segment=` naming no segment of the audit);
    the release gate (`/gate/`): invalid_gate_rule (naming the rule), audit_not_completed, audit_summarised;
    401 not_authenticated, authentication_failed (unknown, revoked or expired token); 403 permission_denied,
    token_read_only (a read-only token asked for a write);
    404 not_found (also for another account's objects); 409 audit_not_running, project_name_taken;
    413 request_too_large; 429 throttled (Retry-After).
    """

    type = serializers.CharField(help_text="urn:sitewarden:error:<code>")
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    code = serializers.CharField(help_text="Stable machine-readable code")
    field = serializers.CharField(allow_null=True, help_text="The input the error is about, if any")
    errors = serializers.DictField(
        child=FieldErrorSerializer(many=True), required=False, help_text="Validation errors by field"
    )


def page_not_found(request, exception=None):
    """handler404: a URL under /api/ that matches no route answers problem JSON, the rest the product's page
    (templates/404.html)."""
    if request.path.startswith("/api/"):
        return _plain_problem(404, "not_found", "No API resource at this address.")
    return default_page_not_found(request, exception)


def bad_request(request, exception=None):
    """handler400: a request Django refuses before any view (an empty or unknown Host header, a suspicious
    operation) answers problem JSON under /api/, the rest the product's page (templates/400.html)."""
    if request.path.startswith("/api/"):
        return _plain_problem(400, "bad_request", "The request is malformed (for instance its Host header).")
    return default_bad_request(request, exception)


def permission_denied(request, exception=None):
    """handler403: a PermissionDenied raised outside DRF answers problem JSON under /api/, the rest the
    product's 403 page."""
    if request.path.startswith("/api/"):
        return _plain_problem(403, "permission_denied", "You do not have permission to do this.")
    return default_permission_denied(request, exception)


def server_error(request):
    """handler500: an unhandled error (a bug) answers problem JSON under /api/, the rest the product's 500 page
    (templates/500.html); never a traceback, whatever the request (with DEBUG off)."""
    if request.path.startswith("/api/"):
        return _plain_problem(500, "server_error", "The server failed to answer this request; it has been logged.")
    return default_server_error(request)


def _plain_problem(status_code: int, code: str, detail: str) -> HttpResponse:
    """Problem JSON outside DRF (Django's error handlers)."""
    body = {
        "type": TYPE_PREFIX + code,
        "title": TITLES[code],
        "status": status_code,
        "detail": detail,
        "code": code,
        "field": None,
    }
    return HttpResponse(json.dumps(body), status=status_code, content_type=PROBLEM_CONTENT_TYPE)
