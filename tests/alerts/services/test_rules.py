"""Every project has each rule on with its default and an e-mail channel to its members: from project_create, and
for projects from before alerts, from migration alerts/0002; alert_rules_set checks every rule before writing."""

import importlib

import pytest
from django.apps import apps

from alerts.models import AlertChannel, AlertRule
from alerts.services import alert_defaults_create, alert_rules_set, rule_threshold
from audits.errors import AuditRefused
from audits.services import project_create
from tests.factories import ProjectFactory, UserFactory, account_of

pytestmark = pytest.mark.django_db
Kind = AlertRule.Kind


def test_a_new_project_has_every_rule_on_and_an_email_channel():
    owner = UserFactory()
    project = project_create(account=account_of(owner), owner=owner, name="Shop", base_url="https://shop.test/")
    rules = {r.kind: r for r in AlertRule.objects.filter(project=project)}
    assert set(rules) == set(Kind.values) and all(r.enabled for r in rules.values())
    assert rule_threshold(rules[Kind.SCORE_DROP]) == 5 and rule_threshold(rules[Kind.PAGES_CHANGED]) == 20
    assert rule_threshold(rules[Kind.NEW_CRITICAL]) is None
    (channel,) = AlertChannel.objects.filter(project=project)
    assert (channel.kind, channel.target, channel.enabled) == ("email", "", True)


def test_defaults_are_idempotent_and_keep_what_was_set():
    project = ProjectFactory()
    alert_defaults_create(project=project)
    alert_rules_set(project=project, rules={Kind.SCORE_DROP: {"enabled": False, "threshold": 9}})
    AlertChannel.objects.all().delete()
    AlertChannel.objects.create(project=project, kind="slack", target="https://hooks.slack.test/x")
    alert_defaults_create(project=project)
    rule = AlertRule.objects.get(project=project, kind=Kind.SCORE_DROP)
    assert (rule.enabled, rule.threshold) == (False, 9)
    assert list(AlertChannel.objects.filter(project=project).values_list("kind", flat=True)) == ["slack"]


def test_existing_projects_get_the_defaults_from_the_migration():
    old, configured = ProjectFactory(), ProjectFactory()
    AlertChannel.objects.create(project=configured, kind="slack", target="https://hooks.slack.test/x")
    migration = importlib.import_module("alerts.migrations.0002_default_rules_for_existing_projects")
    migration.forwards(apps, None)
    migration.forwards(apps, None)  # twice: nothing doubled
    for project in (old, configured):
        assert AlertRule.objects.filter(project=project).count() == len(Kind.values)
    assert list(AlertChannel.objects.filter(project=old).values_list("kind", "target")) == [("email", "")]
    assert list(AlertChannel.objects.filter(project=configured).values_list("kind", flat=True)) == ["slack"]


@pytest.mark.parametrize(
    "rules, code",
    [
        ({"no-such-rule": {"enabled": True}}, "invalid_alert_rule"),
        ({Kind.SCORE_DROP: {"threshold": 0}}, "invalid_alert_threshold"),
        ({Kind.PAGES_CHANGED: {"threshold": "many"}}, "invalid_alert_threshold"),
        ({Kind.PAGES_CHANGED: {"threshold": 1001}}, "invalid_alert_threshold"),
    ],
)
def test_refusals_write_nothing(rules, code):
    project = ProjectFactory()
    alert_defaults_create(project=project)
    with pytest.raises(AuditRefused) as refused:
        alert_rules_set(project=project, rules={Kind.BECAME_BROKEN: {"enabled": False}, **rules})
    assert refused.value.code == code
    assert AlertRule.objects.get(project=project, kind=Kind.BECAME_BROKEN).enabled
