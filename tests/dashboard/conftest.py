"""Dashboard fixtures: a finished audit with pages, issues, links, a Lighthouse run and events, built
with the ORM (no crawl), signed-in clients of two accounts, and rate-limit counters fresh for every test."""

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.cache import cache
from django.utils import timezone

from audits.checks.score import SCORE_FORMULA_VERSION
from audits.models import Audit, AuditEvent, Issue, Page
from scratchpad.models import LinkEdge
from tests.factories import (
    AuditEventFactory,
    AuditFactory,
    IssueFactory,
    LighthouseResultFactory,
    PageFactory,
    ProjectFactory,
    UserFactory,
)

PASSWORD = "pw-for-tests"
SITE = "https://site.test"


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """The share links' rate limits count in the default cache (dashboard.throttling): one test's requests must
    not use up the next one's."""
    cache.clear()
    yield
    cache.clear()


def make_page(audit, path, **fields) -> Page:
    return PageFactory(audit=audit, url=SITE + path, **{"depth": path.count("/"), **fields})


def make_issue(audit, page, issue_type, severity, **details) -> Issue:
    return IssueFactory(audit=audit, page=page, type=issue_type, severity=severity, details=details)


def finished_audit(project, *, days_ago=0, status=Audit.Status.COMPLETED, **fields) -> Audit:
    started = timezone.now() - timedelta(days=days_ago, minutes=5)
    values = {
        "status": status,
        "current_phase": status,
        "started_at": started,
        "completed_at": started + timedelta(minutes=3),
        "pages_crawled": 3,
        "pages_total": 3,
        "health_score": 67,
        "score_formula": SCORE_FORMULA_VERSION,  # as finalize stores it
    }
    values.update(fields)
    audit = AuditFactory(project=project, start_url=SITE + "/", **values)
    Audit.objects.filter(id=audit.id).update(created_at=started)  # auto_now_add ignores the value
    audit.refresh_from_db()
    return audit


@pytest.fixture
def owner(db):
    return UserFactory(username="owner")


@pytest.fixture
def stranger(db):
    return UserFactory(username="stranger")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def results(owner, settings, tmp_path):
    """A project with two completed audits (the latest compares against the earlier), pages, issues,
    link edges, a Lighthouse run with its report file and events."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    project = ProjectFactory(owner=owner, name="Shop", base_url=SITE + "/")
    previous = finished_audit(project, days_ago=7)
    old_home = make_page(previous, "/")
    old_gone = make_page(previous, "/gone")
    make_issue(previous, old_home, "missing-meta-description", "warning")  # persisting
    make_issue(previous, old_gone, "missing-h1", "warning")  # fixed (page gone)
    make_issue(previous, old_home, "title-too-short", "warning")  # fixed (page still there)

    audit = finished_audit(project)
    home = make_page(audit, "/", title="Home")
    about = make_page(audit, "/about", depth=1, status_code=200, word_count=40)
    missing = make_page(
        audit, "/missing", depth=1, status_code=404, is_indexable=False, title="", fetch_class=Page.FetchClass.OK
    )
    make_issue(audit, home, "missing-meta-description", "warning")
    make_issue(audit, about, "missing-meta-description", "warning")  # new
    make_issue(audit, about, "thin-content", "warning", words=40)
    make_issue(audit, missing, "broken-page", "critical", status_code=404)
    make_issue(audit, None, "sitemap-missing", "info")
    LinkEdge.objects.create(audit=audit, source_page=home, target_url=about.url, anchor_text="About us")
    LinkEdge.objects.create(audit=audit, source_page=home, target_url=missing.url, anchor_text="Old page")
    LinkEdge.objects.create(audit=audit, source_page=about, target_url=home.url, anchor_text="Home")
    LinkEdge.objects.create(audit=audit, source_page=home, target_url="https://elsewhere.test/", internal=False)

    report_rel = f"lighthouse/{audit.id}/report.json"
    report = tmp_path / "media" / report_rel
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps({"lighthouseVersion": "12", "categories": {}}))
    lighthouse = LighthouseResultFactory(
        audit=audit,
        page=home,
        performance=91,
        accessibility=88,
        seo=92,
        lcp_ms=1800,
        cls_score=0.02,
        report_path=report_rel,
        report_bytes=report.stat().st_size,
    )
    AuditEventFactory(audit=audit, kind=AuditEvent.Kind.STARTED, message="Audit started")
    AuditEventFactory(audit=audit, kind=AuditEvent.Kind.COMPLETED, message="Completed")
    return SimpleNamespace(
        project=project,
        audit=audit,
        previous=previous,
        home=home,
        about=about,
        missing=missing,
        old_gone=old_gone,
        lighthouse=lighthouse,
    )
