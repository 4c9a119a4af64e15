"""Production: secrets from the environment (fail fast), private targets refused, HTTPS only (redirect, HSTS,
secure cookies)."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env, env_secret

SECRET_KEY = env_secret("DJANGO_SECRET_KEY")
DEBUG = False
ALLOW_PRIVATE_TARGETS = env.bool("ALLOW_PRIVATE_TARGETS", default=False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
# HTTPS only. The defaults are the strict ones `check --deploy` asks for; each can be switched off for a
# deployment that cannot have it (e.g. DJANGO_SECURE_HSTS_PRELOAD=false on an apex domain that also
# serves plain-HTTP hosts, since a preload listing covers every subdomain and is slow to undo).
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips a client's own), which the
# Procfile's deployment assumes; without such a proxy a client could claim https, so switch it off.
if env.bool("DJANGO_SECURE_PROXY_SSL_HEADER", default=True):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
