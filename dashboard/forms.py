"""Dashboard forms: starting an audit, schedules, page filters, API tokens. The project form (a project's crawl
options and check settings) lives in dashboard/project_form.py and is importable from here as before."""

import re
from datetime import timedelta

from django import forms
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import TOKEN_EXPIRY_MAX_DAYS
from audits.checks.registry import CHECKS_BY_TYPE
from audits.errors import AuditRefused
from audits.models import Page, Schedule
from audits.selectors.pages import COLUMNS, VIEWS, view_for
from audits.services import REPORT_RECIPIENTS_MAX, Mode, report_recipients_checked, url_list_lines
from dashboard.pages import SORT_LABELS
from dashboard.project_form import PatternsField
from dashboard.project_form import ProjectForm as ProjectForm  # dashboard.views imports every form from here
from dashboard.selectors import REFUSAL_HINTS

TOKEN_EXPIRY_DEFAULT_DAYS = 90  # what the new-token form suggests; a person may clear it (no expiry)
URL_LIST_FILE_MAX_BYTES = 2 * 1024 * 1024  # 10,000 URLs of ~200 characters
URL_LIST_FILE_SUFFIXES = (".txt", ".csv")


class AuditStartForm(forms.Form):
    """Only shape is checked here: audits.services.audit_start is the judge of URL, pages and plan.

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
    report_recipients = forms.CharField(
        label="E-mail the report to",
        required=False,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=f"Up to {REPORT_RECIPIENTS_MAX} addresses, one a line or separated by commas: after each scheduled "
        "audit they receive the client PDF and a short summary. Empty: no e-mail.",
    )

    def clean_report_recipients(self) -> list[str]:
        try:
            return report_recipients_checked(self.cleaned_data.get("report_recipients", ""))
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None

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
