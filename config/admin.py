"""Admin building blocks shared by the apps' admin modules: read-only inlines and lists."""

from django.contrib import admin
from django.db import models
from django.forms.models import BaseInlineFormSet

INLINE_ROWS = 200  # rows an inline shows; the full list is one click away


class LimitedInlineFormSet(BaseInlineFormSet):
    """Shows the first INLINE_ROWS rows only: an audit may have 100,000 issues."""

    def get_queryset(self):
        if not hasattr(self, "_limited"):
            self._limited = super().get_queryset()[:INLINE_ROWS]
        return self._limited


class ReadOnlyInline(admin.TabularInline):
    formset = LimitedInlineFormSet
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# URLs typed without a scheme are taken as https (Django 6's default, asked for explicitly now).
URL_FIELDS_HTTPS = {models.URLField: {"assume_scheme": "https"}}


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the pipeline writes: viewable and searchable, never edited by hand."""

    show_full_result_count = False  # no COUNT(*) over millions of rows on every page

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
