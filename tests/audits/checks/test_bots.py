"""audits.checks.bots: the bot-access issues judged from what the bot pass stored (no network): each type's planted
case beside a clean twin, the cloaking threshold and the project's overrides."""

import uuid

import pytest

from audits.checks.bots import bot_site_issues
from audits.checks.registry import CheckSettings

AUDIT_ID = uuid.UUID("00000000-0000-0000-0000-000000000027")
SITE = "https://shop.test"


def _fetch(url, agent, *, status=200, final_url=None, title="Shop", canonical="", robots="", words=300, error=""):
    return {"url": SITE + url, "agent": agent, "status_code": status, "final_url": final_url or SITE + url,
            "title": title, "canonical_url": canonical, "robots": robots, "main_words": words,
            "error": error}  # fmt: skip


def _judge(fetches=(), *, robots=None, llms=None, compared=None, settings=None):
    access = {"robots": robots or {}, "llms_txt": llms or {}, "sample": {"compared": compared or {}}}
    issues = bot_site_issues(AUDIT_ID, access, list(fetches), settings or CheckSettings())
    return {(i.type, i.page_url.removeprefix(SITE), i.details.get("agent", "")): i for i in issues}


def _four(url, **per_agent):
    """The page as both browsers and the three bots got it; per_agent: agent -> _fetch overrides."""
    agents = ("browser", "browser-mobile", "googlebot-smartphone", "bingbot", "gptbot")
    return [_fetch(url, agent, **per_agent.get(agent, {})) for agent in agents]


def test_the_same_page_for_every_agent_gets_nothing():
    assert _judge(_four("/a", gptbot={"robots": "follow, index"}, browser={"robots": "index,follow"})) == {}


def test_a_search_bot_refused_is_critical_an_ai_bot_refused_is_information():
    found = _judge(_four("/a", bingbot={"status": 429}, gptbot={"status": 403}))
    assert set(found) == {("bot-blocked", "/a", "Bingbot"), ("ai-bot-blocked-by-server", "/a", "GPTBot")}
    assert found[("bot-blocked", "/a", "Bingbot")].severity == "critical"
    assert found[("bot-blocked", "/a", "Bingbot")].details["reason"] == "HTTP 429"
    assert found[("ai-bot-blocked-by-server", "/a", "GPTBot")].severity == "info"


def test_a_challenge_page_is_a_refusal_and_a_browser_refused_too_is_not_compared():
    challenge = {"/a": {"googlebot-smartphone": {"refusal": "challenge title 'just a moment...' in a 200 answer"}}}
    found = _judge(_four("/a"), compared={SITE + k: v for k, v in challenge.items()})
    assert set(found) == {("bot-blocked", "/a", "Googlebot smartphone")}
    assert found[("bot-blocked", "/a", "Googlebot smartphone")].details["reason"].startswith("challenge title")
    assert _judge(_four("/b", browser={"status": 403}, bingbot={"status": 403})) == {}


def test_googlebot_smartphone_is_compared_with_the_mobile_browser():
    mobile = {"final_url": SITE + "/m/a", "title": "Shop mobile"}  # dynamic serving: phones get another page
    assert _judge(_four("/a", **{"browser-mobile": mobile, "googlebot-smartphone": mobile})) == {}
    found = _judge(_four("/a", **{"browser-mobile": mobile}))
    assert set(found) == {("bot-served-different-status-or-redirect", "/a", "Googlebot smartphone")}
    details = found[("bot-served-different-status-or-redirect", "/a", "Googlebot smartphone")].details
    assert (details["browser"], details["browser_final_url"]) == ("Browser (mobile Chrome)", SITE + "/m/a")


def test_another_status_or_redirect_for_a_bot_is_a_warning():
    found = _judge(_four("/a", bingbot={"final_url": SITE + "/bots-only"}, gptbot={"status": 404}))
    assert set(found) == {
        ("bot-served-different-status-or-redirect", "/a", "Bingbot"),
        ("bot-served-different-status-or-redirect", "/a", "GPTBot"),
    }
    details = found[("bot-served-different-status-or-redirect", "/a", "Bingbot")].details
    assert (details["final_url"], details["browser_final_url"]) == (SITE + "/bots-only", SITE + "/a")


