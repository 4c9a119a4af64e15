"""MCP fixtures: a real MCP client from the SDK over stdio (`manage.py mcp` as a child process), over
streamable HTTP (uvicorn serving config.asgi on 127.0.0.1), or in-process; and two accounts with a token each."""

import sys

import pytest
from django.core.cache import cache
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from accounts.tokens import token_create
from tests.factories import UserFactory
from tests.support import web
from tests.support.workers import REPO_ROOT, subprocess_env


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def token(transactional_db):
    return token_create(user=UserFactory(), name="assistant")[1]


@pytest.fixture
def other_token(transactional_db):
    return token_create(user=UserFactory(), name="stranger")[1]


def stdio_client(token: str) -> Client:
    """`python manage.py mcp --token …` as a desktop assistant starts it, on this session's database."""
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", "--token", token], cwd=str(REPO_ROOT), env=subprocess_env()
    )
    return Client(params)


def http_client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


@pytest.fixture
def asgi_server(transactional_db):
    """The web process as production runs it (uvicorn, config.asgi) on 127.0.0.1; yields its base URL."""
    with web.asgi_server() as url:
        yield url
