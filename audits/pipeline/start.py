"""Stage 1, start: validate the request, check the account's plan, reserve credits, create the running
audit and, after commit, hand it to the workers (discovery). Any refusal is AuditRefused and leaves nothing.
A scheduled run (`schedule_run`) is an ordinary start, skipped while the project's last audit still runs.

The start URL is on the project's site (audits.projects.project_site), or the start is refused with
`start_url_off_site`: the project's basic auth, robots.txt and report belong to that site.
List mode: `urls` (a list) or `sitemap_url` audits exactly those URLs, links recorded but not followed. Each
URL must be a valid public http(s) URL of the project's site (its host, www. or not, subdomains when the
project crawls them): politeness, robots.txt and the project's basic auth are per site, and an audit
reports on one site. A bad line refuses the whole start with its line number; nothing is stored.
A chosen baseline (what the audit's changes are measured against, audits.pipeline.changes) is checked here too."""

import csv
import io
import logging
from enum import StrEnum

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import Account, CreditEntry
from accounts.selectors import credits_used_this_month
from accounts.services import credits_entry, units_needed
from audits.checks.registry import validate_overrides
from audits.dispatch import DISCOVER, task_send
from audits.errors import AuditRefused, ErrorCode
from audits.limits import LIST_ERRORS_SHOWN, MAX_LIST_URLS, MAX_PAGES_CEILING
from audits.models import Audit, AuditEvent, Project
from audits.pipeline.lifecycle import audit_event
from audits.projects import project_site, url_checked

logger = logging.getLogger(__name__)
Status = Audit.Status
EventKind = AuditEvent.Kind


class Mode(StrEnum):
    """What an audit crawls (Audit.config["mode"]; absent on audits made before list mode means crawl)."""

    CRAWL = "crawl"  # the site, from the start URL and the sitemaps, following links
    LIST = "list"  # exactly config["list_urls"]
    SITEMAP = "sitemap"  # exactly the URLs of config["sitemap_url"] (an index is followed)


def audit_mode(audit: Audit) -> str:
    return (audit.config or {}).get("mode") or Mode.CRAWL


def url_list_lines(text: str, *, first_column: bool = False) -> list[str]:
    """The lines of a pasted or uploaded list, one entry per line so that line numbers stay the file's; with
    first_column (a .csv file), each row's first cell. A file the csv module cannot read is AuditRefused
    (`invalid_url_list`, field `urls`)."""
    if not first_column:
        return text.splitlines()
    rows = csv.reader(io.StringIO(text))
    try:
        cells = [row[0] if row else "" for row in rows]
    except csv.Error as exc:  # a cell over csv.field_size_limit() (128 KiB; no URL is that long), a stray NUL
        message = f"line {rows.line_num}: not a CSV row of URLs ({exc})."
        raise AuditRefused(ErrorCode.INVALID_URL_LIST, message, field="urls") from None
    if cells and "://" not in cells[0]:
        cells[0] = ""  # a header row ("url", "Address"): skipped, the numbers stay the file's
    return cells


def _list_checked(project: Project, urls: list, field: str) -> list[str]:
    """The normalised, deduplicated URLs of a list. Blank lines and # comments are skipped (their numbers
    still count); any invalid line refuses the whole list, naming each bad line (the first 20)."""
    site = project_site(project)
    if not isinstance(urls, list | tuple) or not urls:
        raise AuditRefused(ErrorCode.INVALID_URL_LIST, "Give at least one URL, one per line.", field=field)
    kept: dict[str, None] = {}
    errors: list[str] = []
    for number, raw in enumerate(urls, start=1):
        if not isinstance(raw, str):
            errors.append(f"line {number}: not text")
            continue
        line = raw.strip().lstrip("\ufeff")
        if not line or line.startswith("#"):
            continue
        try:
            url = url_checked(line, field=field)
        except AuditRefused as exc:
            errors.append(f"line {number}: {exc.message}")
            continue
        if not site.matches(url):
            errors.append(f"line {number}: {line[:80]} is not on this project's site ({project.base_url})")
            continue
        kept[url] = None
    if errors:
        more = f" (and {len(errors) - LIST_ERRORS_SHOWN} more)" if len(errors) > LIST_ERRORS_SHOWN else ""
        refusal = AuditRefused(
            ErrorCode.INVALID_URL_LIST,
            f"{len(errors)} line(s) are not URLs this audit can take{more}: " + "; ".join(errors[:LIST_ERRORS_SHOWN]),
            field=field,
        )
        refusal.lines = errors[:LIST_ERRORS_SHOWN]  # one by one, for a form to list under the field
        raise refusal
    if not kept:
        raise AuditRefused(ErrorCode.INVALID_URL_LIST, "The list has no URLs, only blank lines.", field=field)
    if len(kept) > MAX_LIST_URLS:
        raise AuditRefused(
            ErrorCode.INVALID_URL_LIST,
            f"A list audits at most {MAX_LIST_URLS} URLs; this one has {len(kept)}.",
            field=field,
        )
    return list(kept)


