"""A project's alert rules: every kind, switched on with its default, from the moment the project exists, and
the one write that changes them (the dashboard's form and the admin call it)."""

from django.db import transaction

from alerts.models import AlertChannel, AlertRule
from audits.errors import AuditRefused
from audits.models import Project

Kind = AlertRule.Kind

SCORE_DROP_DEFAULT_POINTS = 5  # the health score fell by at least this many points
PAGES_CHANGED_DEFAULT_PERCENT = 20  # the number of crawled pages moved by more than this share of the baseline's
DEFAULT_THRESHOLDS = {Kind.SCORE_DROP: SCORE_DROP_DEFAULT_POINTS, Kind.PAGES_CHANGED: PAGES_CHANGED_DEFAULT_PERCENT}
THRESHOLD_BOUNDS = {Kind.SCORE_DROP: (1, 100), Kind.PAGES_CHANGED: (1, 1000)}
THRESHOLD_UNITS = {Kind.SCORE_DROP: "points", Kind.PAGES_CHANGED: "%"}


def rule_threshold(rule: AlertRule) -> int | None:
    """The threshold a rule is judged with: its own, else its kind's default (None for kinds without one)."""
    if rule.kind not in DEFAULT_THRESHOLDS:
        return None
    return rule.threshold if rule.threshold is not None else DEFAULT_THRESHOLDS[rule.kind]


def alert_defaults_create(*, project: Project) -> None:
    """Every rule kind, switched on with its default threshold, and an e-mail channel to the account's members
    (empty target), for a new project. Idempotent: an existing rule keeps its setting, a project with channels
    gets no second e-mail one."""
    with transaction.atomic():
        _rules_ensure(project)
        if not AlertChannel.objects.filter(project=project).exists():
            AlertChannel.objects.create(project=project, kind=AlertChannel.Kind.EMAIL, target="")


def _rules_ensure(project: Project) -> None:
    AlertRule.objects.bulk_create(
        [AlertRule(project=project, kind=kind) for kind in Kind.values], ignore_conflicts=True
    )


def _threshold_checked(kind: str, value) -> int | None:
    if value is None or value == "":
        return None
    low, high = THRESHOLD_BOUNDS[kind]
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not low <= number <= high:
        unit = THRESHOLD_UNITS[kind]
        raise AuditRefused(
            "invalid_alert_threshold", f"A threshold is a whole number from {low} to {high} {unit}.", field=kind
        )
    return number


def alert_rules_set(*, project: Project, rules: dict[str, dict]) -> list[AlertRule]:
    """Switch rules on or off and set thresholds: `rules` maps a kind to {"enabled": bool, "threshold": int |
    None} (None: the default). Kinds not given keep their setting; all are checked before any is written."""
    unknown = [kind for kind in rules if kind not in Kind.values]
    if unknown:
        raise AuditRefused("invalid_alert_rule", f"No alert rule is called {unknown[0]!r}.", field="rules")
    cleaned = {}
    for kind, values in rules.items():
        row = {"enabled": bool(values.get("enabled", True))}
        if kind in THRESHOLD_BOUNDS:
            row["threshold"] = _threshold_checked(kind, values.get("threshold"))
        cleaned[kind] = row
    with transaction.atomic():
        _rules_ensure(project)  # a rule kind added later has its row
        for kind, row in cleaned.items():
            AlertRule.objects.filter(project=project, kind=kind).update(**row)
    return list(AlertRule.objects.filter(project=project).order_by("kind"))
