"""Settings shared by every environment; everything that varies comes from the environment (django-environ)."""

import os
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from config.inputs import ID_MAX, ID_MIN

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def env_secret(name: str, default: str | None = None) -> str:
    """A secret exactly as the environment holds it. django-environ reads a value that starts with "$" as the
    name of another variable (a proxy), and Django's own get_random_secret_key starts about one key in 50 with
    "$": read through env(), such a key stops the product with "Set the <rest of the key> environment
    variable". Unset and no default: the same clear refusal as env()."""
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"Set the {name} environment variable")
        return default
    return value


def env_secret_list(name: str) -> list[str]:
    """Comma-separated secrets, each exactly as set (see env_secret); unset: none."""
    return [item.strip() for item in env_secret(name, "").split(",") if item.strip()]


SECRET_KEY = env_secret("DJANGO_SECRET_KEY", "insecure-dev-key-change-me")
# Earlier secret keys, still accepted for signatures (and for stored secrets while their keys are derived).
SECRET_KEY_FALLBACKS = env_secret_list("DJANGO_SECRET_KEY_FALLBACKS")
# Keys of the stored secrets (a project's basic-auth password, audits/secrets.py), comma-separated, newest first:
# the first encrypts, any decrypts; `manage.py rotate_secrets` re-encrypts with the first. Each is a Fernet key
# (`manage.py rotate_secrets --new-key` prints one) or any text one is derived from. Unset: derived from
# DJANGO_SECRET_KEY (then DJANGO_SECRET_KEY_FALLBACKS), in production too, so nothing more is required.
SITEWARDEN_SECRET_KEYS = env_secret_list("SITEWARDEN_SECRET_KEYS")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc files for /api/docs/, served locally (no CDN)
    "django_celery_beat",
    "django_celery_results",
    "axes",  # sign-in throttling: see AXES_* below
    "accounts",  # plans, accounts, memberships, credit ledger, API tokens
    "audits",  # projects, audits, pages, issues, the pipeline and the checks
    "webhooks",
    "alerts",  # alert rules, channels, the outbox of their deliveries, in-app notifications
    "dashboard",  # server-rendered pages (views, forms, reads, template tags)
    "assistants",  # the MCP server for AI assistants (stdio: manage.py mcp; HTTP: /mcp/ in config/asgi.py)
    "scratchpad",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as axes asks: turns a refused sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The embedded default is a SQLite file. WAL and IMMEDIATE transactions let a web process and a
# worker with two processes write concurrently (the chord counter fails with "database is locked"
# otherwise).
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    )
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and not env.bool("DATABASE_JIT", False):
        # PostgreSQL's JIT compiles any plan costed over 100,000: the pages grid sorted by inlinks on a
        # 100,000-page audit (a subquery costed per row) spent ~1 s compiling to run a 0.3 s sort.
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options["options"] = (options.get("options", "") + " -c jit=off").strip()

# The cache holds the API's per-token throttle counters and the share links' rate limits (dashboard/throttling.py):
# in production point it at Redis (CACHE_URL=redis://host:6379/2) so every web process counts the same requests.
# The local-memory default counts per process, shared by its threads: right for `make run`'s one web process.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env("SITEWARDEN_MEDIA_ROOT", default=str(BASE_DIR / "media")))

