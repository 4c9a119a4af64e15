"""`manage.py audit URL` (or `--list FILE`, `--sitemap-only URL`): run an audit from the shell, with progress
on stderr and an optional JSON result; with `--fail-on RULES`, a release gate for a CI pipeline (audits.gate: exit 3
when a rule fires, the reason on the last line, `--junit FILE` for the CI's test report).

The watcher outlives database outages (a restart, a failover, a read-only spell): it reconnects and keeps
watching, and reports the audit's true outcome once the database answers again.
"""

import argparse
import contextlib
import gc
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections, connection, transaction
from django.urls import reverse

from audits.checks.score import score_breakdown_stored
from audits.errors import AuditRefused
from audits.events import event_sentence
from audits.gate import GateResult, GateRule, gate_evaluate, gate_junit_xml, gate_rules_parse, gate_unjudged
from audits.models import Audit
from audits.outages import is_transient_db_error
from audits.selectors.audits import CrawlBar, audit_crawl_bar, audit_events_notable, audit_summary, audit_urls_skipped
from audits.selectors.issues import issues_by_severity
from audits.services import (
    audit_run_inline,
    audit_start,
    audit_status_refresh,
    project_get_or_create,
    url_checked,
    url_list_lines,
)

# How often the watcher reads the audit: a small audit ends in seconds and the CLI's exit is its end to end
# time (bench/small.py), so it looks often; a read is one row by its primary key.
POLL_INTERVAL_S = 0.1
# What the progress bar (audits.selectors.audit_crawl_bar) and the watch loop read of the audit at each poll.
POLLED_FIELDS = ("status", "current_phase", "pages_crawled", "pages_total", "config")
# How often a read also judges the audit's liveness (reconcile-on-read: its round's chunks and leases, several
# queries): healing a stuck audit is not urgent to the tenth of a second, noticing the end is.
RECONCILE_EVERY_S = 1.0
EXIT_COMPLETED, EXIT_FAILED, EXIT_BAD_ARGUMENTS, EXIT_GATE_FAILED = 0, 1, 2, 3
BASELINE_PREVIOUS = "previous"  # --baseline's default: the project's previous completed audit, chosen at finalize
GATE_EXAMPLES_SHOWN = 3  # example URLs on a rule's line on stderr (the JUnit report and --json carry up to 10)
CLI_USERNAME = "cli"
# While the database does not answer: retry after 0.5 s, doubling to 5 s; give up after 30 minutes of
# silence (longer than any outage the pipeline itself rides out).
DB_RETRY_FIRST_S = 0.5
DB_RETRY_MAX_S = 5.0
DB_OUTAGE_GIVE_UP_S = 1800
INLINE_JOIN_TIMEOUT_S = 30
INVALID_JUNIT_FILE = "invalid_junit_file"
LIST_FILE_MAX_CHARS = 4 * 1024 * 1024  # 10,000 URLs (audits.limits.MAX_LIST_URLS) with room for long ones
T = TypeVar("T")


