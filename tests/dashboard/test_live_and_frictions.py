"""Live and finished states that tell the truth, and the small frictions: tokens post/redirect/get, a
project without a schedule, webhooks from the dashboard, the cancel confirmation, `ensure_login`."""

import re
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiToken
from audits.management.commands.audit import bar_line
from audits.models import Audit, AuditEvent
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.selectors.audits import audit_crawl_bar
from dashboard.live import live_progress
from tests.dashboard.conftest import make_page
from tests.factories import AuditEventFactory, AuditFactory, LighthouseResultFactory, ProjectFactory
from tests.support.sites import serve_routes
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


def _running(owner, phase=Audit.Phase.CRAWLING, **fields):
    now = timezone.now()
    audit = AuditFactory(project=ProjectFactory(owner=owner), started_at=now, last_progress_at=now)
    Audit.objects.filter(id=audit.id).update(current_phase=phase, **fields)
    audit.refresh_from_db()
    return audit


def _live_html(client, audit) -> str:
    return client.get(reverse("audits:audit-live", args=[audit.id])).content.decode()


# --- live and finished states -----------------------------------------------------------------------------


def test_a_growing_crawl_says_found_so_far_and_never_a_smaller_total(owner_client, owner):
    audit = _running(owner, pages_crawled=12, pages_total=40)
    html = _live_html(owner_client, audit)
    assert re.search(
        r"<strong id=\"pages-crawled\">12</strong> crawled of <span id=\"pages-total\">40</span> found so far", html
    )
    assert "page budget 1000" in html and '<progress id="crawl-progress" max="40" value="12"' in html
    # pages_total lagging behind the pages crawled never shows a denominator below the numerator, nor a full bar
    Audit.objects.filter(id=audit.id).update(pages_crawled=55, pages_total=40)
    html = _live_html(owner_client, audit)
    assert '<span id="pages-total">55</span>' in html and 'data-total="55"' in html
    assert '<progress id="crawl-progress" max="56" value="55"' in html


CRAWLED_OF = r"(\d+)</strong> crawled of <span id=\"pages-total\">(\d+)"


def _bar_of(html: str) -> tuple[int, int]:
    found = re.search(r'<progress id="crawl-progress" max="(\d+)"(?: value="(\d+)")?', html)
    return int(found.group(1)), int(found.group(2) or 0)


