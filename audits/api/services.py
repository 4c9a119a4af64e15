"""Writes the API needs beyond audits.services: projects created, changed and deleted for an account."""

from django.db import IntegrityError, transaction

from audits.accounts import account_for_user
from audits.errors import AuditRefused
from audits.models import Audit, Project
from audits.schedules import schedule_clear
from audits.services import audit_delete


def _name_taken(name: str) -> AuditRefused:
    return AuditRefused("project_name_taken", f"A project named {name!r} exists already.", field="name")


def project_create(*, user, name: str, **fields) -> Project:
    """A project of the user's account (names are unique per account)."""
    account = account_for_user(user)
    if Project.objects.filter(account=account, name=name).exists():
        raise _name_taken(name)
    try:
        with transaction.atomic():
            return Project.objects.create(account=account, owner=user, name=name, **fields)
    except IntegrityError as exc:  # a concurrent create with the same name
        raise _name_taken(name) from exc


def project_update(*, project: Project, **fields) -> Project:
    name = fields.get("name")
    if (
        name is not None
        and Project.objects.filter(account_id=project.account_id, name=name).exclude(id=project.id).exists()
    ):
        raise _name_taken(name)
    for key, value in fields.items():
        setattr(project, key, value)
    try:
        with transaction.atomic():
            project.save()
    except IntegrityError as exc:
        raise _name_taken(name or project.name) from exc
    return project


def project_delete(*, project: Project) -> None:
    """Clear the schedule, delete every audit the way audit_delete does (running ones are cancelled, report
    files removed), then the project."""
    schedule_clear(project=project)
    for audit in Audit.objects.filter(project=project).only("id", "status", "project_id"):
        audit_delete(audit=audit)
    project.delete()


def audit_cancel_checked(*, audit: Audit) -> Audit:
    """Cancel through audits.services.audit_cancel; refuse (audit_not_running) when it had already ended."""
    from audits.services import audit_cancel

    if not audit_cancel(audit=audit):
        audit.refresh_from_db()
        raise AuditRefused("audit_not_running", f"The audit is {audit.status}; only a running audit can be cancelled.")
    audit.refresh_from_db()
    return audit
