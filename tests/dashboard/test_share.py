"""Shareable reports: a read-only link per audit opens its report signed out and nothing else, 404s once
revoked, expired or unknown; only the token's hash is stored; the report ranks issues by the priority rule;
the PDF (Chromium printing the report in the worker's task, no network, once) carries the score and the top
issues. The browser test looks at the share screens and the comparison at 1440 and 390 px (overflow, axe-core,
screenshots)."""

import io
import os
import re
import unicodedata
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership
from audits.models import Audit, ReportPdf, ShareLink
from audits.sharing import share_link_create
from dashboard.report import report_summary
from dashboard.tasks import render_report_pdf
from tests.dashboard.conftest import PASSWORD, finished_audit, make_issue, make_page
from tests.factories import AccountFactory, ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations

SHOTS = Path(os.environ.get("SITEWARDEN_SHOTS", "/tmp/shots"))


def _create_link(client, audit, **data) -> str:
    """Make a link through the dashboard (post/redirect/get) and return its token, read off the screen."""
    response = client.post(reverse("audits:audit-share", args=[audit.id]), {"expires_in_days": "", **data})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    match = re.search(r'value="http://testserver/r/([A-Za-z0-9_-]+)/"', page)
    assert match, "the new link is shown once after the redirect"
    return match.group(1)


@pytest.fixture
def anon():
    """A client of its own, nobody signed in (the `client` fixture is the one owner_client signs in)."""
    return Client()


def _public(token: str, suffix: str = "") -> str:
    return reverse("shared-report", args=[token]) + suffix


@pytest.mark.django_db
def test_a_shared_link_shows_the_report_signed_out_and_nothing_else(anon, owner_client, results):
    token = _create_link(owner_client, results.audit, label="Client ACME")
    # a reload of the management page shows the link's row but neither makes a second link nor shows it again
    again = owner_client.get(reverse("audits:audit-share", args=[results.audit.id])).content.decode()
    assert token not in again and ShareLink.objects.filter(audit=results.audit).count() == 1

    link = ShareLink.objects.get(audit=results.audit)
    assert token not in link.token_hash and len(link.token_hash) == 64  # only a fingerprint is kept
    assert len(token) >= 43  # 32 random bytes

    response = anon.get(_public(token))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Shop" in html and ">67<" in html  # project name and health score
    for issue in report_summary(audit=results.audit)["top_issues"]:
        assert issue.spec.title in html.replace("&#x27;", "'")
    assert response["X-Robots-Tag"].startswith("noindex")
    assert "no-store" in response["Cache-Control"]
    assert "script-src 'self'" in response["Content-Security-Policy"]
    # no way from the report to anything else: no ids, no links into the dashboard or the account
    for other in (results.audit.id, results.previous.id, results.home.id, results.lighthouse.id):
        assert str(other) not in html
    assert "/projects/" not in html and "/audits/" not in html and "/tokens/" not in html
    hrefs = re.findall(r'href="([^"]+)"', html)
    assert all(h.startswith("/static/") or h.startswith(f"/r/{token}/") or h == "#main" for h in hrefs), hrefs
    # and the link is no session: the dashboard still asks to sign in
    detail = anon.get(reverse("audits:audit-detail", args=[results.audit.id]))
    assert detail.status_code == 302 and "/accounts/login/" in detail["Location"]


@pytest.mark.django_db
def test_revoked_expired_and_unknown_links_answer_404(anon, owner_client, results):
    token = _create_link(owner_client, results.audit)
    assert anon.get(_public(token)).status_code == 200
    link = ShareLink.objects.get(audit=results.audit)
    owner_client.post(reverse("audits:audit-share-revoke", args=[results.audit.id, link.id]))
    link.refresh_from_db()
    assert link.revoked_at is not None
    assert anon.get(_public(token)).status_code == 404
    assert anon.get(_public(token, "report.pdf")).status_code == 404

    soon = _create_link(owner_client, results.audit, expires_in_days="1")
    assert anon.get(_public(soon)).status_code == 200
    ShareLink.objects.filter(revoked_at__isnull=True).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert anon.get(_public(soon)).status_code == 404

    assert anon.get(_public("x" * 43)).status_code == 404
    assert anon.get(_public(token[:-1])).status_code == 404
    assert anon.get(_public("a" * 500)).status_code == 404


