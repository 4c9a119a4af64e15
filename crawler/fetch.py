"""HTTP client for the crawl: one hop per call (redirects are followed by the caller), bounded bodies.

Three bounds hold for every fetch made with a session from build_session():
- time: TOTAL_FETCH_DEADLINE_S over connect, headers and body. urllib3 only has per-socket-operation
  timeouts, which a server dripping one byte at a time never trips, so a watchdog thread shuts the
  socket down at the deadline and the blocked read returns;
- memory: at most cap + 1 decoded bytes are held; gzip/deflate are decoded here with zlib's
  max_length, so a decompression bomb costs no more than a plain large body;
- addresses: with allow_private=False every address a host name resolves to is checked before
  connecting, the connection goes to the checked address (no DNS-rebinding window), and the peer is
  checked again before a byte is sent; redirects are fetched one hop at a time through the same guard.
"""

import heapq
import http.client
import itertools
import os
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urljoin

from requests.adapters import HTTPAdapter
from urllib3 import PoolManager, Timeout
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    LocationValueError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util import parse_url

from crawler import __version__, limits
from crawler.auth import SiteBasicAuth
from crawler.decoding import ZlibDecoder
from crawler.urls import PRIVATE_TARGETS_HINT, AddressRefused, is_public_address, resolve_public

DEFAULT_USER_AGENT = f"{limits.USER_AGENT_PRODUCT}/{__version__} (+https://github.com/sitewarden)"
HTML_TYPES = ("text/html", "application/xhtml+xml")
# Only what crawler.decoding.ZlibDecoder handles: a server must not send br/zstd we would have to decode unbounded.
ACCEPT_ENCODING = "gzip, deflate"
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

ERROR_KINDS = ("dns", "connect", "tls", "timeout", "too_many_redirects", "invalid_url", "private_address", "other")


@dataclass
class FetchResult:
    url: str  # the URL requested
    status_code: int | None = None  # None when there was no HTTP answer
    headers: dict[str, str] = field(default_factory=dict)  # lower-cased names; repeated headers joined by ", "
    link_headers: list[str] = field(default_factory=list)  # raw values of every Link header
    content_type: str = ""  # media type only, lower-cased, e.g. "text/html"
    charset: str | None = None  # from the Content-Type header
    body: bytes = b""  # only read for HTML (up to MAX_HTML_BYTES, 15 MiB); empty for other types
    bytes_read: int = 0  # len(body): decoded bytes kept (<= the cap)
    truncated: bool = False  # body was longer than the cap
    redirect_url: str | None = None  # absolute Location of a 3xx, resolved against `url`
    # From the request's first byte sent to the response's last byte read (its headers when the body is not read):
    # what the server and the network took. Waiting for a pooled connection, DNS, connecting and TLS set-up, and
    # anything else the crawler does before sending are not counted (_FetchContext.sent_at).
    response_time_ms: int | None = None
    # One of ERROR_KINDS, None on success. Can be set after the headers arrived (a body cut by the
    # deadline or a dropped connection): status_code and headers are then kept, body holds what was
    # read, best effort. A set error_kind means the fetch failed, whatever the status.
    error_kind: str | None = None
    error: str | None = None  # human-readable reason, <= 500 chars
    wire_bytes: int = 0  # body bytes as received, before Content-Encoding decoding

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES


# --- deadline watchdog -----------------------------------------------------------------------------------

_local = threading.local()  # the _FetchContext of the fetch running in this thread


