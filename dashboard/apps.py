"""The server-rendered dashboard: views, forms, their reads and template tags."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
