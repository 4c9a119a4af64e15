"""Which search and AI crawlers a site lets in, and what it tells them: the crawlers (product tokens robots.txt
groups name, the user agents the sample pass sends), the robots.txt table per crawler and folder, the llms.txt
parser and validator (llmstxt.org), and how alike two main texts are. No Django, no network: the stage that asks
the site is audits/pipeline/bots.py, the checks that judge it audits/checks/bots.py."""

import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from protego import Protego

SEARCH, AI = "search", "ai"


@dataclass(frozen=True)
class Crawler:
    """A crawler robots.txt rules are written for: its product token (what a User-agent line names) and kind."""

    name: str
    token: str
    kind: str  # SEARCH | AI
    operator: str
    pages: bool = True  # False: it fetches images, not pages (keeping it out does not drop pages from search)


# Order: the table's rows. Googlebot-Image falls back to a Googlebot group when it has none of its own (the
# longest matching User-agent line wins, protego's rule and Google's).
CRAWLERS: tuple[Crawler, ...] = (
    Crawler("Googlebot", "Googlebot", SEARCH, "Google"),
    Crawler("Googlebot-Image", "Googlebot-Image", SEARCH, "Google (images)", pages=False),
    Crawler("Bingbot", "Bingbot", SEARCH, "Microsoft"),
    Crawler("Applebot", "Applebot", SEARCH, "Apple"),
    Crawler("DuckDuckBot", "DuckDuckBot", SEARCH, "DuckDuckGo"),
    Crawler("YandexBot", "YandexBot", SEARCH, "Yandex"),
    Crawler("Google-Extended", "Google-Extended", AI, "Google (Gemini training)"),
    Crawler("Applebot-Extended", "Applebot-Extended", AI, "Apple (AI training)"),
    Crawler("GPTBot", "GPTBot", AI, "OpenAI (training)"),
    Crawler("OAI-SearchBot", "OAI-SearchBot", AI, "OpenAI (ChatGPT search)"),
    Crawler("ChatGPT-User", "ChatGPT-User", AI, "OpenAI (user requests)"),
    Crawler("ClaudeBot", "ClaudeBot", AI, "Anthropic"),
    Crawler("PerplexityBot", "PerplexityBot", AI, "Perplexity"),
    Crawler("CCBot", "CCBot", AI, "Common Crawl"),
    Crawler("Bytespider", "Bytespider", AI, "ByteDance"),
    Crawler("Meta-ExternalAgent", "meta-externalagent", AI, "Meta"),
)


@dataclass(frozen=True)
class Agent:
    """A user agent the sample pass fetches pages as; `crawler` names its row of CRAWLERS ("" for a browser)."""

    key: str  # AgentFetch.agent
    label: str
    kind: str  # SEARCH | AI | "browser"
    crawler: str
    user_agent: str
    # The browser a bot is compared with: a smartphone crawler with a phone's browser, so a site serving phones
    # another page or an m. host (dynamic serving) is not taken for cloaking. "" for the browsers themselves.
    baseline: str = ""


BROWSER = "browser"
MOBILE_BROWSER = "browser-mobile"
BROWSER_KIND = "browser"
# Real user-agent strings, as the crawlers' owners publish them (Chrome version as of late 2026).
AGENTS: tuple[Agent, ...] = (
    Agent(
        BROWSER, "Browser (desktop Chrome)", BROWSER_KIND, "",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
        "Safari/537.36",
    ),
    Agent(
        MOBILE_BROWSER, "Browser (mobile Chrome)", BROWSER_KIND, "",
        "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile "
        "Safari/537.36",
    ),
    Agent(
        "googlebot-smartphone", "Googlebot smartphone", SEARCH, "Googlebot",
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.6778.139 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        baseline=MOBILE_BROWSER,
    ),
    Agent(
        "bingbot", "Bingbot", SEARCH, "Bingbot",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) "
        "Chrome/131.0.0.0 Safari/537.36",
        baseline=BROWSER,
    ),
    Agent(
        "gptbot", "GPTBot", AI, "GPTBot",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
        baseline=BROWSER,
    ),
)  # fmt: skip
AGENTS_BY_KEY = {agent.key: agent for agent in AGENTS}


# --- robots.txt per crawler --------------------------------------------------------------------------------

FOLDERS_MAX = 30  # top-level folders in the table (most pages first)
_USER_AGENT_LINE = re.compile(r"^\s*user-agent\s*:\s*(.*?)\s*(?:#.*)?$", re.IGNORECASE)


@dataclass
class Folder:
    """A top-level folder of the crawled site: its path ("/blog/") and up to a few crawled page URLs in it."""

    path: str
    pages: int = 0
    urls: list[str] = field(default_factory=list)


