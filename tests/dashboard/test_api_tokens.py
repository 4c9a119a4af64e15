"""API tokens are created and revoked in the dashboard; the plaintext is shown once and works on the API."""

import pytest
from django.test import Client

from accounts.models import ApiToken
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_create_shows_the_token_once_and_it_authenticates_then_revoke_refuses_it():
    project = ProjectFactory()
    client = _signed_in(project.owner)
    posted = client.post("/tokens/", {"name": "CI pipeline"})
    assert posted.status_code == 302  # post/redirect/get: a reload cannot create a second token
    created = client.get(posted["Location"])
    plaintext = created.context["created"]["plaintext"]
    assert plaintext.startswith("sw_") and plaintext in created.content.decode()
    token = ApiToken.objects.get(user=project.owner)
    assert token.token_hash != plaintext and plaintext not in token.token_hash
    listing = client.get("/tokens/").content.decode()
    assert "CI pipeline" in listing and plaintext not in listing  # never shown again

    api = Client()
    ok = api.get("/api/v1/projects/", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert ok.status_code == 200 and ok.json()["count"] == 1

    assert client.post(f"/tokens/{token.id}/revoke/").status_code == 302
    refused = api.get("/api/v1/projects/", HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert refused.status_code == 401


def test_another_users_token_cannot_be_revoked():
    token_owner = UserFactory()
    token = ApiToken.objects.create(user=token_owner, name="theirs", prefix="sw_abcdefgh", token_hash="0" * 64)
    other = _signed_in(UserFactory())
    assert other.post(f"/tokens/{token.id}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_token_name_with_a_nul_is_refused_with_a_message_and_nothing_is_created():
    user = UserFactory()
    client = _signed_in(user)
    client.raise_request_exception = False
    posted = client.post("/tokens/", {"name": "ci\x00bot"})
    assert posted.status_code == 302
    page = client.get(posted["Location"]).content.decode()
    assert "Token name: Null characters are not allowed." in page
    assert not ApiToken.objects.filter(user=user).exists()


def test_a_20_digit_token_id_is_a_404():
    client = _signed_in(UserFactory())
    client.raise_request_exception = False
    assert client.post(f"/tokens/{10**20}/revoke/").status_code == 404
    assert client.post("/tokens/0/revoke/").status_code == 404
