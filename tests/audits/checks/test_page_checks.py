"""Page checks, one page at a time: each case is served on 127.0.0.1, fetched with the crawler's client,
parsed and built into a page record exactly as a crawl chunk does (no database)."""

import uuid

import pytest

from audits.checks import CheckSettings
from audits.checks.page import PAGE_CHECK_TYPES, hreflang_problem, page_issues, robots_directives
from audits.checks.render import RENDER_TYPES
from audits.models import Page
from audits.pipeline.page_record import build_page_record
from audits.pipeline.scope import CrawlScope
from crawler.discovery import Robots
from crawler.fetch import FetchResult, build_session, fetch
from crawler.limits import MAX_HTML_BYTES
from crawler.parse import parse_html
from scratchpad.services import ClaimedURL
from tests.support.sites.page_cases import page_cases
from tests.support.sites.pages import html_route, page, serve

AUDIT_ID = uuid.UUID("00000000-0000-0000-0000-00000000c0de")
UNIT_CASES = [c.name for c in page_cases("http://127.0.0.1:12345") if c.unit]


@pytest.fixture(scope="module")
def case_site():
    routes: dict = {}
    with serve(routes) as base:
        cases = page_cases(base)
        for case in cases:
            routes[case.path.split("?", 1)[0]] = case.route  # the router ignores the query
        yield base, {c.name: c for c in cases}


@pytest.fixture(scope="module")
def session():
    s = build_session()
    yield s
    s.close()


def record_for(base, session, case, settings=None):
    result = fetch(session, base + case.path)
    if case.response_time_ms is not None:
        result.response_time_ms = case.response_time_ms
    url = base + case.path
    if case.as_url == "https":
        url = "https://" + url.removeprefix("http://")
    scope = CrawlScope(
        start_url=base + "/",
        site_url=base + "/",
        robots=Robots(None, "Sitewarden"),
        checks=settings or CheckSettings(site_https=case.site_https),
    )
    return build_page_record(AUDIT_ID, scope, ClaimedURL(1, url, case.depth, False, 0, 1), result)


def expectation_errors(case, issue_types: set) -> list[str]:
    errors = [f"{case.name}: expected {t}" for t in sorted(case.present - issue_types)]
    forbidden = set(PAGE_CHECK_TYPES) if "*" in case.absent else case.absent
    errors += [f"{case.name}: unexpected {t}" for t in sorted(issue_types & forbidden)]
    return errors


@pytest.mark.parametrize("name", UNIT_CASES)
def test_page_case(case_site, session, name):
    base, cases = case_site
    case = cases[name]
    record = record_for(base, session, case)
    types = {i.type for i in record.issues}
    assert not expectation_errors(case, types), sorted(types)
    for issue in record.issues:
        assert issue.page_id == record.page.id and issue.page_url == record.page.url
        assert issue.audit_id == AUDIT_ID


def test_every_page_check_has_a_case_that_triggers_it_and_a_near_miss():
    cases = page_cases("http://127.0.0.1:12345")
    triggered = set().union(*(c.present for c in cases))
    near_missed = set().union(*(c.absent for c in cases if c.absent != {"*"}))
    # custom-extraction needs a project's extractors: tests/audits/test_extraction.py plants it and its twins.
    # deep-page is judged in finalize on exact depths: tests/audits/pipeline/test_depth.py.
    # render-*: a rendered page beside its served HTML: tests/audits/checks/test_render_checks.py and, in Chromium,
    # tests/audits/pipeline/test_render.py.
    planted_elsewhere = {"custom-extraction", "deep-page", *RENDER_TYPES}
    assert triggered == set(PAGE_CHECK_TYPES) - planted_elsewhere
    assert near_missed >= set(PAGE_CHECK_TYPES) - {"fetch-error", "rate-limited-page", "server-error"} - (
        planted_elsewhere
    ), set(PAGE_CHECK_TYPES) - near_missed


def test_details_say_what_was_measured(case_site, session):
    base, cases = case_site

    def details(name, issue_type):
        (issue,) = [i for i in record_for(base, session, cases[name]).issues if i.type == issue_type]
        return issue.details

    assert details("title-61", "title-too-long") | {"title": ""} == {"chars": 61, "max_chars": 60, "title": ""}
    assert details("thin-149", "thin-content") == {"words": 149, "min_words": 150}
    # 200 Japanese characters, and the heading's and the home link's English words; 2 characters a word.
    assert details("thin-ja-200", "thin-content") == {"characters": 204, "min_characters": 300}
    assert record_for(base, session, cases["thin-ja-500"]).page.word_unit == "characters"
    assert details("img-no-alt", "images-missing-alt")["srcs"] == [base + "/static/a.png"]
    assert details("click-here", "non-descriptive-link-text")["links"] == [{"href": base + "/", "text": "Click here!"}]
    assert details("broken-404", "broken-page") == {"status_code": 404}
    assert details("blocked-cf-header", "blocked-page")["reason"] == "cf-mitigated: challenge"
    bad = details("hreflang-bad", "hreflang-invalid")["values"]
    assert [v["hreflang"] for v in bad] == ["en-UK", "en_US"]
    assert "GB" in bad[0]["problem"]
    assert details("canonical-relative", "canonical-relative")["href"] == "/case/canonical-relative"
    assert details("mixed-https", "mixed-content")["resources"] == ["http://cdn.example.com/a.png"]
    assert details("large", "large-html") == {"bytes_read": 1024 * 1024 + 50_000, "max_bytes": 1024 * 1024}
    assert details("html-over-15mb", "html-too-large") == {"bytes_read": MAX_HTML_BYTES, "max_bytes": MAX_HTML_BYTES}
    assert details("canonical-file", "canonical-non-http") == {"href": "file:///srv/build/index.html", "scheme": "file"}
    vague = details("fragment-click-here", "non-descriptive-link-text")
    here = base + "/case/fragment-click-here#usage"
    assert vague == {"links_count": 2, "links": [{"href": here, "text": "click here"}]}
    error = details("drop-connection", "fetch-error")
    assert error["error_kind"] and error["error"] and error["status_code"] is None


