"""The dashboard's screens of a summarised audit (audits.retention pruned its pages, issues and links): the note
the overview shows, and the empty state the screens that list page-level rows answer with instead of empty tables."""

from django.shortcuts import render
from django.urls import reverse

from audits.models import Audit, PageChange
from audits.selectors.retention import audit_summarised_message, latest_whole_audit


def summarised_context(audit: Audit) -> dict:
    """What _summarised_note.html needs; {} for an audit kept whole."""
    if audit.summarised_at is None:
        return {}
    return {
        "summarised_message": audit_summarised_message(audit),
        "latest_whole": latest_whole_audit(project_id=audit.project_id),
    }


def summarised_screen(
    request, audit: Audit, *, what: str, tab: str, url_name: str = "", url_args=(), status: int = 200, **extra
):
    """The empty state of a screen that needs `audit`'s page-level rows: what is gone, what stays, and the same
    screen of the project's latest whole audit (`url_name`, reversed with its id and `url_args`). A screen of one row
    that is gone (a page, an export) answers 410."""
    context = {"audit": audit, "tab": tab, "what_title": what, **summarised_context(audit), **extra}
    latest = context.get("latest_whole")
    if latest is not None and url_name:
        context["latest_url"] = reverse(url_name, args=[latest.id, *url_args])
    context["has_changes"] = PageChange.objects.filter(audit=audit).exists()
    return render(request, "dashboard/summarised.html", context, status=status)
