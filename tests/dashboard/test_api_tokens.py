"""API tokens are created and revoked in the dashboard; the plaintext is shown once and works on the API."""

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from tests.dashboard.test_browser import sign_in
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import AXE, chromium_browser, serious_axe_violations

pytestmark = pytest.mark.django_db

SHOTS = Path(os.environ.get("SITEWARDEN_SHOTS", "/tmp/shots"))


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


def test_a_token_name_with_a_nul_is_refused_with_a_message_and_nothing_is_created():
    user = UserFactory()
    client = _signed_in(user)
    client.raise_request_exception = False
    posted = client.post("/tokens/", {"name": "ci\x00bot", "scope": "read"})
    assert posted.status_code == 400
    assert posted.context["form"].errors["name"] == ["Null characters are not allowed."]
    assert not ApiToken.objects.filter(user=user).exists()


def test_a_20_digit_token_id_is_a_404():
    client = _signed_in(UserFactory())
    client.raise_request_exception = False
    assert client.post(f"/tokens/{10**20}/revoke/").status_code == 404
    assert client.post("/tokens/0/revoke/").status_code == 404


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


# --- in a real browser --------------------------------------------------------------------------------


def _check_screen(tab, name: str) -> None:
    """At 1440 and 390 px: no horizontal overflow, axe-core's serious/critical rules when it is installed
    (make lighthouse-install), a screenshot."""
    for width in (1440, 390):
        tab.set_viewport_size({"width": width, "height": 900})
        tab.reload()
        overflow = tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (name, width, overflow)
        if AXE.exists():
            found = serious_axe_violations(tab)
            assert found == [], (name, width, found)
        tab.screenshot(path=str(SHOTS / f"24-{name}-{width}.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_tokens_page_and_the_404_page_in_the_browser(live_server):
    SHOTS.mkdir(parents=True, exist_ok=True)
    user = UserFactory(username="integrator")
    with chromium_browser() as browser:
        tab = browser.new_context().new_page()
        errors: list = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        sign_in(tab, live_server, "integrator")

        tab.goto(live_server.url + "/tokens/")
        tab.get_by_label("Name").fill("Assistant (reads only)")
        tab.get_by_role("radio", name=re.compile("Read only")).check()
        tab.get_by_role("button", name="Create token").click()
        plaintext = tab.locator("#new-token").input_value()
        tab.get_by_label("Name").fill("CI pipeline")
        tab.get_by_role("radio", name=re.compile("Full access")).check()
        tab.get_by_label("Expires on").fill("")
        tab.get_by_role("button", name="Create token").click()
        assert Client().get("/api/v1/projects/", HTTP_AUTHORIZATION=f"Bearer {plaintext}").status_code == 200
        reader = ApiToken.objects.get(user=user, name="Assistant (reads only)")
        assert reader.read_only and reader.expires_at is not None and reader.last_used_at is not None
        assert not ApiToken.objects.get(user=user, name="CI pipeline").expires_at
        _check_screen(tab, "api-tokens")
        row = tab.get_by_role("row", name=re.compile("Assistant"))
        assert "Read only" in row.inner_text() and "ago" in row.inner_text()

        tab.goto(live_server.url + "/r/mistyped-share-link/")
        _check_screen(tab, "404-signed-in")
        anonymous = browser.new_context().new_page()
        anonymous.goto(live_server.url + "/r/mistyped-share-link/")
        assert anonymous.get_by_role("heading", name="Not found").is_visible()
        _check_screen(anonymous, "404")
    assert errors == []
