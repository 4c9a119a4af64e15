"""Stage of finalize: the external link pass. Every distinct external http(s) target the audit's judged pages link to
is asked once (HEAD; GET with the body capped where HEAD is refused or unreliable; redirects followed by hand), at
most `external_links_max` targets (the most linked first) within `external_links_budget_s`, a few requests at a time
per host. What each answered is stored in its ExternalLink row as soon as it is known, so a finalize run again after
a worker died asks only the targets still unchecked; the external link checks (audits.checks.external) then turn the
rows into issues, replacing earlier ones. Idempotent.

The requests run before the issues' transaction and use the crawler's fetch: the same SSRF guard
(ALLOW_PRIVATE_TARGETS: a private address is not asked, the outcome says "refused") and the audit's user agent, but
never the project's basic auth (those credentials are for the project's own site). Answers typical of bot protection
(403, 429, 999, a challenge page) are "unverified", never broken.
"""

import logging
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection
from django.utils import timezone

from audits.bulk import issues_insert
from audits.checks.external import (
    EXTERNAL_SITE_TYPES,
    db_id,
    external_link_issues,
    judged_external_edges_sql,
)
from audits.checks.registry import CheckSettings
from audits.fencing import FinalizeRun, finalize_atomic
from audits.limits import EXTERNAL_LINKS_BUDGET_MAX_S, FINALIZE_AFTER_EXTERNAL_RESERVE_S
from audits.models import ExternalLink, Issue, external_link_id_for
from crawler import limits as crawler_limits
from crawler.fetch import build_session, fetch

logger = logging.getLogger(__name__)
Outcome = ExternalLink.Outcome

EXTERNAL_HOST_CONCURRENCY = 2  # requests in flight to one external host at a time
EXTERNAL_THREADS_MAX = 8  # requests in flight in all
EXTERNAL_REQUEST_TIMEOUT_S = 10.0  # one request: connect, headers and the capped body
EXTERNAL_REDIRECT_HOPS_MAX = crawler_limits.MAX_REDIRECT_HOPS  # redirects followed from one target
EXTERNAL_GET_BODY_MAX_BYTES = 64 * 1024  # read of a GET's body: enough to recognise a challenge page
# The pass never takes more than this, whatever the project or an old audit's config says: finalize (audits.tasks,
# at least STEP_TIME_LIMIT_S = 600 s) also runs the depth pass, the site checks, the image pass (up to 120 s) and
# the counts.
EXTERNAL_PASS_BUDGET_MAX_S = EXTERNAL_LINKS_BUDGET_MAX_S
EXTERNAL_WAIT_STEP_S = 0.5  # how often the scheduler looks at the budget while requests are in flight
EXTERNAL_ABANDON_GRACE_S = 5.0  # after the budget, how long requests still in flight are waited for
TARGET_WRITE_BATCH = 2000  # ExternalLink rows upserted per statement
UNCHECKED_EXAMPLES = 5  # unchecked targets named in the site-wide issue
ERROR_MAX_CHARS = 500
URL_MAX_CHARS = 2048

# A HEAD answered with one of these is taken as it is (gone whatever the method; a rate limit or LinkedIn's 999 is
# not asked twice); any other 4xx/5xx is asked again with GET (servers that refuse or mishandle HEAD answer 400,
# 403, 405, 501, even 500; a bot wall's challenge is only seen in a body).
HEAD_TRUSTED_ERROR_STATUSES = frozenset({404, 410, 429, 999})
# Answers hosts that refuse crawlers give (LinkedIn's 999): the link may well work for a person.
BOT_WALL_STATUSES = frozenset({403, 429, 999})
CHALLENGE_BODY_MARKERS = (
    b"just a moment...",
    b"attention required! | cloudflare",
    b"cf-browser-verification",
    b"challenge-platform",
    b"_incapsula_resource",
    b"captcha-delivery.com",  # DataDome
    b"px-captcha",  # PerimeterX
    b"verify you are human",
)
ERROR_OUTCOMES = {
    "dns": Outcome.DNS_ERROR,
    "tls": Outcome.TLS_ERROR,
    "timeout": Outcome.TIMEOUT,
    "connect": Outcome.CONNECTION_ERROR,
    "private_address": Outcome.REFUSED,
    "invalid_url": Outcome.CONNECTION_ERROR,
    "other": Outcome.CONNECTION_ERROR,
}


