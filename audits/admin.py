"""The operators' admin for projects, audits, pages, issues, events and schedules. Every write goes through
the services (audits.services, the front door), as the dashboard and the API do:

- audits are started (re-run), cancelled, reconciled and deleted, never saved from a form (a stale form would
  overwrite what the workers wrote);
- projects are judged and saved, schedules set and cleared (so the beat task follows), there too; a project's
  segments (an inline on the project) too, judged by audits.segments.

Plans, accounts, credits and API tokens are in accounts/admin.py; webhooks in webhooks/admin.py.
"""

from django import forms
from django.contrib import admin, messages
from django.db.models import Q, Sum
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from audits.errors import AuditRefused
from audits.events import event_sentence
from audits.models import Audit, AuditEvent, Issue, Page, Project, ReportEmail, Schedule, Segment
from audits.segments import SegmentInvalid, segment_validate
from audits.selectors.retention import SPACE_METHOD, keep_page_rows_for, kept_words, project_space
from audits.services import (
    PASSWORD_CLEARED_MESSAGE,
    audit_cancel,
    audit_delete,
    audit_start,
    project_create,
    project_delete,
    project_update,
    project_validate,
    reconcile_running_audit,
    report_recipients_checked,
    schedule_clear,
    schedule_report_recipients_set,
    schedule_set,
    schedule_validate,
    segment_create,
    segment_delete,
    segment_update,
)
from config.admin import INLINE_ROWS, URL_FIELDS_HTTPS, ReadOnlyAdmin, ReadOnlyInline
from config.forms import SafeJSONField

JSON_FIELDS = {
    "include_patterns": list, "exclude_patterns": list, "query_keep_keys": list, "check_overrides": dict,
    "extractors": list,
}  # fmt: skip


# --- projects and audits ---------------------------------------------------------------------------------


class ProjectAdminForm(forms.ModelForm):
    """Parses what the operator typed; audits.projects judges it (project_validate in the form, so refusals
    show next to their field, then project_create/project_update when ProjectAdmin saves)."""

    base_url = forms.CharField(max_length=4096)
    # The basic-auth password is write-only here too: never rendered back, blank keeps the stored one.
    auth_password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only: leave blank to keep the stored password.",
    )

    class Meta:
        model = Project
        fields = (
            "account", "owner", "name", "base_url", "max_pages", "include_patterns", "exclude_patterns",
            "user_agent", "auth_username", "auth_password", "follow_nofollow", "crawl_subdomains", "render_js",
            "render_budget_pages", "max_depth", "max_urls_per_pattern", "max_path_segments",
            "calendar_years_ahead", "max_dated_urls_per_pattern", "max_query_variants_per_path",
            "max_identical_pages_per_pattern", "query_policy", "query_keep_keys",
            "min_request_interval_ms", "max_concurrency", "check_external_links", "external_links_max",
            "external_links_budget_s", "bot_sample_max", "check_overrides", "extractors", "keep_page_rows",
        )  # fmt: skip
        field_classes = {name: SafeJSONField for name in JSON_FIELDS}
        help_texts = {
            "check_overrides": 'Only what differs from the defaults: {"disabled": [type, …], "severities": {type: '
            'severity}, "thresholds": {type: {key: value}}}. The dashboard\'s project settings show them as fields.'
        }

    def project_fields(self) -> dict:
        """The cleaned values as keyword arguments for audits.projects (a blank password is left out)."""
        fields = {name: self.cleaned_data[name] for name in self._meta.fields if name in self.cleaned_data}
        for name, empty in JSON_FIELDS.items():
            if name in fields and fields[name] is None:
                fields[name] = empty()
        if not fields.get("auth_password") and self.instance.pk:
            fields.pop("auth_password", None)
        return fields

    def _post_clean(self):
        # Instead of the model's validation: the service's rules, without saving.
        if any(name in self.errors for name in ("account", "owner")):
            return
        fields = self.project_fields()
        try:
            project_validate(project=self.instance if self.instance.pk else None, **fields)
        except AuditRefused as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)


SEGMENT_FIELDS = ("name", "kind", "value", "extractor", "position")


class SegmentInlineForm(forms.ModelForm):
    """A segment row: audits.segments judges it (segment_validate, so a refusal shows on its row) and ProjectAdmin
    saves it through the front door's segment_create/segment_update/segment_delete."""

    class Meta:
        model = Segment
        fields = SEGMENT_FIELDS

    def _post_clean(self):
        # Instead of the model's validation: the service's rules, without saving.
        if self.errors or not self.instance.project_id or not self.has_changed():
            return
        try:
            segment_validate(
                project=self.instance.project,
                instance=self.instance if self.instance.pk else None,
                **{name: self.cleaned_data.get(name) for name in SEGMENT_FIELDS},
            )
        except SegmentInvalid as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)


