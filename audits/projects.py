"""Writes of projects: the one path by which the dashboard, the API, the admin and the CLI create, change
and delete a project, so every rule about a project lives here once. The faces reach it through
audits.services (an import-linter contract keeps them out of this module).

Refusals are audits.errors.AuditRefused with a stable code and the `field` they are about; a refusal
about one field is a ProjectInvalid (a subclass: the API answers it as a validation error of that field).
Nothing is written when anything is refused.
"""

import json
import logging
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import Account
from accounts.services import account_get_or_create_for_user
from alerts.services import alert_defaults_create
from audits.checks.registry import validate_overrides
from audits.errors import AuditRefused
from audits.extraction import extractors_validate
from audits.limits import (
    BOT_SAMPLE_MAX_CEILING,
    EXTERNAL_LINKS_BUDGET_MAX_S,
    EXTERNAL_LINKS_MAX_CEILING,
    MAX_PAGES_CEILING,
    PATTERN_CAP_OFF,
)
from audits.models import Audit, Project
from audits.patterns import compile_pattern
from audits.pipeline.lifecycle import audit_delete
from audits.schedules import schedule_clear
from crawler.urls import InvalidURL, SiteMatcher, scheme_typed, validate_start_url, with_scheme

PROJECT_NAME_MAX_CHARS = 200
USER_AGENT_MAX_CHARS = 300
AUTH_FIELD_MAX_CHARS = 200
MAX_PATTERNS = 50  # include and exclude patterns each
PATTERN_MAX_CHARS = 500
MAX_QUERY_KEEP_KEYS = 50
QUERY_KEY_MAX_CHARS = 100
CHECK_OVERRIDES_MAX_CHARS = 20_000  # serialised; the catalogue's overrides take a few hundred
PORT_MAX = 65_535
PASSWORD_CLEARED_MESSAGE = (
    "The base URL moved to another site, so the stored basic-auth password was removed: enter it again if the "
    "new site needs one."
)
logger = logging.getLogger(__name__)

# (smallest, largest) accepted value of each whole-number option; max_depth may also be None (no limit).
NUMBER_BOUNDS = {
    "max_pages": (1, MAX_PAGES_CEILING),
    "max_concurrency": (1, 64),  # the adaptive window's ceiling; more only hurts the site being audited
    "min_request_interval_ms": (0, 60_000),
    "render_budget_pages": (0, MAX_PAGES_CEILING),
    "max_depth": (0, 1000),
    "max_urls_per_pattern": (1, PATTERN_CAP_OFF),
    "max_path_segments": (1, 1000),
    "calendar_years_ahead": (0, 1000),
    "max_query_variants_per_path": (1, MAX_PAGES_CEILING),
    "max_dated_urls_per_pattern": (1, MAX_PAGES_CEILING),
    "max_identical_pages_per_pattern": (1, MAX_PAGES_CEILING),
    "external_links_max": (1, EXTERNAL_LINKS_MAX_CEILING),  # distinct outbound targets checked per audit
    "external_links_budget_s": (1, EXTERNAL_LINKS_BUDGET_MAX_S),  # within finalize's time limit
    "bot_sample_max": (0, BOT_SAMPLE_MAX_CEILING),  # pages fetched as each crawler (0: none)
    "keep_page_rows": (1, 1000),  # audits kept whole (audits.retention); None: the instance default
}
BOOLEAN_FIELDS = ("follow_nofollow", "crawl_subdomains", "render_js", "check_external_links")
# Everything a caller may set; account and owner only through the admin, which moves projects.
PROJECT_FIELDS = frozenset(
    {
        "account", "owner", "name", "base_url", "include_patterns", "exclude_patterns", "user_agent",
        "auth_username", "auth_password", "query_policy", "query_keep_keys", "check_overrides", "extractors",
        *NUMBER_BOUNDS, *BOOLEAN_FIELDS,
    }
)  # fmt: skip

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")  # used with fullmatch: "$" would let a final "\n" through


class ProjectInvalid(AuditRefused):
    """A refused value of one project field (`field` is always set)."""


# --- URLs (shared with audit starts, webhooks and the CLI) -------------------------------------------------


