"""Dashboard forms: projects and their crawl options, starting an audit, schedules, page filters."""

import json
import re

from django import forms
from django.db import models

from audits.checks.registry import CHECKS_BY_TYPE, validate_overrides
from audits.models import Page, Project, Schedule

MAX_PATTERNS = 50
MAX_PATTERN_CHARS = 500


def _lines(value: str) -> list[str]:
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


def clean_patterns(value: str) -> list[str]:
    """One regular expression per line; each must compile."""
    patterns = _lines(value)
    if len(patterns) > MAX_PATTERNS:
        raise forms.ValidationError(f"At most {MAX_PATTERNS} patterns.")
    for pattern in patterns:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise forms.ValidationError(f"A pattern is longer than {MAX_PATTERN_CHARS} characters.")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise forms.ValidationError(f"“{pattern}” is not a valid regular expression: {exc}.") from None
    return patterns


class PatternsField(forms.CharField):
    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "autocapitalize": "off"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(value)
        return value

    def clean(self, value):
        return clean_patterns(super().clean(value))


def _formfield(field, **kwargs):
    if isinstance(field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")  # Django 6's default: typed "example.com" is https
    return field.formfield(**kwargs)


class ProjectForm(forms.ModelForm):
    """A project and its crawl options. The basic-auth password is write-only: never rendered back,
    and left blank it keeps the stored one."""

    include_patterns = PatternsField(
        label="Include patterns", help_text="Regular expressions, one per line; when set, a URL must match one."
    )
    exclude_patterns = PatternsField(
        label="Exclude patterns", help_text="Regular expressions, one per line; a URL that matches is skipped."
    )
    base_url = forms.URLField(
        label="Base URL",
        max_length=2048,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/"}),
        help_text="Where audits start unless you give another URL.",
    )
    auth_password = forms.CharField(
        label="Basic-auth password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    clear_auth_password = forms.BooleanField(label="Remove the stored password", required=False)
    check_overrides = forms.CharField(
        label="Check settings (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "autocapitalize": "off"}),
        help_text='Optional: {"thresholds": {"title-too-long": {"max_chars": 70}}, '
        '"severities": {"missing-h1": "info"}, "disabled": ["long-url"]}',
    )
    query_keep_keys = forms.CharField(
        label="Query keys to keep",
        required=False,
        help_text="Comma-separated, with the “keep only the listed keys” policy.",
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
            "min_request_interval_ms",
            "max_concurrency",
            "check_overrides",
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
            "max_urls_per_pattern": "URLs per path pattern",
            "min_request_interval_ms": "Minimum interval between requests (ms)",
            "max_concurrency": "Max concurrent requests",
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
        if isinstance(self.initial.get("check_overrides"), dict):
            overrides = self.initial["check_overrides"]
            self.initial["check_overrides"] = json.dumps(overrides, indent=2) if overrides else ""
        if isinstance(self.initial.get("query_keep_keys"), list):
            self.initial["query_keep_keys"] = ", ".join(self.initial["query_keep_keys"])
        self.fields["max_pages"].widget.attrs["min"] = 1

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        taken = Project.objects.filter(account=self.account, name=name).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError("You already have a project with this name.")
        return name

    def clean_base_url(self):
        url = self.cleaned_data["base_url"]
        if not url.lower().startswith(("http://", "https://")):
            raise forms.ValidationError("Only http:// and https:// sites can be audited.")
        return url

    def clean_auth_password(self):
        password = self.cleaned_data.get("auth_password", "")
        if self.cleaned_data.get("clear_auth_password"):
            return ""
        if not password and self.instance.pk:
            return self.instance.auth_password  # blank keeps the stored one
        return password

    def clean_check_overrides(self):
        raw = (self.cleaned_data.get("check_overrides") or "").strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc.msg} (line {exc.lineno}).") from None
        if not isinstance(value, dict):
            raise forms.ValidationError('Give a JSON object, e.g. {"disabled": ["long-url"]}.')
        try:
            validate_overrides(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return value

    def clean_query_keep_keys(self):
        raw = self.cleaned_data.get("query_keep_keys", "")
        return [key.strip() for key in re.split(r"[,\s]+", raw or "") if key.strip()]

    def clean(self):
        data = super().clean()
        # clear_auth_password is cleaned after auth_password: apply it here as well.
        if data.get("clear_auth_password"):
            data["auth_password"] = ""
        return data


class AuditStartForm(forms.Form):
    """Only shape is checked here: audits.services.audit_start is the judge of URL, pages and plan."""

    start_url = forms.CharField(
        label="Start URL", max_length=20_000, widget=forms.URLInput(attrs={"placeholder": "https://example.com/"})
    )
    max_pages = forms.IntegerField(label="Max pages")
    lighthouse = forms.BooleanField(
        label="Run Lighthouse", required=False, help_text="Performance of a sample of pages, mobile and desktop."
    )
    include_patterns = PatternsField(
        label="Include patterns", help_text="Regular expressions, one per line; saved to the project."
    )
    exclude_patterns = PatternsField(
        label="Exclude patterns", help_text="Regular expressions, one per line; saved to the project."
    )

    def add_refusal(self, exc) -> None:
        """Show an AuditRefused next to the field it is about, or at the top of the form."""
        from audits.dashboard import REFUSAL_HINTS

        hint = REFUSAL_HINTS.get(exc.code, "")
        message = f"{exc.message} {hint}".strip()
        self.add_error(exc.field if exc.field in self.fields else None, message)


class ScheduleForm(forms.Form):
    kind = forms.ChoiceField(
        label="Repeat",
        choices=[
            (Schedule.Kind.DAILY, "Daily, 03:00 UTC"),
            (Schedule.Kind.WEEKLY, "Weekly, Mondays 03:00 UTC"),
            (Schedule.Kind.CRON, "Custom (cron)"),
        ],
        widget=forms.RadioSelect,
    )
    cron = forms.CharField(
        label="Cron expression (UTC)",
        required=False,
        max_length=120,
        help_text="minute hour day-of-month month day-of-week, e.g. 30 2 * * 1-5",
    )

    def clean(self):
        data = super().clean()
        if data.get("kind") == Schedule.Kind.CRON and not data.get("cron", "").strip():
            self.add_error("cron", "Enter a cron expression, or choose daily or weekly.")
        return data


STATUS_FILTER = re.compile(r"^(?:[1-5]\d\d|[1-5]xx|none)$")


class PageFilterForm(forms.Form):
    """The pages list's filters and sort, read from the query string."""

    SORT_CHOICES = [
        ("url", "URL A–Z"),
        ("-url", "URL Z–A"),
        ("status", "Status code ↑"),
        ("-status", "Status code ↓"),
        ("depth", "Depth ↑"),
        ("-depth", "Depth ↓"),
        ("-time", "Slowest first"),
        ("time", "Fastest first"),
        ("words", "Fewest words"),
        ("-words", "Most words"),
        ("-issues", "Most issues"),
        ("issues", "Fewest issues"),
    ]

    q = forms.CharField(label="URL contains", required=False, max_length=500)
    status = forms.CharField(
        label="Status code",
        required=False,
        max_length=4,
        help_text="e.g. 404, 4xx, or “none” for no answer",
        widget=forms.TextInput(attrs={"size": 5, "inputmode": "text"}),
    )
    fetch_class = forms.ChoiceField(
        label="Fetch", required=False, choices=[("", "Any")] + list(Page.FetchClass.choices)
    )
    indexable = forms.ChoiceField(
        label="Indexable", required=False, choices=[("", "Any"), ("yes", "Yes"), ("no", "No")]
    )
    issue = forms.ChoiceField(label="Has issue", required=False)
    sort = forms.ChoiceField(label="Sort", required=False, choices=SORT_CHOICES)

    def __init__(self, *args, issue_types=(), **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "Any")]
        for issue_type in issue_types:
            spec = CHECKS_BY_TYPE.get(issue_type)
            choices.append((issue_type, spec.title if spec else issue_type))
        self.fields["issue"].choices = choices

    def clean_status(self):
        status = self.cleaned_data.get("status", "").strip().lower()
        if status and not STATUS_FILTER.match(status):
            raise forms.ValidationError("Use a code (404), a class (4xx) or “none”.")
        return status

    def filters(self) -> dict:
        """Keyword arguments for audits.dashboard.page_list (invalid fields are ignored)."""
        data = self.cleaned_data if self.is_valid() else {
            k: v for k, v in getattr(self, "cleaned_data", {}).items() if k not in self.errors
        }  # fmt: skip
        return {
            "url_contains": data.get("q", ""),
            "status": data.get("status", ""),
            "fetch_class": data.get("fetch_class", ""),
            "indexable": data.get("indexable", ""),
            "issue_type": data.get("issue", ""),
            "sort": data.get("sort") or "url",
        }
