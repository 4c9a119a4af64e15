"""The egress proxy: a small forward proxy (plain HTTP and CONNECT) through which every Chromium the product
starts must send its traffic, so a browser reaches only what the crawler may reach.

Each request's host is resolved and every address vetted with crawler.urls.resolve_public (the crawler's
own check, with ALLOWED_PRIVATE_NETWORKS); the upstream connection goes to the vetted address, never to the
name, and its peer is checked again. A refusal is `403 Forbidden` with a body that names no address.
Stripe's Smokescreen is the model. CONNECT carries HTTPS and WebSockets (Chromium tunnels ws:// and wss://
alike); plain HTTP is forwarded one request per client connection (`Connection: close`), Upgrade included.
"""

import contextlib
import logging
import os
import re
import selectors
import socket
import threading
from urllib.parse import urlsplit

from crawler import limits
from crawler.urls import PRIVATE_TARGETS_HINT, AddressRefused, is_public_address, resolve_public

logger = logging.getLogger(__name__)

EGRESS_CONNECT_TIMEOUT_S = limits.CONNECT_TIMEOUT_S  # to the upstream address
EGRESS_HEAD_TIMEOUT_S = 15  # for the client to send its request line and headers
EGRESS_IDLE_TIMEOUT_S = 120  # a tunnel or a response with no byte either way for this long is closed
EGRESS_MAX_CONNECTIONS = 256  # client connections handled at once; more are answered 503
EGRESS_MAX_HEAD_BYTES = 64 * 1024  # request line + headers (and an upstream response head)
EGRESS_MAX_INTERIM_RESPONSES = 10  # 1xx answers (100 Continue, 103 Early Hints) passed on before the final one
EGRESS_BUFFER_BYTES = 64 * 1024
EGRESS_LISTEN_BACKLOG = 128
EGRESS_DRAIN_TIMEOUT_S = 1  # after an error answer, for the client to stop sending
EGRESS_MAX_DRAIN_BYTES = 1024 * 1024

