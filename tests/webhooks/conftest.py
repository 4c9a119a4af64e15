"""Webhook fixtures: the API's user and project, and a local receiver that records each POST."""

from tests.api.conftest import project, receiver, user  # noqa: F401  (fixtures shared with the API tests)