class SegmentInline(admin.TabularInline):
    model = Segment
    form = SegmentInlineForm
    fields = SEGMENT_FIELDS
    extra = 0
    ordering = ("position", "name")


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectAdminForm
    inlines = [SegmentInline]
    list_display = ("name", "account", "owner", "base_url", "max_pages", "page_rows_kept", "created_at")
    list_select_related = ("account", "owner")
    search_fields = ("name", "base_url", "account__name")
    raw_id_fields = ("owner", "account")
    readonly_fields = ("database_space",)

    def get_queryset(self, request):
        # The list's cheap measure of a project's size: its whole audits' page counters (no row is counted).
        kept = Sum("audits__pages_crawled", filter=Q(audits__summarised_at__isnull=True))
        return super().get_queryset(request).annotate(page_rows_kept=kept)

    @admin.display(description="page rows kept", ordering="page_rows_kept")
    def page_rows_kept(self, obj):
        return f"{obj.page_rows_kept or 0:,}"

    @admin.display(description="database space (estimate)")
    def database_space(self, obj):
        """Rows and bytes per table the project's audits take (audits.selectors.retention.project_space): on the
        change page only, since it counts."""
        if obj is None or obj.pk is None:
            return "-"
        rows = project_space(project_id=obj.pk)
        known = [r.bytes for r in rows if r.bytes is not None]
        total = f"{filesizeformat(sum(known))} in all" if known else "bytes not known on this database"
        cells = format_html_join(
            "",
            "<tr><th>{}</th><td>{}{}</td><td>{}</td></tr>",
            (
                (
                    r.table,
                    f"{r.rows:,}",
                    " (est.)" if r.estimated else "",
                    "-" if r.bytes is None else filesizeformat(r.bytes),
                )
                for r in rows
            ),
        )
        return format_html(
            '<table id="database-space"><thead><tr><th>Table</th><th>Rows</th><th>Size</th></tr></thead>'
            "<tbody>{}</tbody></table><p>{}. Audits kept whole: {}. {}</p>",
            cells,
            total,
            kept_words(keep_page_rows_for(obj)),
            SPACE_METHOD,
        )

    def save_form(self, request, form, change):
        """Saved here, through the service (the form checked the same rules a moment ago)."""
        fields = form.project_fields()
        if change:
            project = project_update(project=form.instance, **fields)
            if project.auth_password_cleared:
                self.message_user(request, PASSWORD_CLEARED_MESSAGE, messages.WARNING)
            return project
        return project_create(**fields)

    def save_model(self, request, obj, form, change):
        pass  # save_form saved it through audits.projects

    def save_related(self, request, form, formsets, change):
        """No many-to-many fields; the segments inline is saved through audits.segments, row by row."""
        project = form.instance
        for formset in formsets:
            # What formset.save() would have recorded, for the admin's change message.
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
            deleted = set(formset.deleted_forms)
            for row in formset.forms:
                if row in deleted:
                    if row.instance.pk:
                        segment_delete(segment=row.instance)
                        formset.deleted_objects.append(row.instance)
                    continue
                if not row.has_changed():
                    continue
                fields = {name: row.cleaned_data.get(name) for name in SEGMENT_FIELDS}
                try:
                    if row.instance.pk:
                        saved = segment_update(segment=Segment.objects.get(pk=row.instance.pk), **fields)
                        formset.changed_objects.append((saved, row.changed_data))
                    else:
                        formset.new_objects.append(segment_create(project=project, **fields))
                except SegmentInvalid as exc:
                    self.message_user(request, f"Segment “{fields['name']}” not saved: {exc.message}", messages.ERROR)

    def delete_model(self, request, obj):
        project_delete(project=obj)

    def delete_queryset(self, request, queryset):
        for project in queryset:
            project_delete(project=project)


class IssueInline(ReadOnlyInline):
    model = Issue
    fields = ("type", "severity", "page_url", "details")
    readonly_fields = fields
    ordering = ("type", "page_url")
    verbose_name_plural = f"issues (first {INLINE_ROWS})"


@admin.display(description="what happened")
def _what_happened(event) -> str:
    return event_sentence(event)


