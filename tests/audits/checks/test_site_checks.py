"""Site checks on constructed crawl data (Page, LinkEdge and Frontier rows) on PostgreSQL."""

import json

import pytest
from django.db import connection

from audits.checks import health_score
from audits.checks.site import LINK_ISSUES_MAX, run_site_checks
from audits.models import Issue, Page, page_id_for
from scratchpad.models import Frontier, LinkEdge
from tests.factories import AuditFactory, ProjectFactory

pytestmark = pytest.mark.django_db

B = "http://site.test"


@pytest.fixture
def audit():
    assert connection.vendor == "postgresql"
    return AuditFactory(project=ProjectFactory(base_url=B + "/"), discovery={"sitemaps": [B + "/sitemap.xml"]})


def mkpage(audit, path, status=200, **fields) -> Page:
    url = path if path.startswith("http") else B + path
    ok = status is not None and 200 <= status < 300
    values = {
        "fetch_class": Page.FetchClass.ERROR if status is None else Page.FetchClass.OK,
        "content_type": "text/html",
        "is_indexable": ok,
        "depth": 1,
        "title": f"Title of {path}",
        "text_hash": f"hash-{path}",
        "main_text_hash": f"hash-{path}",
    }
    values.update(fields)
    return Page.objects.create(id=page_id_for(audit.id, url), audit=audit, url=url, status_code=status, **values)


def link(audit, source: Page, target: str, anchor="a link", internal=True):
    url = target if target.startswith("http") else B + target
    LinkEdge.objects.create(audit=audit, source_page=source, target_url=url, anchor_text=anchor, internal=internal)


def frontier(audit, path, state="done", depth=1, in_sitemap=False):
    url = path if path.startswith("http") else B + path
    Frontier.objects.create(audit=audit, url=url, state=state, depth=depth, in_sitemap=in_sitemap, source="link")


def issues(audit, issue_type):
    return list(Issue.objects.filter(audit=audit, type=issue_type).order_by("page_url", "id"))


def by_url(audit, issue_type) -> dict:
    return {i.page_url.removeprefix(B): i for i in issues(audit, issue_type)}


def snapshot(audit):
    return sorted(
        (str(i.id), i.type, i.severity, str(i.page_id), i.page_url, json.dumps(i.details, sort_keys=True))
        for i in Issue.objects.filter(audit=audit)
    )


# --- links -----------------------------------------------------------------------------------------


def test_broken_internal_links_one_issue_per_source_and_target(audit):
    home, a = mkpage(audit, "/"), mkpage(audit, "/a")
    mkpage(audit, "/missing", 404)
    mkpage(audit, "/gone", 410)
    mkpage(audit, "/server", 500)
    mkpage(audit, "/no-answer", None, fetch_error="ConnectionError: refused")
    mkpage(audit, "/forbidden", 403, fetch_class=Page.FetchClass.BLOCKED)
    mkpage(audit, "/busy", 429, fetch_class=Page.FetchClass.RATE_LIMITED)
    mkpage(audit, "/fine")
    for target in ("/missing", "/missing", "/gone", "/forbidden", "/busy", "/fine", "/not-crawled"):
        link(audit, home, target, anchor=f"to {target}")
    for target in ("/missing", "/server", "/no-answer"):
        link(audit, a, target)
    run_site_checks(audit)
    found = {
        (i.page_url.removeprefix(B), i.details["target_url"].removeprefix(B))
        for i in issues(audit, "broken-internal-link")
    }
    assert found == {("/", "/missing"), ("/", "/gone"), ("/a", "/missing"), ("/a", "/server"), ("/a", "/no-answer")}
    first = next(
        i
        for i in issues(audit, "broken-internal-link")
        if i.page_url == B + "/" and "missing" in i.details["target_url"]
    )
    assert first.details == {"target_url": B + "/missing", "status_code": 404, "links": 2, "anchor_text": "to /missing"}
    assert first.page_id == home.id and first.severity == "critical"
    no_answer = next(i for i in issues(audit, "broken-internal-link") if i.details["status_code"] is None)
    assert no_answer.details["fetch_error"] == "ConnectionError: refused"