@pytest.mark.django_db
def test_a_token_reaches_its_own_audits_report_only(anon, owner_client, owner, stranger, results):
    """Another audit of the project and another account's audit: their findings never show through the
    token, and nobody else can list or revoke the owner's links."""
    other = finished_audit(ProjectFactory(owner=stranger, name="Stranger's site"))
    make_issue(other, make_page(other, "/x"), "redirect-chain", "warning")
    make_issue(results.previous, results.old_gone, "hreflang-missing-return-link", "warning")
    token = _create_link(owner_client, results.audit)
    html = anon.get(_public(token)).content.decode()
    assert "Stranger" not in html
    assert "Redirect chain" not in html and "return link" not in html.lower()
    assert "missing-h1" not in html and "Missing H1" not in html  # only in the previous audit

    client = Client()
    client.force_login(stranger)
    link = ShareLink.objects.get(audit=results.audit)
    assert client.get(reverse("audits:audit-share", args=[results.audit.id])).status_code == 404
    assert client.post(reverse("audits:audit-share-revoke", args=[results.audit.id, link.id])).status_code == 404
    assert client.get(reverse("audits:audit-report-pdf", args=[results.audit.id])).status_code == 404
    other_token = share_link_create(audit=other, created_by=stranger)[1]
    # the stranger's own link to their audit cannot revoke the owner's link either (ids are per audit)
    assert client.post(reverse("audits:audit-share-revoke", args=[other.id, link.id])).status_code == 404
    assert "Stranger" in anon.get(_public(other_token)).content.decode()


@pytest.mark.django_db
def test_a_running_audit_cannot_be_shared_yet(owner_client, owner):
    audit = finished_audit(ProjectFactory(owner=owner), status="running")
    response = owner_client.post(reverse("audits:audit-share", args=[audit.id]), {"expires_in_days": ""})
    assert response.status_code == 400 and "once it has ended" in response.content.decode()
    assert not ShareLink.objects.exists()


@pytest.mark.django_db
def test_top_issues_follow_the_priority_rule(owner):
    """priority = severity weight (100, 10, 1) × share of pages: with 20 pages a warning on every page (10.0)
    outranks a critical on one (5.0), which outranks a warning on four (2.0) and any notice, even one on every
    page (1.0) or a site-wide one (1.0, counted as every page)."""
    audit = finished_audit(ProjectFactory(owner=owner))
    pages = [make_page(audit, f"/p{i:02d}") for i in range(20)]
    make_issue(audit, pages[0], "broken-page", "critical")
    for p in pages:
        make_issue(audit, p, "missing-meta-description", "warning")
        make_issue(audit, p, "missing-h1", "info")
    for p in pages[:4]:
        make_issue(audit, p, "title-too-short", "warning")
    make_issue(audit, None, "sitemap-missing", "info")
    top = report_summary(audit=audit)["top_issues"]
    assert [(t.type, t.priority) for t in top] == [
        ("missing-meta-description", 10.0),
        ("broken-page", 5.0),
        ("title-too-short", 2.0),
        ("missing-h1", 1.0),
        ("sitemap-missing", 1.0),
    ]
    assert (top[1].pages, top[1].percent) == (1, 5.0)
    assert top[4].site_wide and not top[3].site_wide


@pytest.mark.browser
@pytest.mark.django_db
def test_the_pdf_has_the_score_and_the_top_issues(anon, owner_client, results):
    """The first request asks for the PDF (202, a page that reloads itself); the worker's task prints it once;
    then both the link and the owner's dashboard get that stored file."""
    from pypdf import PdfReader

    token = _create_link(owner_client, results.audit)
    asked = anon.get(_public(token, "report.pdf"))
    assert asked.status_code == 202 and int(asked["Retry-After"]) > 0
    assert 'http-equiv="refresh"' in asked.content.decode()
    stored = ReportPdf.objects.get(audit=results.audit)
    assert stored.status == ReportPdf.Status.PENDING
    render_report_pdf(str(results.audit.id), stored.fingerprint)  # what the worker runs (tests/dashboard/test_pdf.py)
    stored.refresh_from_db()
    assert stored.status == ReportPdf.Status.READY, stored.error
    for response in (
        anon.get(_public(token, "report.pdf")),
        owner_client.get(reverse("audits:audit-report-pdf", args=[results.audit.id])),
    ):
        assert response.status_code == 200, response.content[:300]
        assert response["Content-Type"] == "application/pdf"
        assert response["Content-Disposition"].startswith('attachment; filename="sitewarden-shop-')
        body = b"".join(response.streaming_content)
        assert body.startswith(b"%PDF")
        text = " ".join((page.extract_text() or "") for page in PdfReader(io.BytesIO(body)).pages)
        text = " ".join(unicodedata.normalize("NFKC", text).split())  # the "ﬁ" ligature back to "fi"
        assert "Shop" in text and "Health score" in text and "67" in text
        for issue in report_summary(audit=results.audit)["top_issues"]:
            assert issue.spec.title in text, (issue.spec.title, text[:800])
    assert ReportPdf.objects.get(audit=results.audit).rendered_at == stored.rendered_at  # printed once
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "12c-report.pdf").write_bytes(body)


# --- in a real browser --------------------------------------------------------------------------------


