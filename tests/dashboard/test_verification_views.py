"""Fix verification's screens: the "Verify fix" button of an issue type (or why a type cannot be verified), the
result screen per URL, and the "verified fixed on …" line on the issue screen, the Issues tab and the overview."""

import pytest
from django.urls import reverse

from audits.models import Audit
from tests.factories import IssueFactory, PageFactory, ProjectFactory
from tests.support.verification import VERIFIED_PATHS, verified_pair

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(owner):
    return verified_pair(ProjectFactory(owner=owner, base_url="http://127.0.0.1:1/"))


def test_the_result_screen_lists_each_url_with_its_outcome(owner_client, pair):
    original, verification = pair
    answer = owner_client.get(reverse("audits:audit-verification", args=[verification.id]))
    assert answer.status_code == 200
    html = answer.content.decode()
    assert "1 of 3 fixed on" in html
    for path, outcome in VERIFIED_PATHS.items():
        assert f'<tr data-outcome="{outcome}">' in html
        assert f"127.0.0.1:1{path}" in html
    assert "Answered 404" in html

    only_fixed = owner_client.get(reverse("audits:audit-verification", args=[verification.id]), {"outcome": "fixed"})
    assert only_fixed.content.decode().count("<tr data-outcome=") == 1

    # An audit that verifies nothing has no such screen; another account's verification is not found.
    assert owner_client.get(reverse("audits:audit-verification", args=[original.id])).status_code == 404


def test_the_line_shows_on_the_issue_screen_the_issues_tab_and_the_overview(owner_client, pair):
    original, verification = pair
    link = reverse("audits:audit-verification", args=[verification.id])
    for name in ("audits:audit-issues", "audits:audit-detail"):
        html = owner_client.get(reverse(name, args=[original.id])).content.decode()
        assert f'href="{link}" data-verified="missing-h1">1 of 3 fixed on' in html, name
    html = owner_client.get(reverse("audits:audit-issue-type", args=[original.id, "missing-h1"])).content.decode()
    assert 'data-verified="missing-h1">1 of 3 fixed on' in html
    assert 'id="verify-fix-button"' in html  # verified once, it can be verified again


def test_verify_fix_starts_the_recheck_and_a_refusal_is_said_on_the_issue_screen(owner_client, owner, pair):
    original, _ = pair
    page = PageFactory(audit=original, url="http://127.0.0.1:1/dup")
    IssueFactory(audit=original, page=page, type="duplicate-title")
    screen = reverse("audits:audit-issue-type", args=[original.id, "duplicate-title"])
    html = owner_client.get(screen).content.decode()
    assert 'id="verify-fix-button"' not in html and "needs the whole crawl" in html

    refused = owner_client.post(reverse("audits:audit-issue-verify", args=[original.id, "duplicate-title"]))
    assert refused.status_code == 302 and refused["Location"] == screen
    assert "needs the whole crawl" in owner_client.get(screen).content.decode()

    started = owner_client.post(reverse("audits:audit-issue-verify", args=[original.id, "missing-h1"]))
    verification = Audit.objects.filter(verifies=original, status=Audit.Status.RUNNING).get()
    assert started["Location"] == reverse("audits:audit-verification", args=[verification.id])
    assert verification.config["verify_issue_type"] == "missing-h1"
    assert verification.config["verify_requested_by"] == owner.pk
    html = owner_client.get(started["Location"]).content.decode()
    assert 'id="verification-running"' in html

    assert owner_client.get(reverse("audits:audit-issue-verify", args=[original.id, "missing-h1"])).status_code == 405


def test_another_accounts_audit_is_not_found(client, stranger, pair):
    original, verification = pair
    client.force_login(stranger)
    assert client.get(reverse("audits:audit-verification", args=[verification.id])).status_code == 404
    assert client.post(reverse("audits:audit-issue-verify", args=[original.id, "missing-h1"])).status_code == 404
