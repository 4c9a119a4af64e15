"""Stage 4, one crawl chunk: claim up to a quota of URLs under a lease, fetch them politely in an adaptive
thread window (rendering with Chromium when the project asks), build page records, persist them in
batches, release what was not started. Tasks and the in-process runner both call crawl_chunk_run."""

import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings

from audits.limits import CHUNK_SOFT_DEADLINE_S
from audits.models import Audit
from audits.pipeline.page_record import PageRecord, build_page_record
from audits.pipeline.persist import BatchPersister
from audits.pipeline.politeness import Politeness, is_rate_limit_answer
from audits.pipeline.render import render_session_for
from audits.pipeline.scope import CrawlScope, audit_site_auth
from crawler.auth import SiteBasicAuth
from crawler.fetch import FetchResult, build_session, fetch
from scratchpad.services import (
    ClaimedURL,
    frontier_claim,
    frontier_mark_started,
    frontier_release,
    frontier_start_allowed,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FetchOptions:
    """How a chunk talks to the site: the project's user agent and basic auth, the SSRF policy."""

    user_agent: str | None = None
    auth: SiteBasicAuth | None = None
    allow_private: bool = False

    @classmethod
    def for_audit(cls, audit: Audit) -> "FetchOptions":
        return cls(
            user_agent=audit.config.get("user_agent") or None,
            auth=audit_site_auth(audit),
            allow_private=settings.ALLOW_PRIVATE_TARGETS,
        )


_thread_state = threading.local()


def _thread_session(options: FetchOptions):
    # requests.Session is not documented as thread-safe: one per fetch thread (and per set of options),
    # reused across URLs so connections are kept alive.
    sessions = getattr(_thread_state, "sessions", None)
    if sessions is None:
        sessions = _thread_state.sessions = {}
    session = sessions.get(options)
    if session is None:
        session = build_session(options.user_agent)
        session.auth = options.auth
        sessions.clear()  # one audit at a time per thread: drop another audit's pooled connections
        sessions[options] = session
    return session


def crawl_chunk_run(*, audit_id, lease_key: str, quota: int) -> dict:
    """Claim up to `quota` URLs under `lease_key`, fetch them politely in an adaptive window, persist in
    batches. Stops starting fetches at the soft deadline (or when the crawl must stop) and releases the rest.
    """
    audit = Audit.objects.select_related("project").filter(id=audit_id, status=Audit.Status.RUNNING).first()
    if audit is None:
        return {"skipped": "audit not running"}
    scope = CrawlScope.for_audit(audit)
    politeness = Politeness.for_audit(audit, crawl_delay_s=scope.robots.crawl_delay_s())
    if politeness.stopped_reason:
        return {"skipped": politeness.stopped_reason}
    options = FetchOptions.for_audit(audit)
    renderer = render_session_for(audit)
    claimed = frontier_claim(
        audit_id=audit_id, lease_key=lease_key, limit=quota, lease_s=settings.CRAWL_LEASE_DURATION_S
    )
    # URLs handed out before and never finished: the chunk that held them may have died because of one
    # of them. Fetch those one at a time, persisting each, and count each start before it happens, so
    # a URL that kills its worker every time is singled out and recorded instead of taking others along.
    careful = any(c.suspect for c in claimed)
    persister = BatchPersister(
        audit_id=audit_id,
        lease_key=lease_key,
        batch_size=1 if careful else None,
        politeness=politeness,
        max_per_pattern=scope.max_urls_per_pattern,
    )
    for item in claimed:
        if item.exhausted:
            error = FetchResult(url=item.url, error_kind="worker_lost", error="crawl attempts exhausted")
            persister.add(build_page_record(audit_id, scope, item, error))
    todo = iter([c for c in claimed if not c.exhausted])
    deadline = time.monotonic() + CHUNK_SOFT_DEADLINE_S
    unstarted: list[ClaimedURL] = []

    def window() -> int:
        return 1 if careful else politeness.window

    def may_start(item: ClaimedURL) -> bool:
        if not careful:
            return True
        starts = frontier_mark_started(audit_id=audit_id, lease_key=lease_key, frontier_id=item.id)
        if frontier_start_allowed(starts):
            return True
        error = FetchResult(
            url=item.url,
            error_kind="worker_lost",
            error=f"the crawl worker died {starts - 1} times while fetching this URL",
        )
        persister.add(build_page_record(audit_id, scope, item, error))
        return False

    try:
        with ThreadPoolExecutor(max_workers=politeness.max_window, thread_name_prefix="fetch") as pool:
            running = {}

            def fill():
                while len(running) < window() and not persister.stopped and not politeness.stopped_reason:
                    item = next(todo, None)
                    if item is None:
                        return
                    if time.monotonic() >= deadline or not politeness.wait_turn(deadline):
                        unstarted.append(item)
                        continue
                    if may_start(item):
                        job = pool.submit(fetch_and_build, audit_id, scope, item, options, politeness, renderer)
                        running[job] = item

            fill()
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    running.pop(future)
                    persister.add(future.result())
                fill()
        persister.flush()
    finally:
        if renderer is not None:
            renderer.close()
    unstarted.extend(todo)  # left when the audit stopped running or the site made the crawl stop
    released = frontier_release(audit_id=audit_id, lease_key=lease_key, ids=[c.id for c in unstarted])
    return {"claimed": len(claimed), "finished": persister.finished, "released": released}


def fetch_and_build(
    audit_id, scope: CrawlScope, item: ClaimedURL, options: FetchOptions, politeness: Politeness, renderer=None
) -> PageRecord:
    """Fetch (waiting out 429/503 as the site asks), render if asked, parse one URL. Runs in a fetch
    thread and touches no database."""
    try:
        session = _thread_session(options)
        seen = 0
        cooldown = 0.0
        while True:
            result = fetch(session, item.url, allow_private=options.allow_private)
            if not is_rate_limit_answer(result):
                break
            wait_s = politeness.backoff_s(result, seen)
            seen += 1
            if wait_s is None:
                break
            time.sleep(wait_s)
            cooldown += wait_s
        rendered_html = None
        if renderer is not None and result.is_html and result.status_code and 200 <= result.status_code < 300:
            rendered_html = renderer.render(item.url)
        record = build_page_record(audit_id, scope, item, result, rendered_html=rendered_html)
    except Exception as exc:  # a bug or a pathological page must cost one page, not the chunk
        logger.exception("building page record failed", extra={"url": item.url})
        result = FetchResult(url=item.url, error_kind="other", error=f"internal error: {exc!r}"[:500])
        record = build_page_record(audit_id, scope, item, result)
        seen, cooldown = 0, 0.0
    record.rate_limited = seen
    record.cooldown_s = cooldown
    record.final_rate_limited = is_rate_limit_answer(result)
    return record