def _port_text(url: str) -> str | None:
    """The port as typed in `url` (None when there is none), read without a URL parser: Python's and
    w3lib's raise ValueError on an out-of-range port, which is what this check is for."""
    rest = url.strip()
    if "://" in rest:
        rest = rest.split("://", 1)[1]
    elif rest.startswith("//"):
        rest = rest[2:]
    authority = re.split(r"[/?#\\]", rest, maxsplit=1)[0].rpartition("@")[2]
    if authority.startswith("["):  # IPv6 literal: the port follows the bracket
        _, _, after = authority.partition("]")
        return after[1:] if after.startswith(":") else None
    if ":" not in authority:
        return None
    return authority.rpartition(":")[2]


def url_checked(url, *, field: str) -> str:
    """A normalised http(s) URL people may give as a base URL, start URL or webhook: crawler.urls'
    validation (scheme, host, length, credentials, SSRF policy under settings.ALLOW_PRIVATE_TARGETS)
    plus a port from 1 to 65535. AuditRefused(code, message, field=field) otherwise, never another error."""
    if not isinstance(url, str):
        raise AuditRefused("invalid_url", "Enter the address of a website, e.g. https://example.com.", field=field)
    try:
        with_scheme(url)  # first: "javascript:alert(1)" is a refused scheme, not a bad port
    except InvalidURL as exc:
        raise AuditRefused(exc.code, str(exc), field=field) from exc
    port = _port_text(url)
    if port and (not port.isascii() or not port.isdigit() or not 1 <= int(port) <= PORT_MAX):
        raise AuditRefused("invalid_port", f"The port must be a number from 1 to {PORT_MAX}.", field=field)
    try:
        return validate_start_url(url, allow_private=settings.ALLOW_PRIVATE_TARGETS)
    except InvalidURL as exc:
        raise AuditRefused(exc.code, str(exc), field=field) from exc
    except (ValueError, UnicodeError) as exc:  # a URL parser below refused it in its own words
        raise AuditRefused("invalid_url", "This does not look like a web address.", field=field) from exc


def project_site(project: Project) -> SiteMatcher:
    """The project's site, the one rule for what belongs to it: its base URL's host (www. or not) and port,
    and subdomains when the project crawls them. An audit's start URL, list and sitemap must be on it, and the
    project's basic-auth credentials are sent to it alone (audits.pipeline.scope.audit_site_auth)."""
    return SiteMatcher(project.base_url, include_subdomains=project.crawl_subdomains)


# --- the rules -----------------------------------------------------------------------------------------


def _invalid(field: str, code: str, message: str) -> ProjectInvalid:
    return ProjectInvalid(code, message, field=field)


def _text(field: str, value, *, max_chars: int, code: str, label: str) -> str:
    if not isinstance(value, str):
        raise _invalid(field, code, f"The {label} must be text.")
    if len(value) > max_chars:
        raise _invalid(field, code, f"The {label} has more than {max_chars} characters.")
    return value


def _name(value) -> str:
    name = _text("name", value, max_chars=PROJECT_NAME_MAX_CHARS, code="invalid_name", label="name").strip()
    if not name:
        raise _invalid("name", "invalid_name", "Give the project a name.")
    if _CONTROL_CHARS.search(name):
        raise _invalid("name", "invalid_name", "A project name is one line of text, without control characters.")
    return name


def _patterns(field: str, value) -> list[str]:
    if not isinstance(value, list | tuple):
        raise _invalid(field, "invalid_pattern", "Give a list of regular expressions.")
    if len(value) > MAX_PATTERNS:
        raise _invalid(field, "too_many_patterns", f"At most {MAX_PATTERNS} patterns.")
    patterns = []
    for pattern in value:
        if not isinstance(pattern, str) or not pattern.strip():
            raise _invalid(field, "invalid_pattern", "Each pattern is a non-empty regular expression.")
        if len(pattern) > PATTERN_MAX_CHARS:
            raise _invalid(field, "invalid_pattern", f"A pattern is longer than {PATTERN_MAX_CHARS} characters.")
        try:
            compile_pattern(pattern)  # RE2: linear time on any URL, or refused here
        except ValueError as exc:
            raise _invalid(field, "invalid_pattern", str(exc)) from None
        patterns.append(pattern)
    return patterns


def _user_agent(value) -> str:
    agent = _text("user_agent", value, max_chars=USER_AGENT_MAX_CHARS, code="invalid_user_agent", label="user agent")
    # It becomes a request header: CR/LF would let it add headers of its own, and http.client sends
    # header values as Latin-1, so only printable ASCII is certain to go out as typed.
    if not _PRINTABLE_ASCII.fullmatch(agent):
        message = "A user agent is one line of printable ASCII, without control characters."
        raise _invalid("user_agent", "invalid_user_agent", message)
    return agent.strip()