def top_folder(url: str) -> str:
    """ "/blog/" for https://x.test/blog/2024/post; "" for a page at the root (/about.html, /)."""
    path = urlsplit(url).path or "/"
    head, sep, _rest = path.lstrip("/").partition("/")
    return f"/{head}/" if sep and head else ""


def folders_of(urls, *, urls_per_folder: int = 50, folders_max: int = FOLDERS_MAX) -> list[Folder]:
    """The top-level folders of `urls`, most pages first (then by path), each with its first URLs kept."""
    found: dict[str, Folder] = {}
    for url in urls:
        path = top_folder(url)
        if not path:
            continue
        folder = found.setdefault(path, Folder(path))
        folder.pages += 1
        if len(folder.urls) < urls_per_folder:
            folder.urls.append(url)
    return sorted(found.values(), key=lambda f: (-f.pages, f.path))[:folders_max]


def _group_lines(raw: str) -> dict[str, str]:
    """Lower-cased user-agent value -> the User-agent line as written (its first occurrence)."""
    lines: dict[str, str] = {}
    for line in (raw or "").lstrip("\ufeff").splitlines():
        match = _USER_AGENT_LINE.match(line)
        if match and match.group(1):
            lines.setdefault(match.group(1).lower().replace("*", "") or "*", f"User-agent: {match.group(1)}")
    return lines


class RobotsRules:
    """One robots.txt, asked per crawler: which group applies and what it may fetch. Missing: everything allowed."""

    def __init__(self, raw: str | None):
        self.raw = raw or ""
        self._parser = None
        if raw:
            try:
                self._parser = Protego.parse(raw)
            except Exception:  # noqa: BLE001 - an unparsable robots.txt is treated like a missing one
                self._parser = None
        self._lines = _group_lines(self.raw)

    def group(self, token: str) -> str:
        """The User-agent line of the group that applies to `token` ("User-agent: *"), or "" when none does."""
        if self._parser is None:
            return ""
        # protego keeps the winning group private; the rule (longest matching product token, else "*") is its own.
        rule_set = self._parser._get_matching_rule_set(token.lower())  # noqa: SLF001
        if rule_set is None:
            return ""
        name = rule_set.user_agent or ""
        return self._lines.get(name, f"User-agent: {name}")

    def allowed(self, url: str, token: str) -> bool:
        if self._parser is None:
            return True
        try:
            return self._parser.can_fetch(url, token.lower())
        except Exception:  # noqa: BLE001 - a rule protego cannot evaluate blocks nothing
            return True


ALLOWED, BLOCKED, PARTIAL = "allowed", "blocked", "partial"


def _verdict(blocked: int, total: int) -> str:
    return ALLOWED if blocked == 0 else BLOCKED if blocked == total else PARTIAL


