"""The audit's "What bots are served" screen: each sampled page side by side as a browser, Googlebot smartphone,
Bingbot and GPTBot were served it, values unlike the browser's marked (audits.selectors.bots reads them)."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from audits.selectors.bots import sampled_pages
from dashboard.views import _audit, dashboard_view


@require_GET
@dashboard_view
def audit_bots(request, audit_id):
    audit = _audit(request, audit_id)
    context = {"audit": audit, "tab": "bots", "pages": sampled_pages(audit=audit)}
    return render(request, "dashboard/bots.html", context)
