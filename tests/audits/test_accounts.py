"""Plan limits refuse with stable codes and leave nothing behind; credits charge only finished work."""

import pytest

from accounts.models import CreditEntry
from accounts.selectors import credits_used_this_month
from audits.errors import AuditRefused
from audits.limits import MAX_PAGES_CEILING
from audits.models import Audit, AuditEvent
from audits.pipeline.lifecycle import audit_cancel, audit_complete, audit_fail
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _start(project, **kwargs):
    return audit_start(project=project, start_url=project.base_url, dispatch=False, **kwargs)


def _refusal(project, **kwargs) -> str:
    before = (Audit.objects.count(), CreditEntry.objects.count(), AuditEvent.objects.count())
    with pytest.raises(AuditRefused) as exc:
        _start(project, **kwargs)
    assert (Audit.objects.count(), CreditEntry.objects.count(), AuditEvent.objects.count()) == before
    assert exc.value.message
    return exc.value.code


def test_page_limit_refused():
    project = ProjectFactory()
    plan = project.account.plan
    plan.pages_per_audit = 10_000  # an operator's smaller plan (the default allows the whole ceiling)
    plan.save()
    assert _refusal(project, max_pages=plan.pages_per_audit + 1) == "audit_page_limit_exceeded"


def test_the_default_plan_takes_the_whole_ceiling():
    """`manage.py audit URL --max-pages 20000` on a fresh install was refused by the default plan (issue 29)."""
    audit = _start(ProjectFactory(), max_pages=MAX_PAGES_CEILING)
    assert audit.max_pages == MAX_PAGES_CEILING


def test_second_audit_of_a_running_project_refused():
    project = ProjectFactory()
    _start(project, max_pages=10)
    assert _refusal(project, max_pages=10) == "audit_already_running"


def test_running_audits_per_account_refused():
    first = ProjectFactory()
    plan = first.account.plan
    plan.running_audits = 1
    plan.save()
    _start(first, max_pages=10)
    second = ProjectFactory(owner=first.owner)
    assert _refusal(second, max_pages=10) == "audit_capacity_reached"


def test_instance_capacity_refused(settings):
    settings.MAX_RUNNING_AUDITS = 1
    _start(ProjectFactory(), max_pages=10)
    assert _refusal(ProjectFactory(), max_pages=10) == "audit_capacity_reached"
    with pytest.raises(AuditRefused, match=r"runs 1 audits at once \(MAX_RUNNING_AUDITS\)"):
        _start(ProjectFactory(), max_pages=10)  # the refusal names the setting that caused it


def test_insufficient_credits_refused_and_lighthouse_reserves_more():
    project = ProjectFactory()
    plan = project.account.plan
    plan.monthly_units = 100
    plan.save()
    assert _refusal(project, max_pages=90, lighthouse=True) == "insufficient_credits"  # 90 + 20 > 100
    audit = _start(project, max_pages=80, lighthouse=True)
    assert credits_used_this_month(project.account) == 100
    assert CreditEntry.objects.get(audit_ref=audit.id, kind="reserve").units == 100


def test_completed_audit_charges_the_pages_crawled_once():
    project = ProjectFactory()
    audit = _start(project, max_pages=50)
    Audit.objects.filter(id=audit.id).update(pages_crawled=12)
    assert audit_complete(audit_id=audit.id)
    assert not audit_complete(audit_id=audit.id)  # a retry cannot finish (or charge) twice
    assert not audit_fail(audit_id=audit.id, code="unknown")  # nor turn it into a failure
    kinds = dict(CreditEntry.objects.filter(audit_ref=audit.id).values_list("kind", "units"))
    assert kinds == {"reserve": 50, "charge": 12, "release": 50}
    assert credits_used_this_month(project.account) == 12


@pytest.mark.parametrize("end", ["fail", "cancel"])
def test_failed_or_cancelled_audit_charges_nothing(end):
    project = ProjectFactory()
    audit = _start(project, max_pages=50)
    Audit.objects.filter(id=audit.id).update(pages_crawled=30)
    if end == "fail":
        assert audit_fail(audit_id=audit.id, code="worker_lost", detail="x")
    else:
        assert audit_cancel(audit=audit)
    assert credits_used_this_month(project.account) == 0
    assert not CreditEntry.objects.filter(audit_ref=audit.id, kind="charge").exists()
    audit.refresh_from_db()
    assert audit.status == ("failed" if end == "fail" else "cancelled")
    assert audit.pages_crawled == 30  # partial results kept
