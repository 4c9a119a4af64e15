"""Rate limits on the heavy reads anyone with a share link can make (the report page and its PDF) and on the
signed-in report PDF: per link and per client, answered 429 with Retry-After.

Fixed windows counted in Django's default cache with add() then incr(): both atomic in the local-memory cache
(one lock for every thread of the web process: `make run`'s default) and in Redis (every web process:
CACHE_URL in production). DRF's throttles keep a list of timestamps read and written back, so requests that
arrive together (the burst this is for) all read the same list and all pass. The client address is the sign-in
throttle's (config.signin.client_ip_address: TRUSTED_PROXY_COUNT). Rates are settings in DRF's notation.
"""

import hashlib
import math
import time
from dataclasses import dataclass

from django.core.cache import cache

from config.signin import client_ip_address

RATE_PERIODS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}  # DRF's: the period's first letter decides


@dataclass(frozen=True)
class Rate:
    requests: int
    per_s: int


def rate_parse(rate: str) -> Rate:
    """ "10/min" -> Rate(10, 60): DRF's notation, so every rate setting reads alike."""
    count, _, period = rate.partition("/")
    return Rate(requests=int(count), per_s=RATE_PERIODS_S[period.strip()[:1].lower()])


def rate_limit_hit(*, scope: str, ident: str, rate: Rate, now: float | None = None) -> int | None:
    """Count one request of `ident` in `scope`: None while within `rate`, else the seconds until its window ends
    (the Retry-After). A refused request counts too, so hammering does not shorten the wait."""
    now = time.time() if now is None else now
    window = int(now // rate.per_s)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:32]  # any address or id, within every cache's key rules
    key = f"ratelimit:{scope}:{digest}:{window}"
    cache.add(key, 0, timeout=rate.per_s + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # evicted or expired between add() and incr()
        cache.add(key, 1, timeout=rate.per_s + 1)
        count = 1
    if count <= rate.requests:
        return None
    return max(1, math.ceil((window + 1) * rate.per_s - now))


def client_ident(request) -> str:
    """Who a limit counts: the signed-in user, else the client's address."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"addr:{client_ip_address(request)}"


def first_refusal(*limits: tuple[str, str, str]) -> int | None:
    """Apply (scope, ident, rate) limits in order and stop at the first that refuses: its Retry-After, or None."""
    for scope, ident, rate in limits:
        wait = rate_limit_hit(scope=scope, ident=ident, rate=rate_parse(rate))
        if wait is not None:
            return wait
    return None