class _FetchContext:
    """One fetch in flight: its deadline, address policy and the connection it is using."""

    def __init__(self, deadline: float, allow_private: bool):
        self.deadline = deadline
        self.allow_private = allow_private
        self.conn = None
        self.sent_at: float | None = None  # monotonic time the request's first byte went out (set by the connection)
        self.expired = False
        self.done = False
        self._lock = threading.Lock()

    def cut(self) -> None:
        """Called by the watchdog: make the blocked socket operation of this fetch return now."""
        with self._lock:
            if self.done:
                return
            self.expired = True
            sock = getattr(self.conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def finish(self) -> None:
        # Under the lock: once this returns, the watchdog can no longer touch the connection, which
        # may go back to the pool and serve another thread.
        with self._lock:
            self.done = True


class _Watchdog:
    """One daemon thread for all fetches of the process, sleeping until the earliest deadline."""

    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _FetchContext]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def register(self, ctx: _FetchContext) -> None:
        with self._cond:
            heapq.heappush(self._heap, (ctx.deadline, next(self._seq), ctx))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="sitewarden-fetch-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, _, ctx = self._heap[0]
                now = time.monotonic()
                if deadline > now:
                    self._cond.wait(deadline - now)
                    continue
                heapq.heappop(self._heap)
                ctx.cut()
                # The socket may not exist yet (still connecting): try again until the fetch ends.
                heapq.heappush(self._heap, (now + limits.WATCHDOG_RETRY_S, next(self._seq), ctx))


_watchdog = _Watchdog()


def _reset_after_fork() -> None:
    # Celery's prefork children inherit the object but not the thread (nor a sane lock state).
    global _watchdog
    _watchdog = _Watchdog()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


# --- connection pool with tracking and the address guard ---------------------------------------------------


class PrivateAddressRefused(NewConnectionError):
    """A connection was refused because the host resolves to (or the peer is) a non-public address."""


def _peer_is_allowed(sock) -> bool:
    try:
        peer = sock.getpeername()[0]
    except (OSError, IndexError):
        return False
    return is_public_address(peer)


def _public_only_new_conn(conn, new_conn):
    """Open `conn`'s socket only to a public address (crawler.urls.resolve_public): resolve, vet every
    address, connect to the vetted one, check the peer again. No packet goes to a private address, and a
    second lookup (DNS rebinding) cannot swap the address after the check. Error messages name the host,
    never the address it resolves to."""
    host = conn._dns_host
    try:
        addresses = resolve_public(host, conn.port)
    except AddressRefused as exc:
        raise PrivateAddressRefused(conn, f"refused to connect: {exc}") from None
    except (OSError, UnicodeError) as exc:
        raise NameResolutionError(conn.host, conn, exc) from exc
    conn._dns_host = addresses[0]
    try:
        sock = new_conn()
    finally:
        conn._dns_host = host
    if not _peer_is_allowed(sock):
        sock.close()
        raise PrivateAddressRefused(
            conn, f"refused to connect: {conn.host} is not a public address ({PRIVATE_TARGETS_HINT})"
        )
    return sock


class _GuardedConnectionMixin:
    """The crawler's connections: public-only when the running fetch() asks for it."""

    def _new_conn(self):
        ctx = getattr(_local, "ctx", None)
        if ctx is None or ctx.allow_private:
            return super()._new_conn()
        return _public_only_new_conn(self, super()._new_conn)


class _TimedRequestMixin:
    """Notes when the running fetch() sends its request: connected first (http.client would connect on the first
    send anyway), so the time counted from here is the server's and the network's, not the set-up's."""

    def request(self, *args, **kwargs):
        if self.sock is None:
            self.connect()
        ctx = getattr(_local, "ctx", None)
        if ctx is not None and ctx.sent_at is None:
            ctx.sent_at = time.monotonic()
        return super().request(*args, **kwargs)


class _GuardedHTTPConnection(_TimedRequestMixin, _GuardedConnectionMixin, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_TimedRequestMixin, _GuardedConnectionMixin, HTTPSConnection):
    pass


class _PublicOnlyMixin:
    def _new_conn(self):
        return _public_only_new_conn(self, super()._new_conn)


class _PublicHTTPPool(HTTPConnectionPool):
    ConnectionCls = type("PublicHTTPConnection", (_PublicOnlyMixin, HTTPConnection), {})


class _PublicHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = type("PublicHTTPSConnection", (_PublicOnlyMixin, HTTPSConnection), {})


