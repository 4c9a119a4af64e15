"""Rate limits per API token (per user for session requests, per address for anonymous ones).

Two throttles, both scoped: `api` counts every request, and a view may name a stricter scope for its
writes (`throttle_scope = "audit_start"`). Rates come from REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
read at request time. Counters live in Django's default cache: use a shared cache (Redis) when several
web processes serve the API, or each process counts on its own.
"""

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from accounts.models import ApiToken

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# The environment variable that sets each scope's rate (config/settings/base.py): a refusal names it.
RATE_SETTINGS = {"api": "API_THROTTLE_RATE", "audit_start": "API_AUDIT_START_THROTTLE_RATE"}
REFUSED_ATTR = "sitewarden_throttled"  # set on the request by the throttle that refused it: (scope, rate)


def rate_sentence(scope: str, rate: str | None) -> str:
    """What the limit is and which setting sets it, for a throttled answer."""
    return f"The limit is {rate} per token ({RATE_SETTINGS.get(scope, scope)})."


class _TokenThrottle(SimpleRateThrottle):
    scope = "api"

    def __init__(self):  # the rate is looked up per request, not frozen at import
        pass

    def scope_for(self, request, view) -> str | None:
        return self.scope

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view):
        scope = self.scope_for(request, view)
        if scope is None:
            return True
        self.scope = scope
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        allowed = super().allow_request(request, view)
        if not allowed:
            setattr(request, REFUSED_ATTR, (scope, self.rate))
        return allowed

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiToken):
            ident = f"token:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class ApiRateThrottle(_TokenThrottle):
    """Every request: scope `api`."""


class ActionRateThrottle(_TokenThrottle):
    """Writes of views that name a `throttle_scope` (e.g. starting audits): that scope's rate."""

    def scope_for(self, request, view):
        if request.method in SAFE_METHODS:
            return None
        return getattr(view, "throttle_scope", None)
