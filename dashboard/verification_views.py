"""Fix verification's screens (issue 28): the "Verify fix" button of an issue type's screen (a POST that starts the
re-check through audits.services.issue_fix_verify) and a verification's result, each URL fixed, still present or
no longer reachable. The line an issue type shows once verified comes from dashboard.templatetags.verification."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from audits.errors import AuditRefused
from audits.selectors.verification import fix_verification
from audits.services import issue_fix_verify
from audits.verification import OUTCOME_LABELS, Outcome
from dashboard import selectors as dashboard
from dashboard.views import dashboard_view

VERIFICATION_ROWS_PER_PAGE = 100


@require_POST
@dashboard_view
def audit_issue_verify(request, audit_id, issue_type):
    """Start the re-check of an issue type's URLs; a refusal is said on the issue type's screen."""
    audit = dashboard.audit_for_account(account=request.account, audit_id=audit_id)
    try:
        verification = issue_fix_verify(audit=audit, issue_type=issue_type, user=request.user)
    except AuditRefused as exc:
        messages.error(request, exc.message)
        return redirect("audits:audit-issue-type", audit_id=audit.id, issue_type=issue_type)
    messages.success(request, "Verification started: the URLs with this issue are being checked again.")
    return redirect("audits:audit-verification", audit_id=verification.id)


@require_GET
@dashboard_view
def audit_verification(request, audit_id):
    """A verification audit's verdict per URL, filtered by outcome (`?outcome=`), 100 a page."""
    audit = dashboard.audit_for_account(account=request.account, audit_id=audit_id)
    result = fix_verification(audit=audit)
    if result is None:
        raise Http404("This audit is not a fix verification")
    outcome = request.GET.get("outcome", "")
    if outcome not in {o.value for o in Outcome}:
        outcome = ""
    rows = [r for r in result.rows if r.outcome == outcome] if outcome else result.rows
    context = {
        "audit": audit,
        "tab": "",
        "result": result,
        "outcome": outcome,
        "outcomes": [(o.value, OUTCOME_LABELS[o], result.counts.get(o.value, 0)) for o in Outcome],
        "rows": Paginator(rows, VERIFICATION_ROWS_PER_PAGE).get_page(request.GET.get("page")),
        "original_url": reverse(
            "audits:audit-issue-type", kwargs={"audit_id": result.original_id, "issue_type": result.issue_type}
        ),
    }
    return render(request, "dashboard/verification.html", context)