def test_refused_pages_say_nothing_about_links_titles_or_canonicals(audit):
    home = mkpage(audit, "/", title="Just a moment...")
    challenge = mkpage(audit, "/challenge", 503, title="Just a moment...", is_indexable=False)
    soft_challenge = mkpage(audit, "/soft-challenge", 200, title="Just a moment...")
    for refused in (challenge, soft_challenge):
        Issue.objects.create(
            id=page_id_for(audit.id, refused.url), audit=audit, page=refused, page_url=refused.url,
            type="blocked-page", severity="critical",
        )  # fmt: skip
        link(audit, home, refused.url)
    mkpage(audit, "/c", canonical_url=B + "/challenge", is_indexable=False)
    run_site_checks(audit)
    assert not issues(audit, "broken-internal-link")
    assert not issues(audit, "duplicate-title")
    assert not issues(audit, "canonical-target-not-ok")


def test_broken_links_are_capped_and_the_cap_is_reported(audit):
    home = mkpage(audit, "/")
    total = LINK_ISSUES_MAX + 7
    Page.objects.bulk_create(
        [
            Page(id=page_id_for(audit.id, f"{B}/m{i}"), audit=audit, url=f"{B}/m{i}", status_code=404, fetch_class="ok")
            for i in range(total)
        ]
    )
    LinkEdge.objects.bulk_create(
        [LinkEdge(audit=audit, source_page=home, target_url=f"{B}/m{i}", anchor_text="x") for i in range(total)]
    )
    run_site_checks(audit)
    rows = issues(audit, "broken-internal-link")
    per_link = [i for i in rows if i.page_id is not None]
    (marker,) = [i for i in rows if i.page_id is None]
    assert len(per_link) == LINK_ISSUES_MAX
    assert marker.severity == "info"
    assert marker.details["left_out"] == 7 and marker.details["total"] == total and marker.details["capped"]


def test_internal_link_to_redirect(audit):
    home = mkpage(audit, "/")
    mkpage(audit, "/old", 301, redirect_url=B + "/new")
    mkpage(audit, "/new")
    link(audit, home, "/old")
    link(audit, home, "/new")
    run_site_checks(audit)
    (issue,) = issues(audit, "internal-link-to-redirect")
    assert issue.page_url == B + "/" and issue.details["target_url"] == B + "/old"
    assert issue.details["redirect_url"] == B + "/new" and issue.details["status_code"] == 301


# --- redirects -------------------------------------------------------------------------------------


def test_redirect_chains_reported_once_at_their_head(audit):
    mkpage(audit, "/r1", 301, redirect_url=B + "/r2")
    mkpage(audit, "/r2", 302, redirect_url=B + "/r3")
    mkpage(audit, "/r3", 307, redirect_url=B + "/final")
    mkpage(audit, "/final")
    mkpage(audit, "/moved", 301, redirect_url=B + "/final")  # one hop: fine
    mkpage(audit, "/u1", 301, redirect_url=B + "/u2")
    mkpage(audit, "/u2", 301, redirect_url="https://elsewhere.test/")  # ends outside the crawl
    run_site_checks(audit)
    chains = by_url(audit, "redirect-chain")
    assert set(chains) == {"/r1", "/u1"}
    assert chains["/r1"].details == {
        "hops": [
            {"url": B + "/r1", "status_code": 301},
            {"url": B + "/r2", "status_code": 302},
            {"url": B + "/r3", "status_code": 307},
        ],
        "hops_count": 3,
        "final_url": B + "/final",
        "final_status_code": 200,
        "followed_to_limit": False,
    }
    assert chains["/u1"].details["final_url"] == "https://elsewhere.test/"
    assert chains["/u1"].details["final_status_code"] is None
    assert not issues(audit, "redirect-loop")


def test_redirect_loops_reported_once(audit):
    mkpage(audit, "/loop-b", 301, redirect_url=B + "/loop-a")
    mkpage(audit, "/loop-a", 301, redirect_url=B + "/loop-b")
    mkpage(audit, "/into", 301, redirect_url=B + "/x")
    mkpage(audit, "/x", 301, redirect_url=B + "/y")
    mkpage(audit, "/y", 301, redirect_url=B + "/x")
    mkpage(audit, "/self", 302, redirect_url=B + "/self")
    run_site_checks(audit)
    loops = by_url(audit, "redirect-loop")
    assert set(loops) == {"/loop-a", "/into", "/self"}
    assert loops["/into"].details["loops_back_to"] == B + "/x"
    assert [h["url"] for h in loops["/into"].details["hops"]] == [B + "/into", B + "/x", B + "/y"]
    assert loops["/loop-a"].severity == "critical"
    assert not issues(audit, "redirect-chain")


