"""Endless URL spaces are recognised by their signs, not by how many URLs one template has: a real crawl
(the CLI, as a person runs it) of a shop whose 2,500 products share one shape, beside an events calendar that
runs into the future, a relative-link loop and a list whose every page says the same under a new URL. The
catalogue is crawled whole; each
trap is stopped and said: an issue, an event, the API's `urls_skipped` and the CLI's last line."""

import json
import re
from datetime import date
from http.server import BaseHTTPRequestHandler

import pytest

from accounts.tokens import token_create
from audits.models import Audit, AuditEvent, Issue, Page
from crawler.limits import TRAP_CALENDAR_YEARS_AHEAD, TRAP_MAX_IDENTICAL_PAGES_PER_PATTERN
from scratchpad.models import SkippedURL
from tests.api.conftest import bearer_client
from tests.support.sites import serve_handler
from tests.support.workers import run_cli

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # a manage.py child process

PRODUCTS = 2500
PRODUCTS_PER_LISTING = 100
LISTINGS = PRODUCTS // PRODUCTS_PER_LISTING
MAX_PAGES = 3000  # above everything the site really has: nothing here is the page budget's doing
CLI_TIMEOUT_S = 600


def _page(title: str, body: str) -> bytes:
    return f"<!doctype html><html lang=en><head><title>{title}</title></head><body>{body}</body></html>".encode()


def _month(d: date) -> str:
    return f"{d.year:04d}-{d.month:02d}"