@dataclass
class Answer:
    """What asking one target came to (its ExternalLink fields)."""

    outcome: str
    status_code: int | None = None
    method: str = ""
    final_url: str = ""
    redirect_hops: int = 0
    error: str = ""
    response_time_ms: int | None = None


@dataclass
class PassSettings:
    enabled: bool
    max_targets: int
    budget_s: float  # what this run may take: the project's, cut to what finalize's time limit leaves
    user_agent: str | None
    budget_set_s: int = 0  # the project's, as said in the site-wide issue


@dataclass
class _Hop:
    """One URL's answer, shared by every chain that passes through it."""

    status_code: int | None = None
    redirect_url: str | None = None
    method: str = ""
    error_kind: str | None = None
    error: str = ""
    unverified: str = ""  # why the answer looks like a bot wall, or ""
    response_time_ms: int | None = None
    done: threading.Event = field(default_factory=threading.Event)


def pass_settings(audit) -> PassSettings:
    """The project's switch, cap and budget as the audit's config snapshotted them (the project's, for an audit
    started before they were snapshotted)."""
    config = audit.config or {}
    project = audit.project

    def option(key):
        value = config.get(key)
        return getattr(project, key) if value is None else value

    return PassSettings(
        enabled=bool(option("check_external_links")),
        max_targets=max(0, int(option("external_links_max"))),
        budget_s=float(min(max(0, int(option("external_links_budget_s"))), EXTERNAL_PASS_BUDGET_MAX_S)),
        user_agent=config.get("user_agent") or None,
        budget_set_s=int(option("external_links_budget_s")),
    )


def external_links_judge(audit, *, finalize_deadline: float | None = None, run: FinalizeRun | None = None) -> None:
    """Ask the audit's external link targets not asked yet (when the project checks them) and replace the audit's
    external link issues with what the checks make of the answers. `finalize_deadline` (time.monotonic() at which
    the finalize task's time limit ends): the budget is cut to what it leaves after FINALIZE_AFTER_EXTERNAL_RESERVE_S.
    Given finalize's `run`, every write (targets, each answer, the issues) is fenced on it (audits.fencing): an answer
    is kept for the next run, so a run cut off from the network must not store its "no answer"s."""
    options = pass_settings(audit)
    if finalize_deadline is not None:
        left_s = finalize_deadline - FINALIZE_AFTER_EXTERNAL_RESERVE_S - time.monotonic()
        options.budget_s = max(0.0, min(options.budget_s, left_s))
    unchecked = None
    if options.enabled:
        targets_store(audit.id, run=run)
        unchecked = targets_ask(audit, options, run=run)
    check_settings = CheckSettings.for_audit(audit)
    with finalize_atomic(run):
        Issue.objects.filter(audit_id=audit.id, type__in=EXTERNAL_SITE_TYPES).delete()
        if options.enabled:
            issues = external_link_issues(audit.id, check_settings, unchecked=unchecked)
            issues_insert(issues)


def targets_store(audit_id, *, run: FinalizeRun | None = None) -> int:
    """One ExternalLink row per distinct external target of the judged pages (unchecked when new), each with the
    number of pages linking to it, written a batch at a time as the grouped edges stream in. Rows already asked keep
    their answer. Returns the number of targets."""
    sql = f"""
        SELECT e.target_url, COUNT(DISTINCT e.source_page_id)
        {judged_external_edges_sql()}
        GROUP BY e.target_url
    """
    stored = 0
    with finalize_atomic(run), connection.chunked_cursor() as cursor:  # a server-side cursor lives in a transaction
        cursor.execute(sql, [db_id(audit_id)])
        while counts := cursor.fetchmany(TARGET_WRITE_BATCH):
            rows = [
                ExternalLink(
                    id=external_link_id_for(audit_id, url),
                    audit_id=audit_id,
                    url=url,
                    host=(urlsplit(url).hostname or "")[:255],
                    linking_pages=pages,
                )
                for url, pages in counts
                if len(url) <= URL_MAX_CHARS
            ]
            ExternalLink.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["audit", "url"], update_fields=["linking_pages"]
            )
            stored += len(rows)
    return stored


