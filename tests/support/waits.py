"""Poll until something is true: what tests against a real worker, a browser or a child process wait with."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_EVERY_S = 0.5


def wait_until(
    predicate: Callable[[], T],
    timeout_s: float,
    what: str = "condition",
    every_s: float = POLL_EVERY_S,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """Call `predicate` until it returns something truthy and return that; AssertionError after `timeout_s`.

    `sleep(seconds)` waits between calls: a Playwright page's own wait keeps it handling its events meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached after {timeout_s}s")
        sleep(every_s)


def wait_audit_finished(audit, timeout_s: float, every_s: float = POLL_EVERY_S):
    """Re-read `audit` until it is no longer running; returns it (AssertionError with its state on timeout)."""

    def finished():
        audit.refresh_from_db()
        return audit.is_finished

    try:
        wait_until(finished, timeout_s, every_s=every_s)
    except AssertionError:
        raise AssertionError(f"audit still {audit.status}/{audit.current_phase} after {timeout_s}s") from None
    return audit
