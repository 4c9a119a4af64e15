"""Local development and `make run`: private targets allowed (sites on 127.0.0.1), the product's own error pages.

DEBUG is off unless a developer asks for Django's debug pages (tracebacks, the URL patterns on a 404) with
DJANGO_DEBUG=true: the web process `make run` starts is reachable by whoever can reach its port, and what it
shows the network should be the product's 404 and 500 pages. Nothing else here depends on DEBUG: static files
come from static/ through WhiteNoise's finders either way (no collectstatic), and the hosts are named.
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOW_PRIVATE_TARGETS = env.bool("ALLOW_PRIVATE_TARGETS", default=True)
# `make run` listens on 127.0.0.1 only; with DEBUG off Django checks Host, so name the local ones.
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
# Static files straight from static/ (no collectstatic step outside production), DEBUG or not.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
