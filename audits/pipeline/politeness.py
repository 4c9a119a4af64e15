"""Crawl like a good citizen: an adaptive window, a minimum interval between requests, Crawl-delay,
429/503 waited out, and a stop when the site keeps rate-limiting.

The state lives in the audit's scratchpad.Throttle row so it holds across chunks, workers and restarts.
One Politeness object serves one chunk: the chunk's main thread asks it for a turn before each fetch
and reports each finished page; fetch threads ask it how long to wait after a 429/503.
"""

import email.utils
import logging
import threading
import time
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audits.models import Audit
from scratchpad.models import Throttle

logger = logging.getLogger(__name__)

WINDOW_START = 2
WINDOW_GROW = 2  # added after a healthy batch; halved after a troubled one
SLOW_FETCH_MS = 10_000  # a page this slow counts against the batch
TROUBLED_SHARE = 1 / 3  # this share of a batch not ok, slow or rate-limited halves the window
MAX_RETRIES_PER_URL = 3  # 429/503 answers waited out per URL
MAX_CONSECUTIVE_RATE_LIMITED = 3  # more pages in a row still rate-limited after their retries stops the crawl
MAX_COOLDOWN_TOTAL_S = 30 * 60  # total time spent waiting out 429/503 before the crawl stops
RETRY_AFTER_DEFAULT_S = 2.0  # a 429 without Retry-After: wait this, doubled per retry (2, 4, 8 s)
RETRY_AFTER_MAX_S = 60.0  # longer asks are not waited out inside a chunk: the URL is recorded as is
CRAWL_DELAY_MAX_S = 30.0  # robots.txt Crawl-delay honoured up to this
# Slots are spaced a little wider than asked (20 ms + 5 %), so thread start-up and network jitter
# cannot bring two arrivals at the site closer than the interval.
INTERVAL_MARGIN_S = 0.02
INTERVAL_MARGIN_SHARE = 0.05


def _spacing_s(interval_s: float) -> float:
    return interval_s * (1 + INTERVAL_MARGIN_SHARE) + INTERVAL_MARGIN_S


def is_rate_limit_answer(result) -> bool:
    """429, or 503 with Retry-After: the site asks the crawler to slow down."""
    return result.status_code == 429 or (result.status_code == 503 and "retry-after" in result.headers)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (now or time.time()))