@pytest.mark.django_db(transaction=True)
def test_the_live_bar_of_a_real_crawl_with_a_growing_frontier_is_never_full_until_the_crawl_ends(client, owner):
    """A binary tree of pages on 127.0.0.1: each page links two new ones, so the frontier grows while the crawl
    runs. Each time the site answers, the live view (and the CLI's bar line) is read as a person would see it."""
    client.force_login(owner)
    pages = 63
    seen: list[tuple[str, int, int, str, str]] = []  # (phase, max, value, text, CLI line)

    def page(number: int):
        def answer(handler):
            audit = Audit.objects.filter(status=Audit.Status.RUNNING).first()
            if audit is not None and number % 4 == 0:
                html = client.get(reverse("audits:audit-live", args=[audit.id])).content.decode()
                maximum, value = _bar_of(html)
                text = re.sub(r"\s+", " ", re.search(r'<p class="progress-text">(.*?)</p>', html, re.S).group(1))
                seen.append((audit.current_phase, maximum, value, text, bar_line(audit_crawl_bar(audit=audit), 30)))
            children = [c for c in (2 * number, 2 * number + 1) if c <= pages]
            body = "".join(f'<a href="/p/{c}">page {c}</a>' for c in children)
            body = f"<html><head><title>Page {number}</title></head><body><h1>{number}</h1>{body}</body></html>"
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html; charset=utf-8")
            handler.send_header("Content-Length", str(len(body.encode())))
            handler.end_headers()
            handler.wfile.write(body.encode())
            connection.close()  # the server's thread: no session left open on the test database

        return answer

    with serve_routes() as site:
        for number in range(1, pages + 1):
            site.handle(f"/p/{number}", page(number))
        site.handle("/", page(1))
        project = ProjectFactory(owner=owner, base_url=site.url + "/p/1")
        audit = audit_start(project=project, start_url=site.url + "/p/1", max_pages=1000, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED and audit.pages_crawled == pages
    running = [s for s in seen if s[0] in ("discovery", "crawling")]
    assert len(running) >= 5, seen
    for _phase, maximum, value, text, cli in running:
        assert value < maximum, (maximum, value, text)
        crawled, found = (
            int(n) for n in re.search(r"(\d+)</strong> crawled of <span id=\"pages-total\">(\d+)", text).groups()
        )
        assert crawled <= found and "found so far" in text, text
        assert "#" * 30 not in cli and re.search(r"\] \d+ crawled of \d+ found so far \(budget 1000\)", cli), cli
    # The known URLs grow with each persisted batch, not once per round: the site is ahead of the crawl.
    counts = [tuple(int(n) for n in re.search(CRAWLED_OF, s[3]).groups()) for s in running]
    assert sum(found > crawled for crawled, found in counts) >= len(counts) // 2, running
    assert len({found for _, found in counts}) >= 3, running
    maximum, value = _bar_of(_live_html(client, audit))
    assert (maximum, value) == (pages, pages)  # completed: full


def test_a_crawl_at_its_page_limit_says_so_instead_of_growing(owner_client, owner):
    audit = _running(owner, pages_crawled=10, pages_total=1000)  # the factory's project allows 1000 pages
    assert audit.max_pages == 1000
    html = _live_html(owner_client, audit)
    assert "the page limit" in html and "still growing" not in html


def test_lighthouse_phase_shows_n_of_m_runs(owner_client, owner):
    audit = _running(owner, phase=Audit.Phase.LIGHTHOUSE, pages_crawled=3, pages_total=3)
    home = make_page(audit, "/", status_code=200, content_type="text/html", is_indexable=True)
    make_page(audit, "/blog/a-post", status_code=200, content_type="text/html", is_indexable=True, depth=1)
    LighthouseResultFactory(audit=audit, page=home)
    cache.clear()
    progress = live_progress(audit=audit)
    assert (progress["lighthouse"].done, progress["lighthouse"].planned) == (1, 4)  # 2 pages x mobile, desktop
    html = _live_html(owner_client, audit)
    assert re.search(r"<strong>1</strong> of 4 runs", html)
    assert 'data-announce="Lighthouse: 1 of 4 runs done."' in html


def test_cancelled_audit_says_where_it_stopped_and_does_not_animate(owner_client, owner):
    audit = _running(owner, pages_crawled=9, pages_total=30)
    AuditEventFactory(audit=audit, kind=AuditEvent.Kind.PHASE, message="Phase crawling", data={"phase": "crawling"})
    Audit.objects.filter(id=audit.id).update(status=Audit.Status.CANCELLED, current_phase=Audit.Phase.CANCELLED)
    html = _live_html(owner_client, audit)
    assert "cancelled during crawling, after 9 pages" in html
    assert re.search(r"step-done\">\s*<span class=\"step-label\">Discovery", html)
    assert re.search(r"step-stopped\">\s*<span class=\"step-label\">Crawling", html)
    assert re.search(r'<progress id="crawl-progress" max="30" value="9"', html)  # a value: no endless animation
    assert 'data-finished="true"' in html


def test_failed_audit_with_nothing_crawled_shows_a_still_bar_and_the_error_in_words(owner_client, owner):
    audit = _running(owner)
    Audit.objects.filter(id=audit.id).update(
        status=Audit.Status.FAILED,
        current_phase=Audit.Phase.FAILED,
        failed_phase=Audit.Phase.DISCOVERY,
        error_code="start_url_unreachable",
        pages_crawled=0,
        pages_total=0,
    )
    html = _live_html(owner_client, audit)
    assert "failed during discovery, after 0 pages" in html
    assert "The start URL could not be fetched" in html
    assert re.search(r'<progress id="crawl-progress" max="1" value="0"', html)
    assert "step-failed" in html


def test_cancel_asks_for_confirmation_first(owner_client, owner):
    audit = _running(owner, pages_crawled=4, pages_total=20)
    overview = owner_client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert f'href="{reverse("audits:audit-cancel", args=[audit.id])}"' in overview
    confirm = owner_client.get(reverse("audits:audit-cancel", args=[audit.id]))
    assert confirm.status_code == 200 and b"Yes, cancel the audit" in confirm.content
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING  # asking cancels nothing
    assert owner_client.post(reverse("audits:audit-cancel", args=[audit.id])).status_code == 302
    audit.refresh_from_db()
    assert audit.status == Audit.Status.CANCELLED
    # once it has ended, the confirmation page sends back to the audit
    assert owner_client.get(reverse("audits:audit-cancel", args=[audit.id])).status_code == 302


# --- frictions ------------------------------------------------------------------------------------------------


def test_token_page_is_post_redirect_get(owner_client, owner):
    response = owner_client.post(reverse("audits:api-tokens"), {"name": "CI", "scope": "read"})
    assert response.status_code == 302 and response["Location"] == reverse("audits:api-tokens")
    shown = owner_client.get(reverse("audits:api-tokens")).content.decode()
    plaintext = re.search(r'id="new-token" type="text" readonly value="([^"]+)"', shown).group(1)
    assert plaintext.startswith("sw_")
    again = owner_client.get(reverse("audits:api-tokens")).content.decode()  # a reload
    assert plaintext not in again and 'id="new-token"' not in again
    assert ApiToken.objects.filter(user=owner).count() == 1


def test_a_project_without_a_schedule_has_no_choice_selected(owner_client, owner):
    project = ProjectFactory(owner=owner)
    html = owner_client.get(reverse("audits:project-detail", args=[project.id])).content.decode()
    radios = re.findall(r'<input type="radio" name="kind"[^>]*>', html)
    assert len(radios) == 3 and not any("checked" in r for r in radios)


def test_webhooks_from_the_dashboard(owner_client, owner, settings):
    settings.ALLOW_PRIVATE_TARGETS = True
    project = ProjectFactory(owner=owner)
    url = reverse("audits:project-webhooks", args=[project.id])
    response = owner_client.post(url, {"url": "http://127.0.0.1:9/hook", "secret": ""})
    assert response.status_code == 302
    webhook = Webhook.objects.get(project=project)
    page = owner_client.get(url).content.decode()
    assert webhook.secret in page  # shown once...
    assert webhook.secret not in owner_client.get(url).content.decode()  # ...and not on a reload
    assert Webhook.objects.filter(project=project).count() == 1

    owner_client.post(reverse("audits:project-webhook-toggle", args=[project.id, webhook.id]))
    webhook.refresh_from_db()
    assert webhook.enabled is False
    audit = AuditFactory(project=project)
    WebhookDelivery.objects.create(
        webhook=webhook,
        audit=audit,
        audit_ref=audit.id,
        event="audit.finished",
        status="failed",
        attempts=6,
        last_response_code=503,
        last_error="HTTP 503",
    )
    page = owner_client.get(url).content.decode()
    assert "disabled" in page and "HTTP 503" in page and 'id="deliveries"' in page

    refused = owner_client.post(url, {"url": "ftp://example.com/"})
    assert refused.status_code == 400 and b'id="webhook-url-error"' in refused.content
    owner_client.post(reverse("audits:project-webhook-delete", args=[project.id, webhook.id]))
    assert not Webhook.objects.filter(project=project).exists()


def test_another_account_cannot_reach_webhooks(client, stranger, owner):
    project = ProjectFactory(owner=owner)
    webhook = Webhook.objects.create(project=project, url="https://example.com/h", secret="s" * 32)
    client.force_login(stranger)
    assert client.get(reverse("audits:project-webhooks", args=[project.id])).status_code == 404
    assert client.post(reverse("audits:project-webhook-delete", args=[project.id, webhook.id])).status_code == 404
    assert Webhook.objects.filter(id=webhook.id).exists()


def test_ensure_login_says_how_to_reset_the_password():
    out = StringIO()
    call_command("ensure_login", stdout=out)
    call_command("ensure_login", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Login created: admin / ")
    assert lines[2] == "Login: admin (password set earlier)"
    assert lines[3].endswith("manage.py changepassword admin")