class Command(BaseCommand):
    help = (
        "Audit a site. Exit 0 when the audit completed, 1 when it failed, 2 on bad arguments, 3 when a --fail-on "
        "rule fired (the audit completed; the reason is the last line)."
    )
    # Django's system checks (URL patterns, models, admin: ~0.3-0.7 s on every start) are not run: a small
    # audit's end to end time starts with this command (bench/small.py), and `migrate`, `runserver`, the
    # release step and `manage.py check` in CI still run them.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "url",
            nargs="?",
            default=None,
            help="Start URL (with --list or --sitemap-only: the site; default: their host)",
        )
        parser.add_argument(
            "--list",
            dest="list_file",
            metavar="FILE",
            default=None,
            help="Audit exactly the URLs in FILE (one per line; a .csv's first column), following no links",
        )
        parser.add_argument(
            "--sitemap-only",
            dest="sitemap_only",
            metavar="URL",
            default=None,
            help="Audit exactly the URLs of this sitemap, following no links",
        )
        parser.add_argument("--max-pages", type=int, default=None)
        parser.add_argument("--project", default=None, help="Project name (default: the URL's host)")
        parser.add_argument("--json", action="store_true", help="Print one JSON object on stdout at the end")
        parser.add_argument(
            "--lighthouse", action="store_true", help="Also run Lighthouse (mobile and desktop) on a sample of pages"
        )
        parser.add_argument(
            "--external-links",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Check the site's outbound links once each (default: the project's setting, on for a new project)",
        )
        parser.add_argument(
            "--inline",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Run in this process (the default on the embedded default) or hand the audit to the workers",
        )
        parser.add_argument(
            "--baseline",
            metavar="previous|AUDIT_ID",
            default=BASELINE_PREVIOUS,
            help="The audit this one's changes and its gate are measured against: the project's previous completed "
            "audit (the default) or a completed audit of the project",
        )
        parser.add_argument(
            "--fail-on",
            dest="fail_on",
            metavar="RULES",
            default=None,
            help="Exit 3 when one of these comma-separated rules fires against the baseline: new-critical, "
            "new-issue=TYPE, score-drop=N, score-below=N, became-noindex, new-broken, pages-drop=N (a rule that "
            "needs a baseline passes when there is none)",
        )
        parser.add_argument(
            "--junit",
            metavar="FILE",
            default=None,
            help="With --fail-on: write the gate as a JUnit XML report (one test case per rule) to FILE",
        )

    def run_from_argv(self, argv):
        # Argument errors exit 2 with one line on stderr (argparse already exits 2 for its own errors).
        try:
            super().run_from_argv(argv)
        except AuditRefused as exc:
            message = " ".join(f"{exc.message} ({exc.code})".split())  # one line, whatever the message holds
            sys.stderr.write(f"error: {message}\n")
            sys.exit(EXIT_BAD_ARGUMENTS)
        finally:
            # The interpreter's exit collects every object of the ~1,500 modules a Django + Celery process has
            # imported: 0.3-0.5 s after the audit had ended (bench/small.py). Nothing of ours waits on that
            # collection (no finalizer of ours writes anything; atexit handlers and the flush of stdout and
            # stderr still run), so the heap is frozen out of it.
            gc.freeze()

    def handle(
        self,
        *args,
        url,
        max_pages,
        project,
        json: bool,
        inline,
        lighthouse: bool,
        list_file,
        sitemap_only,
        external_links,
        baseline=BASELINE_PREVIOUS,
        fail_on=None,
        junit=None,
        **options,
    ):
        # The gate's arguments are refused before anything starts: a typo in CI must not cost an audit.
        rules = gate_rules_parse(fail_on) if fail_on is not None else None
        if junit is not None:
            _junit_checked(junit, rules)
        if list_file and sitemap_only:
            raise AuditRefused("invalid_url_list", "Give --list or --sitemap-only, not both.")
        urls = _list_file_lines(list_file) if list_file else None
        site = url or sitemap_only or _first_url(urls)
        if not site:
            raise AuditRefused("invalid_url", "Give the URL to audit (or --list FILE, or --sitemap-only URL).")
        start_url = url_checked(site, field="url")
        if url is None and (urls is not None or sitemap_only):
            start_url = url_checked(_origin(start_url), field="url")  # the site is the list's host, from its root
        if max_pages is not None and max_pages < 1:
            raise AuditRefused("invalid_max_pages", "--max-pages must be at least 1")
        run_inline = settings.EMBEDDED_BROKER if inline is None else inline
        # One transaction: a refusal (a bad --project, the plan's limits) leaves no user, project or audit.
        with transaction.atomic():
            owner = _cli_owner()
            # Without --project: the project already on this base URL (made in the dashboard, say), else a new one.
            # The URL as typed: a new project on a scheme-less URL falls back to http when https does not answer.
            typed = site if url is not None else start_url
            proj = project_get_or_create(owner=owner, name=project, base_url=typed)
            audit = audit_start(
                project=proj,
                start_url=start_url,
                max_pages=max_pages,
                lighthouse=lighthouse,
                dispatch=not run_inline,
                urls=urls,
                sitemap_url=sitemap_only,
                check_external_links=external_links,
                baseline=None if baseline == BASELINE_PREVIOUS else baseline,
            )
        worker = None
        if run_inline:
            worker = threading.Thread(target=_run_inline, args=(audit.id,), daemon=True)
            worker.start()
        # Resolved now, while the audit runs: the first reverse() imports every view of the URL map (~0.15 s).
        link = _dashboard_link(audit)
        bar = _ProgressBar(sys.stderr)
        with bar.owning_log_lines():
            audit = self._watch(audit, worker, bar)
            if worker is not None:  # its last log lines (the finish is announced after commit) come before ours
                worker.join(timeout=INLINE_JOIN_TIMEOUT_S)
            summary = _with_database(lambda: audit_summary(audit=audit), bar)
            severities = _with_database(lambda: issues_by_severity(audit=audit), bar)
            skipped = _with_database(lambda: audit_urls_skipped(audit=audit), bar)
            notes = _with_database(lambda: [event_sentence(e) for e in audit_events_notable(audit=audit)], bar)
            gate = _with_database(lambda: _gate(audit, rules), bar) if rules is not None else None
            bar.close(audit, severities, skipped, link=link, notes=notes)
        if gate is not None:
            summary["gate"] = gate.as_json()
            if junit is not None:
                _junit_write(junit, gate, audit, link=link)
        if json:
            self.stdout.write(_json_dumps(summary))
        return_code = EXIT_COMPLETED if audit.status == Audit.Status.COMPLETED else EXIT_FAILED
        if return_code:  # a gate on an audit that did not complete judges nothing: the audit's outcome is the exit
            sys.stderr.write(f"audit {audit.status}: {audit.error_code} {audit.error_detail}\n")
        elif gate is not None:
            for rule in gate.rules:
                sys.stderr.write(_gate_rule_line(rule) + "\n")
            sys.stderr.write(gate.reason + "\n")
            return_code = EXIT_COMPLETED if gate.passed else EXIT_GATE_FAILED
        sys.exit(return_code)

    def _watch(self, audit: Audit, worker: threading.Thread | None, bar: "_ProgressBar") -> Audit:
        """Poll the audit until it ends (or its inline thread does); the audit, read whole, once it has."""
        audit_id = audit.id
        # A poll reads what the bar and this loop need: the whole row and its project took ~1.1-1.7 CPU ms a read,
        # ten reads a second for the length of the audit; these columns ~0.5.
        read = lambda: Audit.objects.only(*POLLED_FIELDS).get(id=audit_id)  # noqa: E731
        # An inline run is driven by this process's own thread: reconciling (healing rounds, re-sending chunks)
        # would make a second driver race it. Its liveness is the thread's, checked below.
        judge = read if worker is not None else lambda: audit_status_refresh(audit_id=audit_id)
        judged_at = None
        while True:
            now = time.monotonic()
            if judged_at is None or now - judged_at >= RECONCILE_EVERY_S:
                audit, judged_at = _with_database(judge, bar), now
            else:
                audit = _with_database(read, bar)
            bar.draw(audit)
            if audit.is_finished or (worker is not None and not worker.is_alive()):
                break
            time.sleep(POLL_INTERVAL_S)
        return _with_database(lambda: Audit.objects.select_related("project").get(id=audit_id), bar)