# --- duplicates ------------------------------------------------------------------------------------


def test_duplicate_titles_name_the_group_size_and_three_others(audit):
    for n in range(5):
        mkpage(audit, f"/t{n}", title="Same title")
    mkpage(audit, "/t-noindex", title="Same title", is_indexable=False)
    mkpage(audit, "/pair-1", title="Pair title")
    mkpage(audit, "/pair-2", title="Pair title")
    mkpage(audit, "/untitled-1", title="")
    mkpage(audit, "/untitled-2", title="")
    run_site_checks(audit)
    found = by_url(audit, "duplicate-title")
    assert set(found) == {"/t0", "/t1", "/t2", "/t3", "/t4", "/pair-1", "/pair-2"}
    assert found["/t0"].details == {
        "group_size": 5,
        "other_urls": [B + "/t1", B + "/t2", B + "/t3"],
        "title": "Same title",
    }
    assert found["/t2"].details["other_urls"] == [B + "/t0", B + "/t1", B + "/t3"]
    assert found["/t4"].details["other_urls"] == [B + "/t0", B + "/t1", B + "/t2"]
    assert found["/pair-2"].details["other_urls"] == [B + "/pair-1"]


def test_duplicate_descriptions_and_content(audit):
    mkpage(audit, "/a", meta_description="Shared words", main_text_hash="h1")
    mkpage(audit, "/b", meta_description="Shared words", main_text_hash="h1")
    mkpage(audit, "/c", meta_description=None, main_text_hash="h2")
    mkpage(audit, "/d", meta_description=None, main_text_hash="")
    mkpage(audit, "/e", meta_description="", main_text_hash="")
    run_site_checks(audit)
    assert set(by_url(audit, "duplicate-meta-description")) == {"/a", "/b"}
    assert set(by_url(audit, "duplicate-content")) == {"/a", "/b"}
    assert by_url(audit, "duplicate-content")["/a"].details["group_size"] == 2


# --- orphans and the frontier ----------------------------------------------------------------------


def _orphan_site(audit):
    home = mkpage(audit, "/", depth=0)
    frontier(audit, "/", depth=0, in_sitemap=True)
    for path in ("/orphan", "/self-linked", "/via-redirect", "/old", "/linked", "/reached"):
        mkpage(audit, path, depth=None, in_sitemap=True)
        frontier(audit, path, depth=None, in_sitemap=True)
    Page.objects.filter(url=B + "/old").update(status_code=301, redirect_url=B + "/via-redirect")
    link(audit, Page.objects.get(url=B + "/self-linked"), "/self-linked")
    link(audit, home, "/linked")
    Frontier.objects.filter(url=B + "/reached").update(depth=2)  # a canonical/hreflang of a linked page
    return home


def test_orphan_pages_when_the_crawl_finished(audit):
    _orphan_site(audit)
    run_site_checks(audit)
    assert set(by_url(audit, "orphan-page")) == {"/orphan", "/self-linked", "/old"}
    assert not issues(audit, "max-pages-reached")


def test_no_orphans_but_max_pages_when_urls_are_pending(audit):
    _orphan_site(audit)
    frontier(audit, "/never-crawled", state="pending", depth=3)
    frontier(audit, "/lease-expired", state="leased", depth=3)
    run_site_checks(audit)
    assert not issues(audit, "orphan-page")
    (limit,) = issues(audit, "max-pages-reached")
    assert limit.page_id is None and limit.page_url == ""
    assert limit.details == {"max_pages": audit.max_pages, "pages_crawled": 7, "urls_pending": 2}


def test_rate_limited_stop_is_not_a_page_limit(audit):
    _orphan_site(audit)
    frontier(audit, "/never-crawled", state="pending", depth=3)
    audit.discovery = {**audit.discovery, "rate_limited_stop": {"status_code": 429, "url": B + "/x"}}
    audit.save()
    run_site_checks(audit)
    (stop,) = issues(audit, "crawl-rate-limited")
    assert stop.details == {"status_code": 429, "url": B + "/x"}
    assert not issues(audit, "max-pages-reached") and not issues(audit, "orphan-page")


