"""Stage of finalize: bot and AI access. What robots.txt lets each search and AI crawler fetch (the start page and
each top-level folder of the crawled indexable pages), /llms.txt (present, read against llmstxt.org, its links
checked), and a sample of pages (the start page and one per URL template, at most Project.bot_sample_max) fetched
as a desktop and a mobile browser, Googlebot smartphone, Bingbot and GPTBot. Stored in Audit.bot_access and
AgentFetch rows; the bot checks (audits.checks.bots) then judge them and their issues replace earlier ones. Idempotent.

The requests run before the write transaction (none is held open over the network) and use the crawler's fetch:
the same SSRF guard (ALLOW_PRIVATE_TARGETS), total deadline, pacing and basic auth (the project's own site only)
as the image pass. The sample is fetched as each agent whatever robots.txt says for it: the audit asks what the
server answers, robots.txt is reported apart.
"""

import time
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from audits.bulk import issues_insert
from audits.checks.bots import BOT_SITE_TYPES, bot_site_issues
from audits.checks.registry import CheckSettings
from audits.checks.site import judged_pages
from audits.fencing import FinalizeRun, finalize_atomic
from audits.limits import ISSUE_WRITE_BATCH
from audits.models import AgentFetch, Audit, Issue, Page, agent_fetch_id_for
from audits.pipeline.politeness import DiscoveryPacer
from audits.pipeline.scope import audit_site_auth
from crawler import limits as crawl_limits
from crawler.blocked import refusal_for
from crawler.bots import AGENTS, access_table, folders_of, llms_txt_parse, text_similarity_pct
from crawler.fetch import build_session, fetch
from crawler.parse import parse_html
from crawler.shapes import url_template
from crawler.urls import SiteMatcher, normalize

BOT_PASS_BUDGET_S = 120  # wall time the network part of the pass may take in finalize
LLMS_TXT_MAX_BYTES = 1024 * 1024  # an llms.txt is an index; the full text goes in llms-full.txt
LLMS_LINKS_CHECKED_MAX = 100  # distinct llms.txt links asked per audit; the rest are reported unchecked
FOLDER_PAGES_READ_MAX = 100_000  # crawled pages read to find the top-level folders
# Answers another host gives a bot it does not want: "could not verify", never "broken" (as the external pass).
BOT_PROTECTION_STATUS_CODES = frozenset({401, 403, 429, 999})


def bots_judge(audit: Audit, *, run: FinalizeRun | None = None) -> None:
    """Measure what the crawlers may fetch and are served, store it and replace the audit's bot issues (given
    finalize's `run`, only while it holds the audit: audits.fencing)."""
    check_settings = CheckSettings.for_audit(audit)
    enabled = any(check_settings.enabled(t) for t in BOT_SITE_TYPES)
    if enabled:
        bot_access, fetch_rows = bot_access_measure(audit)
    else:
        bot_access, fetch_rows = {}, []
    with finalize_atomic(run):
        Audit.objects.filter(id=audit.id).update(bot_access=bot_access)
        AgentFetch.objects.filter(audit_id=audit.id).delete()
        AgentFetch.objects.bulk_create(fetch_rows, batch_size=ISSUE_WRITE_BATCH)
        Issue.objects.filter(audit_id=audit.id, type__in=BOT_SITE_TYPES).delete()
        fetches = [_row_dict(row) for row in fetch_rows]
        sampled = {row.url for row in fetch_rows}
        page_ids = dict(Page.objects.filter(audit_id=audit.id, url__in=sampled).values_list("url", "id"))
        issues = bot_site_issues(audit.id, bot_access, fetches, check_settings, page_ids) if enabled else []
        issues_insert(issues)
    audit.bot_access = bot_access


def _row_dict(row: AgentFetch) -> dict:
    fields = ("url", "agent", "status_code", "final_url", "title", "canonical_url", "robots", "main_words", "error")
    return {name: getattr(row, name) for name in fields}


