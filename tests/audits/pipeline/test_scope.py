"""Include/exclude patterns run on RE2: linear time on any URL, same search semantics as re for ordinary
patterns, a clear refusal for what RE2 cannot run, and stored patterns RE2 refuses never crash an audit."""

import re
import time
from http.server import BaseHTTPRequestHandler

import pytest

from audits.limits import MAX_PAGES_CEILING, PATTERN_CAP_OFF
from audits.models import Audit, Page, Project
from audits.patterns import compile_pattern
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.scope import CrawlScope
from audits.pipeline.start import audit_start
from tests.factories import AuditFactory, ProjectFactory
from tests.support.sites import serve_handler

CATASTROPHIC = r"(a+)+$"  # exponential backtracking in re on "aaaa…!"


def test_a_catastrophic_pattern_runs_in_linear_time_on_a_long_url():
    pattern = compile_pattern(CATASTROPHIC)
    url = "https://example.com/" + "a" * 50_000 + "!"
    started = time.perf_counter()
    assert pattern.search(url) is None  # Python's re would not return in our lifetime here
    print(f"RE2 on a {len(url)}-character URL: {(time.perf_counter() - started) * 1000:.2f} ms")
    assert pattern.search("https://example.com/aaaa") is not None


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"/(\w+)/\1", "backreference"),
        (r"(?P<x>a)(?P=x)", "backreference"),
        (r"/shop/(?!sale)", "lookahead or lookbehind"),
        (r"(?<=/)admin", "lookahead or lookbehind"),
        (r"/blog/[", "not a valid regular expression"),
        (r"a{5000}", "not a valid regular expression"),
    ],
)
def test_what_re2_cannot_run_is_refused_with_a_sentence(pattern, words):
    with pytest.raises(ValueError) as refused:
        compile_pattern(pattern)
    assert words in str(refused.value)
    assert pattern[:20] in str(refused.value)  # says which pattern


def test_ordinary_patterns_match_what_re_search_matched():
    patterns = [
        r"/blog/",
        r"\.pdf$",
        r"^https://example\.com/shop/\d+",
        r"(?i)/ADMIN",
        r"[?&]page=\d+",
        r"/tag/[^/]+/$",
        r"\bcart\b",
        "logout",
        r"^http://",
        r"/p[0-4]\?",
        r"/(en|de)/(?:news|blog)/\d{4}/",
        r"\?$",
    ]
    urls = [
        "https://example.com/",
        "https://example.com/blog/post-1",
        "https://example.com/files/report.PDF",
        "https://example.com/files/report.pdf",
        "https://example.com/shop/123/item",
        "https://example.com/Admin/users",
        "https://example.com/list?page=4&sort=a",
        "https://example.com/tag/seo/",
        "https://example.com/cart/",
        "https://example.com/shopping-cartoon",
        "https://example.com/logout?next=/",
        "http://example.com/p3?id=3",
        "https://example.com/de/news/2024/05/",
        "https://example.com/search?",
    ]
    for pattern in patterns:
        compiled, reference = compile_pattern(pattern), re.compile(pattern)
        for url in urls:
            assert bool(compiled.search(url)) == bool(reference.search(url)), (pattern, url)


@pytest.mark.django_db
def test_stored_patterns_re2_refuses_are_skipped_with_a_note_not_a_crash():
    audit = AuditFactory(
        config={
            "max_pages": 10,
            "include_patterns": [r"/blog/", r"/(?=x)"],
            "exclude_patterns": [r"/(\w+)/\1", r"/private/"],
        }
    )
    scope = CrawlScope.for_audit(audit)
    base = audit.site_url.rstrip("/")
    assert scope.allows(base + "/blog/1")
    assert not scope.allows(base + "/blog/private/1")
    assert not scope.allows(base + "/other")
    assert scope.allows(base + "/blog/blog/1")  # the refused exclude rule is not applied
    assert len(scope.skipped_patterns) == 2
    assert scope.skipped_patterns[0].startswith("include pattern skipped:")
    assert "backreference" in scope.skipped_patterns[1]


class LongLinks(BaseHTTPRequestHandler):
    """/ links to pages a pattern keeps or drops, and to a long 'aaaa…!' path that makes (a+)+$ explode in re."""

    protocol_version = "HTTP/1.1"
    LONG = "/" + "a" * 1_500 + "!"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/":
            links = ["/keep/1", "/keep/2", "/drop/1", "/drop/2", self.LONG]
            body = "".join(f'<a href="{link}">x</a>' for link in links)
        else:
            body = "leaf"
        data = f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>".encode()
        self.send_response(200 if self.path != "/robots.txt" else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.django_db(transaction=True)
def test_a_crawl_with_a_catastrophic_and_a_stale_pattern_completes():
    with serve_handler(LongLinks) as (_, base):
        project = ProjectFactory(base_url=base + "/", exclude_patterns=[r"/drop/", CATASTROPHIC])
        audit = audit_start(project=project, start_url=base + "/", max_pages=20, dispatch=False)
        # As if snapshotted before patterns were checked for RE2: the crawl must go on without it.
        config = {**audit.config, "exclude_patterns": [*audit.config["exclude_patterns"], r"/(keep)/\1"]}
        Audit.objects.filter(id=audit.id).update(config=config)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    urls = set(Page.objects.filter(audit=audit).values_list("url", flat=True))
    assert urls == {base + "/", base + "/keep/1", base + "/keep/2", base + LongLinks.LONG}
    assert len(audit.discovery["skipped_patterns"]) == 1
    assert "backreference" in audit.discovery["skipped_patterns"][0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("stored", "cap"),
    [(None, None), (PATTERN_CAP_OFF, None), (PATTERN_CAP_OFF + 1, None), (2_000, 2_000), (1, 1)],
)
def test_the_per_shape_cap_at_its_ceiling_is_off_and_counts_nothing(stored, cap):
    # Its top value is the default, "no cap": a chunk then counts no shape's queued URLs at all. It is not the page
    # ceiling, which rose past it: projects that store 100,000 still mean no cap.
    assert PATTERN_CAP_OFF == Project._meta.get_field("max_urls_per_pattern").default < MAX_PAGES_CEILING
    audit = AuditFactory(config={"max_pages": 10, "max_urls_per_pattern": stored})
    assert CrawlScope.for_audit(audit).max_urls_per_pattern == cap


@pytest.mark.django_db
def test_a_remembered_verdict_still_judges_the_depth_of_each_call_and_a_full_memory_starts_over(monkeypatch):
    audit = AuditFactory(config={"max_pages": 10, "max_depth": 2, "exclude_patterns": [r"/private/"]})
    scope = CrawlScope.for_audit(audit)
    base = audit.site_url.rstrip("/")
    page, private = base + "/docs/a", base + "/private/b"
    assert scope.allows(page, 1) and scope.allows(page, 2)
    assert not scope.allows(page, 3)  # remembered as allowed, but past max_depth
    assert scope.allows(page, None) and scope.allows(page, 0)
    assert not scope.allows(private, 1) and not scope.allows(private, 1)
    assert not scope.allows("http://elsewhere.example/docs/a", 1)
    monkeypatch.setattr("audits.pipeline.scope.SCOPE_VERDICTS_KEPT", 3)
    for n in range(10):
        assert scope.allows(f"{base}/docs/{n}", 1)
    assert len(scope._verdicts) <= 3
    assert not scope.allows(private, 1)
