"""Content-Security-Policy on every response the product serves: dashboard, sign-in, admin, API docs,
error pages. One strict policy for all pages; the two API docs pages get one that admits their own
inline start-up script by a per-request nonce (and Redoc's injected styles), nothing else."""

import secrets

# Crawled content is escaped by the templates; this policy is the second line: no inline script, no
# script from elsewhere, no plugins, no framing, forms post only here.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

# drf-spectacular's docs templates (overridden in templates/drf_spectacular/ to carry the nonce) have an
# inline style, and Swagger UI an inline start-up script. Redoc builds its styles at run time
# (styled-components injects <style> elements without a nonce), so only its page admits inline styles, and
# its search index runs in a worker made from a blob: URL. Its hard-coded CDN logo stays blocked.
SWAGGER_POLICY = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'nonce-{nonce}'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
REDOC_POLICY = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; worker-src blob:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# The client report (shared page and the owner's preview) sets the account's accent colour in one <style> element
# carrying the nonce: the values are #rrggbb checked by accounts.branding, and nothing else is admitted.
REPORT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'nonce-{nonce}'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
VIEW_POLICIES = {
    "api:docs": SWAGGER_POLICY,
    "api:redoc": REDOC_POLICY,
    "shared-report": REPORT_POLICY,
    "audits:audit-report-preview": REPORT_POLICY,
}

NONCE_BYTES = 18


class ContentSecurityPolicyMiddleware:
    """Sets `request.csp_nonce` for templates and the policy header on every response that has none.
    It sits right after SecurityMiddleware, so static files and the 404/500 pages carry it too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.csp_nonce = secrets.token_urlsafe(NONCE_BYTES)
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy_for(request)
        return response


def policy_for(request) -> str:
    match = getattr(request, "resolver_match", None)
    template = VIEW_POLICIES.get(match.view_name) if match else None
    return template.format(nonce=request.csp_nonce) if template else CONTENT_SECURITY_POLICY
