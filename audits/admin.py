from django.contrib import admin

from audits.models import Account, Audit, AuditEvent, CreditEntry, Issue, Page, Plan, Project, Schedule


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "base_url", "max_pages", "created_at")
    search_fields = ("name", "base_url")


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ("id", "start_url", "status", "current_phase", "pages_crawled", "health_score", "created_at")
    list_filter = ("status", "current_phase", "error_code")
    search_fields = ("start_url",)
    readonly_fields = [f.name for f in Audit._meta.fields]


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ("url", "status_code", "fetch_class", "is_indexable", "depth")
    list_filter = ("fetch_class", "is_indexable")
    search_fields = ("url",)
    raw_id_fields = ("audit",)


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ("type", "severity", "page_url", "audit")
    list_filter = ("severity", "type")
    search_fields = ("page_url",)
    raw_id_fields = ("audit", "page")


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ("name", "pages_per_audit", "running_audits", "monthly_units")


class CreditEntryInline(admin.TabularInline):
    model = CreditEntry
    extra = 0
    can_delete = False
    readonly_fields = ("audit_ref", "kind", "units", "created_at")
    fields = readonly_fields


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("name", "plan", "created_at")
    inlines = [CreditEntryInline]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "audit", "kind", "message")
    list_filter = ("kind",)
    raw_id_fields = ("audit",)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = ("project", "kind", "cron", "enabled")