class ShopWithTraps(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path
        if path == "/":
            listings = "".join(f'<a href="/catalogue/{k}">Catalogue page {k}</a> ' for k in range(1, LISTINGS + 1))
            body = (
                f"<h1>Shop</h1>{listings}"
                f'<a href="/events/{_month(date.today())}">Events this month</a> '
                '<a href="a/">A section that links itself relatively</a> '
                '<a href="/list/1/">Everything</a> '
                '<a href="/search?color=red&size=m">Red, medium</a> <a href="/search?size=m&color=red">Medium, red</a>'
            )
            return self._send(_page("Shop home", body))
        if match := re.fullmatch(r"/catalogue/(\d+)", path):
            k = int(match.group(1))
            first = (k - 1) * PRODUCTS_PER_LISTING
            links = "".join(
                f'<a href="/p/{n}.html">Product {n}</a> ' for n in range(first, first + PRODUCTS_PER_LISTING)
            )
            return self._send(_page(f"Catalogue page {k}", f"<h1>Catalogue {k}</h1>{links}"))
        if match := re.fullmatch(r"/p/(\d+)\.html", path):
            n = match.group(1)
            return self._send(_page(f"Product {n}", f'<h1>Product {n}</h1><p>Item {n}.</p><a href="/">Home</a>'))
        if match := re.fullmatch(r"/events/(\d{4})-(\d{2})", path):
            y, m = int(match.group(1)), int(match.group(2))
            nxt = f"{y + (m == 12):04d}-{m % 12 + 1:02d}"
            body = f'<h1>Events {y}-{m:02d}</h1><a href="/events/{nxt}">next month</a>'
            return self._send(_page(f"Events in {y}-{m:02d}", body))
        if match := re.fullmatch(r"/list/(\d+)/", path):
            # One page under endless URLs: the same main text, and links to the next two "pages" of it.
            n = int(match.group(1))
            body = f'<h1>Everything we sell</h1><p>The whole range.</p><a href="/list/{n + 1}/">More</a> '
            body += f'<a href="/list/{n + 2}/">Even more</a>'
            return self._send(_page("Everything", body))
        if re.fullmatch(r"/(a/)+", path):
            return self._send(_page(f"Section {path}", '<h1>Section</h1><a href="a/">deeper</a>'))
        if path.startswith("/search?"):
            return self._send(_page(f"Search {path}", "<h1>Results</h1>"))
        return self._send(_page("Not found", "<h1>Not found</h1>"), status=404)

    def _send(self, body: bytes, status: int = 200):
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_catalogue_of_one_shape_is_crawled_whole_while_traps_are_stopped_by_their_signs_and_said():
    with serve_handler(ShopWithTraps) as (_, base):
        done = run_cli("audit", base + "/", "--max-pages", str(MAX_PAGES), "--json", "--inline", timeout=CLI_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    audit = Audit.objects.get(id=result["id"])
    assert audit.status == Audit.Status.COMPLETED
    urls = set(Page.objects.filter(audit=audit).values_list("url", flat=True))

    # The catalogue: every product, though all 2,500 share /p/{n}.html.
    assert sum(1 for u in urls if re.fullmatch(re.escape(base) + r"/p/\d+\.html", u)) == PRODUCTS

    # The calendar: crawled up to the window's last month, the next one skipped by its date.
    today = date.today()
    last_month = date(today.year + TRAP_CALENDAR_YEARS_AHEAD, 12, 1)
    beyond = f"{base}/events/{today.year + TRAP_CALENDAR_YEARS_AHEAD + 1}-01"
    assert f"{base}/events/{_month(last_month)}" in urls
    assert beyond not in urls
    # The loop: two levels crawled, the third is a repeat. (A query permutation is no trap: normalised, one URL.)
    assert {f"{base}/a/", f"{base}/a/a/"} <= urls and f"{base}/a/a/a/" not in urls
    assert f"{base}/search?color=red&size=m" in urls and f"{base}/search?size=m&color=red" not in urls

    # Issues: one per rule and shape, with the count, examples and the setting that raises it.
    issues = {i.details["rule"]: i for i in Issue.objects.filter(audit=audit, type="crawl-urls-skipped")}
    assert set(issues) == {"calendar", "repeating-path", "identical-pages"}
    calendar = issues["calendar"]
    assert calendar.severity == "warning" and calendar.page_id is None
    assert calendar.details["pattern"] == "/events/{date}"
    assert calendar.details["urls_skipped"] == 1 and calendar.details["examples"] == [beyond]
    assert calendar.details["setting"] == "calendar_years_ahead"
    assert issues["repeating-path"].details["examples"] == [f"{base}/a/a/a/"]
    # The list: crawled until its pages had shown the same main text often enough, then its new links skipped.
    listed_pages = sum(1 for u in urls if u.startswith(f"{base}/list/"))
    assert TRAP_MAX_IDENTICAL_PAGES_PER_PATTERN <= listed_pages <= 2 * TRAP_MAX_IDENTICAL_PAGES_PER_PATTERN
    identical = issues["identical-pages"]
    assert identical.details["pattern"] == "/list/{n}/" and identical.details["urls_skipped"] >= 1
    assert identical.details["setting"] == "max_identical_pages_per_pattern"
    assert not Issue.objects.filter(audit=audit, type="max-pages-reached").exists()
    assert not SkippedURL.objects.filter(audit=audit).exists()  # purged with the frontier, kept in the issues

    # Events: once per rule and shape, when it first fired.
    events = AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.URLS_SKIPPED)
    assert sorted(e.data["rule"] for e in events) == ["calendar", "identical-pages", "repeating-path"]
    calendar_event = next(e for e in events if e.data["rule"] == "calendar")
    assert "raise calendar_years_ahead" in calendar_event.message and beyond in calendar_event.message

    # The API.
    owner = audit.project.owner
    client = bearer_client(token_create(user=owner, name="t")[1])
    body = client.get(f"/api/v1/audits/{audit.id}/").json()
    listed = {s["rule"]: s for s in body["urls_skipped"]}
    assert listed["calendar"]["urls_skipped"] == 1 and listed["calendar"]["setting"] == "calendar_years_ahead"
    assert listed["calendar"]["examples"] == [beyond]
    assert result["urls_skipped"] == body["urls_skipped"]  # the CLI's --json says the same

    # The CLI's last line.
    last = done.stderr.strip().splitlines()[-1]
    assert "1 URLs skipped by calendar" in last and "(raise calendar_years_ahead)" in last, last
    assert "1 URLs skipped by repeating-path" in last, last
