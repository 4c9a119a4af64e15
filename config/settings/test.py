"""Tests: PostgreSQL and Redis on this machine (the real parts), private targets allowed (sites on 127.0.0.1)."""

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import env

# Two test runs on one machine must not share a database or a Redis db: the suite flushes both.
# SITEWARDEN_TEST_SLOT=N (1-12) gives a run database sitewarden_N (pytest-django creates test_sitewarden_N),
# Redis db N and its own media directory. Unset: sitewarden, Redis db 13 (db 14 is bench.run's, 15 bench.retention's;
# bench.scale starts its own redis-server).
# TEST_DATABASE_URL, TEST_CELERY_BROKER_URL, TEST_CELERY_RESULT_BACKEND and SITEWARDEN_MEDIA_ROOT still win.
TEST_SLOT_MAX = 12
TEST_SLOT = env.int("SITEWARDEN_TEST_SLOT", default=None)
if TEST_SLOT is not None and not 1 <= TEST_SLOT <= TEST_SLOT_MAX:
    raise ImproperlyConfigured(f"SITEWARDEN_TEST_SLOT must be 1-{TEST_SLOT_MAX}, not {TEST_SLOT}")
_DB_NAME = f"sitewarden_{TEST_SLOT}" if TEST_SLOT else "sitewarden"
_REDIS_URL = f"redis://127.0.0.1:6379/{TEST_SLOT or 13}"
_MEDIA_ROOT = f"/tmp/sitewarden-test-media-{TEST_SLOT}" if TEST_SLOT else "/tmp/sitewarden-test-media"

DATABASES = {"default": env.db("TEST_DATABASE_URL", default=f"postgres://postgres@127.0.0.1:5432/{_DB_NAME}")}
DATABASES["default"]["CONN_MAX_AGE"] = 0
CELERY_BROKER_URL = env("TEST_CELERY_BROKER_URL", default=_REDIS_URL)
CELERY_RESULT_BACKEND = env("TEST_CELERY_RESULT_BACKEND", default=_REDIS_URL)
CELERY_BROKER_TRANSPORT_OPTIONS = broker_transport_options(CELERY_BROKER_URL)  # noqa: F405
EMBEDDED_BROKER = False
ALLOW_PRIVATE_TARGETS = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = env("SITEWARDEN_MEDIA_ROOT", default=_MEDIA_ROOT)
SITEWARDEN_OUTBOX_DIR = env("SITEWARDEN_OUTBOX_DIR", default=f"{_MEDIA_ROOT}-outbox")
# Static files straight from static/ (no collectstatic step outside production).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
