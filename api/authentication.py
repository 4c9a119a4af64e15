"""`Authorization: Bearer <token>` (or `Token <token>`) with the hashed per-user API tokens.

Whether a token works (unknown, revoked, expired, user deactivated or gone from the token's account) is decided
by accounts.tokens.token_authenticate; a refusal is 401 authentication_failed with its sentence. What a working
token may do (its scope) is api.permissions.TokenScopePermission's decision."""

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from accounts.tokens import TokenRefused, token_authenticate

KEYWORDS = (b"bearer", b"token")


class ApiTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None  # not ours: session authentication may still apply
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(_("Give exactly one token after the Bearer keyword."))
        try:
            plaintext = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(_("The token has characters a token never has.")) from None
        try:
            token = token_authenticate(plaintext)
        except TokenRefused as exc:
            raise exceptions.AuthenticationFailed(exc.detail) from None
        return token.user, token

    def authenticate_header(self, request):
        # Makes unauthenticated requests answer 401 (with this challenge) rather than 403.
        return 'Bearer realm="api"'
