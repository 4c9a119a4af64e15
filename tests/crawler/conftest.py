"""Crawler fixtures: a routed HTTP site on 127.0.0.1 (tests.support.sites), a session, a closed port, a bomb."""

import socket

import pytest

from crawler.fetch import build_session
from tests.support.sites import gzip_bomb as make_gzip_bomb
from tests.support.sites import serve_routes


@pytest.fixture
def site():
    """A routed site on 127.0.0.1: `site.add(path, body, …)`, `site.handle(path, func)`, `site.requests`."""
    with serve_routes() as routed:
        yield routed


@pytest.fixture
def session():
    s = build_session()
    yield s
    s.close()


@pytest.fixture
def closed_port():
    """A port on 127.0.0.1 nobody listens on (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture(scope="session")
def gzip_bomb() -> bytes:
    """~100 KB of gzip that inflates to 100 MiB."""
    return make_gzip_bomb(100 * 1024 * 1024)
