"""The page-resource checks (audits.checks.resources): what the resource pass's answers make, per page and resource,
on stored pages; the evidence of their rows, grouped by resource with the pages that load it."""

import pytest

from audits.checks import resources
from audits.checks.registry import CheckSettings, spec_for
from audits.checks.resources import RESOURCE_SITE_TYPES, resource_broken, resource_site_issues
from audits.evidence import LINK_TYPES, evidence_columns, evidence_note, evidence_rows, evidence_targets
from audits.models import Issue, Page
from tests.factories import AuditFactory, PageFactory

pytestmark = pytest.mark.django_db

SITE = "https://example.com"
CDN = "https://cdn.example.net"
ANSWERS = {
    f"{SITE}/js/gone.js": {"status_code": 404, "error": ""},
    f"{SITE}/js/ok.js": {"status_code": 200, "error": ""},
    f"{CDN}/mathjax/tex.js": {"status_code": None, "error": "dns"},
    f"{SITE}/css/down.css": {"status_code": 503, "error": ""},
    f"{SITE}/css/fonts.css": {"status_code": 200, "error": ""},
    f"{SITE}/css/ok.css": {"status_code": 200, "error": ""},
    f"{SITE}/fonts/gone.woff2": {"status_code": 410, "error": ""},
    f"{SITE}/fonts/ok.woff2": {"status_code": 200, "error": ""},
    f"{SITE}/favicon.ico": {"status_code": 404, "error": ""},
    f"{SITE}/icon.png": {"status_code": 200, "error": ""},
    f"{SITE}/moved.js": {"status_code": 301, "error": ""},
    f"{SITE}/limited.js": {"status_code": 429, "error": ""},
    f"{CDN}/walled.js": {"status_code": 999, "error": ""},
    "http://10.0.0.5/internal.js": {"status_code": None, "error": "private_address"},
}
FONTS_OF = {
    f"{SITE}/css/fonts.css": [f"{SITE}/fonts/gone.woff2", f"{SITE}/fonts/ok.woff2"],
    f"{SITE}/css/ok.css": [f"{SITE}/fonts/ok.woff2"],
}


@pytest.fixture
def audit():
    return AuditFactory(start_url=SITE + "/", site_url=SITE + "/")


def _page(audit, path: str, resources: list[tuple[str, str]]) -> Page:
    return PageFactory(audit=audit, url=SITE + path, resource_urls=[[kind, url] for kind, url in resources])


def _judge(audit, settings: CheckSettings | None = None) -> list[Issue]:
    pages = Page.objects.filter(audit=audit)
    issues = resource_site_issues(audit.id, pages, ANSWERS, FONTS_OF, settings or CheckSettings())
    Issue.objects.bulk_create(issues)
    return issues


def _found(issues) -> set[tuple]:
    return {
        (i.type, i.page_url.removeprefix(SITE), i.details["target_url"], i.details["status_code"],
         i.details["fetch_error"])
        for i in issues
    }  # fmt: skip


def test_a_broken_resource_is_reported_on_each_page_loading_it_and_the_twin_gets_nothing(audit):
    planted = [
        ("script", f"{SITE}/js/gone.js"), ("script", f"{CDN}/mathjax/tex.js"), ("stylesheet", f"{SITE}/css/down.css"),
        ("stylesheet", f"{SITE}/css/fonts.css"), ("icon", f"{SITE}/favicon.ico"),
    ]  # fmt: skip
    _page(audit, "/planted", planted)
    _page(audit, "/also", [("script", f"{SITE}/js/gone.js"), ("stylesheet", f"{SITE}/css/fonts.css")])
    twin = [
        ("script", f"{SITE}/js/ok.js"), ("stylesheet", f"{SITE}/css/ok.css"), ("icon", f"{SITE}/icon.png"),
        ("font", f"{SITE}/fonts/ok.woff2"), ("script", f"{SITE}/moved.js"), ("script", f"{SITE}/limited.js"),
        ("script", f"{CDN}/walled.js"), ("script", "http://10.0.0.5/internal.js"),
        ("script", f"{SITE}/js/never-asked.js"),
    ]  # fmt: skip
    _page(audit, "/twin", twin)
    issues = _judge(audit)
    assert _found(issues) == {
        ("broken-script", "/planted", f"{SITE}/js/gone.js", 404, ""),
        ("broken-script", "/planted", f"{CDN}/mathjax/tex.js", None, "dns"),
        ("broken-stylesheet", "/planted", f"{SITE}/css/down.css", 503, ""),
        ("broken-font", "/planted", f"{SITE}/fonts/gone.woff2", 410, ""),
        ("broken-icon", "/planted", f"{SITE}/favicon.ico", 404, ""),
        ("broken-script", "/also", f"{SITE}/js/gone.js", 404, ""),
        ("broken-font", "/also", f"{SITE}/fonts/gone.woff2", 410, ""),
    }
    by_type = {(i.type, i.page_url): i for i in issues}
    font = by_type[("broken-font", SITE + "/planted")]
    assert (font.details["kind"], font.details["stylesheet"]) == ("font", f"{SITE}/css/fonts.css")
    assert {i.severity for i in issues if i.type == "broken-icon"} == {"info"}
    assert {i.severity for i in issues if i.type != "broken-icon"} == {"warning"}


