"""Dashboard forms: projects and their crawl options, starting an audit, schedules, page filters, API tokens."""

import re
from dataclasses import dataclass
from datetime import timedelta

from django import forms
from django.db import models
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import TOKEN_EXPIRY_MAX_DAYS
from audits.checks.registry import CATEGORIES, CHECKS, CHECKS_BY_TYPE, SEVERITIES, CheckSpec, threshold_words
from audits.errors import AuditRefused
from audits.extraction import MAX_EXTRACTORS, extractors_from_text, extractors_to_text
from audits.models import Page, Project, Schedule
from audits.pipeline.start import Mode, url_list_lines
from audits.projects import NUMBER_BOUNDS, PROJECT_FIELDS
from audits.selectors.pages import COLUMNS, VIEWS, view_for
from dashboard.pages import SORT_LABELS
from dashboard.selectors import REFUSAL_HINTS

TOKEN_EXPIRY_DEFAULT_DAYS = 90  # what the new-token form suggests; a person may clear it (no expiry)


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
            "extractors",
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


URL_LIST_FILE_MAX_BYTES = 2 * 1024 * 1024  # 10,000 URLs of ~200 characters
URL_LIST_FILE_SUFFIXES = (".txt", ".csv")


class AuditStartForm(forms.Form):
    """Only shape is checked here: audits.pipeline.start.audit_start is the judge of URL, pages and plan.

    The mode picks what is audited; the fields of the other modes are ignored (and hidden by CSS :has())."""

    mode = forms.ChoiceField(
        label="What to audit",
        choices=[
            (Mode.CRAWL, "Crawl the site, following links"),
            (Mode.LIST, "A list of URLs (only those pages)"),
            (Mode.SITEMAP, "The URLs of one sitemap"),
        ],
        initial=Mode.CRAWL,
        required=False,  # absent (an older form, a script): crawl
        widget=forms.RadioSelect,
    )
    start_url = forms.CharField(
        label="Start URL",
        required=False,
        max_length=20_000,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/"}),
    )
    url_list = forms.CharField(
        label="URLs, one per line",
        required=False,
        max_length=URL_LIST_FILE_MAX_BYTES,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "autocapitalize": "off"}),
        help_text="Pages of this project's site, up to 10,000; the list's length is the page budget. Links on "
        "them are recorded, not followed.",
    )
    url_file = forms.FileField(
        label="…or upload a file",
        required=False,
        help_text="A .txt file with one URL per line, or a .csv file with the URLs in its first column.",
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.csv,text/plain,text/csv"}),
    )
    sitemap_url = forms.CharField(
        label="Sitemap URL",
        required=False,
        max_length=20_000,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/sitemap.xml"}),
        help_text="Its URLs (and those of the sitemaps an index names) are audited; links are not followed.",
    )
    max_pages = forms.IntegerField(label="Max pages", required=False)
    lighthouse = forms.BooleanField(
        label="Run Lighthouse", required=False, help_text="Performance of a sample of pages, mobile and desktop."
    )
    include_patterns = PatternsField(
        label="Include patterns", help_text="Regular expressions, one per line; saved to the project."
    )
    exclude_patterns = PatternsField(
        label="Exclude patterns", help_text="Regular expressions, one per line; saved to the project."
    )

    def clean(self):
        data = super().clean()
        mode = data["mode"] = data.get("mode") or Mode.CRAWL
        data["urls"] = None
        if mode == Mode.CRAWL and not (data.get("start_url") or "").strip():
            self.add_error("start_url", "Enter the address to start from.")
        if mode == Mode.CRAWL and data.get("max_pages") is None:
            self.add_error("max_pages", "Enter how many pages to crawl at most.")
        if mode == Mode.SITEMAP and not (data.get("sitemap_url") or "").strip():
            self.add_error("sitemap_url", "Enter the address of a sitemap.")
        if mode == Mode.LIST:
            upload = data.get("url_file")
            if upload:
                data["urls"] = self._file_lines(upload)
            elif (data.get("url_list") or "").strip():
                data["urls"] = url_list_lines(data["url_list"])
            else:
                self.add_error("url_list", "Paste URLs, one per line, or upload a .txt or .csv file.")
        return data

    def _file_lines(self, upload) -> list[str] | None:
        name = (upload.name or "").lower()
        if not name.endswith(URL_LIST_FILE_SUFFIXES):
            self.add_error("url_file", "Upload a .txt or .csv file.")
            return None
        if upload.size > URL_LIST_FILE_MAX_BYTES:
            self.add_error("url_file", f"The file is larger than {URL_LIST_FILE_MAX_BYTES // (1024 * 1024)} MB.")
            return None
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            self.add_error("url_file", "The file is not UTF-8 text.")
            return None
        try:
            return url_list_lines(text, first_column=name.endswith(".csv"))
        except AuditRefused as exc:  # not CSV the csv module reads (a cell over its 128 KiB limit)
            self.add_error("url_file", exc.message)
            return None

    def add_refusal(self, exc) -> None:
        """Show an AuditRefused next to the field it is about, or at the top of the form."""
        hint = REFUSAL_HINTS.get(exc.code, "")
        message = f"{exc.message} {hint}".strip()
        field, mode = exc.field, self.cleaned_data.get("mode")
        if field == "urls" or (field == "max_pages" and mode == Mode.LIST):
            # about the list (a bad line, too many URLs for the plan): under the file if one was uploaded
            field = "url_file" if self.cleaned_data.get("url_file") else "url_list"
        if field == "start_url" and mode != Mode.CRAWL:
            field = None  # the project's base URL, not a field of this mode: said at the top
        lines = getattr(exc, "lines", None)
        if lines:  # each bad line on its own line under the field, after the count
            message = [exc.message.split(":", 1)[0] + ":", *lines]
        self.add_error(field if field in self.fields else None, message)


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
    """The pages grid's view, filters, sort and columns, read from the query string.

    `view` picks the tab (titles, descriptions, …) and with it the `show` choices; `chars` is N of the
    over/under filters; `cols` the column chooser's ticks (`cols_set` says the chooser was submitted, so
    no tick at all means the view's defaults rather than "use the remembered choice")."""

    view = forms.ChoiceField(
        required=False, choices=[(v.key, v.label) for v in VIEWS.values()], widget=forms.HiddenInput
    )
    show = forms.ChoiceField(label="Show", required=False)
    chars = forms.IntegerField(
        label="N (characters)",
        required=False,
        min_value=0,
        max_value=10_000,
        widget=forms.NumberInput(attrs={"size": 4}),
    )
    q = forms.CharField(label="URL contains", required=False, max_length=500)
    status = forms.CharField(
        label="Status code",
        required=False,
        max_length=4,
        help_text="e.g. 404, 4xx, or “none”",
        widget=forms.TextInput(attrs={"size": 5, "inputmode": "text"}),
    )
    fetch_class = forms.ChoiceField(
        label="Fetch", required=False, choices=[("", "Any")] + list(Page.FetchClass.choices)
    )
    indexable = forms.ChoiceField(
        label="Indexable", required=False, choices=[("", "Any"), ("yes", "Yes"), ("no", "No")]
    )
    issue = forms.ChoiceField(label="Has issue", required=False)
    folder = forms.CharField(
        label="Folder",
        required=False,
        max_length=2000,
        help_text="A path such as /docs/",
        widget=forms.TextInput(attrs={"size": 12}),
    )
    sort = forms.ChoiceField(label="Sort", required=False)
    cols = forms.MultipleChoiceField(
        label="Columns",
        required=False,
        choices=[(c.key, c.label) for c in COLUMNS.values() if c.key != "url"],
        widget=forms.CheckboxSelectMultiple,
    )
    cols_set = forms.BooleanField(required=False, widget=forms.HiddenInput)

    IGNORED_UNKNOWN = ("cols", "cols_set")  # a column no longer offered is dropped from the choice, not an error

    def __init__(self, *args, issue_types=(), extra_columns=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.page_view = view_for(self.data.get("view", "") if self.is_bound else "")
        if extra_columns:  # the audit's custom extraction columns, after the built-in ones
            extra = [(c.key, f"{c.label} (extracted)") for c in extra_columns]
            self.fields["cols"].choices = [*self.fields["cols"].choices, *extra]
        self.fields["show"].choices = [("", "All")] + list(self.page_view.filters)
        self.fields["issue"].choices = [("", "Any"), *issue_types]
        self.fields["sort"].choices = [
            (key if ascending else f"-{key}", f"{label} {'↑' if ascending else '↓'}")
            for key, label in SORT_LABELS.items()
            for ascending in (True, False)
        ]
        if self.page_view.text_field:
            view = self.page_view
            self.fields["chars"].help_text = f"Over: {view.over_chars} unless set; under: {view.under_chars}."
        else:
            del self.fields["chars"]

    def clean_status(self):
        status = self.cleaned_data.get("status", "").strip().lower()
        if status and not STATUS_FILTER.match(status):
            raise forms.ValidationError("Use a code (404), a class (4xx) or “none”.")
        return status

    def _data(self) -> dict:
        if not self.is_bound:
            return {}
        if self.is_valid():
            return self.cleaned_data
        return {k: v for k, v in self.cleaned_data.items() if k not in self.errors}  # invalid fields are ignored

    def filters(self) -> dict:
        """Keyword arguments for audits.selectors.pages.page_filter."""
        data = self._data()
        return {
            "view": self.page_view.key,
            "show": data.get("show", ""),
            "chars": data.get("chars"),
            "url_contains": data.get("q", ""),
            "status": data.get("status", ""),
            "fetch_class": data.get("fetch_class", ""),
            "indexable": data.get("indexable", ""),
            "issue_type": data.get("issue", ""),
            "folder": data.get("folder", ""),
        }

    def unknown_values(self) -> list[str]:
        """What the query string asked that the grid does not know, in words ("Unknown issue type “x”"): the
        grid then lists no page rather than ignore a filter and show every page (an unknown sort falls back to
        the URL order and says so)."""
        if not self.is_bound or self.is_valid():
            return []
        names = {"issue": "issue type", "show": "filter", "fetch_class": "fetch class", "indexable": "indexable value"}
        messages = []
        for name, errors in self.errors.items():
            if name in self.IGNORED_UNKNOWN:
                continue
            value = self.data.get(name, "")
            if name == "issue" and value in CHECKS_BY_TYPE:
                messages.append(f"No page of this audit has the issue “{CHECKS_BY_TYPE[value].title}”")
            elif isinstance(self.fields[name], forms.ChoiceField):
                messages.append(f"Unknown {names.get(name, name)} “{value}”")
            else:
                messages.append(f"{self.fields[name].label}: {' '.join(errors)}")
        return messages

    def filters_known(self) -> bool:
        """Whether every filter of the query string is known (an unknown sort alone still lists the pages)."""
        return not self.is_bound or all(name in ("sort", *self.IGNORED_UNKNOWN) for name in self.errors)

    def sort_key(self) -> str:
        return self._data().get("sort") or "url"

    def chosen_columns(self) -> list[str] | None:
        """The ticked columns when the chooser was submitted, else None."""
        if not self._data().get("cols_set"):
            return None
        known = dict(self.fields["cols"].choices)
        return [key for key in self.data.getlist("cols") if key in known]  # an unknown key is dropped, not an error


class ApiTokenForm(forms.Form):
    """A new API token: what it is for, what it may do, until when (accounts.tokens.token_create judges)."""

    name = forms.CharField(
        max_length=100,
        label="Name",
        help_text="What the token is for, to tell tokens apart.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. CI pipeline"}),
    )
    scope = forms.ChoiceField(
        label="Access",
        choices=[
            (ApiToken.Scope.READ, "Read only: reads projects, audits and results; cannot start, cancel or change"),
            (ApiToken.Scope.FULL, "Full access: everything you can do, including starting and cancelling audits"),
        ],
        initial=ApiToken.Scope.READ,
        widget=forms.RadioSelect,
    )
    expires_on = forms.DateField(
        label="Expires on",
        required=False,
        help_text="The token stops working at the start of this day (UTC). Empty: until revoked.",
        widget=forms.DateInput(attrs={"type": "date"}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        today = timezone.now().date()
        self.fields["expires_on"].initial = today + timedelta(days=TOKEN_EXPIRY_DEFAULT_DAYS)
        self.fields["expires_on"].widget.attrs.update(
            min=(today + timedelta(days=1)).isoformat(), max=(today + timedelta(days=TOKEN_EXPIRY_MAX_DAYS)).isoformat()
        )
