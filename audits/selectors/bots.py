"""Reads of an audit's bot and AI access (audits/pipeline/bots.py stored it): the sampled pages as each agent was
served them, and both shaped for a screen (the robots.txt table, llms.txt, the pages side by side per agent)."""

from dataclasses import dataclass, field

from django.db.models import QuerySet

from audits.checks.bots import robots_directive_set
from audits.checks.registry import CheckSettings
from audits.models import AgentFetch, Audit
from crawler.bots import AGENTS, AGENTS_BY_KEY

AGENT_FETCH_ORDERING = ("url", "agent")
COMPARED = (
    ("status_code", "Status"), ("final_url", "Final URL"), ("title", "Title"), ("canonical_url", "Canonical"),
    ("robots", "Robots"), ("main_words", "Main text words"),
)  # fmt: skip


def agent_fetch_list(*, audit: Audit) -> QuerySet[AgentFetch]:
    """The audit's sampled pages, one row per page and agent, by URL then agent."""
    return AgentFetch.objects.filter(audit=audit).order_by(*AGENT_FETCH_ORDERING)


@dataclass
class SampledPage:
    url: str
    agents: list[dict] = field(default_factory=list)  # {"key", "label", "kind"} in AGENTS order
    rows: list[dict] = field(default_factory=list)  # {"label", "cells": [{"value", "differs"}]} per COMPARED field
    differs: bool = False


def bot_access_summary(*, audit: Audit) -> dict:
    """The robots.txt table (rows with their cells in column order), llms.txt and the number of sampled pages;
    {} when the audit has no bot measurement (an older audit, or still running)."""
    access = audit.bot_access or {}
    if not access:
        return {}
    robots = access.get("robots") or {}
    columns = robots.get("columns") or []
    rows = [
        {**row, "cells_ordered": [(column, row["cells"].get(column) or {}) for column in columns]}
        for row in robots.get("rows") or []
    ]
    llms = access.get("llms_txt") or {}
    links = llms.get("links") or []
    return {
        "robots": {**robots, "rows": rows},
        "llms_txt": llms,
        "llms_links_broken": [link for link in links if link.get("outcome") == "broken"],
        "llms_links_checked": sum(1 for link in links if link.get("outcome") in ("ok", "broken")),
        "sample_urls": (access.get("sample") or {}).get("urls") or [],
    }


def sampled_pages(*, audit: Audit) -> list[SampledPage]:
    """Each sampled page with what every agent was served, side by side; a value unlike the one the agent's browser
    (its `baseline`: a phone's for Googlebot smartphone) got differs.
    Pages served differently come first."""
    compared = ((audit.bot_access or {}).get("sample") or {}).get("compared") or {}
    min_similarity = CheckSettings.for_audit(audit).threshold("bot-cloaking", "min_similarity_pct")
    by_url: dict[str, dict[str, AgentFetch]] = {}
    for fetch in agent_fetch_list(audit=audit):
        by_url.setdefault(fetch.url, {})[fetch.agent] = fetch
    pages = []
    for url, fetches in by_url.items():
        agents = [a for a in AGENTS if a.key in fetches]
        sampled = SampledPage(url, agents=[
            {"key": a.key, "label": a.label, "kind": a.kind, "baseline": agent_label(a.baseline) if a.baseline else ""}
            for a in agents
        ])  # fmt: skip
        for name, label in COMPARED:
            cells = []
            for agent in agents:
                value = getattr(fetches[agent.key], name)
                browser = fetches.get(agent.baseline) if agent.baseline else None
                differs = browser is not None and value != getattr(browser, name)
                if name == "robots" and browser is not None:  # "index, follow" says what no directive says
                    differs = robots_directive_set(value) != robots_directive_set(browser.robots)
                if name == "main_words" and agent.baseline:
                    similarity = (compared.get(url) or {}).get(agent.key, {}).get("similarity_pct")
                    differs = similarity is not None and similarity < min_similarity  # the cloaking check's rule
                    value = f"{value} ({similarity} % alike)" if similarity is not None else value
                cells.append({"value": value, "differs": differs})
                sampled.differs = sampled.differs or differs
            sampled.rows.append({"label": label, "cells": cells})
        refusals = [(compared.get(url) or {}).get(a.key, {}).get("refusal") or "" for a in agents]
        if any(refusals):
            sampled.rows.append({"label": "Refusal", "cells": [{"value": r, "differs": bool(r)} for r in refusals]})
        pages.append(sampled)
    pages.sort(key=lambda sampled: not sampled.differs)  # pages served differently first, else in URL order
    return pages


def agent_label(key: str) -> str:
    agent = AGENTS_BY_KEY.get(key)
    return agent.label if agent else key
