"""The Celery app: configured from Django settings (CELERY_* names), tasks found in each app."""

import os

from celery import Celery
from celery.signals import task_postrun

from config.memory import heap_trim

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sitewarden")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_postrun.connect
def _heap_trim_after_task(**_kwargs) -> None:
    heap_trim()