LOGIN_URL = "login"
# The axes backend goes first: a locked-out username or address is refused before the password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # API: hashed per-user tokens (Bearer/Token) or the dashboard's session; errors as RFC 7807 problems
    # with a stable code, mapped in one place; rate limits per token.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Signed in, and a read-only token never writes (api.permissions): one rule for every endpoint.
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "api.permissions.TokenScopePermission",
    ],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # JSON only; a body nested too deep to parse is a 400 parse_error, not a RecursionError (a 500).
    "DEFAULT_PARSER_CLASSES": ["api.parsers.SafeJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": [
        "api.throttling.ApiRateThrottle",
        "api.throttling.ActionRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "api": env("API_THROTTLE_RATE", default="1200/min"),
        "audit_start": env("API_AUDIT_START_THROTTLE_RATE", default="30/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Sitewarden API",
    "DESCRIPTION": "Start website audits and read their pages, issues and scores.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from drf-spectacular-sidecar's files, served by the app itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models have a `status` choice set: stable names instead of a generated "Status043Enum" (and the
    # W001 warning that otherwise spoils `check --deploy`).
    # Row ids in paths (config/converters.py): what the converter matches, so a client knows the range.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": ID_MIN, "maximum": ID_MAX}},
    "ENUM_NAME_OVERRIDES": {
        "AuditStatusEnum": "audits.models.Audit.Status",
        "LighthouseStatusEnum": "audits.models.LighthouseResult.Status",
    },
}

# Celery. The embedded default needs no server: kombu's filesystem transport and the django-db
# result backend (chords need a result backend that counts).
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="filesystem://")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default="django-db")
EMBEDDED_BROKER = CELERY_BROKER_URL.startswith("filesystem://")
_BROKER_DIR = Path(env("SITEWARDEN_BROKER_DIR", default=str(BASE_DIR / "var" / "broker")))
if EMBEDDED_BROKER:
    for _sub in ("out", "processed", "control"):
        (_BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "out"),
        "data_folder_out": str(_BROKER_DIR / "out"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(_BROKER_DIR / "control"),
    }


# Redis hands an unacknowledged message out again after this: longer than any task's time limit, finalize's at the
# page ceiling included (audits.limits.FINALIZE_TIME_LIMIT_MAX_S, 8,600 s; tests/config/test_settings.py holds them
# together), else a long finalize would be started again on another worker while it runs, and again after that.
REDIS_VISIBILITY_TIMEOUT_S = 3 * 3600


def broker_transport_options(broker_url: str) -> dict:
    """Transport options for a server broker. RabbitMQ (the recommended one): publisher confirms, so a
    send returns only once the broker holds the message. Redis: an unacknowledged message comes back only
    after REDIS_VISIBILITY_TIMEOUT_S, longer than any task's time limit so a slow step is not redelivered while it
    still runs (a dead worker's message therefore waits for it: the lease sweep re-sends its chunks, the reconciler
    its other steps; RabbitMQ hands it back when the connection drops)."""
    if broker_url.startswith(("amqp://", "amqps://", "pyamqp://")):
        return {"confirm_publish": True}
    # One Redis list per priority 0-9 (kombu pops the lowest first): audits.dispatch gives a young audit's
    # messages a lower number than a big audit's chunks (fair sharing, docs/ARCHITECTURE.md).
    return {"visibility_timeout": REDIS_VISIBILITY_TIMEOUT_S, "priority_steps": list(range(10))}


if not EMBEDDED_BROKER:
    CELERY_BROKER_TRANSPORT_OPTIONS = broker_transport_options(CELERY_BROKER_URL)
# AMQP heartbeats every 10 s: RabbitMQ notices a dead or frozen worker within ~20 s and redelivers its
# unacknowledged (late-ack) messages (Redis ignores this).
CELERY_BROKER_HEARTBEAT = 10
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # a worker whose broker restarts reconnects, however long it takes
# A send that meets a broker restart retries for ~30 s (0.2 s, then +0.5 s a try, at most 2 s apart) before
# it raises; the pipeline's steps retry beyond that (audits.tasks).
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 20, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 2}
CELERY_TASK_ACKS_LATE = True  # every task is idempotent: a worker that dies gives its message back
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A worker that loses its broker connection stops its late-ack tasks: the broker hands their messages out
# again (the chunk's lease and fenced writes make the second run safe), instead of a task whose ack is lost.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# A result write (a chord member's) that meets a Redis or database restart is retried, not turned into a
# failure of the step that already did its work.
CELERY_RESULT_BACKEND_ALWAYS_RETRY = True
CELERY_RESULT_BACKEND_MAX_RETRIES = 30
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXTENDED = True
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_TASK_TRACK_STARTED = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env.int("CELERY_WORKER_MAX_MEMORY_PER_CHILD_KB", default=800_000)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Tasks are found by config.celery's autodiscover_tasks() in each app's tasks.py. Lighthouse runs on its own
# queue so that Chromium-equipped workers can take it (Procfile: worker_lighthouse), and so does printing a
# report to PDF (`reports`, Procfile: worker_reports, one at a time); a worker started without -Q (make run,
# the embedded default, the tests) consumes every queue below.
CELERY_TASK_DEFAULT_QUEUE = "celery"
# RabbitMQ honours message priorities (audits.dispatch: fair sharing between audits) only on queues declared
# with x-max-priority, and a queue's arguments cannot change once it exists: opt in on a new deployment, or
# after deleting the queues (`rabbitmqctl delete_queue celery`, `... lighthouse`). Redis needs no opt-in.
AMQP_PRIORITY_QUEUES = env.bool("SITEWARDEN_AMQP_PRIORITY_QUEUES", default=False)
_QUEUE_ARGUMENTS = {"x-max-priority": 9} if AMQP_PRIORITY_QUEUES else None
CELERY_TASK_QUEUES = tuple(
    Queue(name, queue_arguments=_QUEUE_ARGUMENTS) for name in ("celery", "lighthouse", "reports")
)
if AMQP_PRIORITY_QUEUES and CELERY_BROKER_URL.startswith(("amqp://", "amqps://", "pyamqp://")):
    CELERY_TASK_DEFAULT_PRIORITY = 9  # a message sent without one (finalize after Lighthouse) is a step: first
