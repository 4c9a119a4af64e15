"""accounts.tokens: a token works while it is live, unexpired, its user active and still in the account it was
made in; each refusal says why; last_used_at is written at most once a minute; scope and expiry are checked."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiToken, Membership
from accounts.services import account_get_or_create_for_user
from accounts.tokens import (
    LAST_USED_WRITE_EVERY_S,
    TOKEN_EXPIRY_MAX_DAYS,
    TokenRefused,
    token_authenticate,
    token_create,
    token_expiry_at,
    token_live,
)
from audits.errors import AuditRefused
from tests.factories import AccountFactory, UserFactory

pytestmark = pytest.mark.django_db

TOMORROW = timedelta(days=1)


def _refusal(plaintext: str) -> str:
    with pytest.raises(TokenRefused) as refused:
        token_authenticate(plaintext)
    return refused.value.detail


def test_a_new_token_belongs_to_its_users_account_with_the_chosen_scope_and_expiry():
    user = UserFactory()
    expires_on = timezone.now().date() + timedelta(days=30)
    token, plaintext = token_create(user=user, name="assistant", scope=ApiToken.Scope.READ, expires_on=expires_on)
    assert token.account == account_get_or_create_for_user(user=user)
    assert token.read_only and token.expires_at == token_expiry_at(expires_on)
    assert token_authenticate(plaintext) == token
    full, _ = token_create(user=user, name="ci")
    assert not full.read_only and full.scope == "full" and full.expires_at is None  # the defaults: what tokens were


@pytest.mark.parametrize(
    ("scope", "days", "code"),
    [("admin", None, "invalid_token_scope"), ("read", 0, "invalid_expiry"), ("read", -3, "invalid_expiry")]
    + [("full", TOKEN_EXPIRY_MAX_DAYS + 1, "invalid_expiry")],
)
def test_a_scope_or_expiry_out_of_bounds_is_refused(scope, days, code):
    expires_on = None if days is None else timezone.now().date() + timedelta(days=days)
    with pytest.raises(AuditRefused) as refused:
        token_create(user=UserFactory(), name="x", scope=scope, expires_on=expires_on)
    assert refused.value.code == code and not ApiToken.objects.exists()


def test_an_expired_token_is_refused_saying_it_expired():
    token, plaintext = token_create(user=UserFactory(), name="old", expires_on=timezone.now().date() + TOMORROW)
    ApiToken.objects.filter(id=token.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert "expired" in _refusal(plaintext)
    with pytest.raises(TokenRefused, match="expired"):
        token_live(token.id)  # the MCP server's per-call check says the same
    token.refresh_from_db()
    assert token.last_used_at is None  # a refused token is not marked used


def test_a_deactivated_user_or_one_no_longer_in_the_account_is_refused():
    user = UserFactory()
    token, plaintext = token_create(user=user, name="ci")
    user.is_active = False
    user.save()
    assert "deactivated" in _refusal(plaintext)
    user.is_active = True
    user.save()
    Membership.objects.filter(user=user).delete()  # removed from the account
    assert "no longer in the account" in _refusal(plaintext)
    Membership.objects.create(user=user, account=AccountFactory())  # now in another account
    assert "no longer in the account" in _refusal(plaintext)
    Membership.objects.filter(user=user).update(account=token.account)  # back: the grant holds again
    assert token_authenticate(plaintext) == token


def test_last_used_is_written_at_most_once_a_minute():
    token, plaintext = token_create(user=UserFactory(), name="ci")
    first = token_authenticate(plaintext).last_used_at
    assert first is not None
    assert token_authenticate(plaintext).last_used_at == first  # within the resolution: not written again
    token.refresh_from_db()
    assert token.last_used_at == first
    resolution = timedelta(seconds=LAST_USED_WRITE_EVERY_S)
    earlier = timezone.now() - resolution - timedelta(seconds=1)
    ApiToken.objects.filter(id=token.id).update(last_used_at=earlier)
    token_authenticate(plaintext)
    token.refresh_from_db()
    assert token.last_used_at > earlier + resolution
