"""API fixtures: two accounts with a token each, and a finished audit with pages, links and issues."""

import http.server
import json
import threading
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.tokens import token_create
from audits.models import Audit, Issue, Page, issue_id_for, page_id_for
from scratchpad.models import LinkEdge
from tests.factories import AuditFactory, ProjectFactory, UserFactory


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


def bearer_client(token: str, keyword: str = "Bearer") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {token}")
    return client


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def token(user):
    return token_create(user=user, name="ci")[1]


@pytest.fixture
def api(token):
    return bearer_client(token)


@pytest.fixture
def other_user(db):
    return UserFactory()


@pytest.fixture
def other_api(other_user):
    return bearer_client(token_create(user=other_user, name="other")[1])


@pytest.fixture
def project(user):
    return ProjectFactory(owner=user, base_url="http://127.0.0.1:1/")


def finished_audit(project, *, pages: dict[str, int], issues: list[tuple[str, str, str]], links=(), ago_min=60):
    """A completed audit with `pages` {path: status}, `issues` [(type, severity, path)] and `links`
    [(from_path, to_path)], on the project's base URL."""
    base = project.base_url.rstrip("/")
    now = timezone.now() - timedelta(minutes=ago_min)
    audit = AuditFactory(
        project=project,
        status=Audit.Status.COMPLETED,
        current_phase=Audit.Phase.COMPLETED,
        started_at=now,
        completed_at=now + timedelta(minutes=1),
        pages_crawled=len(pages),
        health_score=80,
    )
    Audit.objects.filter(id=audit.id).update(created_at=now)
    rows = {}
    for path, code in pages.items():
        url = base + path
        rows[path] = Page.objects.create(
            id=page_id_for(audit.id, url),
            audit=audit,
            url=url,
            status_code=code,
            fetch_class=Page.FetchClass.OK,
            content_type="text/html",
            title=f"Title of {path}",
            is_indexable=code == 200,
            depth=path.count("/"),
        )
    for issue_type, severity, path in issues:
        url = base + path
        Issue.objects.create(
            id=issue_id_for(audit.id, url, issue_type),
            audit=audit,
            page=rows.get(path),
            page_url=url,
            type=issue_type,
            severity=severity,
            details={"path": path},
        )
    for source, target in links:
        LinkEdge.objects.create(
            audit=audit, source_page=rows[source], target_url=base + target, anchor_text=f"to {target}"
        )
    audit.refresh_from_db()
    return audit


@pytest.fixture
def results(project):
    return results_audit(project)


def results_audit(project):
    """/ links to /a and /gone; /a links back to /. Issues on /a, /gone and /."""
    return finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/gone": 404},
        issues=[
            ("missing-title", "critical", "/a"),
            ("title-too-long", "warning", "/"),
            ("broken-page", "critical", "/gone"),
            ("broken-internal-link", "critical", "/"),
        ],
        links=[("/", "/a"), ("/", "/gone"), ("/a", "/")],
    )


def later_audit(project):
    """The audit after `results`: against it, missing-title on /a and title-too-long on / persist, missing-title on
    /new is new, broken-internal-link on / is fixed and broken-page on /gone no longer crawled (not "fixed")."""
    return finished_audit(
        project,
        pages={"/": 200, "/a": 200, "/new": 200},
        issues=[
            ("missing-title", "critical", "/a"),
            ("missing-title", "critical", "/new"),
            ("title-too-long", "warning", "/"),
        ],
        ago_min=5,
    )


def assert_problem(response, status: int, code: str, field=None):
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["type"] == f"urn:sitewarden:error:{code}"
    assert body["title"] and body["detail"]
    if field is not None:
        assert body["field"] == field, body
    return body


@dataclass
class Received:
    headers: dict
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    """A local HTTP receiver: answers the scripted statuses in order (then 200) and records each POST."""

    statuses: list = field(default_factory=list)
    received: list = field(default_factory=list)
    url: str = ""

    def next_status(self) -> int:
        return self.statuses.pop(0) if self.statuses else 200


@pytest.fixture
def receiver():
    state = WebhookReceiver()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                state.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
                code = state.next_status()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if code < 300 else b"receiver says no")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/sitewarden"
    yield state
    server.shutdown()
    server.server_close()