class Politeness:
    def __init__(self, audit: Audit, *, interval_s: float, max_window: int):
        self.audit_id = audit.id
        self.interval_s = max(0.0, interval_s)
        self.max_window = max(1, max_window)
        throttle, _ = Throttle.objects.get_or_create(audit=audit, defaults={"window": min(WINDOW_START, max_window)})
        self.window = max(1, min(throttle.window, self.max_window))
        self.stopped_reason = throttle.stopped_reason
        self._streak = throttle.consecutive_rate_limited > 0
        self._lock = threading.Lock()
        self._pause_until = 0.0  # monotonic; set by a 429/503 seen in this chunk

    @classmethod
    def for_audit(cls, audit: Audit, *, crawl_delay_s: float | None) -> "Politeness":
        config = audit.config or {}
        interval = max(config.get("min_request_interval_ms", 0) / 1000.0, min(crawl_delay_s or 0.0, CRAWL_DELAY_MAX_S))
        return cls(audit, interval_s=interval, max_window=int(config.get("max_concurrency", 8)))

    # --- main thread ----------------------------------------------------------------------------

    def wait_turn(self, deadline: float) -> bool:
        """Block until the next request may start; False when that would be past `deadline` (monotonic)."""
        start_at = self._pause_until
        if self.interval_s > 0:
            start_at = max(start_at, self._reserve_slot())
        delay = start_at - time.monotonic()
        if delay > 0:
            if time.monotonic() + delay > deadline:
                return False
            time.sleep(delay)
        return True

    def _reserve_slot(self) -> float:
        """Take the next request slot of the audit (shared by every chunk); returns its monotonic time."""
        with transaction.atomic():
            throttle = Throttle.objects.select_for_update().get(audit_id=self.audit_id)
            now = timezone.now()
            slot = max(now, throttle.next_request_at or now)
            throttle.next_request_at = slot + timedelta(seconds=_spacing_s(self.interval_s))
            throttle.save(update_fields=["next_request_at", "updated_at"])
        return time.monotonic() + (slot - now).total_seconds()

    def end_batch(self, records) -> None:
        """Adapt the window to how the last batch went, and keep it for the next chunks."""
        if not records:
            return
        troubled = sum(1 for r in records if _troubled(r))
        if troubled >= len(records) * TROUBLED_SHARE:
            window = max(1, self.window // 2)
        else:
            window = min(self.max_window, self.window + WINDOW_GROW)
        if window != self.window:
            self.window = window
            Throttle.objects.filter(audit_id=self.audit_id).update(window=window)

    def record_rate_limits(self, record) -> None:
        """Account for the 429/503 answers a page needed; stop the crawl past the limits."""
        seen, cooldown_s, final_limited = record.rate_limited, record.cooldown_s, record.final_rate_limited
        if not seen and not final_limited:
            if self._streak:  # an answer got through: the run of rate-limited answers is broken
                Throttle.objects.filter(audit_id=self.audit_id).update(consecutive_rate_limited=0)
                self._streak = False
            return
        # A page whose last answer (after its retries) was still "slow down" extends the run; one that
        # got through breaks it.
        self._streak = final_limited
        Throttle.objects.filter(audit_id=self.audit_id).update(
            cooldown_total_s=F("cooldown_total_s") + cooldown_s,
            consecutive_rate_limited=(F("consecutive_rate_limited") + 1) if final_limited else 0,
        )
        throttle = Throttle.objects.get(audit_id=self.audit_id)
        reason = None
        if throttle.consecutive_rate_limited > MAX_CONSECUTIVE_RATE_LIMITED:
            reason = f"{throttle.consecutive_rate_limited} pages in a row still rate-limited after retries"
        elif throttle.cooldown_total_s > MAX_COOLDOWN_TOTAL_S:
            reason = f"{int(throttle.cooldown_total_s)} s spent waiting out rate limits"
        if reason:
            self.stop(reason, cooldown_s=throttle.cooldown_total_s, last_url=record.page.url)

    def stop(self, reason: str, **details) -> None:
        self.stopped_reason = reason
        Throttle.objects.filter(audit_id=self.audit_id).update(stopped_reason=reason[:200])
        audit = Audit.objects.get(id=self.audit_id)
        if not (audit.discovery or {}).get("rate_limited_stop"):
            stop = {"reason": reason, **{k: v for k, v in details.items() if v is not None}}
            Audit.objects.filter(id=self.audit_id).update(discovery={**audit.discovery, "rate_limited_stop": stop})
        logger.warning("crawl stopped: %s", reason, extra={"audit_id": str(self.audit_id)})

    # --- fetch threads --------------------------------------------------------------------------

    def backoff_s(self, result, attempt: int) -> float | None:
        """How long to wait before retrying a 429/503, or None to not retry it."""
        if not is_rate_limit_answer(result) or attempt >= MAX_RETRIES_PER_URL:
            return None
        wait = parse_retry_after(result.headers.get("retry-after"))
        if wait is None:
            wait = RETRY_AFTER_DEFAULT_S * (2**attempt)
        if wait > RETRY_AFTER_MAX_S or self.stopped_reason:
            return None
        with self._lock:
            self._pause_until = max(self._pause_until, time.monotonic() + wait)
        return wait


def _troubled(record) -> bool:
    page = record.page
    if record.rate_limited or page.fetch_class != "ok":
        return True
    if page.status_code is not None and page.status_code >= 500:
        return True
    return (page.response_time_ms or 0) > SLOW_FETCH_MS


def politeness_stopped(audit_id) -> str:
    return Throttle.objects.filter(audit_id=audit_id).values_list("stopped_reason", flat=True).first() or ""


class DiscoveryPacer:
    """Spaces discovery's own requests (start URL, robots.txt, sitemaps) by the audit's interval, and
    hands the spacing on to the crawl through the Throttle row."""

    def __init__(self, audit: Audit):
        self.audit = audit
        self.interval_s = (audit.config or {}).get("min_request_interval_ms", 0) / 1000.0
        self._last = 0.0

    def use_crawl_delay(self, crawl_delay_s: float | None) -> None:
        self.interval_s = max(self.interval_s, min(crawl_delay_s or 0.0, CRAWL_DELAY_MAX_S))

    def __call__(self) -> None:
        if self.interval_s > 0 and self._last:
            delay = self._last + _spacing_s(self.interval_s) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        self._last = time.monotonic()

    def answered(self) -> None:
        """Count the spacing from this moment (an answer just finished), not from when the request was sent: a
        request slow to connect then still arrives an interval after the one before it."""
        self._last = time.monotonic()

    def hand_over(self) -> None:
        if self.interval_s <= 0 or not self._last:
            return
        next_at = timezone.now() + timedelta(seconds=_spacing_s(self.interval_s))
        Throttle.objects.update_or_create(audit=self.audit, defaults={"next_request_at": next_at})
