"""What an issue type's rows and screen show of its fix verifications (audits.selectors.verification): the newest
verification of each type ("verified fixed on 4 Dec 2026"), and whether and why a list re-check can verify it."""

from django import template

from audits.models import Audit
from audits.selectors.verification import verifications_by_type
from audits.verification import verifiability

register = template.Library()


@register.simple_tag
def fix_verifications(audit: Audit) -> dict:
    """{issue type: its newest FixVerification} of a completed audit (one query when there is none)."""
    if audit is None or audit.status != Audit.Status.COMPLETED:
        return {}
    return verifications_by_type(audit=audit)


@register.simple_tag
def issue_verifiability(audit: Audit, issue_type: str) -> dict:
    """Whether the issue screen offers "Verify fix": `can` (bool) and `reason` (why not, for people)."""
    if audit.status != Audit.Status.COMPLETED:
        return {"can": False, "reason": "Fixes are verified once the audit has completed."}
    if audit.summarised_at is not None:
        return {"can": False, "reason": "This audit keeps its summary only: verify from a newer audit."}
    rule = verifiability(issue_type)
    return {"can": rule.rule is not None, "reason": f"A list re-check cannot verify this type: {rule.reason}."}