def test_cloaking_names_each_difference_with_both_values():
    fetches = _four("/a", googlebot_smartphone={}, bingbot={"canonical": SITE + "/other", "robots": "noindex"})
    compared = {SITE + "/a": {"gptbot": {"similarity_pct": 40}, "bingbot": {"similarity_pct": 95}}}
    found = _judge(fetches, compared=compared)
    assert set(found) == {("bot-cloaking", "/a", "Bingbot"), ("bot-cloaking", "/a", "GPTBot")}
    assert found[("bot-cloaking", "/a", "Bingbot")].details["differences"] == [
        {"field": "Canonical", "bot_value": SITE + "/other", "browser_value": ""},
        {"field": "Robots directives", "bot_value": "noindex", "browser_value": ""},
    ]
    assert found[("bot-cloaking", "/a", "GPTBot")].details["differences"] == [
        {"field": "Main text", "bot_value": "300 words, 40 % the same words as the browser's",
         "browser_value": "300 words"}
    ]  # fmt: skip
    # 95 % alike is over the 80 % threshold; a project raising it to 99 % hears of Bingbot's text too
    strict = CheckSettings(thresholds={"bot-cloaking": {"min_similarity_pct": 99}})
    fields = [d["field"] for d in _judge(fetches, compared=compared, settings=strict)[
        ("bot-cloaking", "/a", "Bingbot")].details["differences"]]  # fmt: skip
    assert fields == ["Canonical", "Robots directives", "Main text"]


def test_robots_table_rows_become_one_issue_per_search_crawler_and_one_for_all_ai_crawlers():
    def row(name, kind, states, group="User-agent: *"):
        cells = {col: {"state": s, "blocked": int(s != "allowed"), "checked": 1} for col, s in states.items()}
        return {"crawler": name, "kind": kind, "operator": "x", "group": group, "cells": cells}

    robots = {"url": SITE + "/robots.txt", "rows": [
        row("Googlebot", "search", {"/": "allowed", "/shop/": "blocked"}, "User-agent: Googlebot"),
        row("Bingbot", "search", {"/": "allowed", "/shop/": "allowed"}),
        row("GPTBot", "ai", {"/": "blocked", "/shop/": "blocked"}, "User-agent: GPTBot"),
        row("CCBot", "ai", {"/": "allowed", "/shop/": "allowed"}),
    ]}  # fmt: skip
    found = _judge(robots=robots)
    search_key, ai_key = ("search-bot-blocked-robots", "/robots.txt", ""), ("ai-bots-blocked-robots", "/robots.txt", "")
    assert set(found) == {search_key, ai_key}
    assert found[search_key].details == {
        "crawler": "Googlebot", "group": "User-agent: Googlebot", "blocked": ["/shop/ (1 of 1 URLs)"]
    }  # fmt: skip
    ai = found[ai_key].details
    assert ai["crawlers"] == [{"crawler": "GPTBot", "operator": "x", "group": "User-agent: GPTBot",
                               "blocked": "/ (1 of 1 URLs), /shop/ (1 of 1 URLs)"}]  # fmt: skip
    image = row("Googlebot-Image", "search", {"/": "blocked", "/shop/": "blocked"}, "User-agent: Googlebot-Image")
    image["pages"] = False
    robots_with_image = {**robots, "rows": [*robots["rows"], image]}
    issues = bot_site_issues(AUDIT_ID, {"robots": robots_with_image}, [], CheckSettings())
    severities = {i.details["crawler"]: i.severity for i in issues if i.type == "search-bot-blocked-robots"}
    assert severities == {"Googlebot": "critical", "Googlebot-Image": "warning"}  # images, not pages
    disabled = CheckSettings(disabled={"ai-bots-blocked-robots"})
    assert set(_judge(robots=robots, settings=disabled)) == {("search-bot-blocked-robots", "/robots.txt", "")}


@pytest.mark.parametrize(
    ("llms", "expected"),
    [
        ({"url": SITE + "/llms.txt", "present": False, "status_code": 404}, {"llms-txt-missing"}),
        ({"url": SITE + "/llms.txt", "present": False, "status_code": 200, "note": "answered with an HTML page"},
         {"llms-txt-missing"}),
        ({"url": SITE + "/llms.txt", "present": False, "status_code": None, "error": "timeout"}, set()),  # no answer
        ({"url": SITE + "/llms.txt", "present": True, "problems": [], "links": [{"url": SITE + "/a", "outcome": "ok"},
          {"url": "https://x.test/", "outcome": "unverified"}]}, set()),
        ({"url": SITE + "/llms.txt", "present": True, "problems": ["line 1: …"], "links": [
            {"url": SITE + "/gone", "outcome": "broken", "status_code": 404}]},
         {"llms-txt-invalid", "llms-txt-broken-link"}),
    ],
)  # fmt: skip
def test_llms_txt(llms, expected):
    assert {issue_type for issue_type, _, _ in _judge(llms=llms)} == expected