def test_a_preloaded_font_is_judged_and_a_font_of_two_stylesheets_is_one_issue(audit):
    _page(audit, "/fonts", [("font", f"{SITE}/fonts/gone.woff2"), ("stylesheet", f"{SITE}/css/fonts.css")])
    assert _found(_judge(audit)) == {("broken-font", "/fonts", f"{SITE}/fonts/gone.woff2", 410, "")}


def test_what_says_nothing_of_the_file_is_not_broken():
    assert not resource_broken(None)  # not asked
    assert not resource_broken({"status_code": 429, "error": ""})
    assert not resource_broken({"status_code": 999, "error": ""})
    assert not resource_broken({"status_code": None, "error": "private_address"})
    assert not resource_broken({"status_code": 304, "error": ""})
    assert resource_broken({"status_code": 403, "error": ""})
    assert resource_broken({"status_code": 200, "error": "timeout"})  # the body was cut by the deadline
    assert resource_broken({"status_code": None, "error": "tls"})


def test_a_disabled_type_is_not_reported(audit):
    _page(audit, "/planted", [("script", f"{SITE}/js/gone.js"), ("icon", f"{SITE}/favicon.ico")])
    assert {i.type for i in _judge(audit, CheckSettings(disabled={"broken-icon"}))} == {"broken-script"}


def test_each_type_is_capped_and_a_marker_says_how_many_more(audit, monkeypatch):
    monkeypatch.setattr(resources, "RESOURCE_ISSUES_MAX", 2)
    for n in range(5):
        _page(audit, f"/p{n}", [("script", f"{SITE}/js/gone.js")])
    issues = _judge(audit)
    listed = [i for i in issues if i.page_url]
    marker = next(i for i in issues if not i.page_url)
    assert len(listed) == 2 and marker.details["left_out"] == 3 and marker.severity == "info"
    assert evidence_note(audit=audit, issue_type="broken-script") == marker.details["message"]
    assert len(list(evidence_rows(audit=audit, issue_type="broken-script"))) == 2  # the marker is not a row


def test_the_evidence_groups_by_resource_with_the_pages_that_load_it(audit):
    for path in ("/a", "/b", "/c"):
        _page(audit, path, [("script", f"{CDN}/mathjax/tex.js"), ("icon", f"{SITE}/favicon.ico")])
    _page(audit, "/d", [("script", f"{SITE}/js/gone.js")])
    _judge(audit)
    assert set(RESOURCE_SITE_TYPES) <= set(LINK_TYPES)
    assert [key for key, _ in evidence_columns("broken-font")] == [
        "page_url", "target_url", "kind", "status_code", "fetch_error", "stylesheet"
    ]  # fmt: skip
    rows = list(evidence_rows(audit=audit, issue_type="broken-script"))
    assert rows[0] == {
        "page_url": SITE + "/a", "target_url": f"{CDN}/mathjax/tex.js", "kind": "script", "status_code": "",
        "fetch_error": "dns",
    }  # fmt: skip
    groups = [(g["target_url"], g["pages"], g["status_code"], g["fetch_error"]) for g in
              evidence_targets(audit=audit, issue_type="broken-script")]  # fmt: skip
    assert groups == [(f"{CDN}/mathjax/tex.js", 3, None, "dns"), (f"{SITE}/js/gone.js", 1, 404, "")]


def test_the_catalogue_entries():
    for issue_type in RESOURCE_SITE_TYPES:
        spec = spec_for(issue_type)
        assert (spec.scope, spec.category) == ("site", "links")
        assert spec.explanation and spec.how_to_fix
