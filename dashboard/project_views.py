"""The dashboard's project screens: the list, the form (create, edit), a project's page with its audit history
and its schedule."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audits import services
from audits.errors import AuditRefused
from audits.models import Schedule
from audits.report_emails import report_emails_for_project
from audits.services import schedule_clear, schedule_report_recipients_set, schedule_set
from dashboard import selectors as dashboard
from dashboard.forms import ProjectForm, ScheduleForm
from dashboard.views import dashboard_view

# --- projects ----------------------------------------------------------------------------------------------


@require_GET
@dashboard_view
def project_list(request):
    projects = dashboard.project_list(account=request.account)
    usage = dashboard.account_usage(account=request.account)
    return render(request, "dashboard/project_list.html", {"projects": projects, "usage": usage})


@require_http_methods(["GET", "POST"])
@dashboard_view
def project_create(request):
    form = ProjectForm(request.POST or None, account=request.account)
    if request.method == "POST" and form.is_valid():
        try:
            project = services.project_create(account=request.account, owner=request.user, **form.project_fields())
        except AuditRefused as exc:
            form.add_refusal(exc)
        else:
            messages.success(request, f"Project “{project.name}” created.")
            return redirect("audits:project-detail", project_id=project.id)
    return render(request, "dashboard/project_form.html", {"form": form, "project": None})


@require_http_methods(["GET", "POST"])
@dashboard_view
def project_edit(request, project_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    form = ProjectForm(request.POST or None, instance=project, account=request.account)
    if request.method == "POST" and form.is_valid():
        try:
            services.project_update(project=project, **form.project_fields())
        except AuditRefused as exc:
            project.refresh_from_db()  # the page shows the stored project, not the refused values
            form.add_refusal(exc)
        else:
            messages.success(request, "Project settings saved.")
            if project.auth_password_cleared:
                messages.warning(request, services.PASSWORD_CLEARED_MESSAGE)
            return redirect("audits:project-detail", project_id=project.id)
    return render(request, "dashboard/project_form.html", {"form": form, "project": project})


def _project_page(request, project, schedule_form=None, status=200):
    schedule = Schedule.objects.filter(project=project).first()
    if schedule_form is None:
        initial = {"kind": schedule.kind, "cron": schedule.cron} if schedule else {}  # none: nothing selected
        if schedule:
            initial["report_recipients"] = "\n".join(schedule.report_recipients or [])
        schedule_form = ScheduleForm(initial=initial)
    history = dashboard.paginate(
        dashboard.audit_history(project=project), request.GET.get("page"), dashboard.AUDITS_PER_PAGE
    )
    context = {"project": project, "history": history, "schedule": schedule, "schedule_form": schedule_form}
    context["report_emails"] = report_emails_for_project(project=project)  # failures shown, retries too
    return render(request, "dashboard/project_detail.html", context, status=status)


@require_GET
@dashboard_view
def project_detail(request, project_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    return _project_page(request, project)


@require_POST
@dashboard_view
def project_schedule(request, project_id):
    project = dashboard.project_for_account(account=request.account, project_id=project_id)
    if request.POST.get("action") == "clear":
        schedule_clear(project=project)
        messages.success(request, "Schedule cleared: no more recurring audits.")
        return redirect("audits:project-detail", project_id=project.id)
    form = ScheduleForm(request.POST)
    if form.is_valid():
        try:
            schedule = schedule_set(project=project, kind=form.cleaned_data["kind"], cron=form.cleaned_data["cron"])
            schedule = schedule_report_recipients_set(
                project=project, recipients=form.cleaned_data["report_recipients"]
            )
        except AuditRefused as exc:
            form.add_error("cron", exc.message)
        else:
            messages.success(request, f"Schedule saved: {schedule.get_kind_display().lower()} ({schedule.cron}, UTC).")
            return redirect("audits:project-detail", project_id=project.id)
    return _project_page(request, project, schedule_form=form, status=400)
