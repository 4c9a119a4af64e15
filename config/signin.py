"""Sign-in throttling (django-axes) for the dashboard and admin logins: the client address behind trusted
proxies, what a success forgives, and the lockout page. The API's token auth never goes through here."""

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.shortcuts import render


def client_ip_address(request) -> str | None:
    """AXES_CLIENT_IP_CALLABLE. The peer's address, or with TRUSTED_PROXY_COUNT = N the address the
    outermost of our N proxies saw: the N-th X-Forwarded-For entry from the right. Entries left of it
    are whatever the client wrote, so they are never trusted; a header with fewer entries than proxies
    (a request that skipped them) falls back to the peer."""
    peer = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    return hops[-proxies] if len(hops) >= proxies else peer


class SigninAttemptHandler(AxesDatabaseHandler):
    """Axes' database handler (counts shared by every web process), except that a successful sign-in
    forgives only the failures recorded under that username. Axes' own reset also clears the address's
    failures under other usernames, so an attacker with one valid account could sign into it between
    rounds of a password spray and never hit the per-address limit."""

    def reset_user_attempts(self, request, credentials=None) -> int:
        username = get_client_username(request, credentials)
        if username is None:
            return 0
        count, _ = AccessAttempt.objects.filter(username=username).delete()
        return count


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: the dashboard-styled lockout page, 429 with Retry-After, for both logins."""
    cool_off = get_cool_off(request)
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cool_off_minutes": max(1, round(cool_off.total_seconds() / 60)) if cool_off else None,
    }
    response = render(request, "registration/locked_out.html", context, status=429)
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