def targets_ask(audit, options: PassSettings, *, run: FinalizeRun | None = None) -> dict:
    """Ask the unchecked targets within the cap (the most linked first) and the budget, writing each answer as it
    comes. Returns what was left unchecked, for the site-wide issue."""
    links = ExternalLink.objects.filter(audit_id=audit.id)
    ranked = links.order_by("-linking_pages", "url")
    within_cap = list(ranked.values_list("id", "url", "host", "checked_at")[: options.max_targets])
    todo = [(link_id, url, host) for link_id, url, host, checked_at in within_cap if checked_at is None]
    answered = _ask_all(audit, todo, options, run) if todo else 0
    targets = links.count()
    left = links.filter(checked_at__isnull=True)
    left_count = left.count()
    out_of_time = len(todo) - answered
    return {
        "targets": targets,
        "checked": targets - left_count,
        "beyond_cap": left_count - out_of_time,
        "out_of_time": out_of_time,
        "external_links_max": options.max_targets,
        "external_links_budget_s": options.budget_set_s,
        "examples": list(left.order_by("-linking_pages", "url").values_list("url", flat=True)[:UNCHECKED_EXAMPLES]),
    }


def _ask_all(audit, todo: list[tuple], options: PassSettings, run: FinalizeRun | None) -> int:
    """The scheduler: at most EXTERNAL_HOST_CONCURRENCY targets of one host and EXTERNAL_THREADS_MAX in all in
    flight; nothing new is started once the budget is spent, and every request's deadline ends with it. Returns how
    many answers it stored."""
    stop_at = time.monotonic() + options.budget_s
    asker = _Asker(options.user_agent, stop_at)
    asker.known(ExternalLink.objects.filter(audit_id=audit.id, checked_at__isnull=False, redirect_hops=0))
    by_host: dict[str, deque] = {}
    for item in todo:
        by_host.setdefault(item[2], deque()).append(item)
    in_flight_by_host: dict[str, int] = {}
    running: dict = {}
    asked = 0
    pool = ThreadPoolExecutor(max_workers=EXTERNAL_THREADS_MAX, thread_name_prefix="external-link")

    def fill() -> None:
        added = True
        while added and len(running) < EXTERNAL_THREADS_MAX:
            added = False
            for host in list(by_host):
                if len(running) >= EXTERNAL_THREADS_MAX:
                    return
                if in_flight_by_host.get(host, 0) >= EXTERNAL_HOST_CONCURRENCY:
                    continue
                link_id, url, _host = by_host[host].popleft()
                if not by_host[host]:
                    del by_host[host]
                in_flight_by_host[host] = in_flight_by_host.get(host, 0) + 1
                running[pool.submit(asker.ask, url)] = (link_id, url, host)
                added = True

    try:
        while by_host or running:
            now = time.monotonic()
            if now < stop_at:
                fill()
            elif not running or now > stop_at + EXTERNAL_ABANDON_GRACE_S:
                # Past the budget every request's deadline has ended; a thread still busy is stuck where no deadline
                # reaches (a host name lookup): left behind, its target unchecked, so finalize keeps its time limit.
                break
            done, _ = wait(list(running), timeout=EXTERNAL_WAIT_STEP_S, return_when=FIRST_COMPLETED)
            for future in done:
                link_id, url, host = running.pop(future)
                in_flight_by_host[host] -= 1
                answer = future.result()
                if answer is not None:  # None: cut by the budget, left unchecked
                    with finalize_atomic(run):
                        _answer_store(link_id, answer)
                    asked += 1
    finally:
        pool.shutdown(wait=not running, cancel_futures=True)
        if not running:
            asker.close()
    logger.info("external links asked", extra={"audit_id": str(audit.id), "asked": asked, "todo": len(todo)})
    return asked


