"""django-filter filter sets of the API's lists; a bad value answers 400 (validation_error)."""

import django_filters
from django import forms
from django.db.models import Exists, OuterRef, Q

from audits.checks.registry import CHECKS
from audits.models import Audit, ExternalLink, Issue, Page, PageChange, Project
from audits.selectors.external import PROBLEM_OUTCOMES
from config.inputs import ID_MAX, ID_MIN
from webhooks.models import Webhook, WebhookDelivery

ISSUE_TYPE_CHOICES = [(spec.type, spec.type) for spec in CHECKS]


HTTP_STATUS_MIN, HTTP_STATUS_MAX = 100, 999


class IntegerFilter(django_filters.NumberFilter):
    """A whole number in a range (django-filter's NumberFilter takes decimals of any size): by default a row
    id's, 1 to 2**63-1, so a 20-digit number is a 400 field error before any query."""

    field_class = forms.IntegerField

    def __init__(self, *args, min_value: int = ID_MIN, max_value: int = ID_MAX, **kwargs):
        super().__init__(*args, min_value=min_value, max_value=max_value, **kwargs)


class ProjectFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", help_text="Name contains (any case)")
    base_url = django_filters.CharFilter(lookup_expr="icontains", help_text="Base URL contains (any case)")

    class Meta:
        model = Project
        fields = ["name", "base_url"]


class AuditFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=Audit.Status.choices)
    current_phase = django_filters.ChoiceFilter(choices=Audit.Phase.choices)
    project = IntegerFilter(field_name="project_id", help_text="Project id")
    scheduled = django_filters.BooleanFilter()
    error_code = django_filters.CharFilter()

    class Meta:
        model = Audit
        fields = ["status", "current_phase", "project", "scheduled", "error_code"]


class IssueFilter(django_filters.FilterSet):
    severity = django_filters.ChoiceFilter(choices=Issue.Severity.choices)
    type = django_filters.ChoiceFilter(choices=ISSUE_TYPE_CHOICES, help_text="Issue type (see docs/CHECKS.md)")
    url = django_filters.CharFilter(field_name="page_url", lookup_expr="icontains", help_text="Page URL contains")

    class Meta:
        model = Issue
        fields = ["severity", "type", "url"]


class PageFilter(django_filters.FilterSet):
    status_code = IntegerFilter(min_value=HTTP_STATUS_MIN, max_value=HTTP_STATUS_MAX)
    fetch_class = django_filters.ChoiceFilter(choices=Page.FetchClass.choices)
    is_indexable = django_filters.BooleanFilter()
    has_issue = django_filters.ChoiceFilter(
        choices=ISSUE_TYPE_CHOICES, method="filter_has_issue", help_text="Pages with an issue of this type"
    )
    url = django_filters.CharFilter(lookup_expr="icontains", help_text="URL contains (any case)")

    class Meta:
        model = Page
        fields = ["status_code", "fetch_class", "is_indexable", "has_issue", "url"]

    def filter_has_issue(self, queryset, name, value):
        return queryset.filter(Exists(Issue.objects.filter(page_id=OuterRef("pk"), type=value)))


class ExternalLinkFilter(django_filters.FilterSet):
    outcome = django_filters.ChoiceFilter(
        choices=ExternalLink.Outcome.choices, help_text="What asking the target answered"
    )
    problems = django_filters.BooleanFilter(
        method="filter_problems",
        help_text="true: only targets worth a look (every outcome but ok and redirected); false: only those two",
    )
    host = django_filters.CharFilter(lookup_expr="iexact", max_length=255, help_text="The target's host (any case)")
    url = django_filters.CharFilter(lookup_expr="icontains", max_length=500, help_text="URL contains (any case)")

    class Meta:
        model = ExternalLink
        fields = ["outcome", "problems", "host", "url"]

    def filter_problems(self, queryset, name, value):
        problems = Q(outcome__in=PROBLEM_OUTCOMES)
        return queryset.filter(problems) if value else queryset.exclude(problems)


class ChangeFilter(django_filters.FilterSet):
    field = django_filters.ChoiceFilter(
        choices=PageChange.Field.choices,
        help_text="Only changes of this field (added/removed: URLs only one audit crawled; robots_txt: lines of "
        "robots.txt; sitemap: sitemap documents found or gone, fixed or now failing)",
    )
    direction = django_filters.ChoiceFilter(
        choices=PageChange.Direction.choices,
        help_text="added/removed: a value, URL, robots.txt line or sitemap that appeared or went; changed; up/down: "
        "a number grew or fell, a page became indexable or non-indexable",
    )

    class Meta:
        model = PageChange
        fields = ["field", "direction"]


class WebhookFilter(django_filters.FilterSet):
    enabled = django_filters.BooleanFilter()

    class Meta:
        model = Webhook
        fields = ["enabled"]


class DeliveryFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=WebhookDelivery.Status.choices)

    class Meta:
        model = WebhookDelivery
        fields = ["status"]
