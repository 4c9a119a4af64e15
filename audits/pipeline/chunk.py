"""Stage 4, one crawl chunk: take the chunk for this run, claim up to a quota of URLs under its lease (renewed
by a heartbeat thread while the run works), fetch them politely in an adaptive thread window (rendering with
Chromium when the project asks), build page records, persist them in fenced batches, release what was not
started. Tasks and the in-process runner both call crawl_chunk_run."""

import logging
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connection

from audits.limits import (
    CHUNK_CLAIM_SLICE_MAX_URLS,
    CHUNK_CLAIM_SLICE_URLS,
    CHUNK_IDLE_GRACE_S,
    CHUNK_IDLE_POLL_S,
    CHUNK_IDLE_WATCH_S,
    CHUNK_SOFT_DEADLINE_S,
)
from audits.models import Audit
from audits.pipeline.page_record import PageRecord, build_page_record
from audits.pipeline.persist import BatchPersister
from audits.pipeline.politeness import Politeness, is_rate_limit_answer
from audits.pipeline.render import render_session_for
from audits.pipeline.scope import CrawlScope, audit_site_auth
from crawler.auth import SiteBasicAuth
from crawler.fetch import FetchResult, build_session, fetch
from scratchpad.selectors import frontier_others_working
from scratchpad.services import (
    ClaimedURL,
    chunk_abandon,
    chunk_begin,
    chunk_finish,
    chunk_renew,
    chunk_session_claim,
    frontier_claim,
    frontier_mark_started,
    frontier_release,
    frontier_start_allowed,
)

logger = logging.getLogger(__name__)

# A worker process builds one page at a time; its fetch threads still fetch side by side. Building is Python under
# the GIL, and numpy and lxml let the GIL go for a moment in every call, so eight threads building at once queued
# to take it back at each one: ~15 % more CPU a page than one at a time, and no sooner done (bench/README.md).
_BUILD_LOCK = threading.Lock()


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


class LeaseKeeper:
    """The run's heartbeat: a thread that renews the chunk and its URLs every CRAWL_LEASE_RENEW_EVERY_S.

    A worker that dies (SIGKILL, OOM) or stops (SIGSTOP) stops renewing, so its URLs and its chunk are free
    one lease later; `lost` turns true when the renewal finds the chunk taken over or the audit ended.
    """

    def __init__(self, *, audit_id, lease_key: str, generation: int):
        self.audit_id, self.lease_key, self.generation = audit_id, lease_key, generation
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-renew", daemon=True)

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            try:
                _bound_idle_transactions()
            except DatabaseError:
                logger.warning("could not bound idle transactions", exc_info=True)
            while not self._stop.wait(settings.CRAWL_LEASE_RENEW_EVERY_S):
                try:
                    running = Audit.objects.filter(id=self.audit_id, status=Audit.Status.RUNNING).exists()
                    if not running or not chunk_renew(
                        audit_id=self.audit_id,
                        lease_key=self.lease_key,
                        generation=self.generation,
                        lease_s=settings.CRAWL_LEASE_DURATION_S,
                    ):
                        self.lost = True
                        return
                except DatabaseError:  # an outage: keep trying; if it outlasts the lease, the chunk is taken over
                    logger.warning("lease renewal failed", exc_info=True, extra={"lease_key": self.lease_key})
        finally:
            connection.close()  # this thread's own connection


def _thread_session(options: FetchOptions):
    # One CrawlSession per fetch thread (and per set of options), reused across URLs so its connections are kept
    # alive: the connection a fetch holds is tracked in thread-local state.
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


