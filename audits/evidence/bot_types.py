"""The evidence of the bot and AI access checks (audits/checks/bots.py): robots.txt per crawler, llms.txt, and
the sampled pages as each agent was served them."""

from audits.evidence.columns import UNIT_LINKS, UNIT_PAGES, UNIT_SITE, Evidence, detail, item, page

_SERVED = (detail("agent", "Agent"), detail("status_code", "Agent's status"), detail("browser", "Compared with"),
           detail("browser_status_code", "Browser's status"))  # fmt: skip

BOT_EVIDENCE: dict[str, Evidence] = {
    "search-bot-blocked-robots": Evidence(
        UNIT_SITE,
        (
            page("robots.txt"),
            detail("crawler", "Crawler"),
            detail("group", "Group that applies"),
            detail("blocked", "Blocked from"),
        ),  # fmt: skip
    ),
    "ai-bots-blocked-robots": Evidence(
        UNIT_SITE,
        (
            page("robots.txt"),
            item("crawler", "Crawler"),
            item("operator", "Operator"),
            item("group", "Group that applies"),
            item("blocked", "Blocked from"),
        ),  # fmt: skip
        expand="crawlers",
    ),
    "llms-txt-missing": Evidence(
        UNIT_SITE, (page("llms.txt"), detail("status_code", "Status"), detail("note", "Note"))
    ),
    "llms-txt-invalid": Evidence(
        UNIT_SITE,
        (page("llms.txt"), item("problem", "Problem"), detail("problems_count", "Problems")),
        expand="problems",
    ),
    "llms-txt-broken-link": Evidence(
        UNIT_LINKS,
        (
            page("llms.txt"),
            detail("link_url", "Link"),
            detail("link_name", "Name"),
            detail("section", "Section"),
            detail("status_code", "Status"),
            detail("error", "Error"),
        ),  # fmt: skip
        target="link_url",
    ),
    "bot-blocked": Evidence(UNIT_PAGES, (page(), *_SERVED, detail("reason", "Why it is a refusal"))),
    "ai-bot-blocked-by-server": Evidence(UNIT_PAGES, (page(), *_SERVED, detail("reason", "Why it is a refusal"))),
    "bot-served-different-status-or-redirect": Evidence(
        UNIT_PAGES,
        (
            page(),
            *_SERVED,
            detail("final_url", "Agent's final URL"),
            detail("browser_final_url", "Browser's final URL"),
        ),  # fmt: skip
        target="final_url",
    ),
    "bot-cloaking": Evidence(
        UNIT_PAGES,
        (
            page(),
            detail("agent", "Agent"),
            item("field", "What differs"),
            item("bot_value", "Served to the agent"),
            item("browser_value", "Served to the browser"),
        ),  # fmt: skip
        expand="differences",
    ),
}
