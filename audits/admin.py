from django.contrib import admin

from audits.models import Audit, Issue, Page, Project


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
