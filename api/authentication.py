"""`Authorization: Bearer <token>` (or `Token <token>`) with the hashed per-user API tokens."""

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from accounts.tokens import token_authenticate

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
        token = token_authenticate(plaintext)
        if token is None:
            raise exceptions.AuthenticationFailed(_("This token is unknown or was revoked."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("The token's user is inactive."))
        return token.user, token

    def authenticate_header(self, request):
        # Makes unauthenticated requests answer 401 (with this challenge) rather than 403.
        return 'Bearer realm="api"'
