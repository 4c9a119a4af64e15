"""API tokens are created and revoked in the dashboard; the plaintext is shown once and works on the API."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

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
    posted = client.post("/tokens/", {"name": "CI pipeline", "scope": "full"})
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


def test_a_read_only_token_with_an_expiry_is_listed_with_its_scope_expiry_and_last_use():
    user = UserFactory()
    client = _signed_in(user)
    expires_on = timezone.now().date() + timedelta(days=30)
    form = {"name": "Assistant", "scope": "read", "expires_on": expires_on.isoformat()}
    created = client.get(client.post("/tokens/", form)["Location"])
    plaintext = created.context["created"]["plaintext"]
    token = ApiToken.objects.get(user=user)
    assert token.read_only and token.expires_at.date() == expires_on

    def row() -> str:
        html = client.get("/tokens/").content.decode()
        return re.search(r"<tr>\s*<th scope=\"row\">Assistant</th>.*?</tr>", html, re.S).group(0)

    listed = row()
    assert "Read only" in listed and f"{expires_on:%Y-%m-%d} 00:00 UTC" in listed
    assert re.search(r'data-label="Last used">never<', listed)
    assert Client().get("/api/v1/projects/", HTTP_AUTHORIZATION=f"Bearer {plaintext}").status_code == 200
    used = row()
    token.refresh_from_db()
    assert token.last_used_at is not None and f"{token.last_used_at:%Y-%m-%d %H:%M}" in used and "ago" in used

    ApiToken.objects.filter(id=token.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert 'data-label="State">expired<' in row()


def test_the_form_refuses_a_past_expiry_and_an_unknown_scope_with_field_errors():
    client = _signed_in(UserFactory())
    past = client.post("/tokens/", {"name": "x", "scope": "read", "expires_on": "2020-01-01"})
    assert past.status_code == 400
    assert past.context["form"].errors["expires_on"] == ["Choose an expiry date after today."]
    odd = client.post("/tokens/", {"name": "x", "scope": "admin"})
    assert odd.status_code == 400 and "scope" in odd.context["form"].errors
    assert not ApiToken.objects.exists()
