"""The bot pass, a stage of finalize (audits.pipeline.bots): robots.txt per crawler and folder, llms.txt read and
its links checked, the sample fetched as a desktop and a mobile browser, Googlebot smartphone, Bingbot and GPTBot.
Real crawls of sites served on 127.0.0.1 that answer by user agent; a clean twin gets none of the bot issues."""

import pytest

from audits.checks.bots import BOT_SITE_TYPES
from audits.models import AgentFetch, Audit, Issue
from audits.pipeline.bots import bots_judge
from audits.pipeline.inline import pipeline_crawl_inline, pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes
from tests.support.sites.bots import BLOG_PAGE, DOCS_PAGE, GONE_LINK, GPTBOT_TITLE, PRIVATE_PAGE, bot_routes

pytestmark = pytest.mark.django_db(transaction=True)


def _crawl(site) -> Audit:
    project = ProjectFactory(base_url=site.url + "/")
    audit = audit_start(project=project, start_url=site.url + "/", max_pages=20, dispatch=False)
    assert pipeline_crawl_inline(audit.id)
    audit.refresh_from_db()
    return audit


def _issues(audit) -> dict:
    return {(i.type, i.details.get("agent") or i.details.get("crawler") or i.page_url): i for i in
            Issue.objects.filter(audit=audit, type__in=BOT_SITE_TYPES)}  # fmt: skip


def _row(table: dict, crawler: str) -> dict:
    return next(r for r in table["rows"] if r["crawler"] == crawler)


def _states(row: dict) -> dict:
    return {column: cell["state"] for column, cell in row["cells"].items()}


