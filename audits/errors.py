"""The project's one error type for refused requests: a stable code for programs, a sentence for people.

`ErrorCode` lists the codes whose meaning goes beyond "the request itself is wrong", each with the HTTP
status a refusal with that code is answered with (api/errors.py reads it; nothing else keeps a table).
Codes not listed (invalid_url, invalid_port, private_address, invalid_pattern, ...: the many ways an input
can be wrong, several named by crawler.urls) are 400. The values are a wire contract: never rename one.
"""

from enum import StrEnum
from http import HTTPStatus


class ErrorCode(StrEnum):
    """A stable refusal code and the HTTP status it is answered with."""

    def __new__(cls, code: str, status: int):
        member = str.__new__(cls, code)
        member._value_ = code
        member.status = status
        return member

    # 400: the request itself
    INVALID_URL = "invalid_url", HTTPStatus.BAD_REQUEST
    INVALID_PORT = "invalid_port", HTTPStatus.BAD_REQUEST
    INVALID_MAX_PAGES = "invalid_max_pages", HTTPStatus.BAD_REQUEST
    INVALID_CHECK_OVERRIDES = "invalid_check_overrides", HTTPStatus.BAD_REQUEST
    INVALID_SCHEDULE = "invalid_schedule", HTTPStatus.BAD_REQUEST
    INVALID_URL_LIST = "invalid_url_list", HTTPStatus.BAD_REQUEST
    # An audit starts on its project's site only: the project's basic auth, robots.txt and report are per site.
    START_URL_OFF_SITE = "start_url_off_site", HTTPStatus.BAD_REQUEST
    COMPARISON_SAME_AUDIT = "comparison_same_audit", HTTPStatus.BAD_REQUEST
    COMPARISON_PROJECT_MISMATCH = "comparison_project_mismatch", HTTPStatus.BAD_REQUEST
    INVALID_CURSOR = "invalid_cursor", HTTPStatus.BAD_REQUEST  # a keyset cursor not signed for this list
    INVALID_BRANDING = "invalid_branding", HTTPStatus.BAD_REQUEST  # a report branding's colour, logo or paper
    # A baseline to measure an audit's changes against: a completed audit of the same project with its pages, not
    # the audit itself (audits.pipeline.start.baseline_checked); and only a completed audit's is chosen later.
    BASELINE_INVALID = "baseline_invalid", HTTPStatus.BAD_REQUEST
    # A fix verification (audits.verification) of a type a list re-check cannot judge: site-wide, whole-crawl
    ISSUE_TYPE_NOT_VERIFIABLE = "issue_type_not_verifiable", HTTPStatus.BAD_REQUEST
    INVALID_REPORT_RECIPIENTS = "invalid_report_recipients", HTTPStatus.BAD_REQUEST  # a schedule's report e-mails
    # 402: a quota that money or the next month lifts (a client must tell it from a permission problem)
    INSUFFICIENT_CREDITS = "insufficient_credits", HTTPStatus.PAYMENT_REQUIRED
    # 403: the plan does not allow it
    AUDIT_PAGE_LIMIT_EXCEEDED = "audit_page_limit_exceeded", HTTPStatus.FORBIDDEN
    # 403: the API token is read only and the request would write (API: api.permissions; MCP: write tools)
    TOKEN_READ_ONLY = "token_read_only", HTTPStatus.FORBIDDEN
    # 404: an issue type the audit has no page-level finding of (a fix verification has nothing to re-check)
    ISSUE_TYPE_NOT_FOUND = "issue_type_not_found", HTTPStatus.NOT_FOUND
    # 404: the audit is not a fix verification (GET …/verification/)
    NOT_A_VERIFICATION = "not_a_verification", HTTPStatus.NOT_FOUND
    # 409: the resource's state conflicts
    AUDIT_ALREADY_RUNNING = "audit_already_running", HTTPStatus.CONFLICT
    AUDIT_NOT_RUNNING = "audit_not_running", HTTPStatus.CONFLICT
    PROJECT_NAME_TAKEN = "project_name_taken", HTTPStatus.CONFLICT
    AUDIT_NOT_COMPLETED = "audit_not_completed", HTTPStatus.CONFLICT  # only a completed audit's issues are verified
    # Retention pruned the audit's pages, issues and links (audits.retention): nothing to re-check, and no list of
    # them (its summary, score, issue counts by type and changes stay).
    AUDIT_SUMMARISED = "audit_summarised", HTTPStatus.CONFLICT
    # 429: the account's or the instance's running audits (answered with Retry-After)
    AUDIT_CAPACITY_REACHED = "audit_capacity_reached", HTTPStatus.TOO_MANY_REQUESTS

    @classmethod
    def status_for(cls, code: "str | ErrorCode") -> int:
        """The HTTP status of a refusal code; 400 for a code not listed."""
        try:
            return int(cls(code).status)
        except ValueError:
            return int(HTTPStatus.BAD_REQUEST)


class AuditRefused(Exception):
    def __init__(self, code: "str | ErrorCode", message: str, *, field: str | None = None):
        super().__init__(message)
        self.code = code.value if isinstance(code, ErrorCode) else code  # always the plain wire string
        self.message = message
        self.field = field  # the input the refusal is about, for forms

    @property
    def status(self) -> int:
        """The HTTP status this refusal is answered with (ErrorCode.status_for)."""
        return ErrorCode.status_for(self.code)
