"""The MCP server: Sitewarden's audits as tools and resources for AI assistants (the official `mcp` SDK).

Every tool is thin, like an API view: it resolves the caller's token (assistants.identity), counts it
against the API's throttles, looks objects up through the caller's account (another account's audit is
`not_found`, exactly like one that does not exist) and calls the front door (audits.services) and the selectors
every face shares. Refusals come back as tool errors with the API's stable codes (assistants.errors). How a
function becomes a tool (the caller's token, a fresh connection, the throttles) is assistants.tooling; the tools
are assistants.audit_tools (projects and audits) and assistants.result_tools (an audit's results). This module
serves them, with the resources (the check catalogue, one check, an audit's report).

Served over stdio by `manage.py mcp --token …` and over streamable HTTP at /mcp/ (config/asgi.py).
"""

from uuid import UUID

from django.conf import settings
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.transport_security import TransportSecuritySettings

from assistants import audit_tools, result_tools  # noqa: F401  (registers their tools in TOOLS, in this order)
from assistants.errors import Refused
from assistants.identity import BearerGate, caller_token, throttle
from assistants.report import REPORT_URI, audit_report_markdown
from assistants.tooling import TOOLS, Caller, _audit
from audits.checks.catalogue import render_catalogue
from audits.checks.registry import CHECKS_BY_TYPE

SERVER_NAME = "Sitewarden"
MCP_PATH = "/mcp/"

INSTRUCTIONS = """Sitewarden audits websites the way a search engine sees them.
Typical session: list_projects (or create_project), start_audit, poll audit_status until `finished`,
then audit_summary, list_issues / issue_evidence for one type, list_pages and get_page for one URL,
list_external_links for the site's outbound links (problems_only=true: the broken or unreachable ones),
list_changes for what changed on each URL since the previous audit (field="indexability", direction="down": pages
that became non-indexable), check_gate to judge a release (rules "new-critical,score-drop=5,became-noindex"),
verify_fix then fix_verification to re-check the URLs of one issue type after a fix.
Explain a finding with the resource sitewarden://checks/{type} (severity, explanation, how to fix).
Errors carry a stable `code` (not_found, validation_error, audit_already_running, throttled, ...).
A read-only token reads everything; create_project, start_audit, cancel_audit and verify_fix then answer
token_read_only."""


# --- the server and its resources --------------------------------------------------------------------------

server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, tools=TOOLS)


@server.resource(
    "sitewarden://checks",
    name="check-catalogue",
    title="Check catalogue",
    description="Every issue type with its severity, what it means and how to fix it (docs/CHECKS.md).",
    mime_type="text/markdown",
)
def check_catalogue() -> str:
    return render_catalogue()


@server.resource(
    "sitewarden://checks/{issue_type}",
    name="check",
    title="One issue type",
    description="One issue type: severity, scope, title, explanation, how to fix, thresholds.",
    mime_type="application/json",
)
def check(issue_type: str) -> dict:
    spec = CHECKS_BY_TYPE.get(issue_type)
    if spec is None:
        raise ResourceNotFoundError(f"No issue type {issue_type!r}; sitewarden://checks lists them all.")
    return {
        "type": spec.type,
        "severity": spec.severity,
        "scope": spec.scope,
        "title": spec.title,
        "explanation": spec.explanation,
        "how_to_fix": spec.how_to_fix,
        "thresholds": spec.thresholds,
    }


@server.resource(
    REPORT_URI,
    name="audit-report",
    title="Audit report",
    description="An audit's report as Markdown: score, counts, issue types by priority with how to fix them.",
    mime_type="text/markdown",
)
def audit_report(audit_id: str, ctx: Context) -> str:
    close_old_connections()
    try:
        try:
            token = caller_token(ctx)
            throttle(token)
        except Refused as exc:
            raise ResourceNotFoundError(f"{exc.code}: {exc.detail}") from exc
        try:
            audit = _audit(Caller(token=token, base_url=""), UUID(audit_id))
        except (ValueError, Refused):
            raise ResourceNotFoundError("No such audit in your account.") from None
        return audit_report_markdown(audit=audit)
    finally:
        close_old_connections()


def _transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection with Django's ALLOWED_HOSTS (off when they allow any host, as Django does)."""
    hosts = [h for h in settings.ALLOWED_HOSTS if h and not h.startswith(".")]
    if "*" in hosts or len(hosts) != len(settings.ALLOWED_HOSTS):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[f"{scheme}://{h}{port}" for h in hosts for scheme in ("http", "https") for port in ("", ":*")],
    )


def http_app():
    """The streamable HTTP app behind the bearer-token gate: stateless with JSON answers, so any web
    process can answer any request (no session lives in one process's memory)."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, transport_security=_transport_security()
    )
    return BearerGate(app)