@pytest.fixture
def browser():
    with chromium_browser() as chromium:
        yield chromium


def _check_screen(tab, url: str | None, name: str, errors: list) -> None:
    """At 1440 and 390 px: no horizontal overflow, no serious/critical axe-core violation, a screenshot.
    url None: the page as it stands (a screen shown once, like a new link, is not reloaded)."""
    for width in (1440, 390):
        tab.set_viewport_size({"width": width, "height": 900})
        if url is not None:
            tab.goto(url)
        overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (name, width, overflow)
        found = serious_axe_violations(tab)
        assert found == [], (name, width, found)
        tab.screenshot(path=str(SHOTS / f"12c-{name}-{width}.png"), full_page=True)
    assert errors == [], (name, errors)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_share_screens_and_comparison_in_the_browser(browser, live_server, results):
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context()
    tab = context.new_page()
    errors: list = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))

    tab.goto(live_server.url + "/")
    tab.get_by_label("Username").fill("owner")
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    tab.get_by_role("heading", name="Projects").wait_for()

    audit_url = live_server.url + reverse("audits:audit-detail", args=[results.audit.id])
    tab.goto(audit_url)
    tab.get_by_role("link", name="Share").click()
    # a first link, revoked, so the table shows both states
    tab.get_by_label("For (optional)").fill("Old agency")
    tab.get_by_role("button", name="Create link").click()
    tab.get_by_role("row", name=re.compile("Old agency")).get_by_role("button", name="Revoke").click()
    tab.get_by_text("Link revoked").wait_for()
    tab.get_by_label("For (optional)").fill("Client ACME")
    tab.get_by_label("Expires").select_option("30")
    tab.get_by_role("button", name="Create link").click()
    shared = tab.locator("#share-url").input_value()
    assert shared.startswith(live_server.url + "/r/")
    _check_screen(tab, None, "share-manage", errors)
    tab.reload()
    assert tab.locator("#share-url").count() == 0  # shown once: a reload neither shows it nor makes another

    # the comparison, with a setting that differs between the two audits
    config = {**results.audit.config, "exclude_patterns": ["/blog/"], "max_pages": 500}
    Audit.objects.filter(id=results.audit.id).update(config=config)
    Audit.objects.filter(id=results.previous.id).update(config={**config, "exclude_patterns": [], "max_pages": 1000})
    _check_screen(tab, live_server.url + reverse("audits:audit-compare", args=[results.audit.id]), "compare", errors)

    public = browser.new_context()  # nobody signed in
    reader = public.new_page()
    reader_errors: list = []
    reader.on("console", lambda m: reader_errors.append(m.text) if m.type == "error" else None)
    _check_screen(reader, shared, "public-report", reader_errors)
    assert reader.get_by_role("heading", name="Shop").is_visible()
    assert reader.get_by_role("heading", name="What to fix first").is_visible()
    public.close()
    context.close()


@pytest.mark.django_db
def test_a_link_ends_when_its_creator_loses_access_to_the_account(anon, owner, owner_client, results):
    """Deactivated, removed from the account, or deleted: the creator's links answer 404 like unknown ones (the
    report and its PDF alike: both go through audits.sharing.share_link_resolve); the owner's own link lives on."""
    audit = results.audit
    colleague = UserFactory(username="colleague")
    membership = Membership.objects.create(user=colleague, account=audit.project.account)
    theirs = share_link_create(audit=audit, created_by=colleague)[1]
    mine = share_link_create(audit=audit, created_by=owner)[1]

    def opens(token: str) -> bool:
        report = anon.get(_public(token))
        if report.status_code == 404:
            assert anon.get(_public(token, "report.pdf")).status_code == 404
            return False
        assert report.status_code == 200
        return True

    assert opens(theirs) and opens(mine)
    colleague.is_active = False
    colleague.save()
    assert not opens(theirs) and opens(mine)
    manage = owner_client.get(reverse("audits:audit-share", args=[audit.id])).content.decode()
    assert manage.count(">maker lost access<") == 1 and manage.count(">active<") == 1  # the owner sees why
    unknown = anon.get(_public("x" * 43))
    assert anon.get(_public(theirs)).content == unknown.content  # the same answer as a link that never was

    colleague.is_active = True
    colleague.save()
    assert opens(theirs)
    membership.delete()  # removed from the account
    assert not opens(theirs) and opens(mine)
    Membership.objects.create(user=colleague, account=AccountFactory())  # now in another account
    assert not opens(theirs)

    Membership.objects.filter(user=colleague).update(account=audit.project.account)
    assert opens(theirs)
    colleague.delete()  # the link's created_by becomes NULL
    assert ShareLink.objects.filter(audit=audit, created_by__isnull=True).count() == 1
    assert not opens(theirs) and opens(mine)