def _bound_idle_transactions() -> None:
    """A run paused inside a batch's transaction (SIGSTOP, a debugger, a VM freeze) holds its URLs' row locks,
    and the run that takes its chunk over would wait on them for as long as the pause lasts. PostgreSQL ends
    such a session after a lease (nothing in a chunk's transactions waits on anything but the database), so
    its locks go with it and the paused run, when it resumes, finds its connection gone and writes nothing."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SET idle_in_transaction_session_timeout = {int(settings.CRAWL_LEASE_DURATION_S * 1000)}")


def crawl_chunk_run(*, audit_id, lease_key: str, quota: int, round_no: int) -> dict:
    """Take the chunk (of round `round_no`) for this run, claim up to `quota` URLs under its lease, fetch them
    politely in an adaptive window, persist in fenced batches. Stops starting fetches at the soft deadline (or when
    the crawl must stop, or the run lost its lease) and releases the rest. A chunk that is done is skipped, one held by
    another run too (`held_for_s` says when it is free): a duplicated or re-sent message does nothing twice.
    """
    audit = Audit.objects.select_related("project").filter(id=audit_id, status=Audit.Status.RUNNING).first()
    if audit is None:
        return {"skipped": "audit not running"}
    _bound_idle_transactions()
    take = chunk_begin(
        audit_id=audit_id,
        lease_key=lease_key,
        round_no=round_no,
        quota=quota,
        lease_s=settings.CRAWL_LEASE_DURATION_S,
    )
    generation = take.generation
    if generation is None and take.held_for_s:
        # Another run renewed it lately: alive (then this is a duplicate), or just killed (then this is the
        # message its worker gave back). The caller may try again once the lease runs out.
        return {"skipped": "chunk held by another run", "held_for_s": take.held_for_s}
    if generation is None:
        return {"skipped": "chunk done"}
    chunk_session_claim(lease_key=lease_key, generation=generation)
    try:
        with LeaseKeeper(audit_id=audit_id, lease_key=lease_key, generation=generation) as keeper:
            outcome = _chunk_crawl(audit, lease_key, generation, quota, keeper)
    except BaseException:
        try:  # hand the chunk back at once, so a retry of this task may take it again
            chunk_abandon(audit_id=audit_id, lease_key=lease_key, generation=generation)
        except Exception:  # the database may be what failed: the chunk is free one lease later anyway
            logger.warning("could not hand the chunk back", exc_info=True, extra={"lease_key": lease_key})
        raise
    outcome["done"] = chunk_finish(audit_id=audit_id, lease_key=lease_key, generation=generation)
    return outcome


def _chunk_crawl(audit: Audit, lease_key: str, generation: int, quota: int, keeper: LeaseKeeper) -> dict:
    audit_id = audit.id
    scope = CrawlScope.for_audit(audit)
    politeness = Politeness.for_audit(audit, crawl_delay_s=scope.robots.crawl_delay_s())
    if politeness.stopped_reason:
        return {"skipped": politeness.stopped_reason}
    options = FetchOptions.for_audit(audit)
    renderer = render_session_for(audit)
    persister = BatchPersister(
        audit_id=audit_id,
        lease_key=lease_key,
        lease_gen=generation,
        politeness=politeness,
        max_per_pattern=scope.max_urls_per_pattern,
        traps=scope.traps if scope.follow_links else None,
    )
    claims = _Claims(audit_id, scope, lease_key, generation, quota, persister)
    deadline = time.monotonic() + CHUNK_SOFT_DEADLINE_S
    unstarted: list[ClaimedURL] = []

    def window() -> int:
        return 1 if claims.careful else politeness.window

    def may_start(item: ClaimedURL) -> bool:
        if not claims.careful:
            return True
        starts = frontier_mark_started(
            audit_id=audit_id, lease_key=lease_key, frontier_id=item.id, lease_gen=generation
        )
        if frontier_start_allowed(starts):
            return True
        error = FetchResult(
            url=item.url,
            error_kind="worker_lost",
            error=f"the crawl worker died {starts - 1} times while fetching this URL",
        )
        persister.add(build_page_record(audit_id, scope, item, error))
        return False

    def must_stop() -> bool:
        return persister.stopped or keeper.lost or bool(politeness.stopped_reason)

    try:
        with ThreadPoolExecutor(max_workers=politeness.max_window, thread_name_prefix="fetch") as pool:
            running = {}

            def fill():
                while len(running) < window() and not must_stop():
                    if not claims.todo and not claims.more(deadline):
                        return
                    item = claims.todo.popleft()
                    if time.monotonic() >= deadline or not politeness.wait_turn(deadline):
                        unstarted.append(item)
                        continue
                    if may_start(item):
                        job = pool.submit(fetch_and_build, audit_id, scope, item, options, politeness, renderer)
                        running[job] = item

            claims.more(deadline, resume=True)
            fill()
            idle_since = None
            while True:
                while running:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in finished:
                        running.pop(future)
                        persister.add(future.result())
                    fill()
                # Nothing in flight and nothing claimable: other chunks of the round may still be fetching
                # pages whose links are this chunk's work. Wait a little for them (no barrier), then end.
                if must_stop() or claims.spent(deadline):
                    break
                now = time.monotonic()
                idle_since = idle_since or now
                if now - idle_since >= CHUNK_IDLE_GRACE_S:
                    break
                if not frontier_others_working(audit_id=audit_id, lease_key=lease_key):
                    # Nobody else is fetching: one last claim (not held back by the last empty one) takes what
                    # the others found last; none, and the crawl is over for this chunk at once.
                    claims.allow_claim_now()
                    fill()
                    if not running:
                        break
                    idle_since = None
                    continue
                time.sleep(CHUNK_IDLE_WATCH_S)
                fill()
                if running:
                    idle_since = None
        persister.flush()
    finally:
        if renderer is not None:
            renderer.close()
    # Left when the audit stopped running, the lease was lost or the site made the crawl stop.
    unstarted.extend(claims.todo)
    released = frontier_release(
        audit_id=audit_id, lease_key=lease_key, ids=[c.id for c in unstarted], lease_gen=generation
    )
    return {
        "claimed": claims.claimed,
        "claims": claims.slices,
        "finished": persister.finished,
        "released": released,
        "fenced": persister.fenced,
    }


class _Claims:
    """A run's claims, in slices up to its quota: before each claim the run persists what it has, so the URLs its
    pages found are claimable at once (by it or by another chunk of the round). A slice is CHUNK_CLAIM_SLICE_URLS,
    twice the last one after a claim that came back full (up to CHUNK_CLAIM_SLICE_MAX_URLS): a narrow frontier
    stays shared, a wide one is claimed, and its pages persisted, in fewer and larger transactions.

    URLs handed out before and never finished (suspect) put the run in careful mode for the rest of its life:
    the chunk that held them may have died because of one of them, so they are fetched one at a time, each
    start counted and committed before it happens, each page persisted alone, and a URL that kills its worker
    every time is singled out and recorded instead of taking others along."""

    def __init__(self, audit_id, scope: CrawlScope, lease_key: str, generation: int, quota: int, persister):
        self.audit_id, self.scope, self.lease_key, self.generation = audit_id, scope, lease_key, generation
        self.quota, self.persister = quota, persister
        self.todo: deque[ClaimedURL] = deque()
        self.claimed = 0
        self.slices = 0
        self.slice = CHUNK_CLAIM_SLICE_URLS  # what the next claim asks for
        self.careful = False
        self._empty_at: float | None = None  # when the last claim came back empty

    def spent(self, deadline: float) -> bool:
        return self.claimed >= self.quota or time.monotonic() >= deadline

    def allow_claim_now(self) -> None:
        """Let the next `more` claim even if the last claim came back empty a moment ago."""
        self._empty_at = None

    def more(self, deadline: float, *, resume: bool = False) -> bool:
        """Claim the next slice into `todo`; False when nothing came (or the quota or deadline is reached)."""
        if self.spent(deadline):
            return False
        now = time.monotonic()
        if self._empty_at is not None and not self.persister.batch and now - self._empty_at < CHUNK_IDLE_POLL_S:
            return False  # nothing new found since the last empty claim: do not ask again at once
        self.persister.flush()
        if self.persister.stopped:
            return False
        limit = min(self.slice, self.quota - self.claimed)
        items = frontier_claim(
            audit_id=self.audit_id,
            lease_key=self.lease_key,
            limit=limit,
            lease_s=settings.CRAWL_LEASE_DURATION_S,
            lease_gen=self.generation,
            resume=resume,
        )
        full = len(items) >= limit
        self.slice = min(2 * self.slice, CHUNK_CLAIM_SLICE_MAX_URLS) if full else CHUNK_CLAIM_SLICE_URLS
        self._empty_at = None if items else now
        if not items:
            return False
        self.claimed += len(items)
        self.slices += 1
        if not self.careful and any(c.suspect for c in items):
            self.careful = True
            self.persister.flush()
            self.persister.batch_size = 1
        for item in items:
            if item.exhausted:
                error = FetchResult(url=item.url, error_kind="worker_lost", error="crawl attempts exhausted")
                self.persister.add(build_page_record(self.audit_id, self.scope, item, error))
            else:
                self.todo.append(item)
        return bool(self.todo)


def fetch_and_build(
    audit_id, scope: CrawlScope, item: ClaimedURL, options: FetchOptions, politeness: Politeness, renderer=None
) -> PageRecord:
    """Fetch (waiting out 429/503 as the site asks), render if asked, parse one URL. Runs in a fetch
    thread and touches no database; the parse waits for the process's other fetch threads' (_BUILD_LOCK)."""
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
        with _BUILD_LOCK:
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
