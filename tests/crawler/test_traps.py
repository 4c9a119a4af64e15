"""The trap rules read from one URL: each sign on its own, and the ordinary URLs (catalogues, blog posts,
archives) that must pass."""

from datetime import date

import pytest

from crawler import limits
from crawler.shapes import path_key
from crawler.traps import (
    RULE_CALENDAR,
    RULE_PATH_TOO_DEEP,
    RULE_REPEATING_PATH,
    TrapLimits,
    has_date,
    trap_rule,
)

TODAY = date(2026, 12, 1)
LIMITS = TrapLimits(today=TODAY)


@pytest.mark.parametrize(
    "url",
    [
        "https://shop.test/p/123.html",
        "https://shop.test/product/99999",
        "https://shop.test/p/20301215.html",  # an 8-digit id, not a date
        "https://blog.test/2012/05/a-post-from-2012",
        "https://blog.test/2026/11/30/",
        "https://blog.test/2029/12/",  # within the years ahead
        "https://docs.test/a/b/c/d/e/f/g/h",
        "https://docs.test/v1/api/v1/",  # a segment twice, not in a row
        "https://shop.test/search?q=shoes&page=2",
        "https://shop.test/archive/2024/01/02",  # /{n}/{n}/{n} is a date, not a loop
    ],
)
def test_ordinary_urls_are_not_traps(url):
    assert trap_rule(url, LIMITS) == ""


def test_a_path_deeper_than_the_limit_is_too_deep_and_the_limit_is_a_setting():
    deep = "https://a.test/" + "/".join(f"s{i}" for i in range(limits.TRAP_MAX_PATH_SEGMENTS + 1))
    at_limit = "https://a.test/" + "/".join(f"s{i}" for i in range(limits.TRAP_MAX_PATH_SEGMENTS))
    assert trap_rule(deep, LIMITS) == RULE_PATH_TOO_DEEP
    assert trap_rule(at_limit, LIMITS) == ""
    raised = TrapLimits(max_path_segments=limits.TRAP_MAX_PATH_SEGMENTS + 1, today=TODAY)
    assert trap_rule(deep, raised) == ""


@pytest.mark.parametrize(
    "url",
    [
        "https://a.test/x/x/x",
        "https://a.test/shop/a/b/a/b/",
        "https://a.test/docs/guide/intro/guide/intro/",
        "https://a.test/blog/page/2/page/3",  # numbers collapsed within a block
    ],
)
def test_repeating_segments_are_a_loop(url):
    assert trap_rule(url, LIMITS) == RULE_REPEATING_PATH


@pytest.mark.parametrize(
    "url",
    [
        "https://a.test/events/2031-01",  # more than 3 years ahead
        "https://a.test/calendar/2030/1",
        "https://a.test/calendar/1990/04/",  # before the web
        "https://a.test/cal?year=2040&month=1",
        "https://a.test/cal?date=2099-05-01",
    ],
)
def test_calendar_dates_out_of_the_window_are_a_calendar(url):
    assert trap_rule(url, LIMITS) == RULE_CALENDAR


def test_the_calendar_window_follows_today_and_the_setting():
    url = "https://a.test/events/2031-01"
    assert trap_rule(url, TrapLimits(today=date(2028, 1, 1))) == ""
    assert trap_rule(url, TrapLimits(calendar_years_ahead=5, today=TODAY)) == ""
    assert trap_rule("https://a.test/events/2029-12", LIMITS) == ""


def test_dates_are_recognised_for_the_per_shape_count():
    assert has_date("https://a.test/events/2026-12-03")
    assert has_date("https://a.test/calendar/2024/5")
    assert has_date("https://a.test/cal?day=2026-12-03")
    assert not has_date("https://a.test/p/2024.html")  # a lone year-like number is as often a product code
    assert not has_date("https://a.test/p/123")


def test_query_variants_are_counted_per_exact_path():
    assert path_key("https://a.test/s?q=1") == path_key("https://a.test/s?q=2&page=3") == "https://a.test/s"
    assert path_key("https://a.test/s?q=1") == "https://a.test/s"
    assert path_key("https://a.test/s") == ""
