"""The Celery app: configured from Django settings (CELERY_* names), tasks found in each app."""

import gc
import logging
import os
from logging.handlers import WatchedFileHandler

from celery import Celery
from celery.signals import after_setup_logger, task_postrun, worker_process_init

from config.memory import heap_trim

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sitewarden")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_postrun.connect
def _heap_trim_after_task(**_kwargs) -> None:
    heap_trim()


@worker_process_init.connect
def _freeze_startup_objects(**_kwargs) -> None:
    """A pool process's objects from before its first task (Django, the models, numpy, lxml: every module loaded)
    live as long as it does: gc.freeze() takes them out of the collector's reach, so its full collections walk only
    what the tasks made. A crawl worker spent 0.21-0.24 CPU ms a page in the collector, 0.16-0.19 of it in full
    collections; frozen, 0.07-0.09 and 0.02-0.03 (bench/README.md)."""
    gc.freeze()


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