def _gate(audit: Audit, rules: list[GateRule]) -> GateResult:
    if audit.status != Audit.Status.COMPLETED:
        return gate_unjudged(audit=audit, rules=rules)
    return gate_evaluate(audit=audit, rules=rules)


def _gate_rule_line(rule) -> str:
    """`gate: FAIL new-broken: 2 URLs newly broken (…) — https://…/a, https://…/b`, a few examples at most."""
    outcome = "PASS" if rule.passed else "FAIL"
    shown = ", ".join(rule.examples[:GATE_EXAMPLES_SHOWN])
    more = rule.count - min(len(rule.examples), GATE_EXAMPLES_SHOWN)
    if shown and more > 0:
        shown += f", … {more} more"
    return f"gate: {outcome} {rule.rule}: {rule.reason}" + (f" — {shown}" if shown and not rule.passed else "")


def _junit_checked(path: str, rules: list[GateRule] | None) -> None:
    """--junit needs --fail-on and a folder to write in; refused before the audit starts."""
    if rules is None:
        raise AuditRefused(INVALID_JUNIT_FILE, "--junit FILE writes the gate's report: give --fail-on RULES too.")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or os.path.isdir(path):
        raise AuditRefused(INVALID_JUNIT_FILE, f"--junit {path}: no folder to write that file in.")