CELERY_TASK_ROUTES = {"audits.lighthouse": {"queue": "lighthouse"}, "dashboard.render_report_pdf": {"queue": "reports"}}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# Crawl engine
# Chunks per crawl round; default twice the worker concurrency (2 processes per worker).
CRAWL_CHUNKS_PER_ROUND = env.int("CRAWL_CHUNKS_PER_ROUND", default=4)
# Concurrent fetches inside one chunk.
CRAWL_FETCH_WINDOW = env.int("CRAWL_FETCH_WINDOW", default=8)
# Pages one chunk may render with Chromium (out of the project's per-audit budget).
CRAWL_RENDER_PAGES_PER_CHUNK = env.int("CRAWL_RENDER_PAGES_PER_CHUNK", default=50)
# Refuse start URLs and fetches that resolve to private, loopback or reserved addresses unless set.
ALLOW_PRIVATE_TARGETS = env.bool("ALLOW_PRIVATE_TARGETS", default=False)
# Failure records that met a database outage wait here (one JSON file each) until it is back (audits.outages).
SITEWARDEN_OUTBOX_DIR = env("SITEWARDEN_OUTBOX_DIR", default=str(BASE_DIR / "var" / "outbox"))
# Retention (audits/retention.py): completed audits of a project whose pages, issues and links are kept; older ones
# keep their summary, score, issue counts by type and changes (pruned hourly). A project's keep_page_rows wins.
SITEWARDEN_KEEP_PAGE_ROWS = env.int("SITEWARDEN_KEEP_PAGE_ROWS", default=10)
# Where people open the dashboard: the CLI's last line links the audit there.
DASHBOARD_BASE_URL = env("DASHBOARD_BASE_URL", default="http://127.0.0.1:8000")
# Private networks an operator trusts anyway (CIDRs, comma-separated), e.g. an intranet to audit.
ALLOWED_PRIVATE_NETWORKS = env.list("ALLOWED_PRIVATE_NETWORKS", default=[])

# Mail (alerts, scheduled reports): Django's email framework over SMTP. Unset EMAIL_HOST: localhost:25, which a
# machine without a mail server refuses; the failure is recorded on the delivery and shown on the project.
EMAIL_BACKEND = env("EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=30)  # seconds; a stalled server must not hold a worker
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="Sitewarden <sitewarden@localhost>")

# Plans and capacity. New accounts get the default plan; the instance runs at most this many audits. Plans are for
# operators who host other accounts: by default a fresh install (and so the CLI's own user) may audit as many pages
# as one audit can hold (audits.limits.MAX_PAGES_CEILING, which tests/accounts checks this equals), ten such audits
# a month.
DEFAULT_PLAN_NAME = env("DEFAULT_PLAN_NAME", default="standard")
DEFAULT_PLAN_PAGES_PER_AUDIT = env.int("DEFAULT_PLAN_PAGES_PER_AUDIT", default=5_000_000)
DEFAULT_PLAN_RUNNING_AUDITS = env.int("DEFAULT_PLAN_RUNNING_AUDITS", default=3)
DEFAULT_PLAN_MONTHLY_UNITS = env.int("DEFAULT_PLAN_MONTHLY_UNITS", default=50_000_000)
MAX_RUNNING_AUDITS = env.int("MAX_RUNNING_AUDITS", default=20)

