"""Local development and `make run`: debug on, private targets allowed (sites on 127.0.0.1)."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
ALLOW_PRIVATE_TARGETS = env.bool("ALLOW_PRIVATE_TARGETS", default=True)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["*"])
# Static files straight from static/ (no collectstatic step outside production).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