def _answer_store(link_id, answer: Answer) -> None:
    ExternalLink.objects.filter(id=link_id).update(
        outcome=answer.outcome,
        status_code=answer.status_code,
        method=answer.method,
        final_url=answer.final_url[:URL_MAX_CHARS],
        redirect_hops=min(answer.redirect_hops, 32767),
        error=answer.error[:ERROR_MAX_CHARS],
        response_time_ms=answer.response_time_ms,
        checked_at=timezone.now(),
    )


class _Asker:
    """Asks targets from the pool's threads: a session per thread (the audit's user agent, no credentials), a
    per-host gate on every hop (a redirect to another host waits its turn there too), and each URL's answer kept
    for the pass so a URL two chains pass through is asked once."""

    def __init__(self, user_agent: str | None, stop_at: float):
        self.user_agent = user_agent
        self.stop_at = stop_at
        self._local = threading.local()
        self._sessions: list = []
        self._lock = threading.Lock()
        self._hops: dict[str, _Hop] = {}
        self._gates: dict[str, threading.BoundedSemaphore] = {}

    def known(self, links) -> None:
        """Answers an earlier run stored (ExternalLink rows asked without a redirect): a chain of this run passing
        through one of those URLs reuses it instead of asking again."""
        for link in links.iterator():
            kind, _, message = link.error.partition(": ")
            if link.status_code is None and kind not in ERROR_OUTCOMES:
                continue
            hop = _Hop(
                status_code=link.status_code,
                method=link.method or "HEAD",
                error_kind=None if link.status_code is not None else kind,
                error=message if link.status_code is None else link.error,
                unverified=link.error if link.outcome == Outcome.UNVERIFIED else "",
                response_time_ms=link.response_time_ms,
            )
            hop.done.set()
            self._hops[link.url] = hop

    def close(self) -> None:
        for session in self._sessions:
            session.close()

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = build_session(self.user_agent)
            session.auth = None  # never the project's credentials: these are other sites
            with self._lock:
                self._sessions.append(session)
        return session

    def _gate(self, url: str) -> threading.BoundedSemaphore:
        host = urlsplit(url).hostname or ""
        with self._lock:
            return self._gates.setdefault(host, threading.BoundedSemaphore(EXTERNAL_HOST_CONCURRENCY))

    def ask(self, url: str) -> Answer | None:
        """Follow `url`'s redirects to an answer; None when the budget ran out before it."""
        seen = {url}
        current = url
        hops = 0
        started = time.monotonic()
        while True:
            hop = self._hop(current)
            if hop is None:
                return None
            elapsed_ms = int((time.monotonic() - started) * 1000)
            answer = Answer(
                outcome=Outcome.OK,
                status_code=hop.status_code,
                method=hop.method,
                final_url=current if hops else "",
                redirect_hops=hops,
                error=hop.error,
                response_time_ms=hop.response_time_ms if not hops else elapsed_ms,
            )
            if hop.error_kind:
                answer.outcome = ERROR_OUTCOMES.get(hop.error_kind, Outcome.CONNECTION_ERROR)
                answer.error = f"{hop.error_kind}: {hop.error}"
                return answer
            if hop.unverified:
                answer.outcome, answer.error = Outcome.UNVERIFIED, hop.unverified
                return answer
            status = hop.status_code or 0
            if 300 <= status < 400 and hop.redirect_url:
                if hop.redirect_url in seen:
                    answer.outcome, answer.final_url = Outcome.REDIRECT_LOOP, hop.redirect_url
                    answer.redirect_hops, answer.error = hops + 1, "the chain comes back to a URL already in it"
                    return answer
                if hops + 1 > EXTERNAL_REDIRECT_HOPS_MAX:
                    answer.outcome, answer.final_url = Outcome.TOO_MANY_REDIRECTS, hop.redirect_url
                    answer.error = f"more than {EXTERNAL_REDIRECT_HOPS_MAX} redirects"
                    return answer
                if not hop.redirect_url.startswith(("http://", "https://")):
                    answer.outcome, answer.final_url = Outcome.REDIRECT_BROKEN, hop.redirect_url
                    answer.redirect_hops, answer.error = hops + 1, "redirects to a URL that is not http(s)"
                    return answer
                seen.add(hop.redirect_url)
                current = hop.redirect_url
                hops += 1
                continue
            if 300 <= status < 400:
                answer.outcome, answer.error = Outcome.REDIRECT_BROKEN, "a redirect without a Location"
            elif status >= 400:
                failed = Outcome.CLIENT_ERROR if status < 500 else Outcome.SERVER_ERROR
                answer.outcome = Outcome.REDIRECT_BROKEN if hops else failed
            else:
                answer.outcome = Outcome.REDIRECTED if hops else Outcome.OK
            return answer

    def _hop(self, url: str) -> _Hop | None:
        """`url`'s answer: asked now, or the one another chain got (waited for when it is being asked)."""
        with self._lock:
            hop = self._hops.get(url)
            mine = hop is None
            if mine:
                hop = self._hops[url] = _Hop()
        if not mine:
            remaining = self.stop_at - time.monotonic()
            if remaining <= 0 or not hop.done.wait(remaining):
                return None
            return hop if hop.method else None
        try:
            asked = self._request_all(url, hop)
        finally:
            hop.done.set()
        if not asked:
            with self._lock:
                self._hops.pop(url, None)  # cut by the budget: not an answer anyone may reuse
            return None
        return hop

    def _request_all(self, url: str, hop: _Hop) -> bool:
        """HEAD, then GET when HEAD's answer is not to be trusted. False when the budget ran out first."""
        method = "HEAD"
        result = self._request(url, method)
        if result is None:
            return False
        if _head_unreliable(result):
            method = "GET"
            result = self._request(url, method)
            if result is None:
                return False
        hop.method = method
        hop.status_code = result.status_code
        hop.redirect_url = result.redirect_url
        hop.error_kind = result.error_kind
        hop.error = result.error or ""
        hop.response_time_ms = result.response_time_ms
        if result.error_kind is None and result.status_code is not None:
            hop.unverified = _bot_wall(result)
        return True

    def _request(self, url: str, method: str):
        remaining = self.stop_at - time.monotonic()
        if remaining <= 0:
            return None
        gate = self._gate(url)
        if not gate.acquire(timeout=remaining):
            return None
        try:
            deadline = min(EXTERNAL_REQUEST_TIMEOUT_S, self.stop_at - time.monotonic())
            if deadline <= 0:
                return None
            result = fetch(
                self._session(),
                url,
                method=method,
                read_body="always" if method == "GET" else "never",
                max_bytes=EXTERNAL_GET_BODY_MAX_BYTES,
                allow_private=settings.ALLOW_PRIVATE_TARGETS,
                deadline_s=deadline,
            )
        finally:
            gate.release()
        if result.error_kind == "timeout" and time.monotonic() >= self.stop_at:
            return None  # cut by the budget, not the target's own slowness
        return result