def test_fetch_error_without_answer_is_the_only_issue():
    page_row = Page(id=uuid.uuid4(), audit_id=AUDIT_ID, url="http://example.test/x", depth=9)
    result = FetchResult(url=page_row.url, error_kind="dns", error="NameResolutionError: no such host")
    issues = page_issues(page_row, None, result, CheckSettings())
    assert [(i.type, i.details) for i in issues] == [
        ("fetch-error", {"error_kind": "dns", "error": "NameResolutionError: no such host", "status_code": None})
    ]


def test_thresholds_severities_and_disabled_checks_come_from_the_settings(case_site, session):
    base, cases = case_site
    settings = CheckSettings(
        thresholds={"title-too-long": {"max_chars": 70}, "thin-content": {"min_words": 100}},
        severities={"missing-h1": "critical"},
        disabled={"missing-viewport"},
    )
    assert "title-too-long" not in {i.type for i in record_for(base, session, cases["title-61"], settings).issues}
    assert "thin-content" not in {i.type for i in record_for(base, session, cases["thin-149"], settings).issues}
    (h1,) = [i for i in record_for(base, session, cases["no-h1"], settings).issues if i.type == "missing-h1"]
    assert h1.severity == "critical"
    assert not [i for i in record_for(base, session, cases["no-viewport"], settings).issues]


def test_issue_ids_are_deterministic(case_site, session):
    base, cases = case_site
    first = [(i.id, i.type, i.details) for i in record_for(base, session, cases["no-title"]).issues]
    second = [(i.id, i.type, i.details) for i in record_for(base, session, cases["no-title"]).issues]
    assert first == second and first


def test_empty_html_answer_is_judged_as_an_empty_page():
    with serve({"/empty": html_route("")}) as base:
        s = build_session()
        result = fetch(s, base + "/empty")
    scope = CrawlScope(start_url=base + "/", site_url=base + "/", robots=Robots(None, "Sitewarden"))
    record = build_page_record(AUDIT_ID, scope, ClaimedURL(1, base + "/empty", 1, False, 0, 1), result)
    types = {i.type for i in record.issues}
    assert {"missing-title", "thin-content", "no-outgoing-links"} <= types


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("en", True), ("EN-gb", True), ("x-default", True), ("zh-Hant-TW", True), ("es-419", True),
        ("fil", True), ("de-CH", True), ("en-UK", False), ("en_US", False), ("jp", False), ("english", False),
        ("", False), ("en-", False), ("en-GBR", False),
    ],
)  # fmt: skip
def test_hreflang_codes(value, valid):
    assert (hreflang_problem(value) is None) == valid


@pytest.mark.parametrize(
    ("meta", "header", "expected"),
    [
        ("noindex, nofollow", "", {"noindex", "nofollow"}),
        ("none", "", {"none", "noindex", "nofollow"}),
        ("", "googlebot: noindex", {"noindex"}),
        ("", "otherbot: noindex, nofollow", set()),
        ("", "max-snippet: 20, noarchive", {"max-snippet: 20", "noarchive"}),
        ("", "unavailable_after: 25 Jun 2010 15:00:00 PST", {"unavailable_after: 25 jun 2010 15:00:00 pst"}),
    ],
)
def test_robots_directives(meta, header, expected):
    assert robots_directives(meta, header) == expected


def test_a_real_page_that_mentions_captcha_at_length_is_not_blocked():
    body = page("captcha-article", words=400, body="<p>How a captcha works and why cf-browser-verification exists</p>")
    data = parse_html(body.encode(), "http://example.test/a")
    result = FetchResult(url="http://example.test/a", status_code=200, content_type="text/html", body=body.encode())
    page_row = Page(id=uuid.uuid4(), audit_id=AUDIT_ID, url="http://example.test/a", depth=1, is_indexable=True)
    assert "blocked-page" not in {i.type for i in page_issues(page_row, data, result, CheckSettings())}
