"""Tokens (hashed, revocable, Bearer or Token), session auth, errors for the unauthenticated, throttles."""

import hashlib
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken, Membership
from accounts.tokens import TokenRefused, token_authenticate, token_create, token_revoke
from tests.api.conftest import assert_problem, bearer_client

PROJECTS = "/api/v1/projects/"


def test_token_is_stored_hashed_and_shown_once(user):
    token, plaintext = token_create(user=user, name="ci pipeline")
    assert plaintext.startswith("sw_") and len(plaintext) >= 40
    row = ApiToken.objects.get(id=token.id)
    assert row.token_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    assert plaintext not in {row.token_hash, row.prefix, row.name}
    assert plaintext.startswith(row.prefix) and len(row.prefix) < 16
    assert token_authenticate(plaintext) == row
    with pytest.raises(TokenRefused):
        token_authenticate(plaintext[:-1] + ("A" if plaintext[-1] != "A" else "B"))


def test_bearer_and_token_keywords_work_and_mark_the_token_used(user):
    token, plaintext = token_create(user=user, name="ci")
    assert bearer_client(plaintext).get(PROJECTS).status_code == 200
    assert bearer_client(plaintext, keyword="Token").get(PROJECTS).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_no_credentials_answer_401_with_a_bearer_challenge(db):
    response = Client().get(PROJECTS)
    assert_problem(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_unknown_malformed_and_revoked_tokens_answer_401(user):
    token, plaintext = token_create(user=user, name="old")
    assert_problem(bearer_client("sw_not-a-real-token-at-all-000000").get(PROJECTS), 401, "authentication_failed")
    assert_problem(bearer_client(plaintext + " extra").get(PROJECTS), 401, "authentication_failed")
    assert token_revoke(token=token) is True
    assert token_revoke(token=token) is False
    assert_problem(bearer_client(plaintext).get(PROJECTS), 401, "authentication_failed")


def test_inactive_user_token_is_refused(user):
    _, plaintext = token_create(user=user, name="ci")
    user.is_active = False
    user.save()
    assert_problem(bearer_client(plaintext).get(PROJECTS), 401, "authentication_failed")


def test_session_authentication_works_and_needs_csrf_for_writes(user, project):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.get(PROJECTS)
    assert response.status_code == 200
    assert [p["id"] for p in response.json()["results"]] == [project.id]
    refused = client.post(PROJECTS, {"name": "x", "base_url": "http://127.0.0.1:1/"}, content_type="application/json")
    assert_problem(refused, 403, "permission_denied")


def test_throttle_is_per_token(settings, user):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api": "3/min", "audit_start": "1/min"},
    }
    first = bearer_client(token_create(user=user, name="a")[1])
    for _ in range(3):
        assert first.get(PROJECTS).status_code == 200
    response = first.get(PROJECTS)
    detail = assert_problem(response, 429, "throttled")["detail"]
    assert int(response["Retry-After"]) > 0
    assert "3/min" in detail and "API_THROTTLE_RATE" in detail  # the setting that refused it, named
    # Another token of the same user has its own budget.
    assert bearer_client(token_create(user=user, name="b")[1]).get(PROJECTS).status_code == 200


def test_audit_start_has_its_own_stricter_scope(settings, api, project):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api": "100/min", "audit_start": "1/min"},
    }
    url = f"/api/v1/projects/{project.id}/audits/"
    assert api.post(url, {"max_pages": 10}, format="json").status_code == 202
    detail = assert_problem(api.post(url, {"max_pages": 10}, format="json"), 429, "throttled")["detail"]
    assert "API_AUDIT_START_THROTTLE_RATE" in detail
    assert api.get(url).status_code == 200  # reads are not counted against audit_start


def test_an_expired_token_answers_401_saying_it_expired(user):
    token, plaintext = token_create(user=user, name="ci", expires_on=timezone.now().date() + timedelta(days=1))
    assert bearer_client(plaintext).get(PROJECTS).status_code == 200
    ApiToken.objects.filter(id=token.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    body = assert_problem(bearer_client(plaintext).get(PROJECTS), 401, "authentication_failed")
    assert "expired" in body["detail"]


def test_a_token_of_a_user_removed_from_the_account_is_refused(user):
    _, plaintext = token_create(user=user, name="ci")
    Membership.objects.filter(user=user).delete()
    body = assert_problem(bearer_client(plaintext).get(PROJECTS), 401, "authentication_failed")
    assert "no longer in the account" in body["detail"]