def _auth(field: str, value) -> str:
    label = "basic-auth user" if field == "auth_username" else "basic-auth password"
    text = _text(field, value, max_chars=AUTH_FIELD_MAX_CHARS, code="invalid_auth", label=label)
    if _CONTROL_CHARS.search(text):
        raise _invalid(field, "invalid_auth", f"The {label} cannot contain control characters.")
    try:
        text.encode("latin-1")  # how requests encodes basic-auth credentials
    except UnicodeEncodeError:
        raise _invalid(field, "invalid_auth", f"The {label} can only use Latin-1 characters.") from None
    if field == "auth_username" and ":" in text:
        raise _invalid(field, "invalid_auth", "A basic-auth user name cannot contain “:” (RFC 7617).")
    return text


def _number(field: str, value) -> int | None:
    low, high = NUMBER_BOUNDS[field]
    if value is None and field in ("max_depth", "keep_page_rows"):
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _invalid(field, f"invalid_{field}", f"Enter a whole number from {low} to {high}.")
    return value


def _query_keep_keys(value) -> list[str]:
    if not isinstance(value, list | tuple) or len(value) > MAX_QUERY_KEEP_KEYS:
        raise _invalid("query_keep_keys", "invalid_query_keep_keys", f"Give at most {MAX_QUERY_KEEP_KEYS} keys.")
    for key in value:
        if not isinstance(key, str) or not key or len(key) > QUERY_KEY_MAX_CHARS or _CONTROL_CHARS.search(key):
            raise _invalid(
                "query_keep_keys",
                "invalid_query_keep_keys",
                f"Each query key is one word of at most {QUERY_KEY_MAX_CHARS} characters.",
            )
    return list(value)


def _check_overrides(value) -> dict:
    if not isinstance(value, dict):
        raise _invalid(
            "check_overrides", "invalid_check_overrides", 'Give a JSON object, e.g. {"disabled": ["long-url"]}.'
        )
    try:
        too_big = len(json.dumps(value)) > CHECK_OVERRIDES_MAX_CHARS
        validate_overrides(value)
    except (ValueError, TypeError, RecursionError) as exc:
        message = str(exc) or "These check settings are invalid."
        raise _invalid("check_overrides", "invalid_check_overrides", message) from None
    if too_big:
        message = f"Check settings are limited to {CHECK_OVERRIDES_MAX_CHARS} characters."
        raise _invalid("check_overrides", "invalid_check_overrides", message)
    return value


def _checked(field: str, value):
    if field == "name":
        return _name(value)
    if field == "base_url":
        try:
            return url_checked(value, field="base_url")
        except AuditRefused as exc:
            raise _invalid("base_url", exc.code, exc.message) from exc
    if field in ("include_patterns", "exclude_patterns"):
        return _patterns(field, value)
    if field == "user_agent":
        return _user_agent(value)
    if field in ("auth_username", "auth_password"):
        return _auth(field, value)
    if field in NUMBER_BOUNDS:
        return _number(field, value)
    if field in BOOLEAN_FIELDS:
        if not isinstance(value, bool):
            raise _invalid(field, f"invalid_{field}", "Give true or false.")
        return value
    if field == "query_policy":
        if value not in Project.QueryPolicy.values:
            choices = ", ".join(Project.QueryPolicy.values)
            raise _invalid(field, "invalid_query_policy", f"The query policy is one of {choices}.")
        return value
    if field == "query_keep_keys":
        return _query_keep_keys(value)
    if field == "check_overrides":
        return _check_overrides(value)
    if field == "extractors":
        try:
            return extractors_validate(value)  # every expression compiled now, not found wrong mid-crawl
        except ValueError as exc:
            raise _invalid("extractors", "invalid_extractors", str(exc)) from None
    return value  # account, owner: model instances the caller looked up


def project_validate(*, project: Project | None = None, **fields) -> dict:
    """The given fields of `project` (None: of a new project, whose `account` is among the fields) checked
    and normalised, or the first refusal: ProjectInvalid for a field's value, AuditRefused
    ("project_name_taken") for a name the account already uses. Writes nothing: a form that must show
    refusals before it saves (the admin's) calls it; the services below always do."""
    unknown = set(fields) - PROJECT_FIELDS
    if unknown:
        raise TypeError(f"not project fields: {', '.join(sorted(unknown))}")
    cleaned = {field: _checked(field, value) for field, value in fields.items()}
    if "base_url" in cleaned:
        cleaned["http_fallback"] = not scheme_typed(fields["base_url"])
    account = cleaned.get("account") or (project.account if project is not None else None)
    if account is None:
        raise TypeError("a new project needs its account")
    name = cleaned.get("name")
    if name is None and "account" in cleaned and project is not None:
        name = project.name  # moved to another account: its name must be free there too
    if name is not None:
        taken = Project.objects.filter(account=account, name=name)
        if project is not None:
            taken = taken.exclude(pk=project.pk)
        if taken.exists():
            raise _name_taken(name)
    return cleaned