def bot_access_measure(audit: Audit) -> tuple[dict, list[AgentFetch]]:
    """(Audit.bot_access, unsaved AgentFetch rows) for the audit: asks the site, writes nothing."""
    site_url = audit.site_url or audit.start_url
    parts = urlsplit(site_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    indexable = (
        Page.objects.filter(audit_id=audit.id, is_indexable=True, status_code__gte=200, status_code__lt=300)
        .order_by("url")
        .values_list("url", flat=True)[:FOLDER_PAGES_READ_MAX]
    )
    robots = access_table(audit.robots_txt, site_url, folders_of(indexable.iterator()))
    robots.update({"url": origin + "/robots.txt", "status_code": audit.robots_status})
    pass_ = _Pass(audit)
    try:
        llms = _llms_txt(audit, pass_, origin)
        sample, rows = _sample(audit, pass_, site_url)
    finally:
        pass_.close()
    access = {"robots": robots, "llms_txt": llms, "sample": sample, "measured_at": timezone.now().isoformat()}
    return access, rows


class _Pass:
    """The pass's sessions (one per user agent), pacing and time budget."""

    def __init__(self, audit: Audit):
        self.pace = DiscoveryPacer(audit)
        self.pace.use_crawl_delay((audit.discovery or {}).get("crawl_delay_s"))
        # The crawl's last request was at most now: counted as one, so the pass's first request keeps the spacing.
        self.pace()
        self.auth = audit_site_auth(audit)
        self.stop_at = time.monotonic() + BOT_PASS_BUDGET_S
        self._sessions: dict[str | None, object] = {}
        self.audit_user_agent = (audit.config or {}).get("user_agent") or None

    def session(self, user_agent: str | None):
        if user_agent not in self._sessions:
            session = build_session(user_agent)
            session.auth = self.auth
            self._sessions[user_agent] = session
        return self._sessions[user_agent]

    def over_budget(self) -> bool:
        return time.monotonic() > self.stop_at

    def get(self, url: str, *, user_agent: str | None, read_body: str = "html", max_bytes: int | None = None):
        """fetch() following redirects: (last result, its URL, hops)."""
        session = self.session(user_agent)
        seen = {url}
        hops = 0
        while True:
            self.pace()
            result = fetch(session, url, read_body=read_body, max_bytes=max_bytes,
                           allow_private=settings.ALLOW_PRIVATE_TARGETS)  # fmt: skip
            self.pace.answered()
            if not result.redirect_url or result.error_kind or hops >= crawl_limits.MAX_REDIRECT_HOPS:
                return result, url, hops
            target = normalize(result.redirect_url) or result.redirect_url
            if target in seen:
                return result, url, hops
            seen.add(target)
            url, hops = target, hops + 1

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()


# --- llms.txt -----------------------------------------------------------------------------------------------


def _looks_like_html(result) -> bool:
    head = result.body[:512].lstrip().lower()
    return result.is_html or head.startswith((b"<!doctype html", b"<html"))


def _llms_txt(audit: Audit, pass_: _Pass, origin: str) -> dict:
    url = origin + "/llms.txt"
    result, final_url, _hops = pass_.get(url, user_agent=pass_.audit_user_agent, read_body="always",
                                         max_bytes=LLMS_TXT_MAX_BYTES)  # fmt: skip
    out: dict = {"url": url, "status_code": result.status_code, "present": False, "final_url": final_url}
    if result.error_kind:
        out["error"] = (result.error or result.error_kind)[:200]
        return out
    if result.status_code is None or not 200 <= result.status_code < 300:
        return out
    if _looks_like_html(result):
        out["note"] = "answered with an HTML page (a catch-all), not a Markdown file"
        return out
    text = result.body.decode(result.charset or "utf-8", "replace")
    parsed = llms_txt_parse(text, final_url)
    out.update(parsed.as_dict())
    out["present"] = True
    out["links"] = _llms_links(audit, pass_, parsed.sections)
    return out


def _llms_links(audit: Audit, pass_: _Pass, sections: list[dict]) -> list[dict]:
    """Each distinct link of the file, with its answer: internal ones read from the crawl when crawled."""
    site = SiteMatcher(audit.site_url or audit.start_url, audit.start_url)
    links: dict[str, dict] = {}
    for section in sections:
        for link in section["links"]:
            url = normalize(link["url"]) or link["url"]
            links.setdefault(url, {"url": url, "name": link["name"], "section": section["name"]})
    crawled = dict(Page.objects.filter(audit_id=audit.id, url__in=list(links)).values_list("url", "status_code"))
    asked = 0
    for url, link in links.items():
        internal = site.matches(url)
        if internal and url in crawled:
            status = crawled[url]
            link.update(status_code=status, outcome=_link_outcome(status, "", internal=True), source="crawl")
            continue
        if asked >= LLMS_LINKS_CHECKED_MAX or pass_.over_budget():
            link["outcome"] = "unchecked"
            continue
        asked += 1
        result, _final, _hops = pass_.get(url, user_agent=pass_.audit_user_agent, read_body="never")
        error = (result.error or result.error_kind or "")[:200] if result.error_kind else ""
        link.update(status_code=result.status_code, error=error, source="asked",
                    outcome=_link_outcome(result.status_code, error, internal=internal))  # fmt: skip
    return list(links.values())


def _link_outcome(status: int | None, error: str, *, internal: bool) -> str:
    if error or status is None:
        return "broken"
    if not internal and status in BOT_PROTECTION_STATUS_CODES:
        return "unverified"
    return "broken" if status >= 400 else "ok"


# --- the sample ---------------------------------------------------------------------------------------------


def sample_urls(audit: Audit, site_url: str) -> list[str]:
    """The start page, then the first page (shallowest, then by URL) of each URL template, at most
    Project.bot_sample_max."""
    cap = max(audit.project.bot_sample_max, 0)
    start = normalize(site_url) or site_url
    urls = [start] if cap else []
    templates = {url_template(start)}
    pages = (
        judged_pages(audit.id)
        .filter(status_code=200, fetch_class=Page.FetchClass.OK, content_type__startswith="text/html")
        .order_by("depth", "url")
        .values_list("url", flat=True)
    )
    for url in pages.iterator():
        if len(urls) >= cap:
            break
        template = url_template(url)
        if template not in templates:
            templates.add(template)
            urls.append(url)
    return urls


def _sample(audit: Audit, pass_: _Pass, site_url: str) -> tuple[dict, list[AgentFetch]]:
    urls = sample_urls(audit, site_url)
    rows: list[AgentFetch] = []
    compared: dict[str, dict] = {}
    skipped: list[str] = []
    for url in urls:
        if pass_.over_budget():
            skipped.append(url)
            continue
        texts: dict[str, str] = {}
        for agent in AGENTS:
            row, main_text, refusal, hops = _fetch_as(audit, pass_, url, agent.key, agent.user_agent)
            rows.append(row)
            texts[agent.key] = main_text
            compared.setdefault(url, {})[agent.key] = {"refusal": refusal, "redirects": hops}
        for agent in AGENTS:
            if agent.baseline:
                similarity = text_similarity_pct(texts[agent.key], texts[agent.baseline])
                compared[url][agent.key]["similarity_pct"] = similarity
    return {"urls": urls, "agents": [a.key for a in AGENTS], "compared": compared, "skipped": skipped}, rows


def _fetch_as(audit: Audit, pass_: _Pass, url: str, key: str, user_agent: str):
    result, final_url, hops = pass_.get(url, user_agent=user_agent)
    data = parse_html(result.body, final_url, content_type_charset=result.charset) if result.body else None
    refusal = refusal_for(result, data)
    robots = ", ".join(
        part for part in ((data.meta_robots if data else ""), result.headers.get("x-robots-tag", "")) if part
    )
    row = AgentFetch(
        id=agent_fetch_id_for(audit.id, url, key),
        audit_id=audit.id,
        url=url,
        agent=key,
        status_code=result.status_code,
        final_url=final_url,
        title=(data.titles[0] if data and data.titles else "")[:1000],
        canonical_url=(data.canonical_url or "") if data else "",
        robots=robots[:500],
        main_text_hash=data.main_text_hash if data else "",
        main_words=data.main_word_count if data else 0,
        error=((result.error or result.error_kind or "")[:500]) if result.error_kind else "",
        fetched_at=timezone.now(),
    )
    return row, (data.main_text if data else ""), (refusal.reason if refusal else ""), hops
