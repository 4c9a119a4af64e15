"""Tests: PostgreSQL and Redis on this machine (the real parts), private targets allowed (sites on 127.0.0.1)."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DATABASES = {"default": env.db("TEST_DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/sitewarden")}
DATABASES["default"]["CONN_MAX_AGE"] = 0
CELERY_BROKER_URL = env("TEST_CELERY_BROKER_URL", default="redis://127.0.0.1:6379/13")
CELERY_RESULT_BACKEND = env("TEST_CELERY_RESULT_BACKEND", default="redis://127.0.0.1:6379/13")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
EMBEDDED_BROKER = False
ALLOW_PRIVATE_TARGETS = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = env("SITEWARDEN_MEDIA_ROOT", default="/tmp/sitewarden-test-media")
# Static files straight from static/ (no collectstatic step outside production).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
