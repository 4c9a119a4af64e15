"""What an API token's scope allows, for every endpoint at once (REST_FRAMEWORK's default permissions).

A read-only token reads: any request that could write (every method but GET, HEAD and OPTIONS) is refused with
403 token_read_only before the view runs. A session (the dashboard's) or a full token is not limited here.
"""

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from accounts.models import ApiToken
from audits.errors import ErrorCode

READ_ONLY_SENTENCE = (
    "This API token is read only: it cannot start, cancel, create, change or delete anything. "
    "Use a token with full access (create one under API tokens)."
)


class TokenScopePermission(BasePermission):
    def has_permission(self, request, view):
        token = request.auth
        if isinstance(token, ApiToken) and token.read_only and request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied(READ_ONLY_SENTENCE, code=ErrorCode.TOKEN_READ_ONLY.value)
        return True
