"""Every Chromium the product starts (JS rendering, Lighthouse) reaches only what the crawler may reach: an
attacker site on an allowed loopback address aims every browser vector at a canary on 127.0.0.1, and with
private targets off not one connection reaches the canary, nor a byte of it the stored pages or report."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from audits.models import Page
from audits.pipeline.chromium import find_chromium
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.lighthouse import find_lighthouse, lighthouse_run_page
from audits.pipeline.start import audit_start
from crawler.urls import set_allowed_networks
from scratchpad.models import LinkEdge, Throttle
from tests.factories import ProjectFactory
from tests.support.sites import serve_handler

_CHROMIUM, _CHROMIUM_WHY = find_chromium()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(_CHROMIUM is None, reason=_CHROMIUM_WHY),
]

SECRET = "CANARY-SECRET-7f3a"


class Canary:
    """A server on 127.0.0.1 that counts every TCP connection it accepts (whatever comes over it) and answers
    any request with a page full of SECRET, readable cross-origin."""

    def __init__(self):
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn) -> None:
        body = (f"<!DOCTYPE html><title>{SECRET}</title><h1>{SECRET}</h1><a href='/{SECRET}'>{SECRET}</a>").encode()
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nAccess-Control-Allow-Origin: *\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:
            conn.settimeout(5)
            conn.recv(65536)
            conn.sendall(head + body)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._sock.close()


# One page per vector; each also builds an <h1> with a script, so a stored h1 proves the page was rendered.
_RENDERED_MARK = "<script>document.body.insertAdjacentHTML('beforeend','<h1>rendered</h1>')</script>"


def _vectors(canary: str, canary_port: int) -> dict[str, str]:
    return {
        "img": f'<img src="{canary}/img" alt="">',
        "css": f'<link rel="stylesheet" href="{canary}/css">',
        "iframe": f'<iframe src="{canary}/frame"></iframe>',
        "fetch": f'<script>fetch("{canary}/fetch").then(r => r.text()).then(t => document.title = t)</script>',
        "beacon": f'<script>navigator.sendBeacon("{canary}/beacon", "data")</script>',
        "websocket": f'<script>try {{ new WebSocket("ws://127.0.0.1:{canary_port}/ws") }} catch (e) {{}}</script>',
        "eventsource": f'<script>try {{ new EventSource("{canary}/events") }} catch (e) {{}}</script>',
        "preconnect": f'<link rel="preconnect" href="{canary}"><link rel="dns-prefetch" href="{canary}">',
        "prefetch": f'<link rel="prefetch" href="{canary}/prefetch">',
        "localhost": f'<img src="http://localhost:{canary_port}/by-name" alt="">',
        "subresource-302": '<img src="/to-canary?img" alt=""><iframe src="/to-canary?frame"></iframe>',
        "js-navigation": f'<script>location.replace("{canary}/admin")</script>',
    }


def _page(title: str, body: str) -> bytes:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body><p>{'attacker words ' * 30}</p>{body}{_RENDERED_MARK}</body></html>"
    ).encode()


def _attacker_handler(canary: Canary):
    vectors = _vectors(canary.url, canary.port)

    class Attacker(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes = b"", **headers) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?", 1)[0].strip("/")
            if path == "":
                links = "".join(f'<a href="/{name}">{name}</a> ' for name in [*vectors, "document-302"])
                return self._send(200, _page("Attacker home", links))
            if path in vectors:
                return self._send(200, _page(f"Vector {path}", vectors[path]))
            if path == "everything":  # all subresource vectors on one page, then a navigation (Lighthouse)
                subresources = "".join(v for k, v in vectors.items() if k != "js-navigation")
                leave = f'<script>setTimeout(() => location.replace("{canary.url}/admin"), 300)</script>'
                return self._send(200, _page("Every vector", subresources + leave))
            if path in ("document-302", "to-canary"):
                return self._send(302, Location=f"{canary.url}/admin")
            return self._send(404)

    return Attacker


@pytest.fixture
def canary():
    canary = Canary()
    yield canary
    canary.close()


@pytest.fixture
def attacker(canary, settings):
    """The attacker site on 127.0.0.2, which the SSRF policy allows; private targets are off otherwise."""
    settings.ALLOW_PRIVATE_TARGETS = False
    settings.ALLOWED_PRIVATE_NETWORKS = ["127.0.0.2/32"]
    set_allowed_networks(["127.0.0.2/32"])
    try:
        with serve_handler(_attacker_handler(canary), host="127.0.0.2") as (_, base):
            yield base
    finally:
        set_allowed_networks([])


def _rendered_crawl(base: str):
    project = ProjectFactory(base_url=base + "/", render_js=True, render_budget_pages=50)
    audit = audit_start(project=project, start_url=base + "/", max_pages=50, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    return audit


def _stored_text(audit) -> str:
    pages = list(Page.objects.filter(audit=audit).values())
    edges = list(LinkEdge.objects.filter(audit=audit).values_list("target_url", "anchor_text"))
    return json.dumps([pages, edges], default=str)


def test_a_rendered_crawl_of_every_vector_never_reaches_the_canary(attacker, canary):
    audit = _rendered_crawl(attacker)
    assert not audit.discovery.get("render_note"), audit.discovery  # Chromium did start, behind the proxy
    vectors = _vectors(canary.url, canary.port)
    pages = {p.url.removeprefix(attacker).strip("/"): p for p in Page.objects.filter(audit=audit)}
    assert set(vectors) <= set(pages)
    # The crawl rendered every vector page (the script-made <h1> is there), except the one that navigated
    # away, whose fetched HTML stands.
    assert Throttle.objects.get(audit=audit).renders_used >= len(vectors) + 1
    assert {name for name in vectors if pages[name].h1_count == 1} == set(vectors) - {"js-navigation"}
    assert pages["document-302"].status_code == 302  # the crawler's own fetch refused the hop to the canary
    assert canary.connections == 0
    assert SECRET not in _stored_text(audit)


def test_with_private_targets_allowed_the_same_pages_do_reach_the_canary(attacker, canary, settings):
    # The control: the canary counts, and the pages do aim at it; only the egress proxy stops them.
    settings.ALLOW_PRIVATE_TARGETS = True
    audit = _rendered_crawl(attacker)
    assert canary.connections >= len(_vectors(canary.url, canary.port)) - 1
    assert SECRET in _stored_text(audit)  # the fetch() vector wrote the canary's answer into the title


_LIGHTHOUSE, _LIGHTHOUSE_WHY = find_lighthouse()


@pytest.mark.skipif(_LIGHTHOUSE is None, reason=_LIGHTHOUSE_WHY)
def test_lighthouse_on_attacker_pages_never_reaches_the_canary(attacker, canary, tmp_path):
    for name in ("everything", "document-302"):
        report = tmp_path / f"{name}.json"
        result = lighthouse_run_page(f"{attacker}/{name}", "desktop", report_to=report)
        assert report.is_file(), result  # Lighthouse ran and wrote its report
        assert SECRET not in report.read_text(errors="replace"), name
        assert SECRET not in json.dumps(result, default=str), name
    assert canary.connections == 0