class PublicOnlyAdapter(HTTPAdapter):
    """A requests adapter whose every connection goes to a public address only, for callers other than the
    crawl (webhooks): the same vetting as fetch(allow_private=False)."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _PublicHTTPPool, "https": _PublicHTTPSPool}


class _TrackedPoolMixin:
    def _get_conn(self, timeout=None):
        conn = super()._get_conn(timeout)
        ctx = getattr(_local, "ctx", None)
        if ctx is not None:
            ctx.conn = conn
            # A kept-alive connection opened under allow_private=True must not serve a stricter fetch.
            sock = getattr(conn, "sock", None)
            if not ctx.allow_private and sock is not None and not _peer_is_allowed(sock):
                conn.close()
        return conn


class _TrackedHTTPConnectionPool(_TrackedPoolMixin, HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _TrackedHTTPSConnectionPool(_TrackedPoolMixin, HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class CrawlSession:
    """The crawl's HTTP client: urllib3 pools whose connections fetch() tracks and guards, the crawler's
    headers, and the site's basic auth. Not thread-safe: one per fetch thread, reused so connections are kept
    alive.

    Deliberately not a requests.Session: fetch() reads one hop at a time with its own bounded decoding, so
    requests' URL preparation, hooks, cookie jar and response model only cost CPU: a fetch of a benchmark page
    took 0.60-0.82 CPU ms through one and 0.43-0.48 through this (bench/README.md, per-page CPU). Like a search
    engine's crawler it is stateless: no cookie set by one answer is sent with the next request, no proxy or
    .netrc is read from the environment, nothing is retried (the crawl's throttle decides) and no redirect is
    followed (the caller queues its target)."""

    def __init__(
        self,
        user_agent: str | None = None,
        *,
        pool_hosts: int = limits.HTTP_POOL_HOSTS,
        pool_maxsize: int = limits.HTTP_POOL_MAXSIZE,
        pool_block: bool = False,
    ):
        self.headers = {
            "User-Agent": user_agent or DEFAULT_USER_AGENT,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        self.auth: SiteBasicAuth | None = None  # sent only where SiteBasicAuth.sends_to says, hop by hop
        self._pools = PoolManager(num_pools=pool_hosts, maxsize=pool_maxsize, block=pool_block, retries=False)
        self._pools.pool_classes_by_scheme = {
            "http": _TrackedHTTPConnectionPool,
            "https": _TrackedHTTPSConnectionPool,
        }

    def headers_for(self, url: str) -> dict[str, str]:
        """The request headers for `url`: the session's, and the site's credentials when they may go there. An
        Authorization header set on the session is sent nowhere else either."""
        headers = self.headers
        if any(name.lower() == "authorization" for name in headers):
            headers = {name: value for name, value in headers.items() if name.lower() != "authorization"}
        credentials = self.auth.header_for(url) if self.auth is not None else None
        return headers if credentials is None else {**headers, "Authorization": credentials}

    def open(self, method: str, url: str, *, timeout: Timeout):
        """One request, not followed, its body left unread (urllib3's HTTPResponse). The URL is parsed once, here
        (PoolManager.urlopen would parse it again): LocationValueError when it is not http(s) with a host."""
        parts = parse_url(url)
        if parts.scheme not in ("http", "https") or not parts.host:
            raise LocationValueError(f"not an http(s) URL with a host: {url[:200]!r}")
        pool = self._pools.connection_from_host(parts.host, port=parts.port, scheme=parts.scheme)
        return pool.urlopen(
            method,
            parts.request_uri,
            headers=self.headers_for(url),
            redirect=False,
            retries=False,
            assert_same_host=False,
            timeout=timeout,
            preload_content=False,
            decode_content=False,
        )

    def close(self) -> None:
        self._pools.clear()


def build_session(user_agent: str | None = None) -> CrawlSession:
    """A session set up for crawling (UA, pooled connections kept alive, nothing from the environment)."""
    return CrawlSession(user_agent)


# --- fetch ------------------------------------------------------------------------------------------------

_WRAPPER_NOISE = (
    re.compile(r"<[^<>]*? object at 0x[0-9a-fA-F]+>:?\s*"),
    re.compile(r"\w*ConnectionPool\(host=[^)]*\):\s*"),
    re.compile(r"Max retries exceeded with url: \S+ \(Caused by \w+\(\s*"),
)


def _causes(exc: BaseException):
    """exc and everything it wraps (urllib3 -> socket), outermost first."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < 20:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        for nxt in (getattr(e, "reason", None), e.args[0] if e.args else None, e.__cause__, e.__context__):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


def _short_message(exc: BaseException) -> str:
    # The innermost exception with a message says what happened; the wrappers only repeat it.
    message = ""
    for e in _causes(exc):
        text = str(e).strip()
        if text:
            message = f"{type(e).__name__}: {text}"
    for pattern in _WRAPPER_NOISE:
        message = pattern.sub("", message)
    return message[: limits.MAX_ERROR_MESSAGE_CHARS] or type(exc).__name__


def _classify(exc: BaseException, got_response: bool) -> str:
    chain = list(_causes(exc))

    def any_of(*types) -> bool:
        return any(isinstance(e, types) for e in chain)

    if any_of(PrivateAddressRefused):
        return "private_address"
    # Any ValueError before an answer came from the URL (urllib3 and idna both parse it).
    if any_of(LocationValueError, http.client.InvalidURL, UnicodeError) or (
        not got_response and isinstance(exc, ValueError)
    ):
        return "invalid_url"
    if any_of(NameResolutionError, socket.gaierror):
        return "dns"
    if any_of(Urllib3SSLError, ssl.SSLError, ssl.CertificateError):
        return "tls"
    if any_of(ReadTimeoutError, socket.timeout) or any(
        isinstance(e, ConnectTimeoutError) and not isinstance(e, NewConnectionError) for e in chain
    ):
        return "timeout"
    if any_of(ProtocolError, ConnectionError, NewConnectionError):
        return "connect"
    return "other"


def _parse_content_type(value: str) -> tuple[str, str | None]:
    media_type, _, params = value.partition(";")
    match = re.search(r"charset\s*=\s*[\"']?([^\"';\s]+)", params, re.IGNORECASE)
    return media_type.strip().lower(), (match.group(1).lower() if match else None)


def _fill_from_response(result: FetchResult, resp) -> None:
    result.status_code = resp.status
    headers = resp.headers
    result.headers = {name.lower(): headers[name] for name in headers}  # a repeated header's values joined by ", "
    result.link_headers = headers.getlist("link")
    result.content_type, result.charset = _parse_content_type(result.headers.get("content-type", ""))
    location = result.headers.get("location")
    if 300 <= resp.status < 400 and location:
        try:
            # http.client decodes headers as latin-1; servers send UTF-8 (requests makes the same repair).
            location = location.encode("latin-1").decode("utf-8")
        except UnicodeError:
            pass
        try:
            result.redirect_url = urljoin(result.url, location.strip())
        except ValueError:
            result.redirect_url = None


def _read_body(result: FetchResult, resp, cap: int) -> bool:
    """Read at most cap + 1 decoded bytes into result.body. True when the body was read to its end."""
    coding = result.headers.get("content-encoding", "").strip().lower()
    decoder = ZlibDecoder(coding) if coding in ("gzip", "x-gzip", "deflate") else None
    # Unknown codings (we never ask for them) are left to urllib3, which bounds its decoders too.
    let_urllib3_decode = decoder is None and coding not in ("", "identity")
    # One growing buffer, cut in place: a 15 MiB page is held once while reading, twice only for the moment
    # it becomes bytes (a list of chunks joined and then sliced would hold it three times).
    buffer = bytearray()
    complete = False
    try:
        while len(buffer) <= cap:
            if decoder is not None and decoder.pending:
                data = b""  # decode what came before reading more: a bomb inflates one step at a time
            else:
                amt = limits.READ_CHUNK_BYTES if decoder else min(limits.READ_CHUNK_BYTES, cap + 1 - len(buffer))
                data = resp.read(amt, decode_content=let_urllib3_decode)
                if not data:
                    complete = True
                    break
                result.wire_bytes += len(data)
            if decoder is not None:
                data = decoder.decompress(data, min(cap + 1 - len(buffer), limits.DECODE_STEP_BYTES))
            buffer += data
    finally:
        result.truncated = len(buffer) > cap
        del buffer[cap:]
        result.body = bytes(buffer)
        del buffer
        result.bytes_read = len(result.body)
    return complete


def _should_read(result: FetchResult, read_body: str) -> bool:
    if read_body == "always":
        return True
    if read_body == "html":
        # A redirect's body is never used; reading it would only cost time.
        return result.is_html and not (300 <= (result.status_code or 0) < 400)
    return False


def fetch(
    session,
    url: str,
    *,
    read_body: str = "html",
    max_bytes: int | None = None,
    allow_private: bool = True,
    method: str = "GET",
    deadline_s: float | None = None,
) -> FetchResult:
    """GET `url` without following redirects. read_body: "html" (read only if HTML), "always", "never".

    Never raises. With allow_private=False a connection to a non-public address is refused
    (error_kind "private_address"); the default keeps local development and tests working.
    `method` "HEAD" asks for the headers only (the external link pass); `deadline_s` shortens the total deadline
    (TOTAL_FETCH_DEADLINE_S) and the socket timeouts with it.
    """
    result = FetchResult(url=url)
    cap = limits.MAX_HTML_BYTES if max_bytes is None else max_bytes
    deadline_s = limits.TOTAL_FETCH_DEADLINE_S if deadline_s is None else min(deadline_s, limits.TOTAL_FETCH_DEADLINE_S)
    if not isinstance(session, CrawlSession):
        result.error_kind = "other"
        result.error = "fetch() needs a session from crawler.fetch.build_session()"
        return result

    started = time.monotonic()
    ctx = _FetchContext(started + deadline_s, allow_private)
    _local.ctx = ctx
    _watchdog.register(ctx)
    resp = None
    complete = False
    try:
        resp = session.open(
            method,
            url,
            timeout=Timeout(
                connect=min(limits.CONNECT_TIMEOUT_S, deadline_s), read=min(limits.READ_TIMEOUT_S, deadline_s)
            ),
        )
        if not ctx.expired:  # cut mid-headers, http.client takes what came as a complete answer
            _fill_from_response(result, resp)
        if not ctx.expired and method == "HEAD":
            complete = True  # no body follows: the connection may serve the next request
        elif not ctx.expired and _should_read(result, read_body):
            complete = _read_body(result, resp, cap)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"; the kind says what happened
        result.error_kind = "timeout" if ctx.expired else _classify(exc, got_response=resp is not None)
        result.error = _short_message(exc)
    finally:
        if result.status_code is not None:  # the last byte read, or where reading broke off
            result.response_time_ms = int((time.monotonic() - (ctx.sent_at or started)) * 1000)
        ctx.finish()
        _local.ctx = None
        if resp is not None:
            _close(resp, reusable=complete and not ctx.expired)
    if ctx.expired:
        # The watchdog cut the socket: a close-delimited body then just looks like a short one.
        result.error_kind = "timeout"
        result.error = f"no complete answer within {deadline_s} s (total deadline)"
    return result


def _close(resp, *, reusable: bool) -> None:
    try:
        if reusable:
            resp.release_conn()  # body read to its end: keep the connection alive for the next URL
        else:
            resp.close()  # unread bytes are left: this connection cannot carry another request
            resp.release_conn()  # the pool opens a new one in its place
    except Exception:  # noqa: BLE001, S110 - closing a broken connection may fail; nothing to do about it
        pass
