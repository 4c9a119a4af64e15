"""Sign-in throttling (django-axes, config/signin.py) on the dashboard and admin logins: per username, per
address, the cool-down, what a success forgives, the trusted-proxy address, and the API's tokens untouched."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import F
from django.test import Client

from accounts.tokens import token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests"
DASHBOARD_LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/?next=/admin/"
OFFICE = "198.51.100.7"
ELSEWHERE = "203.0.113.9"


def sign_in(client, url, username, password, address=OFFICE, **extra):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address, **extra)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def fail_until_limit(client, url, username, address=OFFICE):
    """N-1 refused with the form's error, the N-th answers the lockout page."""
    for _ in range(settings.SIGNIN_FAILURE_LIMIT - 1):
        response = sign_in(client, url, username, "wrong", address)
        assert response.status_code == 200 and not signed_in(client)
    return sign_in(client, url, username, "wrong", address)


def time_passes(seconds: float):
    """Move every recorded failure back in time instead of waiting."""
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=seconds))


def cool_down_passes():
    time_passes(settings.SIGNIN_COOLOFF_S + 1)


def assert_lockout_page(response):
    assert response.status_code == 429
    assert "Too many sign-in attempts" in response.content.decode()
    assert response["Retry-After"] == str(settings.SIGNIN_COOLOFF_S)
    assert "script-src 'self'" in response["Content-Security-Policy"]


@pytest.mark.parametrize(
    ("url", "staff", "landing"),
    [(DASHBOARD_LOGIN, False, settings.LOGIN_REDIRECT_URL), (ADMIN_LOGIN, True, "/admin/")],
    ids=["dashboard", "admin"],
)
def test_a_username_is_locked_after_n_failures_and_let_in_after_the_cool_down(url, staff, landing):
    user = UserFactory(username="alice", is_staff=staff)
    client = Client()

    assert_lockout_page(fail_until_limit(client, url, "alice"))
    # The right password, even from another address, is refused while the username is locked.
    assert_lockout_page(sign_in(client, url, "alice", PASSWORD, ELSEWHERE))
    assert not signed_in(client)

    cool_down_passes()
    response = sign_in(client, url, "alice", PASSWORD, ELSEWHERE)
    assert response.status_code == 302 and response["Location"] == landing
    assert client.session["_auth_user_id"] == str(user.pk)
    assert not AccessAttempt.objects.filter(username="alice").exists()  # a success forgives them


def test_attempts_during_a_lockout_do_not_extend_it():
    UserFactory(username="alice")
    client = Client()
    assert_lockout_page(fail_until_limit(client, DASHBOARD_LOGIN, "alice"))
    time_passes(settings.SIGNIN_COOLOFF_S / 2)
    assert_lockout_page(sign_in(client, DASHBOARD_LOGIN, "alice", "still-guessing"))
    time_passes(settings.SIGNIN_COOLOFF_S / 2 + 1)  # the cool-off counted from the N-th failure is over
    assert sign_in(client, DASHBOARD_LOGIN, "alice", PASSWORD).status_code == 302


def test_one_address_spraying_many_usernames_is_locked_for_every_username():
    for name in ("carol", "dave"):
        UserFactory(username=name)
    client = Client()
    for n in range(settings.SIGNIN_FAILURE_LIMIT - 1):
        assert sign_in(client, DASHBOARD_LOGIN, f"victim{n}", "Summer2026!").status_code == 200
    assert_lockout_page(sign_in(client, DASHBOARD_LOGIN, "carol", "Summer2026!"))

    # A user who never failed is refused from that address, with the right password...
    assert_lockout_page(sign_in(client, DASHBOARD_LOGIN, "dave", PASSWORD))
    # ...and signs in from another one.
    other = Client()
    assert sign_in(other, DASHBOARD_LOGIN, "dave", PASSWORD, ELSEWHERE).status_code == 302


def test_signing_into_ones_own_account_does_not_forgive_a_spray():
    UserFactory(username="mallory")
    client = Client()
    for n in range(settings.SIGNIN_FAILURE_LIMIT - 1):
        assert sign_in(client, DASHBOARD_LOGIN, f"victim{n}", "Summer2026!").status_code == 200
    assert sign_in(Client(), DASHBOARD_LOGIN, "mallory", PASSWORD).status_code == 302
    assert_lockout_page(sign_in(client, DASHBOARD_LOGIN, "victim-last", "Summer2026!"))


def test_colleagues_who_mistype_then_get_in_do_not_lock_the_office_out():
    names = [f"colleague{n}" for n in range(settings.SIGNIN_FAILURE_LIMIT + 2)]
    for name in names:
        UserFactory(username=name)
    for name in names:
        client = Client()
        assert sign_in(client, DASHBOARD_LOGIN, name, "typo").status_code == 200
        assert sign_in(client, DASHBOARD_LOGIN, name, PASSWORD).status_code == 302
    assert not AccessAttempt.objects.exists()


def test_the_address_counted_is_the_peer_unless_proxies_are_trusted(settings):
    client = Client()
    forwarded = {"HTTP_X_FORWARDED_FOR": "10.9.9.9, 192.0.2.44"}

    sign_in(client, DASHBOARD_LOGIN, "nobody", "wrong", "10.0.0.2", **forwarded)
    assert AccessAttempt.objects.get().ip_address == "10.0.0.2"  # the header is the client's word

    AccessAttempt.objects.all().delete()
    settings.TRUSTED_PROXY_COUNT = 1
    sign_in(client, DASHBOARD_LOGIN, "nobody", "wrong", "10.0.0.2", **forwarded)
    assert AccessAttempt.objects.get().ip_address == "192.0.2.44"  # what our one proxy saw, not the spoof

    AccessAttempt.objects.all().delete()
    sign_in(client, DASHBOARD_LOGIN, "nobody", "wrong", "10.0.0.2")  # a request that skipped the proxy
    assert AccessAttempt.objects.get().ip_address == "10.0.0.2"


def test_api_tokens_keep_working_from_a_locked_address():
    user = UserFactory(username="alice")
    _, plaintext = token_create(user=user, name="ci")
    assert_lockout_page(fail_until_limit(Client(), DASHBOARD_LOGIN, "alice"))
    response = Client().get("/api/v1/projects/", HTTP_AUTHORIZATION=f"Bearer {plaintext}", REMOTE_ADDR=OFFICE)
    assert response.status_code == 200
