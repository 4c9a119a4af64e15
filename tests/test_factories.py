"""Every model has a factory, and the factories make the rows the pipeline would (deterministic ids)."""

import pytest
from django.apps import apps

from audits.models import issue_id_for, lighthouse_id_for, page_id_for
from tests import factories

pytestmark = pytest.mark.django_db

OUR_APPS = ("accounts", "audits", "scratchpad", "webhooks")


def _factories() -> dict:
    return {
        f._meta.model: f
        for f in vars(factories).values()
        if isinstance(f, type) and issubclass(f, factories.factory.django.DjangoModelFactory) and f._meta.model
    }


def test_every_model_of_ours_has_a_factory():
    ours = {m for m in apps.get_models() if m._meta.app_label in OUR_APPS}
    assert ours - set(_factories()) == set()


@pytest.mark.parametrize(
    "factory_class", sorted(_factories().values(), key=lambda f: f.__name__), ids=lambda f: f.__name__
)
def test_each_factory_creates_a_valid_row(factory_class):
    first, second = factory_class(), factory_class()
    for row in (first, second):
        row.full_clean(validate_unique=False, exclude=["password"])
    if factory_class is not factories.PlanFactory:  # the default plan is one row, got or created
        assert first.pk != second.pk


def test_ids_are_the_pipelines_and_related_rows_share_the_audit():
    issue = factories.IssueFactory(type="missing-h1", dedupe_key="k")
    page = issue.page
    assert page.audit == issue.audit
    assert page.id == page_id_for(page.audit_id, page.url)
    assert issue.id == issue_id_for(issue.audit_id, page.url, "missing-h1", "k")
    run = factories.LighthouseResultFactory(audit=issue.audit, page=page, strategy="desktop", cls_score=0.1)
    assert run.id == lighthouse_id_for(issue.audit_id, page.id, "desktop")
    run.refresh_from_db()
    assert run.cls == 0.1
    edge = factories.LinkEdgeFactory(audit=issue.audit, source_page=page)
    assert edge.source_page.audit_id == edge.audit_id
    site_wide = factories.IssueFactory(audit=issue.audit, page=None, type="sitemap-missing")
    assert site_wide.page_url == "" and site_wide.id == issue_id_for(issue.audit_id, "", "sitemap-missing")


def test_a_users_projects_share_the_users_account_on_the_default_plan(settings):
    user = factories.UserFactory()
    first, second = factories.ProjectFactory(owner=user), factories.ProjectFactory(owner=user)
    assert first.account == second.account
    assert first.account.plan.name == settings.DEFAULT_PLAN_NAME
    assert first.account.memberships.get().user == user
