"""Bot and AI access checks, judged in finalize from what the bot pass (audits.pipeline.bots, the stage that asks
the site) stored: the robots.txt table per crawler (Audit.bot_access["robots"]), the llms.txt reading
(bot_access["llms_txt"]) and the sampled pages as each agent was served them (AgentFetch rows, with the refusals
and main-text similarities the pass measured in bot_access["sample"]): each bot beside the browser of its form
factor (Googlebot smartphone beside a phone's browser, the others beside a desktop one). No network here."""

from audits.checks.registry import WARNING, CheckSettings, make_issue
from audits.models import Issue
from crawler.bots import AGENTS_BY_KEY, AI, ALLOWED, SEARCH

BOT_SITE_TYPES = (
    "search-bot-blocked-robots",
    "ai-bots-blocked-robots",
    "llms-txt-missing",
    "llms-txt-invalid",
    "llms-txt-broken-link",
    "bot-blocked",
    "bot-served-different-status-or-redirect",
    "bot-cloaking",
    "ai-bot-blocked-by-server",
)
# Answers that refuse a bot the page: the browser's 200 beside one of these is a block, not a different page.
REFUSAL_STATUS_CODES = frozenset({401, 403, 429})
SERVER_ERROR_MIN = 500
COMPARED_FIELDS = (("title", "Title"), ("canonical_url", "Canonical"), ("robots", "Robots directives"))


def bot_site_issues(
    audit_id, bot_access: dict, fetches: list[dict], settings: CheckSettings, page_ids: dict | None = None
) -> list[Issue]:
    """The bot-access issues of an audit. `fetches`: one dict per AgentFetch row (url, agent, status_code,
    final_url, title, canonical_url, robots, main_words, error); `page_ids`: url -> the crawled page's id, so a
    finding on a sampled page belongs to that page."""
    found: list[Issue] = []
    page_ids = page_ids or {}

    def add(issue_type: str, *, page_url: str = "", dedupe_key: str = "", severity: str = "", **details) -> None:
        if not settings.enabled(issue_type):
            return
        issue = make_issue(
            audit_id, issue_type, page_id=page_ids.get(page_url), page_url=page_url, dedupe_key=dedupe_key,
            details=details, settings=settings,
        )  # fmt: skip
        if issue is not None:
            if severity and issue_type not in settings.severities:  # the project's own severity wins
                issue.severity = severity
            found.append(issue)

    _robots_issues(bot_access.get("robots") or {}, add)
    _llms_issues(bot_access.get("llms_txt") or {}, add)
    _sample_issues(bot_access.get("sample") or {}, fetches, settings, add)
    return found


# --- robots.txt ---------------------------------------------------------------------------------------------


def _blocked_places(row: dict) -> list[str]:
    """Where robots.txt keeps the crawler out: "/private/ (3 of 3 URLs)", in the table's column order."""
    places = []
    for column, cell in (row.get("cells") or {}).items():
        if cell["state"] != ALLOWED:
            places.append(f"{column} ({cell['blocked']} of {cell['checked']} URLs)")
    return places


def _robots_issues(table: dict, add) -> None:
    robots_url = table.get("url", "")
    ai_rows = []
    for row in table.get("rows") or []:
        places = _blocked_places(row)
        if not places:
            continue
        group = row.get("group") or "(no group)"
        if row["kind"] == SEARCH:
            # An image crawler kept out costs image search, not the pages: a warning, not an error.
            add("search-bot-blocked-robots", page_url=robots_url, dedupe_key=row["crawler"],
                severity="" if row.get("pages", True) else WARNING, crawler=row["crawler"], group=group,
                blocked=places)  # fmt: skip
        elif row["kind"] == AI:
            ai_rows.append({"crawler": row["crawler"], "operator": row.get("operator", ""), "group": group,
                            "blocked": ", ".join(places)})  # fmt: skip
    if ai_rows:
        add("ai-bots-blocked-robots", page_url=robots_url, crawlers_count=len(ai_rows), crawlers=ai_rows)


# --- llms.txt -----------------------------------------------------------------------------------------------