def _name_taken(name: str) -> AuditRefused:
    return AuditRefused("project_name_taken", f"You already have a project named {name!r}.", field="name")


# --- services ------------------------------------------------------------------------------------------


def project_create(*, account: Account, owner, name: str, base_url: str, **options) -> Project:
    """A project of `account`, created by `owner`; the options are Project's crawl fields (model defaults
    for the rest). Names are unique per account."""
    cleaned = project_validate(account=account, owner=owner, name=name, base_url=base_url, **options)
    try:
        with transaction.atomic():
            project = Project.objects.create(**cleaned)
            alert_defaults_create(project=project)  # every alert rule on, e-mail to the account's members
            return project
    except IntegrityError as exc:  # a concurrent create with the same name
        raise _name_taken(cleaned["name"]) from exc


def credentials_follow(old_base_url: str, new_base_url: str) -> bool:
    """Whether basic-auth credentials stored for a site at `old_base_url` may stay when the project moves to
    `new_base_url`: the same site (host, www. or not, and port; the path does not matter), and not from https
    down to plain http (the password would go out in cleartext)."""
    if not SiteMatcher(old_base_url).matches(new_base_url):
        return False
    return not (old_base_url.lower().startswith("https:") and new_base_url.lower().startswith("http:"))


def project_update(*, project: Project, **fields) -> Project:
    """Change the given fields only; the others keep their values.

    A base URL on another origin (credentials_follow) removes the stored basic-auth password, unless the same
    change gives a new one: the password was given for the old site. The returned project then says so:
    `auth_password_cleared` is True (faces tell the person; it is not stored)."""
    cleaned = project_validate(project=project, **fields)
    project.auth_password_cleared = False
    if not cleaned:
        return project
    if (
        "base_url" in cleaned
        and "auth_password" not in cleaned
        and project.auth_password
        and not credentials_follow(project.base_url, cleaned["base_url"])
    ):
        cleaned["auth_password"] = ""
        project.auth_password_cleared = True
    for field, value in cleaned.items():
        setattr(project, field, value)
    try:
        with transaction.atomic():
            project.save(update_fields=list(cleaned))
    except IntegrityError as exc:
        project.refresh_from_db()
        project.auth_password_cleared = False
        raise _name_taken(cleaned.get("name", project.name)) from exc
    if project.auth_password_cleared:
        logger.info("project %s moved to another origin: its basic-auth password was removed", project.pk)
    return project


def project_get_or_create(*, owner, name: str | None, base_url: str) -> Project:
    """The owner's project called `name`, created on `base_url` when there is none (the CLI's projects).
    Without a name: the owner's (oldest) project on that base URL, else the one named after its host when
    `base_url` is on that project's site, else one named after its host and port (127.0.0.1 and
    127.0.0.1:8001 are two sites: an audit starts on its project's site only)."""
    account = account_get_or_create_for_user(user=owner)
    typed = base_url  # a new project gets it as typed: without a scheme, https falls back to http
    if name is None:
        base_url = url_checked(base_url, field="base_url")
        same_site = Project.objects.filter(account=account, base_url=base_url).order_by("id").first()
        if same_site is not None:
            return same_site
        parts = urlsplit(base_url)
        name = parts.hostname or base_url
        named = Project.objects.filter(account=account, name=name).first()
        if named is not None and not project_site(named).matches(base_url):
            name = parts.netloc
    name = _name(name)
    project = Project.objects.filter(account=account, name=name).first()
    if project is not None:
        return project
    return project_create(account=account, owner=owner, name=name, base_url=typed)


def project_delete(*, project: Project) -> None:
    """Clear the schedule, delete every audit the way audit_delete does (running ones are cancelled, report
    files removed), then the project."""
    schedule_clear(project=project)
    for audit in Audit.objects.filter(project=project).only("id", "status", "project_id"):
        audit_delete(audit=audit)
    project.delete()