def test_rerun_gives_identical_rows_also_after_the_frontier_is_purged(audit):
    home = _orphan_site(audit)
    mkpage(audit, "/missing", 404)
    link(audit, home, "/missing")
    mkpage(audit, "/r1", 301, redirect_url=B + "/r2")
    mkpage(audit, "/r2", 301, redirect_url=B + "/")
    run_site_checks(audit)
    first = snapshot(audit)
    assert {row[1] for row in first} >= {"orphan-page", "broken-internal-link", "redirect-chain"}
    run_site_checks(audit)
    assert snapshot(audit) == first
    Frontier.objects.filter(audit=audit).delete()
    run_site_checks(audit)
    assert snapshot(audit) == first


# --- canonicals, hreflang, sitemap -----------------------------------------------------------------


def test_canonical_target_not_ok(audit):
    mkpage(audit, "/404", 404)
    mkpage(audit, "/redirect", 301, redirect_url=B + "/ok")
    mkpage(audit, "/ok")
    mkpage(audit, "/blocked", 403, fetch_class=Page.FetchClass.BLOCKED)
    for name, target in [("c1", "/404"), ("c2", "/redirect"), ("c3", "/ok"), ("c4", "/blocked"), ("c5", "/nowhere")]:
        mkpage(audit, f"/{name}", canonical_url=B + target, is_indexable=False)
    mkpage(audit, "/c6", canonical_url=B + "/c6")
    run_site_checks(audit)
    found = by_url(audit, "canonical-target-not-ok")
    assert set(found) == {"/c1", "/c2"}
    assert found["/c1"].details == {"canonical_url": B + "/404", "status_code": 404}
    assert found["/c2"].details == {"canonical_url": B + "/redirect", "status_code": 301, "redirect_url": B + "/ok"}


def test_hreflang_missing_return_link(audit):
    def hreflang(*pairs):
        return [[lang, B + path] for lang, path in pairs]

    mkpage(audit, "/en", hreflang=hreflang(("en", "/en"), ("de", "/de"), ("x-default", "/home")))
    mkpage(audit, "/de", hreflang=hreflang(("de", "/de")))
    mkpage(audit, "/home")
    mkpage(audit, "/fr", hreflang=hreflang(("fr", "/fr"), ("es", "/es")))
    mkpage(audit, "/es", hreflang=hreflang(("es", "/es"), ("fr", "/fr")))
    mkpage(audit, "/it", hreflang=hreflang(("it", "/it"), ("pt", "/moved"), ("nl", "/not-crawled")))
    mkpage(audit, "/moved", 301, redirect_url=B + "/pt")
    run_site_checks(audit)
    found = by_url(audit, "hreflang-missing-return-link")
    assert set(found) == {"/en"}
    assert found["/en"].details == {
        "missing_count": 2,
        "missing": [{"hreflang": "de", "href": B + "/de"}, {"hreflang": "x-default", "href": B + "/home"}],
    }


def test_sitemap_url_not_indexable(audit):
    mkpage(audit, "/ok", in_sitemap=True)
    mkpage(audit, "/404", 404, in_sitemap=True)
    mkpage(audit, "/noindex", in_sitemap=True, meta_robots="noindex, follow", is_indexable=False)
    mkpage(audit, "/header-noindex", in_sitemap=True, x_robots_tag="NoIndex", is_indexable=False)
    mkpage(audit, "/otherbot", in_sitemap=True, x_robots_tag="otherbot: noindex")
    mkpage(audit, "/canonicalized", in_sitemap=True, canonical_url=B + "/ok", is_indexable=False)
    mkpage(audit, "/redirect", 301, in_sitemap=True, redirect_url=B + "/ok")
    mkpage(audit, "/blocked", 403, in_sitemap=True, fetch_class=Page.FetchClass.BLOCKED)
    mkpage(audit, "/file.pdf", in_sitemap=True, content_type="application/pdf", is_indexable=False)
    mkpage(audit, "/not-in-sitemap", 404)
    run_site_checks(audit)
    found = {url: i.details["reasons"] for url, i in by_url(audit, "sitemap-url-not-indexable").items()}
    assert found == {
        "/404": ["non-2xx status"],
        "/noindex": ["noindex"],
        "/header-noindex": ["noindex"],
        "/canonicalized": ["canonicalized"],
        "/redirect": ["redirect"],
    }


