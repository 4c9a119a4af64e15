"""The Celery app: configured from Django settings (CELERY_* names), tasks found in each app."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sitewarden")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
