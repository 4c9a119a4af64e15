"""The project form of the dashboard: a project's crawl options and the settings of each check (enabled,
severity, thresholds), grouped by category; `PatternsField`, one regular expression per line, shared with the
audit-start form."""

import re
from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.db import models

from audits.checks.registry import CATEGORIES, CHECKS, SEVERITIES, CheckSpec, threshold_words
from audits.extraction import MAX_EXTRACTORS, extractors_from_text, extractors_to_text
from audits.models import Project
from audits.services import NUMBER_BOUNDS, PROJECT_FIELDS


def _lines(value: str) -> list[str]:
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


class PatternsField(forms.CharField):
    """One regular expression per line, as a list; audits.projects judges the patterns themselves."""

    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "autocapitalize": "off"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(value)
        return value

    def clean(self, value):
        return _lines(super().clean(value))


def _formfield(field, **kwargs):
    if isinstance(field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")  # Django 6's default: typed "example.com" is https
    return field.formfield(**kwargs)


class ProjectForm(forms.ModelForm):
    """A project and its crawl options. The form only parses what was typed; audits.projects judges it
    when the view saves through project_create/project_update, and add_refusal() shows a refusal next
    to its field. The basic-auth password is write-only: never rendered back, and left blank it keeps the
    stored one."""

    include_patterns = PatternsField(
        label="Include patterns", help_text="Regular expressions, one per line; when set, a URL must match one."
    )
    exclude_patterns = PatternsField(
        label="Exclude patterns", help_text="Regular expressions, one per line; a URL that matches is skipped."
    )
    base_url = forms.CharField(
        label="Base URL",
        # Text, not type=url: a browser would refuse "example.com", which audits.projects takes (https, then http).
        widget=forms.TextInput(
            attrs={"placeholder": "https://example.com/", "inputmode": "url", "spellcheck": "false"}
        ),
        help_text="Where audits start unless you give another URL of this site. Typed without http:// or "
        "https://, audits try https first and use http when https does not connect. Moving it to another site "
        "removes the stored basic-auth password.",
    )
    auth_password = forms.CharField(
        label="Basic-auth password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_auth_password = forms.BooleanField(label="Remove the stored password", required=False)
    query_keep_keys = forms.CharField(
        label="Query keys to keep",
        required=False,
        help_text="Comma-separated, with the “keep only the listed keys” policy.",
    )
    extractors = forms.CharField(
        label="Extractors",
        required=False,
        widget=forms.Textarea(
            attrs={
                "rows": 4,
                "spellcheck": "false",
                "autocapitalize": "off",
                "placeholder": "price | css | .price::text | contains €\nsku | xpath | //meta[@itemprop='sku']/@content"
                " | missing",
            }
        ),
        help_text=f"Up to {MAX_EXTRACTORS}, one per line: “name | kind | expression”, kind xpath, css or regex; "
        "optionally “| multiple” (up to 20 values) and a rule that raises an issue: “| missing”, "
        "“| contains TEXT” or “| matches REGEX”. Values appear in the pages grid and exports.",
    )

    class Meta:
        model = Project
        formfield_callback = _formfield
        fields = [
            "name",
            "base_url",
            "max_pages",
            "include_patterns",
            "exclude_patterns",
            "user_agent",
            "auth_username",
            "auth_password",
            "follow_nofollow",
            "crawl_subdomains",
            "max_depth",
            "query_policy",
            "query_keep_keys",
            "render_js",
            "render_budget_pages",
            "max_urls_per_pattern",
            "max_path_segments",
            "calendar_years_ahead",
            "max_dated_urls_per_pattern",
            "max_query_variants_per_path",
            "max_identical_pages_per_pattern",
            "min_request_interval_ms",
            "max_concurrency",
            "check_external_links",
            "external_links_max",
            "external_links_budget_s",
            "bot_sample_max",
            "extractors",
            "keep_page_rows",
        ]
        labels = {
            "base_url": "Base URL",
            "max_pages": "Max pages per audit",
            "user_agent": "User agent",
            "auth_username": "Basic-auth user",
            "follow_nofollow": "Follow nofollow links",
            "crawl_subdomains": "Crawl subdomains",
            "max_depth": "Max link depth",
            "query_policy": "Query strings",
            "render_js": "Render JavaScript",
            "render_budget_pages": "Pages rendered at most",
            "max_urls_per_pattern": "URLs per path shape",
            "max_path_segments": "Max path segments (trap rule)",
            "calendar_years_ahead": "Calendar dates, years ahead (trap rule)",
            "max_dated_urls_per_pattern": "Dated URLs per path shape (trap rule)",
            "max_query_variants_per_path": "Query variants per path (trap rule)",
            "max_identical_pages_per_pattern": "Identical pages per path shape (trap rule)",
            "min_request_interval_ms": "Minimum interval between requests (ms)",
            "max_concurrency": "Max concurrent requests",
            "check_external_links": "Check external links",
            "external_links_max": "External link targets checked at most",
            "external_links_budget_s": "Time for checking external links (s)",
            "bot_sample_max": "Pages fetched as each crawler",
            "keep_page_rows": "Audits kept in full",
        }

    def __init__(self, *args, account, **kwargs):
        super().__init__(*args, **kwargs)
        self.account = account
        self.has_password = bool(self.instance.pk and self.instance.auth_password)
        if self.has_password:
            self.fields["auth_password"].help_text = "A password is stored. Leave blank to keep it."
        else:
            self.fields["auth_password"].help_text = "Stored, never shown again."
            del self.fields["clear_auth_password"]
        self.check_groups = self._add_check_fields(self.instance.check_overrides if self.instance.pk else {})
        self.fields["keep_page_rows"].help_text = (
            "The last completed audits whose pages, issues and links are kept; older ones keep their score, issue "
            "counts, changes and trend point only. Empty: this instance's default "
            f"({settings.SITEWARDEN_KEEP_PAGE_ROWS})."
        )
        if isinstance(self.initial.get("extractors"), list):
            self.initial["extractors"] = extractors_to_text(self.initial["extractors"])
        if isinstance(self.initial.get("query_keep_keys"), list):
            self.initial["query_keep_keys"] = ", ".join(self.initial["query_keep_keys"])
        # The model's limits (max_length, min_value) would refuse first, in other words than the service's
        # and only some of its rules: drop them, keep the browser hints.
        for name in ("name", "user_agent", "auth_username", *NUMBER_BOUNDS):
            self.fields[name].validators = []
        for name, (low, high) in NUMBER_BOUNDS.items():
            self.fields[name].widget.attrs.update(min=low, max=high)

    def _add_check_fields(self, stored) -> list["CheckGroup"]:
        """Per check: on/off, severity and its thresholds, grouped by category, set from the stored overrides."""
        stored = stored if isinstance(stored, dict) else {}
        disabled = set(stored.get("disabled") or [])
        severities = stored.get("severities") or {}
        thresholds = stored.get("thresholds") or {}
        groups = []
        for category, label in CATEGORIES.items():
            rows = []
            for spec in (spec for spec in CHECKS if spec.category == category):
                names = _check_field_names(spec)
                self.fields[names.enabled] = forms.BooleanField(label="Run this check", required=False, initial=True)
                self.initial[names.enabled] = spec.type not in disabled
                self.fields[names.severity] = forms.ChoiceField(
                    label="Severity",
                    required=False,
                    choices=[("", f"default ({spec.severity})"), *((s, s) for s in SEVERITIES if s != spec.severity)],
                )
                self.initial[names.severity] = severities.get(spec.type, "")
                for key, field_name in names.thresholds.items():
                    self.fields[field_name] = _threshold_field(spec, key)
                    self.initial[field_name] = (thresholds.get(spec.type) or {}).get(key)
                rows.append(CheckRow(spec, names))
            groups.append(CheckGroup(category, label, rows))
        self.fields[CHECKS_SHOWN] = forms.BooleanField(required=False, initial=True, widget=forms.HiddenInput)
        return groups

    def bound_check_groups(self) -> list[dict]:
        """The check groups with their bound fields, for the template: a group is open when it holds a change or
        an error, so what differs from the defaults is in sight."""
        groups = []
        for group in self.check_groups:
            rows, changed, errors = [], 0, 0
            for row in group.rows:
                enabled, severity = self[row.names.enabled], self[row.names.severity]
                limits = [self[name] for name in row.names.thresholds.values()]
                fields = [enabled, severity, *limits]
                row_changed = (
                    not enabled.value()
                    or bool(severity.value())
                    or any(value not in (None, "") for value in (b.value() for b in limits))
                )
                changed += row_changed
                errors += any(b.errors for b in fields)
                rows.append(
                    {
                        "spec": row.spec,
                        "enabled": enabled,
                        "severity": severity,
                        "thresholds": limits,
                        "changed": row_changed,
                    }  # fmt: skip
                )
            groups.append({"key": group.key, "label": group.label, "rows": rows, "changed": changed, "errors": errors})
        return groups

    def _clean_check_overrides(self) -> None:
        """The check fields as the stored shape, only what differs from the defaults. A post without them (an
        older form, a script) leaves the stored overrides as they are."""
        if not self.cleaned_data.get(CHECKS_SHOWN):
            return
        overrides: dict = {"thresholds": {}, "severities": {}, "disabled": []}
        for group in self.check_groups:
            for row in group.rows:
                spec, names = row.spec, row.names
                if not self.cleaned_data.get(names.enabled):
                    overrides["disabled"].append(spec.type)
                severity = self.cleaned_data.get(names.severity)
                if severity and severity != spec.severity:
                    overrides["severities"][spec.type] = severity
                for key, field_name in names.thresholds.items():
                    value = self.cleaned_data.get(field_name)
                    if value is not None and value != spec.thresholds[key]:
                        overrides["thresholds"].setdefault(spec.type, {})[key] = value
        self.cleaned_data["check_overrides"] = {section: value for section, value in overrides.items() if value}

    def clean(self):
        data = super().clean()
        self._clean_check_overrides()
        return data

    def clean_extractors(self):
        try:
            return extractors_from_text(self.cleaned_data.get("extractors") or "")
        except ValueError as exc:  # the line cannot be read; audits.projects judges the expressions
            raise forms.ValidationError(str(exc)) from None

    def clean_query_keep_keys(self):
        raw = self.cleaned_data.get("query_keep_keys", "")
        return [key.strip() for key in re.split(r"[,\s]+", raw or "") if key.strip()]

    def _post_clean(self):
        # No model validation here: audits.projects is the one judge of a project (the model's validators
        # would only repeat some of its rules in other words), and the view saves through it.
        pass

    def project_fields(self) -> dict:
        """The cleaned values as keyword arguments for project_create/project_update. A blank password
        keeps the stored one (it is left out), unless "remove the stored password" is ticked."""
        fields = {name: value for name, value in self.cleaned_data.items() if name in PROJECT_FIELDS}
        if self.cleaned_data.get("clear_auth_password"):
            fields["auth_password"] = ""
        elif not fields.get("auth_password") and self.instance.pk:
            fields.pop("auth_password", None)
        return fields

    def add_refusal(self, exc) -> None:
        """Show an AuditRefused from audits.projects next to the field it is about, or at the top."""
        self.add_error(exc.field if exc.field in self.fields else None, exc.message)


CHECKS_SHOWN = "checks_shown"  # a hidden field: the check fields were on the page that was posted


@dataclass(frozen=True)
class CheckFieldNames:
    enabled: str
    severity: str
    thresholds: dict  # threshold key -> field name


@dataclass(frozen=True)
class CheckRow:
    spec: CheckSpec
    names: CheckFieldNames


@dataclass(frozen=True)
class CheckGroup:
    key: str
    label: str
    rows: list


def _check_field_names(spec: CheckSpec) -> CheckFieldNames:
    # Types are kebab-case and keys snake_case, so "__" cannot occur inside either.
    return CheckFieldNames(
        enabled=f"check__{spec.type}__enabled",
        severity=f"check__{spec.type}__severity",
        thresholds={key: f"check__{spec.type}__{key}" for key in spec.thresholds},
    )


def _threshold_field(spec: CheckSpec, key: str) -> forms.Field:
    """A number input for one threshold: empty means the default (its placeholder); whole numbers where the
    default is one; bounded by 0 and by what the crawler can measure (audits.checks.registry judges again)."""
    default = spec.thresholds[key]
    limit = spec.threshold_limits.get(key)
    whole = isinstance(default, int)
    field_class = forms.IntegerField if whole else forms.FloatField
    return field_class(
        label=threshold_words(key),
        required=False,
        min_value=0,
        max_value=limit,
        # a number input takes no thousands separator: the placeholder is the bare default, the help reads well
        widget=forms.NumberInput(attrs={"placeholder": str(default), "step": 1 if whole else "any"}),
        help_text=f"Default {default:,}" if whole else f"Default {default:g}",
    )
