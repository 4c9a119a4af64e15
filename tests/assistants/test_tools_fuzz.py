"""Every MCP tool called with generated arguments (Hypothesis), in process through the SDK's client as
tests/assistants/test_tools.py does: values its input schema allows, mixed with what a probe sends (page
numbers like 10**19, ids past bigint, NUL and lone surrogates in strings, wrong types, missing arguments).
The answer is a result or a coded refusal (`code` and a status under 500), never an internal error.

URL arguments are on 127.0.0.1 only: a start or a project checks its host, and nothing may leave the machine.
"""

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from accounts.tokens import token_authenticate
from assistants.identity import stdio_caller
from assistants.server import server
from audits.models import Page
from tests.api.conftest import finished_audit
from tests.factories import ProjectFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]  # the SDK runs tools in threads

MAX_EXAMPLES = 40  # per tool (13 tools): ~45 s on 2 cores, most of it the per-test database flush

HOSTILE = st.sampled_from(
    [10**19, 2**63, 10**20, -(2**63) - 1, -1, 0, 1.5, "", "a\x00b", "\x00", "\ud800", "x\udfffy", "x" * 5000]
    + [None, True, [], {}, ["\x00"], {"a": "\ud800"}]
)
URL = st.one_of(
    st.sampled_from(["http://127.0.0.1:1/", "http://127.0.0.1:65536/", "http://u:p@127.0.0.1:1/", "ftp://x/"]),
    st.text(max_size=20).map(lambda path: "http://127.0.0.1:1/" + path.replace("\\", "/")),
)


def _tools() -> list:
    async def listed():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    return anyio.run(listed)


TOOLS = _tools()


def _from_schema(schema: dict, name: str, real: dict) -> st.SearchStrategy:
    """Values a (pydantic-made) JSON schema allows: enough of JSON Schema for the tools' arguments."""
    if "anyOf" in schema:
        return st.one_of(*(_from_schema(option, name, real) for option in schema["anyOf"]))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "integer":
        numbers = st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
        return st.one_of(st.sampled_from(real[name]), numbers) if name in real else numbers
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_from_schema(schema.get("items", {}), name, real), max_size=3)
    if kind == "string":
        if schema.get("format") == "uuid":
            return st.one_of(st.sampled_from(real["uuids"]), st.uuids().map(str))
        if "url" in name:
            return URL
        return st.text(max_size=min(schema.get("maxLength", 40), 40))
    return st.none()


def _arguments(tool, real: dict) -> st.SearchStrategy:
    schema = tool.input_schema
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))

    def value(name):
        return st.one_of(_from_schema(properties[name], name, real), HOSTILE)

    must = {name: value(name) for name in properties if name in required}
    may = {name: value(name) for name in properties if name not in required}
    # Now and then a required argument is left out.
    return st.one_of(st.fixed_dictionaries(must, optional=may), st.fixed_dictionaries({}, optional=may))


@pytest.fixture
def real(token, monkeypatch, settings):
    """The caller's token (as `manage.py mcp --token` would be given), its project and a finished audit; the
    ids the arguments use half of the time."""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api": "100000/min", "audit_start": "100000/min"},
    }
    monkeypatch.setattr(stdio_caller, "plaintext", token)
    project = ProjectFactory(owner=token_authenticate(token).user, base_url="http://127.0.0.1:1/")
    audit = finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/gone": 404},
        issues=[("missing-title", "critical", "/a"), ("broken-page", "critical", "/gone")],
        links=[("/", "/a"), ("/", "/gone")],
    )
    pages = [str(i) for i in Page.objects.filter(audit=audit).values_list("id", flat=True)]
    return {"uuids": [str(audit.id), *pages], "project_id": [project.id]}


def _call(tool: str, arguments: dict):
    async def run():
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(run)


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_a_tool_answers_generated_arguments_with_a_result_or_a_coded_refusal(real, tool):
    @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments=_arguments(tool, real))
    def call(arguments):
        result = _call(tool.name, arguments)
        if result.is_error:
            body = result.structured_content or {}
            assert body.get("code") and body.get("status", 500) < 500, result.content[0].text

    call()
