"""Alert fixtures: a completed audit and its completed baseline on a project with the default rules and channel,
the changes between them as factory rows, and the receiver of tests/api (a small HTTP server on 127.0.0.1 that
records each POST and answers the statuses it is told)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.services import alert_defaults_create
from audits.models import Audit, PageChange
from tests.api.conftest import receiver  # noqa: F401  (the fixture, shared)
from tests.factories import AuditFactory, MembershipFactory, PageChangeFactory, ProjectFactory, UserFactory

SITE = "http://site.test"


def completed(project, *, minutes_ago: int, **fields) -> Audit:
    done = timezone.now() - timedelta(minutes=minutes_ago)
    values = {"status": Audit.Status.COMPLETED, "started_at": done - timedelta(minutes=2), "completed_at": done}
    values.update(fields)
    return AuditFactory(project=project, start_url=SITE + "/", **values)


@pytest.fixture
def member(db):
    return UserFactory(email="owner@site.test")


@pytest.fixture
def pair(member):
    """(project, baseline, audit): two completed audits, the second measured against the first."""
    project = ProjectFactory(owner=member, base_url=SITE + "/")
    alert_defaults_create(project=project)
    baseline = completed(project, minutes_ago=60, pages_crawled=100, health_score=90)
    audit = completed(project, minutes_ago=1, pages_crawled=100, health_score=90, baseline=baseline)
    return project, baseline, audit


def change(audit, path, field, direction, before="", after=""):
    return PageChangeFactory(
        audit=audit,
        baseline=audit.baseline,
        url=SITE + path,
        field=field,
        direction=direction,
        before=before,
        after=after,
    )


Field, Direction = PageChange.Field, PageChange.Direction
__all__ = ["Direction", "Field", "MembershipFactory", "change", "completed"]
