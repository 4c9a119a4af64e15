"""crawler.bots: the robots.txt table per crawler and folder, the llms.txt reading, main texts compared."""

from crawler.bots import (
    AGENTS,
    CRAWLERS,
    access_table,
    folders_of,
    llms_txt_parse,
    text_similarity_pct,
    top_folder,
)

SITE = "https://shop.test"
ROBOTS = """\
# groups for several crawlers
User-agent: GPTBot
Disallow: /

user-agent: googlebot
Disallow: /private/
Allow: /private/press/

User-agent: CCBot
Allow: /

User-agent: *
Disallow: /cart/
"""


def _table(raw, urls):
    table = access_table(raw, SITE + "/", folders_of(urls))
    return {row["crawler"]: row for row in table["rows"]}, table


def test_the_crawlers_named_by_the_issue_are_all_in_the_table_with_their_kind():
    names = {c.name: c.kind for c in CRAWLERS}
    for name in ("Googlebot", "Googlebot-Image", "Bingbot", "Applebot"):
        assert names[name] == "search"
    for name in ("Google-Extended", "GPTBot", "OAI-SearchBot", "ChatGPT-User", "ClaudeBot", "PerplexityBot", "CCBot"):
        assert names[name] == "ai"
    assert [a.key for a in AGENTS] == ["browser", "browser-mobile", "googlebot-smartphone", "bingbot", "gptbot"]
    assert [a.baseline for a in AGENTS] == ["", "", "browser-mobile", "browser", "browser"]
    assert "Googlebot/2.1" in AGENTS[2].user_agent and "Android" in AGENTS[2].user_agent
    assert "GPTBot/" in AGENTS[4].user_agent and "bingbot/2.0" in AGENTS[3].user_agent


def test_each_crawler_gets_the_group_that_applies_and_a_state_per_folder():
    urls = [SITE + "/private/a", SITE + "/private/press/b", SITE + "/blog/x", SITE + "/cart/1", SITE + "/about"]
    rows, table = _table(ROBOTS, urls)
    assert table["columns"] == ["/", "/private/", "/blog/", "/cart/"]  # most pages first, then by path
    assert rows["Googlebot"]["group"] == "User-agent: googlebot"  # the value as written
    cells = rows["Googlebot"]["cells"]
    assert cells["/private/"] == {"state": "partial", "blocked": 2, "checked": 3}  # /private/press/ is allowed
    assert cells["/cart/"]["state"] == "allowed"  # Googlebot's own group does not disallow /cart/
    assert rows["Googlebot-Image"]["group"] == "User-agent: googlebot"  # no group of its own
    assert rows["GPTBot"]["group"] == "User-agent: GPTBot"
    assert {c["state"] for c in rows["GPTBot"]["cells"].values()} == {"blocked"}
    assert rows["CCBot"]["group"] == "User-agent: CCBot"
    assert {c["state"] for c in rows["CCBot"]["cells"].values()} == {"allowed"}
    assert rows["ClaudeBot"]["group"] == "User-agent: *"
    assert rows["ClaudeBot"]["cells"]["/cart/"]["state"] == "blocked"


def test_without_robots_txt_everything_is_allowed_and_no_group_applies():
    rows, table = _table(None, [SITE + "/blog/x"])
    assert table["robots_txt"] is False
    assert all(r["group"] == "" and {c["state"] for c in r["cells"].values()} == {"allowed"} for r in rows.values())


def test_a_start_url_in_a_folder_is_one_column():
    table = access_table(ROBOTS, SITE + "/private/", folders_of([SITE + "/private/a", SITE + "/blog/x"]))
    assert table["columns"] == ["/private/", "/blog/"]


def test_top_folders():
    assert top_folder(SITE + "/blog/2024/post") == "/blog/"
    assert top_folder(SITE + "/about.html") == "" and top_folder(SITE + "/") == ""
    assert [f.path for f in folders_of([SITE + "/a/1", SITE + "/b/1", SITE + "/b/2"])] == ["/b/", "/a/"]


VALID = """\
# Shop

> Sells things.

Some notes, a list of facts:
- free text may hold lists

## Docs
- [Guide](/docs/guide): how to use it
- [API](https://api.shop.test/ref "the reference")

### Sub-heading inside a section

* [FAQ](<faq.html>)

## Optional
- [Archive](/archive)
"""


def test_a_valid_llms_txt_reads_its_title_summary_sections_and_links():
    parsed = llms_txt_parse(VALID, SITE + "/llms.txt")
    assert parsed.problems == []
    assert (parsed.title, parsed.summary) == ("Shop", "Sells things.")
    assert [(s["name"], len(s["links"])) for s in parsed.sections] == [("Docs", 3), ("Optional", 1)]
    assert [link["url"] for link in parsed.links] == [
        SITE + "/docs/guide", "https://api.shop.test/ref", SITE + "/faq.html", SITE + "/archive",
    ]  # fmt: skip
    assert parsed.links[0]["notes"] == "how to use it"
    assert parsed.as_dict()["valid"] is True


def test_a_malformed_llms_txt_says_what_is_wrong_with_line_numbers():
    text = "## Docs\n- [Guide](/g)\nplain words\n- Guide without a link\n# Second title\n##Bad\n## Empty\n"
    problems = llms_txt_parse(text, SITE + "/llms.txt").problems
    assert problems == [
        "line 1: the file must start with an H1 title (\"# Name\"), not '## Docs'",
        "line 3 in section 'Docs' is not a list item: 'plain words'",
        "line 4 in section 'Docs' is not a Markdown link \"[name](url)\": '- Guide without a link'",
        "line 5: a second H1 title ('# Second title'); only the first line is an H1",
        "line 6: a heading needs a space after its # signs: '##Bad'",
        "section 'Empty' holds no links",
    ]
    assert llms_txt_parse("  \n", SITE + "/llms.txt").problems == ["the file is empty"]
    late = llms_txt_parse("# T\n\nText first.\n\n> summary late\n", SITE + "/llms.txt").problems
    assert late == ["line 5: the blockquote summary must come right after the title (text on line 3 first)"]


def test_text_similarity_is_the_share_of_common_words():
    assert text_similarity_pct("a b c d", "a b c d") == 100
    assert text_similarity_pct("a b c d", "a b c e") == 75
    assert text_similarity_pct("", "") == 100
    assert text_similarity_pct("a b", "") == 0