@pytest.mark.parametrize(
    ("discovery", "fires"),
    [
        ({"sitemaps": [], "sitemap_urls": 0}, True),
        ({"sitemaps": [B + "/sitemap.xml"], "sitemap_urls": 12, "sitemap_errors": []}, False),
        ({"sitemaps": [B + "/s.xml"], "sitemap_urls": 0, "sitemap_errors": [B + "/s.xml: HTTP 404"]}, True),
        ({"sitemaps": [B + "/s.xml"], "sitemap_urls": 0, "sitemap_errors": []}, False),  # an empty sitemap exists
        ({}, False),  # discovery never ran
    ],
)
def test_sitemap_missing(audit, discovery, fires):
    audit.discovery = discovery
    audit.save()
    run_site_checks(audit)
    rows = issues(audit, "sitemap-missing")
    assert bool(rows) == fires
    if fires:
        assert rows[0].page_id is None and rows[0].severity == "info"


@pytest.mark.parametrize(
    ("robots", "status", "bad"),
    [
        ("User-agent: *\nDisallow: /private\n# comment\n\nSitemap: https://x/s.xml\n", 200, []),
        ("User-agent: *\nthis line is junk\nDisalow /x\nCrawl-delay: 2\n", 200, ["this line is junk", "Disalow /x"]),
        ("<html><body>not found</body></html>", 404, []),
        (None, None, []),
    ],
)
def test_robots_txt_invalid(audit, robots, status, bad):
    audit.robots_txt, audit.robots_status = robots, status
    audit.save()
    run_site_checks(audit)
    rows = issues(audit, "robots-txt-invalid")
    assert [line for row in rows for line in row.details["lines"]] == bad
    if bad:
        assert rows[0].details["invalid_count"] == len(bad)


# --- settings and score ----------------------------------------------------------------------------


def test_project_overrides_disable_reseverity_and_rethreshold(audit):
    audit.config = {
        **audit.config,
        "checks": {
            "disabled": ["duplicate-title"],
            "severities": {"broken-internal-link": "warning"},
            "thresholds": {"redirect-chain": {"min_hops": 3}, "unknown-check": {"x": 1}},
        },
    }
    audit.save()
    home = mkpage(audit, "/", title="Same")
    mkpage(audit, "/b", title="Same")
    mkpage(audit, "/missing", 404)
    link(audit, home, "/missing")
    mkpage(audit, "/r1", 301, redirect_url=B + "/r2")
    mkpage(audit, "/r2", 301, redirect_url=B + "/b")
    run_site_checks(audit)
    assert not issues(audit, "duplicate-title")
    assert not issues(audit, "redirect-chain")
    assert [i.severity for i in issues(audit, "broken-internal-link")] == ["warning"]


def test_health_score_counts_every_severity_and_site_wide_findings(audit):
    assert health_score(audit.id) == (None, 0)
    pages = [mkpage(audit, f"/p{n}") for n in range(8)]
    Issue.objects.create(
        id=page_id_for(audit.id, "i1"), audit=audit, page=pages[0], type="missing-title", severity="critical"
    )
    Issue.objects.create(
        id=page_id_for(audit.id, "i2"), audit=audit, page=pages[0], type="broken-page", severity="critical"
    )
    Issue.objects.create(
        id=page_id_for(audit.id, "i3"), audit=audit, page=pages[1], type="missing-h1", severity="warning"
    )
    Issue.objects.create(
        id=page_id_for(audit.id, "i4"), audit=audit, page=None, type="redirect-loop", severity="critical"
    )
    # Two criticals on 1 of 8 pages (2 x 25 / 8), a warning on 1 of 8 (8 / 8) and a site-wide critical (25):
    # 100 - 6.25 - 1 - 25 = 67.75, rounded half up.
    assert health_score(audit.id) == (68, 8)
    other = AuditFactory()
    assert health_score(other.id) == (None, 0)
