"""The Celery app: configured from Django settings (CELERY_* names), tasks found in each app."""

import logging
import os
from logging.handlers import WatchedFileHandler

from celery import Celery
from celery.signals import after_setup_logger, task_postrun

from config.memory import heap_trim

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sitewarden")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_postrun.connect
def _heap_trim_after_task(**_kwargs) -> None:
    heap_trim()


@after_setup_logger.connect
def _root_logs_to_logfile(logger, logfile=None, format=None, **_kwargs) -> None:
    """`celery worker --logfile` writes the worker's log there. Django's LOGGING has already given the root
    logger a console handler, and celery adds its file handler only to a logger without one (and
    CELERY_WORKER_HIJACK_ROOT_LOGGER stays off so the project's handlers survive): add it here."""
    if not logfile or not isinstance(logfile, str):
        return
    path = os.path.abspath(logfile)
    if any(getattr(h, "baseFilename", None) == path for h in logger.handlers):
        return
    handler = WatchedFileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(format))
    logger.addHandler(handler)