def test_robots_groups_a_403_for_googlebot_and_another_title_for_gptbot_are_reported_exactly():
    """Also served: Bingbot redirected home from the blog post, GPTBot refused the private report."""
    with serve_routes(bot_routes(planted=True)) as site:
        audit = _crawl(site)
        bots_judge(audit)
        bots_judge(audit)  # idempotent: the same rows again
    audit.refresh_from_db()
    table = audit.bot_access["robots"]
    assert table["columns"] == ["/", "/blog/", "/docs/", "/private/"]
    google, gpt, ccbot, bing = (_row(table, name) for name in ("Googlebot", "GPTBot", "CCBot", "Bingbot"))
    assert google["group"] == "User-agent: Googlebot" and google["kind"] == "search"
    assert _states(google) == {"/": "allowed", "/blog/": "allowed", "/docs/": "allowed", "/private/": "blocked"}
    assert _row(table, "Googlebot-Image")["group"] == "User-agent: Googlebot"  # falls back to Googlebot's group
    assert gpt["group"] == "User-agent: GPTBot" and gpt["kind"] == "ai"
    assert set(_states(gpt).values()) == {"blocked"}
    assert ccbot["group"] == "User-agent: CCBot" and set(_states(ccbot).values()) == {"allowed"}
    assert bing["group"] == "User-agent: *" and set(_states(bing).values()) == {"allowed"}

    found = _issues(audit)
    base = site.url
    assert set(found) == {
        ("search-bot-blocked-robots", "Googlebot"),
        ("search-bot-blocked-robots", "Googlebot-Image"),
        ("ai-bots-blocked-robots", base + "/robots.txt"),
        ("llms-txt-invalid", base + "/llms.txt"),
        ("llms-txt-broken-link", base + "/llms.txt"),
        ("bot-blocked", "Googlebot smartphone"),
        ("bot-cloaking", "GPTBot"),
        ("bot-served-different-status-or-redirect", "Bingbot"),
        ("ai-bot-blocked-by-server", "GPTBot"),
    }
    blocked = found[("search-bot-blocked-robots", "Googlebot")]
    assert blocked.severity == "critical"
    assert blocked.details["group"] == "User-agent: Googlebot"
    assert blocked.details["blocked"] == ["/private/ (2 of 2 URLs)"]  # the folder and its crawled page
    ai = found[("ai-bots-blocked-robots", base + "/robots.txt")]
    assert ai.severity == "info"
    assert [(c["crawler"], c["group"]) for c in ai.details["crawlers"]] == [("GPTBot", "User-agent: GPTBot")]
    assert ai.details["crawlers"][0]["blocked"].startswith("/ (1 of 1 URLs)")

    refused = found[("bot-blocked", "Googlebot smartphone")]
    assert (refused.severity, refused.page_url, refused.page.url) == ("critical", base + BLOG_PAGE, base + BLOG_PAGE)
    assert (refused.details["status_code"], refused.details["browser_status_code"]) == (403, 200)
    assert refused.details["reason"] == "HTTP 403"
    assert refused.details["browser"] == "Browser (mobile Chrome)"  # Googlebot smartphone beside a phone
    redirected = found[("bot-served-different-status-or-redirect", "Bingbot")]
    assert (redirected.severity, redirected.page_url) == ("warning", base + BLOG_PAGE)
    assert (redirected.details["final_url"], redirected.details["browser_final_url"]) == (base + "/", base + BLOG_PAGE)
    ai_refused = found[("ai-bot-blocked-by-server", "GPTBot")]
    assert (ai_refused.severity, ai_refused.page_url) == ("info", base + PRIVATE_PAGE)
    assert (ai_refused.details["status_code"], ai_refused.details["browser_status_code"]) == (403, 200)
    cloaked = found[("bot-cloaking", "GPTBot")]
    assert cloaked.page_url == base + DOCS_PAGE
    assert cloaked.details["differences"] == [
        {"field": "Title", "bot_value": GPTBOT_TITLE, "browser_value": "Test page guide"}
    ]

    invalid = found[("llms-txt-invalid", base + "/llms.txt")]
    assert invalid.details["problems"][0].startswith("line 1: the file must start with an H1 title")
    assert any("line 6 in section 'Docs' is not a list item" in p for p in invalid.details["problems"])
    broken = found[("llms-txt-broken-link", base + "/llms.txt")]
    assert (broken.details["link_url"], broken.details["status_code"]) == (base + GONE_LINK, 404)

    fetches = AgentFetch.objects.filter(audit=audit)
    assert fetches.count() == 4 * 5  # the start page and one page per template, as five agents
    googlebot = fetches.get(url=base + BLOG_PAGE, agent="googlebot-smartphone")
    assert (googlebot.status_code, googlebot.title) == (403, "Forbidden")
    browser = fetches.get(url=base + DOCS_PAGE, agent="browser")
    assert (browser.status_code, browser.title, browser.final_url) == (200, "Test page guide", base + DOCS_PAGE)
    assert browser.main_words > 0 and browser.main_text_hash
    assert fetches.get(url=base + PRIVATE_PAGE, agent="gptbot").status_code == 403  # its robots.txt block apart


def test_the_clean_twin_gets_no_bot_issue_and_a_valid_llms_txt():
    with serve_routes(bot_routes(planted=False)) as site:
        audit = _crawl(site)
        bots_judge(audit)
    audit.refresh_from_db()
    assert _issues(audit) == {}
    llms = audit.bot_access["llms_txt"]
    assert (llms["present"], llms["valid"], llms["title"]) == (True, True, "Test site for bots")
    assert llms["summary"] == "A small site the bot tests serve."
    assert [s["name"] for s in llms["sections"]] == ["Docs", "Optional"]
    assert {link["outcome"] for link in llms["links"]} == {"ok"}
    assert all(set(_states(row).values()) == {"allowed"} for row in audit.bot_access["robots"]["rows"])
    assert AgentFetch.objects.filter(audit=audit).count() == 4 * 5


def test_finalize_runs_the_bot_pass_and_a_site_without_llms_txt_is_told():
    routes = bot_routes(planted=False)
    del routes["/llms.txt"]
    with serve_routes(routes) as site:
        project = ProjectFactory(base_url=site.url + "/", bot_sample_max=1)
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=20, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    assert set(_issues(audit)) == {("llms-txt-missing", site.url + "/llms.txt")}
    assert audit.bot_access["sample"]["urls"] == [site.url + "/"]  # the project's sample size
    assert AgentFetch.objects.filter(audit=audit).count() == 5
