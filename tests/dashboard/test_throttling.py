"""Rate limits on a report's heavy reads (dashboard.throttling): fixed windows in the default cache that hold
under requests arriving together from many threads, per link and per client, answered 429 with Retry-After on
the shared report page, its PDF and the signed-in PDF."""

import threading

import pytest
from django.test import Client
from django.urls import reverse

from audits.sharing import share_link_create
from dashboard.throttling import Rate, client_ident, rate_limit_hit, rate_parse

THREADS = 20


def test_rates_read_like_drfs():
    assert rate_parse("10/min") == Rate(10, 60)
    assert rate_parse("5/s") == Rate(5, 1)
    assert rate_parse("100/hour") == Rate(100, 3600)
    assert rate_parse("3/day") == Rate(3, 86400)


def test_a_window_lets_its_rate_through_then_says_how_long_to_wait():
    rate = Rate(3, 60)
    start = 6000.0  # the start of a window (6000 = 100 × 60)
    assert [rate_limit_hit(scope="t", ident="a", rate=rate, now=start + i) for i in range(3)] == [None] * 3
    assert rate_limit_hit(scope="t", ident="a", rate=rate, now=start + 15.5) == 45  # until the window ends
    assert rate_limit_hit(scope="t", ident="a", rate=rate, now=start + 59.9) == 1
    # other idents and scopes count on their own; the next window starts afresh
    assert rate_limit_hit(scope="t", ident="b", rate=rate, now=start + 20) is None
    assert rate_limit_hit(scope="u", ident="a", rate=rate, now=start + 20) is None
    assert rate_limit_hit(scope="t", ident="a", rate=rate, now=start + 60) is None


def test_requests_arriving_together_from_many_threads_are_counted_exactly():
    """The burst the limit is for: twenty threads of one web process at once, ten allowed, never more."""
    rate, now = Rate(10, 60), 12000.0
    results, barrier = [], threading.Barrier(THREADS)

    def hit():
        barrier.wait()
        results.append(rate_limit_hit(scope="burst", ident="203.0.113.7", rate=rate, now=now))

    threads = [threading.Thread(target=hit) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(None) == 10 and len(results) == THREADS


def test_the_client_is_the_user_or_the_address_behind_trusted_proxies(rf, settings, owner):
    request = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.9")
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ident(request) == "addr:10.0.0.1"
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ident(request) == "addr:203.0.113.9"  # the entry our proxy wrote, not the client's own
    request.user = owner
    assert client_ident(request) == f"user:{owner.pk}"


def _refused(response) -> int:
    assert response.status_code == 429, response.status_code
    assert 'http-equiv="refresh"' in response.content.decode()  # a person's page tries again by itself
    return int(response["Retry-After"])


@pytest.mark.django_db
def test_the_pdf_is_limited_per_link_and_per_address(settings, results):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.REPORT_PDF_RATE_PER_LINK = "4/min"
    settings.REPORT_PDF_RATE_PER_CLIENT = "3/min"
    token = share_link_create(audit=results.audit, created_by=results.project.owner)[1]
    other_token = share_link_create(audit=results.audit, created_by=results.project.owner)[1]
    url = reverse("shared-report-pdf", args=[token])
    client = Client()

    def get(address, link_url=url):
        return client.get(link_url, HTTP_X_FORWARDED_FOR=address)

    assert [get("203.0.113.1").status_code for _ in range(3)] == [202] * 3  # being prepared (no worker here)
    assert 0 < _refused(get("203.0.113.1")) <= 60  # per address
    assert get("203.0.113.2").status_code == 202  # another address, the link's 4th
    assert 0 < _refused(get("203.0.113.3")) <= 60  # per link, whoever asks
    assert get("203.0.113.3", reverse("shared-report-pdf", args=[other_token])).status_code == 202
    assert _refused(get("203.0.113.1"))  # still refused, and the refusal counted
    refusal = get("203.0.113.4")
    assert refusal["X-Robots-Tag"].startswith("noindex") and refusal["Referrer-Policy"] == "no-referrer"


@pytest.mark.django_db
def test_the_shared_report_page_is_limited_too(settings, results):
    settings.SHARED_REPORT_RATE_PER_ADDRESS = "2/min"
    settings.SHARED_REPORT_RATE_PER_LINK = "100/min"
    token = share_link_create(audit=results.audit, created_by=results.project.owner)[1]
    client = Client()
    url = reverse("shared-report", args=[token])
    assert [client.get(url).status_code for _ in range(2)] == [200, 200]
    assert _refused(client.get(url))
    # unknown tokens count against the address as well: guessing costs the same budget
    assert _refused(client.get(reverse("shared-report", args=["x" * 43])))


@pytest.mark.django_db
def test_the_signed_in_pdf_is_limited_per_user(settings, owner_client, results):
    settings.REPORT_PDF_RATE_PER_CLIENT = "2/min"
    url = reverse("audits:audit-report-pdf", args=[results.audit.id])
    assert [owner_client.get(url).status_code for _ in range(2)] == [202, 202]
    assert _refused(owner_client.get(url))
    assert Client().get(url).status_code == 302  # signed out: the sign-in page, as before