# Reconciler, the backstop: an audit is stale after this long without a heartbeat and with no live lease; one
# whose pipeline cannot be found is not judged lost before the grace period after its start.
RECONCILE_STALE_AFTER_S = env.int("RECONCILE_STALE_AFTER_S", default=15 * 60)
RECONCILE_GRACE_S = env.int("RECONCILE_GRACE_S", default=10 * 60)
RECONCILE_MAX_REVIVALS = env.int("RECONCILE_MAX_REVIVALS", default=2)
# Leases are the crawl's liveness signal: a chunk holds its URLs this long and renews them every
# CRAWL_LEASE_RENEW_EVERY_S while it works, so a dead worker's URLs (and its chunk) are free within a minute.
CRAWL_LEASE_DURATION_S = env.int("CRAWL_LEASE_DURATION_S", default=60)
CRAWL_LEASE_RENEW_EVERY_S = env.int("CRAWL_LEASE_RENEW_EVERY_S", default=15)
# The heal sweep (celery-beat, installed by `manage.py install_watchdog`; also sent by every worker that starts):
# re-sends chunks whose run died, advances a round whose chunks all finished but whose chord callback was lost.
CRAWL_HEAL_EVERY_S = env.int("CRAWL_HEAL_EVERY_S", default=30)

# Sign-in throttling (django-axes) for the dashboard and admin logins; the API's tokens have their own throttles.
# Two independent counts, each locking at SIGNIN_FAILURE_LIMIT failures within SIGNIN_COOLOFF_S: per username
# (a guesser spread over many addresses) and per address (one password sprayed over many usernames). A
# successful sign-in forgives that username's failures only, so colleagues behind one office address who
# mistype and then get in do not add up to a lockout, while a spray still does (config/signin.py).
# Attempts during a lockout do not extend it. Operators unlock early with `manage.py axes_reset_username`
# or in the admin (Axes > Access attempts).
SIGNIN_FAILURE_LIMIT = env.int("SIGNIN_FAILURE_LIMIT", default=5)
SIGNIN_COOLOFF_S = env.int("SIGNIN_COOLOFF_S", default=15 * 60)
# Reverse proxies in front of the web process that append to X-Forwarded-For (0: use the peer address).
# Set it to exactly the number of proxies; a larger number lets clients pick their own address.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
AXES_FAILURE_LIMIT = SIGNIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=SIGNIN_COOLOFF_S)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_HANDLER = "config.signin.SigninAttemptHandler"
AXES_LOCKOUT_CALLABLE = "config.signin.lockout_response"
# django-ipware is not installed and AXES_IPWARE_* are not used: this callable decides which address counts.
AXES_CLIENT_IP_CALLABLE = "config.signin.client_ip_address"

# Rate limits on the heavy reads of a report (dashboard/throttling.py; DRF's notation), answered 429 with
# Retry-After: the report's PDF per share link and per client (the signed-in user, else the address), and the
# shared report page per link and per address. The PDF is printed once per report and served from storage
# (audits.report_pdfs); while it is printed the page asking for it reloads every few seconds, within these.
REPORT_PDF_RATE_PER_LINK = env("REPORT_PDF_RATE_PER_LINK", default="10/min")
REPORT_PDF_RATE_PER_CLIENT = env("REPORT_PDF_RATE_PER_CLIENT", default="10/min")
SHARED_REPORT_RATE_PER_LINK = env("SHARED_REPORT_RATE_PER_LINK", default="60/min")
SHARED_REPORT_RATE_PER_ADDRESS = env("SHARED_REPORT_RATE_PER_ADDRESS", default="60/min")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    # axes.apps logs a banner at every start, on stderr: management commands (the CLI's one-line errors)
    # must not print it.
    "loggers": {"urllib3": {"level": "WARNING"}, "axes.apps": {"level": "WARNING"}},
}
