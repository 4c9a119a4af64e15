"""The user's API tokens in the dashboard: made, shown once, revoked."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import ApiToken
from accounts.tokens import token_create, token_revoke
from audits.errors import AuditRefused
from dashboard.forms import ApiTokenForm
from dashboard.views import dashboard_view

# --- API tokens ---------------------------------------------------------------------------------------

NEW_TOKEN_SESSION_KEY = "sitewarden_new_token"  # a just-created token's plaintext, until the next GET shows it


@require_http_methods(["GET", "POST"])
@dashboard_view
@never_cache
def api_tokens(request):
    """The user's API tokens. Post/redirect/get: a POST creates one token and redirects, its plaintext rides
    in the session to the next GET, which pops it, so a reload neither creates a second token nor shows the
    plaintext again."""
    form = ApiTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            token, plaintext = token_create(user=request.user, **form.cleaned_data)
        except AuditRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            request.session[NEW_TOKEN_SESSION_KEY] = {"id": token.id, "plaintext": plaintext}
            return redirect("audits:api-tokens")
    created = None
    fresh = request.session.pop(NEW_TOKEN_SESSION_KEY, None) if request.method == "GET" else None
    if fresh:
        token = ApiToken.objects.filter(user=request.user, id=fresh.get("id")).first()
        if token is not None:
            created = {"token": token, "plaintext": fresh.get("plaintext", "")}
    tokens = ApiToken.objects.filter(user=request.user).order_by("-created_at")
    context = {"tokens": tokens, "created": created, "form": form, "now": timezone.now()}
    return render(request, "dashboard/api_tokens.html", context, status=400 if form.errors else 200)


@require_POST
@dashboard_view
def api_token_revoke(request, token_id):
    token = ApiToken.objects.filter(user=request.user, id=token_id).first()
    if token is None:
        raise Http404("No such token")
    if token_revoke(token=token):
        messages.success(request, f"Token “{token.name}” revoked: requests with it are refused from now on.")
    return redirect("audits:api-tokens")
