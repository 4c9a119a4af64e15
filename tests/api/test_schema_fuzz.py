"""Schemathesis against /api/schema/: generated requests to every operation, with a real token and real
ids half of the time, never get a 500 nor a response the schema does not describe.

Besides what the schema allows, the hooks below mix in what an attacker's probe sends (issue 24): cursors
forged, of the wrong type, holding huge integers or NUL, or signed for another paginator; ids and numeric
filters past PostgreSQL's bigint; NUL and lone surrogates in every string of a JSON body, and huge integers
in its numbers.

The schema is loaded from the WSGI app at collection (it needs no database); each operation's test then
runs MAX_EXAMPLES generated cases in its own database transaction.
"""

import base64
import json

import pytest
import schemathesis
from django.core import signing
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.tokens import token_create
from audits.models import Page
from tests.api.conftest import finished_audit
from webhooks.services import webhook_create

pytestmark = pytest.mark.slow  # property-based: hundreds of requests

MAX_EXAMPLES = 20
# What the API promises: no server error, and every answer (status, content type, headers, body) as the
# schema describes it. Schemathesis's stricter "negative data rejected / positive data accepted" checks are
# left out: the API ignores unknown query parameters and rejects schema-valid input the schema cannot
# express (an unreachable URL, a cron expression), as documented.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
REAL_IDS: dict[str, dict] = {}  # filled per test by the `fuzz_data` fixture, read while cases are generated


schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


def _unsigned(data) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


HOSTILE_INTS = [2**63, 10**20, 10**19, -(2**63) - 1, 0, -1]
HOSTILE_TEXTS = ["a\x00b", "\ud800", "x\udfffy"]
HOSTILE_CURSORS = [
    _unsigned({"k": ["x", "y", 10**30], "b": 0}),  # huge integer
    _unsigned({"k": [1, 2, 3], "b": 0}),  # wrong types
    _unsigned({"k": [10**30], "b": 0}),
    _unsigned({"k": ["\x00"], "b": 0}),
    _unsigned({"t": "url", "k": ["a"], "b": 0}),
    signing.Signer(salt="dashboard.keyset").sign_object({"t": "", "k": ["a"], "b": 0}),  # another paginator's
    "%%%",
    "x" * 5000,
]
HOSTILE_QUERY = st.fixed_dictionaries(
    {},
    optional={
        "cursor": st.sampled_from(HOSTILE_CURSORS),
        "project": st.sampled_from(HOSTILE_INTS),
        "status_code": st.sampled_from(HOSTILE_INTS),
        "page": st.sampled_from(HOSTILE_INTS),
        "page_size": st.sampled_from(HOSTILE_INTS),
        "url": st.just("a\x00b"),
        "name": st.just("a\x00b"),
    },
)


def _poisoned(data, *, text: str | None = None, number: int | None = None):
    """`data` with every string (keys too) ending in `text`, or every whole number replaced by `number`."""
    if isinstance(data, bool) or data is None:
        return data
    if isinstance(data, str):
        return data + text if text is not None else data
    if isinstance(data, int):
        return number if number is not None else data
    if isinstance(data, dict):
        return {_poisoned(k, text=text): _poisoned(v, text=text, number=number) for k, v in data.items()}
    if isinstance(data, list):
        return [_poisoned(v, text=text, number=number) for v in data]
    return data


@schema.hook
def flatmap_query(context, query):
    query = query or {}
    return st.one_of(st.just(query), HOSTILE_QUERY.map(lambda hostile: {**query, **hostile}))


@schema.hook
def flatmap_body(context, body):
    if not isinstance(body, dict | list):
        return st.just(body)
    return st.one_of(
        st.just(body),
        st.sampled_from(HOSTILE_TEXTS).map(lambda text: _poisoned(body, text=text)),
        st.sampled_from(HOSTILE_INTS).map(lambda number: _poisoned(body, number=number)),
    )


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    if not path_parameters:
        return st.just(path_parameters)
    collection = context.operation.path.split("/")[3]  # /api/v1/<collection>/...
    known = {k: v for k, v in REAL_IDS.get(collection, {}).items() if k in path_parameters}
    huge = {k: 2**63 if k == "id" else v for k, v in path_parameters.items()}  # the integer ids: one past bigint
    return st.sampled_from([path_parameters, {**path_parameters, **known}, huge])


@pytest.fixture
def fuzz_data(db, user, project, results, settings):
    """A token, and a project with two finished audits, pages and a webhook for the real ids."""
    # Throttles are tested on their own; here they would answer 429 to most of the generated writes.
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api": "100000/min", "audit_start": "100000/min"},
    }
    # Requests run inside this test's transaction: keep Django from closing the connection after each
    # one, as its own test client does.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    later = finished_audit(project, pages={"/": 200}, issues=[("missing-title", "critical", "/")], ago_min=1)
    hook = webhook_create(project=project, url="http://127.0.0.1:9/hook")
    REAL_IDS.update(
        projects={"id": project.id},
        audits={
            "id": str(later.id),
            "base_pk": str(results.id),
            "page_pk": str(Page.objects.filter(audit=later).values_list("id", flat=True).first()),
        },
        webhooks={"id": hook.id},
    )
    yield token_create(user=user, name="fuzz")[1]
    REAL_IDS.clear()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, fuzz_data):
    case.call_and_validate(headers={"Authorization": f"Bearer {fuzz_data}"}, checks=CHECKS)