def baseline_checked(*, project: Project, baseline, audit: Audit | None = None) -> Audit:
    """The baseline (an Audit or an audit id) a start or a later choice gives, or AuditRefused `baseline_invalid`
    (field `baseline`): a completed audit of the same project whose pages are kept, not the audit itself."""

    def refuse(message: str):
        raise AuditRefused(ErrorCode.BASELINE_INVALID, message, field="baseline")

    if not isinstance(baseline, Audit):
        try:
            found = Audit.objects.filter(id=baseline).first()
        except (ValueError, ValidationError, TypeError):
            found = None
        baseline = found
    if baseline is None or baseline.project_id != project.id:  # one answer: another account's ids stay unknown
        refuse("The baseline must be an audit of this project.")
    if audit is not None and baseline.id == audit.id:
        refuse("An audit cannot be its own baseline: choose an earlier audit.")
    if baseline.status != Audit.Status.COMPLETED:
        refuse(f"The baseline must be a completed audit; that one is {baseline.status}.")
    if baseline.summarised_at is not None:
        refuse("That audit keeps its summary only (its pages were pruned): it cannot be compared page by page.")
    return baseline


def audit_start(
    *,
    project: Project,
    start_url: str | None = None,
    max_pages: int | None = None,
    lighthouse: bool = False,
    scheduled: bool = False,
    dispatch: bool = True,
    urls: list[str] | None = None,
    sitemap_url: str | None = None,
    check_external_links: bool | None = None,
    baseline: "Audit | str | None" = None,
) -> Audit:
    """Validate, check the plan, reserve credits and create a running audit; after commit, hand it to
    the workers (unless dispatch=False). Refusals raise AuditRefused with a stable code and leave nothing.

    `urls` (list mode) or `sitemap_url` (sitemap mode) audit exactly those URLs and follow no links; a list's
    page budget defaults to its length. `check_external_links` overrides the project's switch of the external link
    pass for this audit (the CLI's --no-external-links); None keeps the project's. `baseline` (an Audit or an id of
    a completed audit of the project; the caller resolves "previous") is what its changes are measured against at
    finalize (audits.pipeline.changes); None: the default, chosen then. Refused with `baseline_invalid`.
    """
    if baseline is not None:
        baseline = baseline_checked(project=project, baseline=baseline)
    if urls is not None and sitemap_url:
        raise AuditRefused(ErrorCode.INVALID_URL_LIST, "Give a list of URLs or a sitemap URL, not both.", field="urls")
    mode, list_urls, sitemap = Mode.CRAWL, None, None
    if urls is not None:
        mode, list_urls = Mode.LIST, _list_checked(project, urls, "urls")
    elif sitemap_url:
        mode, sitemap = Mode.SITEMAP, url_checked(sitemap_url, field="sitemap_url")
        if not project_site(project).matches(sitemap):
            raise AuditRefused(
                ErrorCode.INVALID_URL,
                f"The sitemap must be on this project's site ({project.base_url}).",
                field="sitemap_url",
            )
    # In list mode the start URL only locates the site (robots.txt, redirects): it is not crawled unless listed.
    url = url_checked(start_url or project.base_url, field="start_url")
    if not project_site(project).matches(url):
        raise AuditRefused(
            ErrorCode.START_URL_OFF_SITE,
            f"The start URL must be on this project's site ({project.base_url}"
            f"{', or one of its subdomains' if project.crawl_subdomains else ''}).",
            field="start_url",
        )
    if max_pages is None and list_urls is not None:
        max_pages = min(len(list_urls), MAX_PAGES_CEILING)
    pages = project.max_pages if max_pages is None else max_pages
    if not isinstance(pages, int) or isinstance(pages, bool) or pages < 1 or pages > MAX_PAGES_CEILING:
        raise AuditRefused(
            ErrorCode.INVALID_MAX_PAGES,
            f"Max pages must be a whole number from 1 to {MAX_PAGES_CEILING}.",
            field="max_pages",
        )
    if list_urls is not None and len(list_urls) > pages:
        raise AuditRefused(
            ErrorCode.INVALID_MAX_PAGES,
            f"The list has {len(list_urls)} URLs and the audit may crawl {pages} pages: raise max pages or shorten it.",
            field="max_pages",
        )
    try:
        checks = validate_overrides(project.check_overrides or {})
    except ValueError as exc:
        raise AuditRefused(
            ErrorCode.INVALID_CHECK_OVERRIDES, f"The project's check settings are invalid: {exc}"
        ) from exc
    config = {
        "max_pages": pages,
        "checks": checks,
        "include_patterns": list(project.include_patterns or []),
        "exclude_patterns": list(project.exclude_patterns or []),
        "lighthouse": bool(lighthouse),
        # crawl options (the basic-auth password is read from the project when fetching, never copied)
        "user_agent": project.user_agent,
        "auth_username": project.auth_username,
        "follow_nofollow": project.follow_nofollow,
        "crawl_subdomains": project.crawl_subdomains,
        "render_js": project.render_js,
        "render_budget_pages": project.render_budget_pages,
        "max_depth": project.max_depth,
        "max_urls_per_pattern": project.max_urls_per_pattern,
        "max_path_segments": project.max_path_segments,
        "calendar_years_ahead": project.calendar_years_ahead,
        "max_query_variants_per_path": project.max_query_variants_per_path,
        "max_dated_urls_per_pattern": project.max_dated_urls_per_pattern,
        "max_identical_pages_per_pattern": project.max_identical_pages_per_pattern,
        "query_policy": project.query_policy,
        "query_keep_keys": list(project.query_keep_keys or []),
        "extractors": list(project.extractors or []),  # custom extraction, as saved (audits/extraction.py)
        # the outbound link pass (audits/pipeline/external.py): its switch, cap and time budget
        "check_external_links": project.check_external_links if check_external_links is None else check_external_links,
        "external_links_max": project.external_links_max,
        "external_links_budget_s": project.external_links_budget_s,
        "min_request_interval_ms": project.min_request_interval_ms,
        "max_concurrency": project.max_concurrency,
        "mode": str(mode),
        # typed without a scheme and started on it: discovery may fall back to http (audits.pipeline.discovery)
        "http_fallback": project.http_fallback and url == project.base_url,
    }
    if list_urls is not None:
        config["list_urls"] = list_urls
    if sitemap is not None:
        config["sitemap_url"] = sitemap
    now = timezone.now()
    with transaction.atomic():
        # One start at a time per account, so two concurrent starts cannot both pass the limits.
        account = Account.objects.select_for_update().select_related("plan").get(id=project.account_id)
        _check_plan(account=account, project=project, pages=pages, lighthouse=lighthouse)
        audit = Audit.objects.create(
            project=project,
            start_url=url,
            site_url=url,
            config=config,
            started_at=now,
            last_progress_at=now,
            scheduled=scheduled,
            baseline=baseline,
        )
        credits_entry(
            audit=audit, kind=CreditEntry.Kind.RESERVE, units=units_needed(max_pages=pages, lighthouse=lighthouse)
        )
        audit_event(
            audit_id=audit.id,
            kind=EventKind.STARTED,
            message=_started_message(mode, url, list_urls, sitemap),
            max_pages=pages,
        )
        if dispatch:
            task_send(DISCOVER, str(audit.id))  # after commit: the workers never see an uncommitted audit
    logger.info("audit started", extra={"audit_id": str(audit.id), "url": url, "max_pages": pages})
    return audit