def access_table(raw_robots: str | None, start_url: str, folders: list[Folder]) -> dict:
    """The robots.txt table: per crawler of CRAWLERS, its group line and, for the start page and each folder,
    allowed / blocked / partial (some of the folder's crawled pages blocked), with the blocked URLs counted.

    {"columns": ["/", "/blog/", …], "rows": [{"crawler", "token", "kind", "operator", "group",
     "cells": {column: {"state", "blocked", "checked"}}}]}"""
    rules = RobotsRules(raw_robots)
    parts = urlsplit(start_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    start_path = parts.path or "/"
    folders = [f for f in folders if f.path != start_path]  # a start URL that is a folder is its own column
    columns = [start_path] + [f.path for f in folders]
    rows = []
    for crawler in CRAWLERS:
        cells = {start_path: _cell(rules, crawler.token, [start_url])}
        for folder in folders:
            cells[folder.path] = _cell(rules, crawler.token, [urljoin(origin, folder.path), *folder.urls])
        rows.append(
            {
                "crawler": crawler.name,
                "token": crawler.token,
                "kind": crawler.kind,
                "operator": crawler.operator,
                "pages": crawler.pages,
                "group": rules.group(crawler.token),
                "cells": cells,
            }
        )
    return {"columns": columns, "rows": rows, "robots_txt": bool(rules.raw)}


def _cell(rules: RobotsRules, token: str, urls: list[str]) -> dict:
    urls = list(dict.fromkeys(urls))
    blocked = [u for u in urls if not rules.allowed(u, token)]
    return {"state": _verdict(len(blocked), len(urls)), "blocked": len(blocked), "checked": len(urls)}


# --- llms.txt (https://llmstxt.org/) -----------------------------------------------------------------------

LLMS_PROBLEMS_MAX = 20
LLMS_LINKS_MAX = 500  # links read from one llms.txt
_H1 = re.compile(r"^#\s+(\S.*)$")
_H2 = re.compile(r"^##\s+(\S.*)$")
_DEEPER = re.compile(r"^#{3,6}\s")
_HEADING_NO_SPACE = re.compile(r"^#{1,6}[^#\s]")
_LIST_ITEM = re.compile(r"^\s*[-*+]\s+(.*)$")
_LINK_ITEM = re.compile(r"^\[([^\]]+)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)\s*(?::\s*(.*))?$")


@dataclass
class LlmsTxt:
    title: str = ""
    summary: str = ""
    sections: list[dict] = field(default_factory=list)  # {"name", "links"}: links [{"name", "url", "notes"}]
    problems: list[str] = field(default_factory=list)

    @property
    def links(self) -> list[dict]:
        return [link for section in self.sections for link in section["links"]]

    def as_dict(self) -> dict:
        return {
            "title": self.title,
            "summary": self.summary,
            "sections": [{"name": s["name"], "links": len(s["links"])} for s in self.sections],
            "links_count": len(self.links),
            "problems": self.problems,
            "valid": not self.problems,
        }


def llms_txt_parse(text: str, base_url: str) -> LlmsTxt:
    """Read an llms.txt against the proposal: an H1 title first (the only required part), then an optional
    blockquote summary, optional free text, then H2 sections each holding a Markdown list of links
    `- [name](url): notes`. Problems say what is wrong, with line numbers; link URLs are resolved."""
    result = LlmsTxt()

    def problem(message: str) -> None:
        if len(result.problems) < LLMS_PROBLEMS_MAX:
            result.problems.append(message)

    lines = (text or "").lstrip("\ufeff").splitlines()
    numbered = [(n, line.rstrip()) for n, line in enumerate(lines, 1)]
    content = [(n, line) for n, line in numbered if line.strip()]
    if not content:
        problem("the file is empty")
        return result
    first_n, first = content[0]
    match = _H1.match(first.strip())
    if match:
        result.title = match.group(1).strip()
        rest = content[1:]
    else:
        problem(f'line {first_n}: the file must start with an H1 title ("# Name"), not {first.strip()[:60]!r}')
        rest = content
    summary: list[str] = []
    section: dict | None = None
    links = 0
    for n, line in rest:
        stripped = line.strip()
        if _H1.match(stripped):
            problem(f"line {n}: a second H1 title ({stripped[:60]!r}); only the first line is an H1")
            continue
        if _HEADING_NO_SPACE.match(stripped):
            problem(f"line {n}: a heading needs a space after its # signs: {stripped[:60]!r}")
            continue
        if match := _H2.match(stripped):
            if section is not None and not section["links"]:
                problem(f"section {section['name']!r} holds no links")
            section = {"name": match.group(1).strip(), "links": []}
            result.sections.append(section)
            continue
        if section is None:
            if stripped.startswith(">") and not result.sections:
                if not summary and (summary_gap := _preceded_by_text(rest, n)):
                    problem(f"line {n}: the blockquote summary must come right after the title (text on line "
                            f"{summary_gap} first)")  # fmt: skip
                summary.append(stripped.lstrip(">").strip())
            continue  # free text before the first section: any Markdown but headings
        if _DEEPER.match(stripped):
            continue  # a sub-heading inside a section: allowed Markdown, not part of the structure
        item = _LIST_ITEM.match(line)
        if item is None:
            problem(f"line {n} in section {section['name']!r} is not a list item: {stripped[:60]!r}")
            continue
        link = _LINK_ITEM.match(item.group(1).strip())
        if link is None:
            problem(f"line {n} in section {section['name']!r} is not a Markdown link \"[name](url)\": "
                    f"{stripped[:60]!r}")  # fmt: skip
            continue
        links += 1
        if links <= LLMS_LINKS_MAX:
            name, url, notes = link.groups()
            section["links"].append({"name": name.strip(), "url": urljoin(base_url, url), "notes": (notes or "")[:200]})
    if section is not None and not section["links"]:
        problem(f"section {section['name']!r} holds no links")
    result.summary = " ".join(s for s in summary if s)[:500]
    return result


def _preceded_by_text(rest: list[tuple[int, str]], n: int) -> int | None:
    """The first line of free text before line `n`, if any (the summary should follow the title)."""
    for m, line in rest:
        if m >= n:
            return None
        if not line.strip().startswith(">"):
            return m
    return None


# --- main texts compared -----------------------------------------------------------------------------------


def text_similarity_pct(words_a: str, words_b: str) -> int:
    """How alike two main texts are, as a reader would say: the share of words they have in common (as multisets,
    over the longer text), 0-100. Two empty texts are 100 % alike."""
    a, b = Counter(words_a.split()), Counter(words_b.split())
    longer = max(sum(a.values()), sum(b.values()))
    if longer == 0:
        return 100
    common = sum((a & b).values())
    return round(100 * common / longer)