class AuditEventInline(ReadOnlyInline):
    model = AuditEvent
    fields = ("created_at", "kind", "what_happened", "data")
    readonly_fields = fields
    what_happened = staticmethod(_what_happened)
    show_change_link = False
    verbose_name_plural = f"events (first {INLINE_ROWS})"


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    formfield_overrides = URL_FIELDS_HTTPS
    list_display = (
        "id",
        "project",
        "start_url",
        "status",
        "current_phase",
        "error_code",
        "pages_crawled",
        "health_score",
        "created_at",
        "summarised_at",
    )
    list_filter = ("status", "current_phase", "error_code", "reconciled_by", "scheduled", "summarised_at")
    list_select_related = ("project",)
    search_fields = ("start_url", "site_url", "project__name")
    readonly_fields = [f.name for f in Audit._meta.fields] + ["results"]
    inlines = [AuditEventInline, IssueInline]
    actions = ["reconcile_now", "cancel_audits", "rerun_audits"]
    show_full_result_count = False
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False  # audits start through the dashboard, the API, the CLI or "re-run"

    def has_change_permission(self, request, obj=None):
        # The changelist's actions need it; an audit's own form stays read-only.
        return obj is None and super().has_change_permission(request)

    @admin.display(description="results")
    def results(self, obj):
        issues = reverse("admin:audits_issue_changelist") + f"?audit__id__exact={obj.id}"
        pages = reverse("admin:audits_page_changelist") + f"?audit__id__exact={obj.id}"
        return format_html('<a href="{}">all issues</a> · <a href="{}">all pages</a>', issues, pages)

    @admin.action(description="Reconcile now (judge liveness, revive or fail stuck audits)", permissions=["change"])
    def reconcile_now(self, request, queryset):
        for audit in queryset.filter(status=Audit.Status.RUNNING):
            verdict = reconcile_running_audit(audit, reconciled_by="admin")
            level = messages.WARNING if verdict.action == "failed" else messages.INFO
            self.message_user(request, f"{audit.id}: {verdict.action} ({verdict.reason})", level)
        skipped = queryset.exclude(status=Audit.Status.RUNNING).count()
        if skipped:
            self.message_user(request, f"{skipped} audit(s) not running: nothing to reconcile.", messages.INFO)

    @admin.action(description="Cancel running audits", permissions=["change"])
    def cancel_audits(self, request, queryset):
        cancelled = sum(audit_cancel(audit=audit) for audit in queryset.filter(status=Audit.Status.RUNNING))
        self.message_user(request, f"{cancelled} audit(s) cancelled.", messages.SUCCESS)

    @admin.action(
        description="Re-run (a new audit of the same project, URL, max pages, Lighthouse)", permissions=["change"]
    )
    def rerun_audits(self, request, queryset):
        for audit in queryset.select_related("project"):
            try:
                new = audit_start(
                    project=audit.project,
                    start_url=audit.start_url,
                    max_pages=audit.max_pages,
                    lighthouse=bool(audit.config.get("lighthouse")),
                )
            except AuditRefused as exc:
                self.message_user(request, f"{audit.id}: refused ({exc.code}): {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{audit.id}: re-run as {new.id}.", messages.SUCCESS)

    def delete_model(self, request, obj):
        audit_delete(audit=obj)

    def delete_queryset(self, request, queryset):
        for audit in queryset:
            audit_delete(audit=audit)


@admin.register(Page)
class PageAdmin(ReadOnlyAdmin):
    list_display = ("url", "status_code", "fetch_class", "is_indexable", "depth", "audit")
    list_filter = ("fetch_class", "is_indexable", "in_sitemap")
    search_fields = ("url",)
    raw_id_fields = ("audit",)

    def has_delete_permission(self, request, obj=None):
        return False  # pages go with their audit


@admin.register(Issue)
class IssueAdmin(ReadOnlyAdmin):
    list_display = ("type", "severity", "page_url", "audit")
    list_filter = ("severity", "type")
    search_fields = ("page_url",)
    raw_id_fields = ("audit", "page")

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "audit", "kind", "what_happened")
    list_select_related = ("audit",)
    what_happened = staticmethod(_what_happened)
    list_filter = ("kind",)
    raw_id_fields = ("audit",)

    def has_delete_permission(self, request, obj=None):
        return False


# --- schedules ------------------------------------------------------------------------------------------


class ScheduleForm(forms.ModelForm):
    class Meta:
        model = Schedule
        fields = ("project", "kind", "cron", "enabled", "report_recipients")

    cron = forms.CharField(required=False, help_text="Only for kind=cron: minute hour day month weekday (UTC)")
    report_recipients = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="E-mail addresses each scheduled audit's report goes to, one a line; empty: no e-mail",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["report_recipients"] = "\n".join(self.instance.report_recipients or [])

    def clean_report_recipients(self) -> list[str]:
        try:
            return report_recipients_checked(self.cleaned_data.get("report_recipients") or "")
        except AuditRefused as exc:
            raise forms.ValidationError(exc.message) from exc

    def clean(self):
        data = super().clean()
        try:
            schedule_validate(kind=data.get("kind"), cron=data.get("cron") or "")
        except AuditRefused as exc:
            raise forms.ValidationError({"cron": exc.message}) from exc
        return data


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = ("project", "kind", "cron", "enabled", "periodic_task")
    list_filter = ("kind", "enabled")
    raw_id_fields = ("project",)

    def save_model(self, request, obj, form, change):
        saved = schedule_set(project=obj.project, kind=obj.kind, cron=obj.cron or "", enabled=obj.enabled)
        saved = schedule_report_recipients_set(project=obj.project, recipients=form.cleaned_data["report_recipients"])
        obj.pk, obj.cron, obj.periodic_task_id = saved.pk, saved.cron, saved.periodic_task_id

    def delete_model(self, request, obj):
        schedule_clear(project=obj.project)

    def delete_queryset(self, request, queryset):
        for schedule in queryset.select_related("project"):
            schedule_clear(project=schedule.project)


@admin.register(ReportEmail)
class ReportEmailAdmin(ReadOnlyAdmin):
    """The scheduled reports' outbox (audits.report_emails), read only: the sweep retries, people read why."""

    list_display = ("audit", "status", "attempts", "next_attempt_at", "sent_at", "last_error")
    list_filter = ("status",)
    raw_id_fields = ("audit",)