def _started_message(mode: str, url: str, list_urls: list[str] | None, sitemap: str | None) -> str:
    if mode == Mode.LIST:
        return f"Audit of a list of {len(list_urls)} URLs on {url} started"
    if mode == Mode.SITEMAP:
        return f"Audit of the URLs in {sitemap} started"
    return f"Audit of {url} started"


def _check_plan(*, account: Account, project: Project, pages: int, lighthouse: bool) -> None:
    plan = account.plan
    if pages > plan.pages_per_audit:
        raise AuditRefused(
            ErrorCode.AUDIT_PAGE_LIMIT_EXCEEDED,
            f"The {plan.name} plan audits at most {plan.pages_per_audit} pages at a time; {pages} were asked for.",
            field="max_pages",
        )
    if Audit.objects.filter(project=project, status=Status.RUNNING).exists():
        raise AuditRefused(ErrorCode.AUDIT_ALREADY_RUNNING, "An audit of this project is still running.")
    running = Audit.objects.filter(project__account=account, status=Status.RUNNING).count()
    if running >= plan.running_audits:
        raise AuditRefused(
            ErrorCode.AUDIT_CAPACITY_REACHED,
            f"Your plan runs {plan.running_audits} audits at once and {running} are running. Try again later.",
        )
    if Audit.objects.filter(status=Status.RUNNING).count() >= settings.MAX_RUNNING_AUDITS:
        raise AuditRefused(
            ErrorCode.AUDIT_CAPACITY_REACHED,
            f"Sitewarden is at capacity right now: this instance runs {settings.MAX_RUNNING_AUDITS} audits at once "
            "(MAX_RUNNING_AUDITS). Try again in a while.",
        )
    needed = units_needed(max_pages=pages, lighthouse=lighthouse)
    left = plan.monthly_units - credits_used_this_month(account)
    if needed > left:
        raise AuditRefused(
            ErrorCode.INSUFFICIENT_CREDITS,
            f"This audit needs {needed} credits and {max(left, 0)} are left this month.",
            field="max_pages",
        )


def schedule_run(*, project_id: int) -> Audit | None:
    """One scheduled run: skipped, with an event on the running audit, while one is still running."""
    project = Project.objects.filter(id=project_id).first()
    if project is None:
        return None
    running = Audit.objects.filter(project=project, status=Audit.Status.RUNNING).first()
    if running is not None:
        audit_event(
            audit_id=running.id,
            kind=AuditEvent.Kind.SCHEDULE_SKIPPED,
            message="A scheduled audit was skipped: this one was still running",
        )
        return None
    try:
        return audit_start(project=project, scheduled=True)
    except AuditRefused:
        logger.warning("scheduled audit refused", exc_info=True, extra={"project": project_id})
        return None
