"""A fix verification built with the ORM (no crawl): an original audit with missing-h1 on three pages and a
completed list-mode audit verifying it, where /a is fixed, /b still has it and /c answered 404 — for the faces'
tests (dashboard, API, MCP). The crawl itself is tested in tests/audits/test_verification.py."""

from datetime import timedelta

from django.utils import timezone

from audits.models import Audit
from tests.factories import AuditFactory, IssueFactory, PageFactory

VERIFIED_PATHS = {"/a": "fixed", "/b": "still_present", "/c": "unreachable"}


def _audit(project, *, minutes_ago: int, **fields) -> Audit:
    at = timezone.now() - timedelta(minutes=minutes_ago)
    audit = AuditFactory(
        project=project,
        status=Audit.Status.COMPLETED,
        current_phase=Audit.Phase.COMPLETED,
        started_at=at,
        completed_at=at + timedelta(minutes=1),
        **fields,
    )
    Audit.objects.filter(id=audit.id).update(created_at=at)
    audit.refresh_from_db()
    return audit


def verified_pair(project) -> tuple[Audit, Audit]:
    """(original, verification) of `project`."""
    site = project.base_url.rstrip("/")
    original = _audit(project, minutes_ago=60, pages_crawled=4)
    for path in ("/", *VERIFIED_PATHS):
        page = PageFactory(audit=original, url=site + path)
        if path != "/":
            IssueFactory(audit=original, page=page, type="missing-h1", severity="warning")
    urls = [site + path for path in VERIFIED_PATHS]
    config = {"mode": "list", "list_urls": urls, "verify_issue_type": "missing-h1", "max_pages": 3}
    verification = _audit(project, minutes_ago=10, pages_crawled=3, verifies=original, config=config)
    PageFactory(audit=verification, url=site + "/a")
    IssueFactory(audit=verification, page=PageFactory(audit=verification, url=site + "/b"), type="missing-h1")
    PageFactory(audit=verification, url=site + "/c", status_code=404)
    return original, verification