def _head_unreliable(result) -> bool:
    """A HEAD answer to ask again with GET: an error status not taken as it is that is not already a bot wall's
    challenge (servers refuse or mishandle HEAD with 400, 403, 405, 501, even 500), or a connection dropped
    without an answer (some servers close on HEAD)."""
    if result.error_kind in ("connect", "other"):
        return True
    status = result.status_code
    if result.error_kind is not None or status is None or status < 400:
        return False
    return status not in HEAD_TRUSTED_ERROR_STATUSES and not _challenge(result)


def _challenge(result) -> str:
    """Why the answer is a bot wall's challenge, or ""."""
    headers = result.headers
    if headers.get("cf-mitigated", "").strip().lower() == "challenge":
        return "a bot-protection challenge (cf-mitigated: challenge)"
    if "x-datadome" in headers or headers.get("x-sucuri-block"):
        return "a bot-protection block (bot-protection header)"
    head = result.body[:EXTERNAL_GET_BODY_MAX_BYTES].lower()
    for marker in CHALLENGE_BODY_MARKERS:
        if marker in head:
            return f'a bot-protection challenge page ("{marker.decode()}")'
    return ""


def _bot_wall(result) -> str:
    """Why an answer says nothing of whether the link works for a person (a bot wall), or ""."""
    status = result.status_code or 0
    if status < 400:
        return ""
    challenge = _challenge(result)
    if challenge:
        return f"{status}: {challenge}"
    if status in BOT_WALL_STATUSES:
        return f"{status}: the host refuses automated clients"
    return ""