# RFC 9110 7.6.1: meaningful for one connection only, never forwarded. Transfer-Encoding is not in the
# list: bodies are relayed as raw bytes, so their framing must reach the other side unchanged.
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer")
)
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_AUTHORITY = re.compile(r"^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:/@\[\]]+)):(\d{1,5})$")
_REFUSED_BODY = (
    f"Sitewarden egress proxy: refused, the destination is not a public address ({PRIVATE_TARGETS_HINT}).\n".encode()
)
_STATUS_TEXT = {
    400: "Bad Request",
    403: "Forbidden",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class _BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _read_head(sock) -> tuple[bytes, bytes]:
    """(head without the blank line, bytes after it) read from `sock`, at most EGRESS_MAX_HEAD_BYTES."""
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            if end > EGRESS_MAX_HEAD_BYTES:
                raise _BadRequest(431, "request head too large")
            return data[:end], data[end + 4 :]
        if len(data) > EGRESS_MAX_HEAD_BYTES:
            raise _BadRequest(431, "request head too large")
        chunk = sock.recv(EGRESS_BUFFER_BYTES)
        if not chunk:
            raise _BadRequest(400, "connection closed before the end of the request head")
        data += chunk


def _parse_headers(lines: list[bytes]) -> list[tuple[str, str]]:
    headers = []
    for raw in lines:
        try:
            line = raw.decode("latin-1")
        except UnicodeError:  # pragma: no cover - latin-1 decodes every byte
            raise _BadRequest(400, "undecodable header") from None
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.match(name) or "\r" in value or "\n" in value:
            raise _BadRequest(400, "malformed header line")  # obs-fold and junk included
        headers.append((name, value.strip()))
    return headers


def _forwardable(headers: list[tuple[str, str]], *, keep_upgrade: bool) -> list[tuple[str, str]]:
    """Headers without hop-by-hop ones, nor those the Connection header names (RFC 9110 7.6.1)."""
    named = set()
    for name, value in headers:
        if name.lower() == "connection":
            named.update(token.strip().lower() for token in value.split(","))
    dropped = _HOP_BY_HOP | (named - {"upgrade"} if keep_upgrade else named)
    out = []
    for name, value in headers:
        lower = name.lower()
        if lower in dropped or (lower == "upgrade" and not keep_upgrade):
            continue
        out.append((name, value))
    return out


def _parse_authority(authority: str) -> tuple[str, int]:
    match = _AUTHORITY.match(authority)
    if not match:
        raise _BadRequest(400, "CONNECT needs host:port")
    port = int(match.group(3))
    if not 0 < port < 65536:
        raise _BadRequest(400, "port out of range")
    return match.group(1) or match.group(2), port


def _parse_absolute(target: str) -> tuple[str, int, str]:
    """host, port and origin-form path of an absolute-form http:// request target."""
    if not target.lower().startswith("http://"):
        raise _BadRequest(400, "only absolute http:// targets and CONNECT are proxied")
    try:
        parts = urlsplit(target)
        port = parts.port or 80
    except ValueError:
        raise _BadRequest(400, "malformed request target") from None
    if not parts.hostname or "@" in parts.netloc or not 0 < port < 65536:
        raise _BadRequest(400, "malformed request target")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, port, path


class _ResponseHeads:
    """Rewrites the response head(s) a destination sends (hop-by-hop headers out, `Connection: close` in),
    passing 1xx interim answers on, then lets the body through untouched."""

    def __init__(self, *, upgrade: bool):
        self.upgrade = upgrade
        self.done = False
        self.sent_any = False
        self._buffer = b""
        self._heads = 0

    def feed(self, data: bytes) -> bytes:
        if self.done:
            return data
        self._buffer += data
        out = b""
        while not self.done:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > EGRESS_MAX_HEAD_BYTES:
                    raise _BadRequest(502, "bad answer from the destination")
                break
            head, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
            self._heads += 1
            if self._heads > EGRESS_MAX_INTERIM_RESPONSES + 1:
                raise _BadRequest(502, "bad answer from the destination")
            out += self._rewrite(head)
        if self.done:
            out, self._buffer = out + self._buffer, b""
        self.sent_any = self.sent_any or bool(out)
        return out

    def _rewrite(self, head: bytes) -> bytes:
        status_line, *lines = head.split(b"\r\n")
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise _BadRequest(502, "bad answer from the destination")
        status = int(parts[1])
        try:
            headers = _parse_headers(lines)
        except _BadRequest:
            raise _BadRequest(502, "bad answer from the destination") from None
        switching = status == 101 and self.upgrade
        kept = _forwardable(headers, keep_upgrade=switching)
        if switching:
            kept.append(("Connection", "Upgrade"))
        elif status >= 200:
            kept.append(("Connection", "close"))
        self.done = status >= 200 or switching
        return status_line + b"\r\n" + "".join(f"{n}: {v}\r\n" for n, v in kept).encode("latin-1") + b"\r\n"


class EgressProxy:
    """A forward proxy on 127.0.0.1 that connects only to public addresses. start() returns its URL."""

    def __init__(self, *, max_connections: int = EGRESS_MAX_CONNECTIONS):
        self.url: str | None = None
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(max_connections)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    # --- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> str:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(EGRESS_LISTEN_BACKLOG)
        self._listener = listener
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept_loop, name="sitewarden-egress", daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self._stopped.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with self._lock:
            live = list(self._open)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopped.is_set()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                if self._stopped.is_set():
                    return
                self._stopped.wait(0.05)  # EMFILE and friends: the next accept may succeed, after a breath
                continue
            if not self._slots.acquire(blocking=False):
                self._answer_and_close(client, 503, b"Too many connections through the egress proxy.\n")
                continue
            threading.Thread(target=self._serve, args=(client,), name="sitewarden-egress-conn", daemon=True).start()

    def _track(self, sock: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._open.add if add else self._open.discard)(sock)

    # --- one client connection -------------------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        self._track(client, add=True)
        try:
            client.settimeout(EGRESS_HEAD_TIMEOUT_S)
            try:
                head, rest = _read_head(client)
                method, target, headers = self._parse_request(head)
                if method == "CONNECT":
                    host, port = _parse_authority(target)
                else:
                    host, port, path = _parse_absolute(target)
                upstream = self._connect(host, port)
            except _BadRequest as exc:
                status = exc.status
                body = _REFUSED_BODY if status == 403 else f"{exc}\n".encode()
                self._answer_and_close(client, status, body, drain=True)
                return
            except (OSError, ValueError):
                return  # the client went away or timed out while sending its head
            self._track(upstream, add=True)
            client.settimeout(None)
            upstream.settimeout(None)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
                self._pipe(client, upstream)
            else:
                self._forward(client, upstream, method, path, headers, rest, host, port)
        except OSError:
            pass  # either side went away: nothing to tell anyone
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    self._track(sock, add=False)
                    with contextlib.suppress(OSError):
                        sock.close()
            self._slots.release()

    @staticmethod
    def _parse_request(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
        lines = head.split(b"\r\n")
        try:
            method, target, version = lines[0].decode("ascii").split(" ")
        except (UnicodeError, ValueError):
            raise _BadRequest(400, "malformed request line") from None
        if not _TOKEN.match(method) or version not in ("HTTP/1.0", "HTTP/1.1"):
            raise _BadRequest(400, "malformed request line")
        return method, target, _parse_headers(lines[1:])

    @staticmethod
    def _connect(host: str, port: int) -> socket.socket:
        """A socket connected to a vetted address of host:port; _BadRequest 403/502/504 otherwise."""
        try:
            addresses = resolve_public(host, port)
        except AddressRefused:
            logger.info("egress refused", extra={"host": host[:255], "port": port})
            raise _BadRequest(403, "not a public address") from None
        except (OSError, UnicodeError):
            raise _BadRequest(502, "the host name could not be resolved") from None
        last_error = "could not connect"
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(EGRESS_CONNECT_TIMEOUT_S)
            try:
                sock.connect((address, port))
            except TimeoutError:
                sock.close()
                last_error = "timeout"
                continue
            except OSError:
                sock.close()
                continue
            peer = sock.getpeername()[0]
            if not is_public_address(peer):  # cannot differ from the vetted address; checked all the same
                sock.close()
                raise _BadRequest(403, "not a public address")
            return sock
        raise _BadRequest(504 if last_error == "timeout" else 502, f"{last_error} to the destination")

    def _forward(self, client, upstream, method, path, headers, rest, host, port) -> None:
        upgrade = any(n.lower() == "upgrade" for n, _ in headers) and any(
            n.lower() == "connection" and "upgrade" in v.lower() for n, v in headers
        )
        out = _forwardable(headers, keep_upgrade=upgrade)
        if not any(n.lower() == "host" for n, _ in out):
            authority = f"[{host}]" if ":" in host else host
            out.insert(0, ("Host", authority if port == 80 else f"{authority}:{port}"))
        out.append(("Connection", "Upgrade" if upgrade else "close"))
        request = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in out) + "\r\n"
        upstream.sendall(request.encode("latin-1") + rest)
        # The client may still be sending a body while the answer comes: both ways are relayed at once, and
        # only the response head(s) are rewritten on the way back.
        rewriter = _ResponseHeads(upgrade=upgrade)
        try:
            self._pipe(client, upstream, rewriter)
        except _BadRequest as exc:
            if not rewriter.sent_any:
                self._answer_and_close(client, exc.status, f"{exc}\n".encode())
            return
        if not rewriter.sent_any:
            self._answer_and_close(client, 502, b"no answer from the destination\n")

    def _pipe(self, client: socket.socket, upstream: socket.socket, rewriter=None) -> None:
        """Relay bytes both ways until the destination is done or nothing moves for EGRESS_IDLE_TIMEOUT_S.
        With a rewriter, what the destination sends passes through it first."""
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ, upstream)
            selector.register(upstream, selectors.EVENT_READ, client)
            open_count = 2
            while open_count and not self._stopped.is_set():
                events = selector.select(EGRESS_IDLE_TIMEOUT_S)
                if not events:
                    return  # idle
                for key, _ in events:
                    source, sink = key.fileobj, key.data
                    data = source.recv(EGRESS_BUFFER_BYTES)
                    if data:
                        if source is upstream and rewriter is not None:
                            data = rewriter.feed(data)
                        if data:
                            sink.sendall(data)
                        continue
                    if source is upstream:
                        return  # the destination finished: the answer has been relayed in full
                    selector.unregister(source)  # the client finished sending; its answer may still come
                    open_count -= 1
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_WR)

    @staticmethod
    def _answer_and_close(client: socket.socket, status: int, body: bytes, *, drain: bool = False) -> None:
        head = (
            f"HTTP/1.1 {status} {_STATUS_TEXT.get(status, 'Error')}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):
            client.sendall(head.encode("ascii") + body)
            if drain:
                # Closing with unread bytes sends a reset, which can destroy the answer before the client
                # reads it: stop writing, and swallow what the client still sends, briefly and bounded.
                client.shutdown(socket.SHUT_WR)
                client.settimeout(EGRESS_DRAIN_TIMEOUT_S)
                drained = 0
                while drained < EGRESS_MAX_DRAIN_BYTES and (chunk := client.recv(EGRESS_BUFFER_BYTES)):
                    drained += len(chunk)
        with contextlib.suppress(OSError):
            client.close()


# --- the process's proxy ---------------------------------------------------------------------------------

_proxy: EgressProxy | None = None
_proxy_lock = threading.Lock()


def egress_proxy_url() -> str:
    """The URL of this process's egress proxy, started on first use (and again if it died)."""
    global _proxy
    with _proxy_lock:
        if _proxy is None or not _proxy.alive:
            _proxy = EgressProxy()
            _proxy.start()
        return _proxy.url


def _reset_after_fork() -> None:
    # A prefork child inherits the listening socket but not the accept thread: it starts its own proxy.
    global _proxy, _proxy_lock
    if _proxy is not None and _proxy._listener is not None:
        with contextlib.suppress(OSError):
            _proxy._listener.close()
    _proxy = None
    _proxy_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