def _llms_issues(llms: dict, add) -> None:
    if not llms:
        return
    url = llms.get("url", "")
    if not llms.get("present"):
        if llms.get("status_code") is not None or llms.get("note"):  # no answer at all says nothing
            add("llms-txt-missing", page_url=url, status_code=llms.get("status_code"), note=llms.get("note", ""))
        return
    if llms.get("problems"):
        add("llms-txt-invalid", page_url=url, problems_count=len(llms["problems"]), problems=llms["problems"])
    for link in llms.get("links") or []:
        if link.get("outcome") == "broken":
            add("llms-txt-broken-link", page_url=url, dedupe_key=link["url"], link_url=link["url"],
                link_name=link.get("name", ""), section=link.get("section", ""), status_code=link.get("status_code"),
                error=link.get("error", ""))  # fmt: skip


# --- the sampled pages --------------------------------------------------------------------------------------


def _refused(fetch: dict, compared: dict) -> str:
    """Why this answer refuses the agent the page ("HTTP 403", a challenge), or ""."""
    status = fetch.get("status_code")
    if compared.get("refusal"):
        return compared["refusal"]
    if fetch.get("error"):
        return f"no answer: {fetch['error']}"[:200]
    if status in REFUSAL_STATUS_CODES or (status is not None and status >= SERVER_ERROR_MIN):
        return f"HTTP {status}"
    return ""


DEFAULT_ROBOTS_DIRECTIVES = frozenset({"index", "follow", "all"})  # what no robots directive means anyway


def robots_directive_set(value: str) -> list[str]:
    """The directives that change something, in one order: "index, follow" and "" are the same page."""
    parts = {part.strip().lower() for part in (value or "").replace(";", ",").split(",")}
    return sorted(parts - DEFAULT_ROBOTS_DIRECTIVES - {""})


def _sample_issues(sample: dict, fetches: list[dict], settings: CheckSettings, add) -> None:
    compared_all = sample.get("compared") or {}
    by_url: dict[str, dict[str, dict]] = {}
    for fetch in fetches:
        by_url.setdefault(fetch["url"], {})[fetch["agent"]] = fetch
    min_similarity = settings.threshold("bot-cloaking", "min_similarity_pct")
    for url in sorted(by_url):
        agents = by_url[url]
        for key in sorted(agents):
            agent = AGENTS_BY_KEY.get(key)
            if agent is None or not agent.baseline:
                continue  # a browser, or an agent no longer sent
            fetch, browser = agents[key], agents.get(agent.baseline)
            if browser is None or browser.get("error") or browser.get("status_code") != 200:
                continue  # the browser is not served the page: nothing to compare the bot with
            if (compared_all.get(url) or {}).get(agent.baseline, {}).get("refusal"):
                continue
            compared = (compared_all.get(url) or {}).get(key) or {}
            common = {"page_url": url, "dedupe_key": key, "agent": agent.label,
                      "browser": AGENTS_BY_KEY[agent.baseline].label}  # fmt: skip
            refusal = _refused(fetch, compared)
            if refusal:
                issue_type = "bot-blocked" if agent.kind == SEARCH else "ai-bot-blocked-by-server"
                add(issue_type, **common, status_code=fetch.get("status_code"), reason=refusal,
                    browser_status_code=browser["status_code"])  # fmt: skip
                continue
            if fetch.get("status_code") != browser["status_code"] or fetch.get("final_url") != browser["final_url"]:
                add("bot-served-different-status-or-redirect", **common, status_code=fetch.get("status_code"),
                    browser_status_code=browser["status_code"], final_url=fetch.get("final_url", ""),
                    browser_final_url=browser["final_url"])  # fmt: skip
                continue
            differences = _differences(fetch, browser, compared, min_similarity)
            if differences:
                add("bot-cloaking", **common, differences_count=len(differences), differences=differences,
                    min_similarity_pct=min_similarity)  # fmt: skip


def _differences(fetch: dict, browser: dict, compared: dict, min_similarity: int) -> list[dict]:
    out = []
    for key, label in COMPARED_FIELDS:
        bot_value, browser_value = fetch.get(key) or "", browser.get(key) or ""
        same = (
            robots_directive_set(bot_value) == robots_directive_set(browser_value)
            if key == "robots"
            else bot_value == browser_value
        )
        if not same:
            out.append({"field": label, "bot_value": bot_value, "browser_value": browser_value})
    similarity = compared.get("similarity_pct")
    if similarity is not None and similarity < min_similarity:
        out.append({
            "field": "Main text",
            "bot_value": f"{fetch.get('main_words', 0)} words, {similarity} % the same words as the browser's",
            "browser_value": f"{browser.get('main_words', 0)} words",
        })  # fmt: skip
    return out
