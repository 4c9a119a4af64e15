"""The egress proxy against real servers on loopback: what the SSRF policy allows goes through (GET, POST,
CONNECT, Upgrade), everything else is a 403 naming no address, with no connection made; junk is a 400."""

import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from crawler.egress import EGRESS_MAX_HEAD_BYTES, EgressProxy
from crawler.urls import set_allowed_networks

ALLOWED = "127.0.0.2"


class _Counter:
    """A listening socket that counts the connections it accepts and answers each with a fixed reply."""

    def __init__(self, host: str, reply: bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret"):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.create_server((host, 0), family=family)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.reply = reply
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                conn.sendall(self.reply)
            except OSError:
                pass
            conn.close()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list

    def log_message(self, *args):
        pass

    def _answer(self, body: bytes):
        self.seen.append((self.command, self.path, dict(self.headers)))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Keep-Alive", "timeout=5")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer(b"hello from upstream " + self.path.encode())

    def do_POST(self):
        self._answer(b"got " + self.rfile.read(int(self.headers["Content-Length"])))


def _echo_after_head(conn: socket.socket, answer: bytes) -> None:
    """Read a request head, answer `answer`, then echo every byte back (a tunnel's or WebSocket's far end)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk
    conn.sendall(answer)
    while chunk := conn.recv(4096):
        conn.sendall(chunk)


@pytest.fixture
def policy():
    set_allowed_networks([f"{ALLOWED}/32"])
    yield
    set_allowed_networks([])


@pytest.fixture
def proxy(policy):
    proxy = EgressProxy()
    url = proxy.start()
    yield url
    proxy.stop()


@pytest.fixture
def upstream():
    seen: list = []
    server = ThreadingHTTPServer((ALLOWED, 0), type("Upstream", (_Upstream,), {"seen": seen}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    yield f"http://{ALLOWED}:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def canary():
    counter = _Counter("127.0.0.1")
    yield counter
    counter.sock.close()


def _raw(proxy_url: str, request: bytes, *, then: bytes = b"") -> tuple[bytes, socket.socket]:
    """Send `request` to the proxy, return (what came back within the head, the socket)."""
    host, port = proxy_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data, sock


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_get_and_post_to_an_allowed_address_go_through_without_proxy_headers(proxy, upstream):
    base, seen = upstream
    proxies = {"http": proxy}
    response = requests.get(base + "/page?q=1", proxies=proxies, headers={"Proxy-Authorization": "Basic eA=="})
    assert response.status_code == 200 and response.text == "hello from upstream /page?q=1"
    assert "keep-alive" not in {k.lower() for k in response.headers}  # hop-by-hop headers do not come back
    method, path, headers = seen[-1]
    assert (method, path) == ("GET", "/page?q=1")  # origin-form upstream
    assert not any(name.lower().startswith("proxy-") for name in headers)
    assert headers["Connection"] == "close"
    posted = requests.post(base + "/beacon", data=b"x" * 100_000, proxies=proxies)
    assert posted.status_code == 200 and posted.content == b"got " + b"x" * 100_000


def test_connect_to_an_allowed_address_tunnels_bytes_both_ways(proxy):
    far = socket.create_server((ALLOWED, 0))
    threading.Thread(target=lambda: _echo_after_head(far.accept()[0], b""), daemon=True).start()
    port = far.getsockname()[1]
    head, sock = _raw(proxy, f"CONNECT {ALLOWED}:{port} HTTP/1.1\r\nHost: {ALLOWED}:{port}\r\n\r\n".encode())
    assert head.startswith(b"HTTP/1.1 200")
    sock.sendall(b"GET / HTTP/1.1\r\n\r\nping")  # the far end reads a head, then echoes
    sock.sendall(b"pong")
    received = b""
    while len(received) < 4:
        received += sock.recv(100)
    assert received == b"pong"
    sock.close()
    far.close()


def test_an_upgrade_request_is_relayed_as_a_websocket_would_be(proxy):
    far = socket.create_server((ALLOWED, 0))
    answer = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    threading.Thread(target=lambda: _echo_after_head(far.accept()[0], answer), daemon=True).start()
    port = far.getsockname()[1]
    request = (
        f"GET http://{ALLOWED}:{port}/ws HTTP/1.1\r\nHost: {ALLOWED}:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head, sock = _raw(proxy, request.encode())
    assert head.startswith(b"HTTP/1.1 101") and b"Upgrade: websocket" in head
    sock.sendall(b"frame")
    assert sock.recv(100) == b"frame"
    sock.close()
    far.close()


def _teredo(server: str, client: str) -> str:
    # RFC 4380: prefix, server IPv4, flags, obfuscated port, obfuscated (inverted) client IPv4.
    value = (0x2001_0000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | (0xFFFF << 32)
    return str(ipaddress.IPv6Address(value | (int(ipaddress.IPv4Address(client)) ^ 0xFFFF_FFFF)))


# Loopback and link-local, as themselves and inside every IPv6 wrapping that leads back to them.
REFUSED_HOSTS = [
    "127.0.0.1",
    "localhost",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[2002:7f00:1::]",  # 6to4
    "[2002:a9fe:a9fe::1]",
    f"[{_teredo('65.54.227.120', '127.0.0.1')}]",  # Teredo, client loopback
    f"[{_teredo('127.0.0.1', '8.8.8.8')}]",  # Teredo, server loopback
    f"[{_teredo('65.54.227.120', '169.254.169.254')}]",
    "[64:ff9b::7f00:1]",  # NAT64
    "[64:ff9b::a9fe:a9fe]",
    "[64:ff9b:1::7f00:1]",
    "169.254.169.254",
    "10.0.0.1",
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
@pytest.mark.parametrize("method", ["GET", "CONNECT"])
def test_non_public_destinations_are_refused_before_any_connection(proxy, canary, host, method):
    authority = f"{host}:{canary.port}"
    target = authority if method == "CONNECT" else f"http://{authority}/admin"
    head, sock = _raw(proxy, f"{method} {target} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    answer = head + _read_all(sock)
    sock.close()
    # 403, not a 502/504: the proxy refused on the address and never tried to connect.
    assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
    assert b"not a public address" in answer
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert b"127." not in body and b"169.254" not in body and host.strip("[]").encode() not in body
    assert canary.accepted == 0


def test_requests_library_through_the_proxy_sees_403_for_loopback(proxy, canary):
    response = requests.get(f"http://127.0.0.1:{canary.port}/", proxies={"http": proxy})
    assert response.status_code == 403 and "secret" not in response.text
    assert canary.accepted == 0


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"garbage\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",  # origin-form: not a proxy request
        b"GET ftp://example.com/ HTTP/1.1\r\n\r\n",
        b"GET http://example.com/ HTTP/9.9\r\n\r\n",
        b"GET http://example.com/ HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET http://example.com/ HTTP/1.1\r\nX-Folded: a\r\n continued\r\n\r\n",
        b"GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n",
        b"GET http://example.com:99999/ HTTP/1.1\r\n\r\n",
        b"CONNECT example.com HTTP/1.1\r\n\r\n",  # no port
        b"CONNECT example.com:0 HTTP/1.1\r\n\r\n",
    ],
)
def test_malformed_requests_get_400(proxy, request_bytes):
    head, sock = _raw(proxy, request_bytes)
    sock.close()
    assert head.startswith(b"HTTP/1.1 400"), head


def test_an_oversized_head_gets_431(proxy):
    request = b"GET http://example.com/ HTTP/1.1\r\nX-Big: " + b"a" * (EGRESS_MAX_HEAD_BYTES + 10) + b"\r\n\r\n"
    head, sock = _raw(proxy, request)
    sock.close()
    assert head.startswith(b"HTTP/1.1 431"), head[:100]