def _junit_write(path: str, gate: GateResult, audit: Audit, *, link: str) -> None:
    """The JUnit report, written whole through a temporary file beside it: a CI step never reads half a file."""
    timestamp = (audit.completed_at or audit.created_at).replace(microsecond=0).isoformat()
    properties = {"start_url": audit.start_url, "dashboard": link}
    if audit.health_score is not None:
        properties["health_score"] = str(audit.health_score)
    data = gate_junit_xml(gate, timestamp=timestamp, properties=properties)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        why = exc.strerror or exc.__class__.__name__
        raise AuditRefused(INVALID_JUNIT_FILE, f"--junit {path}: cannot write it ({why})") from exc


def _list_file_lines(path: str) -> list[str]:
    """The lines of a --list file ("-" is stdin); a .csv's first column. One-line refusal if unreadable."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8-sig") as handle:
                text = handle.read(LIST_FILE_MAX_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditRefused("invalid_url_list", f"--list {path}: cannot read it ({exc.__class__.__name__})") from exc
    if len(text) > LIST_FILE_MAX_CHARS:
        raise AuditRefused("invalid_url_list", f"--list {path}: larger than {LIST_FILE_MAX_CHARS} characters")
    return url_list_lines(text, first_column=path.lower().endswith(".csv"))


def _first_url(lines: list[str] | None) -> str | None:
    for line in lines or []:
        line = line.strip().lstrip("\ufeff")
        if line and not line.startswith("#"):
            return line
    return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


def _with_database(read: Callable[[], T], bar: "_ProgressBar") -> T:
    """`read()`, again and again while the database is unavailable (closing the broken connection so the
    next try opens a new one); one log line when it goes away and one when it is back."""
    delay_s, down_since = DB_RETRY_FIRST_S, None
    while True:
        try:
            value = read()
        except Exception as exc:
            if not is_transient_db_error(exc):
                raise
            _drop_connection()
            now = time.monotonic()
            if down_since is None:
                down_since = now
                bar.log(f"database unavailable ({_first_line(exc)}); still watching")
            elif now - down_since > DB_OUTAGE_GIVE_UP_S:
                raise CommandError(f"the database has not answered for {int(now - down_since)} s") from exc
            time.sleep(delay_s)
            delay_s = min(delay_s * 2, DB_RETRY_MAX_S)
            continue
        if down_since is not None:
            bar.log(f"database back after {time.monotonic() - down_since:.0f} s")
        return value


def _drop_connection() -> None:
    try:
        connection.close()
    except Exception:  # closing a connection the server already dropped may raise; it is gone either way
        pass
    close_old_connections()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:120]


def _run_inline(audit_id) -> None:
    try:
        audit_run_inline(audit_id=audit_id)
    except Exception:  # recorded on the audit by the runner; the watcher reports it
        pass
    finally:
        connection.close()
        close_old_connections()


def _cli_owner():
    User = get_user_model()
    owner = User.objects.filter(is_superuser=True).order_by("id").first()
    if owner is None:
        owner, created = User.objects.get_or_create(username=CLI_USERNAME)
        if created:
            owner.set_unusable_password()
            owner.save(update_fields=["password"])
    return owner


def _json_dumps(data: dict) -> str:
    return json.dumps(data, sort_keys=False)


class _ProgressBar:
    """The progress line on stderr. On a terminal it is redrawn in place, and a log line (ours, or any
    logger's writing to stderr) first clears it, then the bar is drawn again below the log line."""

    WIDTH = 30
    CLEAR_LINE = "\r\x1b[K"

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = None
        self.shown = False  # the bar is on the terminal's current line
        self.lock = threading.RLock()  # the inline pipeline logs from its own thread

    def draw(self, audit: Audit) -> None:
        line = f"{bar_line(audit_crawl_bar(audit=audit), self.WIDTH)}  {audit.current_phase}"
        with self.lock:
            if line == self.last:
                return
            self.last = line
            self._show()

    def _show(self) -> None:
        if self.last is None:
            return
        if self.tty:
            self.stream.write(self.CLEAR_LINE + self.last)
            self.shown = True
        else:
            self.stream.write(self.last + "\n")
        self.stream.flush()

    def write_above(self, text: str) -> None:
        """Write `text` (whole lines) where the bar is, then draw the bar again under it."""
        with self.lock:
            if self.shown:
                self.stream.write(self.CLEAR_LINE)
                self.shown = False
            self.stream.write(text)
            if self.tty and text.endswith("\n"):
                self._show()
            self.stream.flush()

    def log(self, message: str) -> None:
        self.write_above(message + "\n")

    def owning_log_lines(self) -> "_LogLinesAboveBar":
        return _LogLinesAboveBar(self)

    def close(
        self, audit: Audit, severities: dict[str, int], skipped_urls: list[dict] = (), *, link: str, notes=()
    ) -> None:
        """End the bar; a line per note (what changed the audit's course, as the events page says it); the last
        line: outcome, pages, health score, issues by severity, what was skipped (rule, count, the setting that
        raises it), the dashboard link."""
        with self.lock:
            if self.shown:
                self.stream.write("\n")
                self.shown = False
            for note in notes:
                self.stream.write(f"note: {note}\n")
            self.stream.write(_last_line(audit, severities, skipped_urls, link=link) + "\n")
            self.stream.flush()


def bar_line(bar: CrawlBar, width: int) -> str:
    """The CLI's bar: "[####......] 94 crawled of 310 found so far (budget 500)"; never full while the crawl
    runs (bar.value < bar.maximum), "N pages crawled" once it is over."""
    filled = width * bar.value // bar.maximum
    drawn = f"[{'#' * filled}{'.' * (width - filled)}]"
    if not bar.running:
        return f"{drawn} {bar.crawled} pages crawled" + (f" of {bar.total} known" if bar.total > bar.crawled else "")
    if bar.at_budget:
        return f"{drawn} {bar.crawled} crawled of {bar.total} (the page budget; {bar.found} found)"
    return f"{drawn} {bar.crawled} crawled of {bar.found} found so far (budget {bar.budget})"


def _dashboard_link(audit: Audit) -> str:
    return settings.DASHBOARD_BASE_URL.rstrip("/") + reverse("audits:audit-detail", args=[audit.id])


def _last_line(audit: Audit, severities: dict[str, int], skipped_urls: list[dict] = (), *, link: str) -> str:
    score = "-" if audit.health_score is None else f"{audit.health_score}/100"
    breakdown = score_breakdown_stored(audit=audit)  # stored at finalize: no query
    if breakdown is not None and breakdown.score is not None:
        score += f" ({breakdown.error_free_percent:g} % of pages without errors)"
    issues = ", ".join(f"{n} {severity}" for severity, n in severities.items())
    outcome = audit.status if not audit.error_code else f"{audit.status} ({audit.error_code})"
    skipped = "".join(f"; {s['message']}" for s in skipped_urls)
    return f"audit {audit.id} {outcome}: {audit.pages_crawled} pages, health {score}, issues {issues}{skipped}  {link}"


class _LogLinesAboveBar:
    """While active, log handlers that write to the bar's stream write through the bar (clear, write, redraw)."""

    def __init__(self, bar: _ProgressBar):
        self.bar = bar
        self.swapped: list[tuple[logging.StreamHandler, object]] = []

    def __enter__(self):
        loggers = [logging.getLogger()] + [
            lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
        ]
        for logger in loggers:
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream is self.bar.stream:
                    self.swapped.append((handler, handler.setStream(_StreamAboveBar(self.bar))))
        return self

    def __exit__(self, *exc):
        for handler, stream in self.swapped:
            handler.setStream(stream)
        return False


class _StreamAboveBar:
    def __init__(self, bar: _ProgressBar):
        self.bar = bar

    def write(self, text: str) -> None:
        self.bar.write_above(text)

    def flush(self) -> None:
        self.bar.stream.flush()
