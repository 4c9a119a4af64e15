"""The optional Lighthouse phase: run the Lighthouse CLI (Node + Chromium) on a sample of an audit's pages.

One page per URL template, mobile and desktop, two runs at a time; results, reports and three Lighthouse
issues are stored idempotently. The phase never fails the audit: a missing tool is a note, a bad run a row.
"""

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from audits.bulk import issues_insert
from audits.checks.registry import LIGHTHOUSE_TYPES, CheckSettings, make_issue
from audits.fencing import PhaseLeft, phase_atomic
from audits.models import Audit, Issue, LighthouseResult, Page, lighthouse_id_for
from audits.pipeline.chromium import chromium_flags, find_chromium
from crawler.shapes import url_template
from crawler.urls import normalize

logger = logging.getLogger(__name__)

LIGHTHOUSE_MAX_PAGES = 10  # the start page plus one page per URL template
LIGHTHOUSE_CONCURRENCY = 2  # Chromium runs at once; each wants about a core
LIGHTHOUSE_TIMEOUT_S = 120  # one CLI run, Chromium start to report written
LIGHTHOUSE_MAX_WAIT_FOR_LOAD_MS = 30_000
LIGHTHOUSE_KILL_GRACE_S = 5  # after SIGINT on a timeout, before SIGKILL
# The phase runs inside the `audits.finalize` task (hard time limit 600 s): stop starting runs past this.
LIGHTHOUSE_PHASE_BUDGET_S = 420
LIGHTHOUSE_ERROR_MAX_CHARS = 500
LIGHTHOUSE_CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
LIGHTHOUSE_SUMMARY_ITEMS = 5  # opportunities and diagnostics kept per run for the performance screen
LIGHTHOUSE_PASSING_SCORE = 0.9  # an audit scored at or above this is not worth showing (Lighthouse's "passed")
ACCESSIBILITY_IMPACTS = ("critical", "serious")  # axe-core impacts turned into issues, worst first
ACCESSIBILITY_VIOLATIONS_KEPT = 20  # failed rules kept per run in the summary
STRATEGIES = (LighthouseResult.Strategy.MOBILE, LighthouseResult.Strategy.DESKTOP)

RUNNER_DIR = Path(__file__).resolve().parent.parent / "lighthouse_runner"  # audits/lighthouse_runner
RUNNER_BIN = RUNNER_DIR / "node_modules" / ".bin" / "lighthouse"
LIGHTHOUSE_BIN_ENV = "SITEWARDEN_LIGHTHOUSE_BIN"  # explicit path to the CLI; when set, nothing else is tried
_LIGHTHOUSE_HINT = (
    f"make lighthouse-install, or npm ci --prefix audits/lighthouse_runner, or set {LIGHTHOUSE_BIN_ENV} to the CLI"
)


# --- Sampling ----------------------------------------------------------------------------------------


def _sample_queryset(audit):
    return Page.objects.filter(
        audit_id=audit.id,
        status_code__gte=200,
        status_code__lt=300,
        content_type__icontains="html",
        is_indexable=True,
    )


def sample_pages(audit) -> list[Page]:
    """The start page, then the shallowest page (ties: by URL) of each other URL template; at most 10.

    Streams pages in order and stops once the sample is full, so a large crawl is never held in memory.
    """
    start_urls = {u for u in (normalize(audit.site_url or ""), normalize(audit.start_url or "")) if u}
    start_urls |= {audit.site_url, audit.start_url} - {""}
    chosen: dict[str, object] = {}  # template -> page id, in sample order
    start = (
        _sample_queryset(audit)
        .filter(url__in=start_urls)
        .order_by(F("depth").asc(nulls_last=True), "url")
        .values("id", "url", "depth")
        .first()
    )
    if start:
        chosen[url_template(start["url"])] = start["id"]
    if len(chosen) < LIGHTHOUSE_MAX_PAGES:
        rows = (
            _sample_queryset(audit)
            .order_by(F("depth").asc(nulls_last=True), "url")
            .values("id", "url", "depth")
            .iterator(chunk_size=500)
        )
        for row in rows:
            chosen.setdefault(url_template(row["url"]), row["id"])
            if len(chosen) >= LIGHTHOUSE_MAX_PAGES:
                break
    pages = Page.objects.in_bulk(list(chosen.values()))
    return [pages[page_id] for page_id in chosen.values()]


# --- Finding the tools -------------------------------------------------------------------------------


def _executable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_lighthouse() -> tuple[list[str] | None, str]:
    """The command that starts the Lighthouse CLI, or None and why not."""
    explicit = os.environ.get(LIGHTHOUSE_BIN_ENV)
    if explicit:
        if _executable(explicit):
            return [explicit], f"{LIGHTHOUSE_BIN_ENV}={explicit}"
        return None, f"Lighthouse not found at {LIGHTHOUSE_BIN_ENV}={explicit} ({_LIGHTHOUSE_HINT})"
    if _executable(RUNNER_BIN):
        return [str(RUNNER_BIN)], str(RUNNER_BIN)
    if found := shutil.which("lighthouse"):
        return [found], found
    return None, f"Lighthouse not found ({_LIGHTHOUSE_HINT})"


# --- One run -----------------------------------------------------------------------------------------


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= LIGHTHOUSE_ERROR_MAX_CHARS else text[: LIGHTHOUSE_ERROR_MAX_CHARS - 1] + "…"


def _failed(error: str, started: float, **extra) -> dict:
    return {
        "status": LighthouseResult.Status.FAILED,
        "error": _short(error),
        "duration_ms": int((time.monotonic() - started) * 1000),
        **extra,
    }


def _numeric(audits: dict, *names: str) -> float | None:
    for name in names:
        value = (audits.get(name) or {}).get("numericValue")
        if isinstance(value, (int, float)):
            return float(value)
    return None


def _ms(value: float | None) -> int | None:
    return None if value is None else max(0, round(value))


def _failing(audit: dict) -> bool:
    score = audit.get("score")
    return isinstance(score, (int, float)) and score < LIGHTHOUSE_PASSING_SCORE


def _item(audit_id: str, audit: dict, **extra) -> dict:
    # Titles are Markdown: `code` spans read fine as plain words.
    title = _short((audit.get("title") or audit_id).replace("`", ""))
    display = _short(audit.get("displayValue") or "")
    return {"id": audit_id, "title": title, "display": display, **extra}


def report_summary(report: dict) -> dict:
    """The top opportunities (by estimated savings) and failing diagnostics of the performance category,
    small enough for a JSON column, so the performance screen never opens the report file."""
    audits = report.get("audits") or {}
    opportunities = []
    for audit_id, audit in audits.items():
        details = audit.get("details") or {}
        savings_ms = details.get("overallSavingsMs")
        if details.get("type") == "opportunity" and _failing(audit) and isinstance(savings_ms, (int, float)):
            opportunities.append(_item(audit_id, audit, savings_ms=round(savings_ms)))
    opportunities.sort(key=lambda item: (-item["savings_ms"], item["id"]))
    refs = ((report.get("categories") or {}).get("performance") or {}).get("auditRefs") or []
    diagnostics = []
    for ref in refs:
        audit = audits.get(ref.get("id")) or {}
        if ref.get("group") == "diagnostics" and _failing(audit):
            if (audit.get("details") or {}).get("type") != "opportunity":
                diagnostics.append(_item(ref["id"], audit, score=audit["score"]))
    diagnostics.sort(key=lambda item: (item["score"], item["id"]))
    return {
        "accessibility_violations": accessibility_violations(report),
        "opportunities": opportunities[:LIGHTHOUSE_SUMMARY_ITEMS],
        "diagnostics": diagnostics[:LIGHTHOUSE_SUMMARY_ITEMS],
        "speed_index_ms": _ms(_numeric(audits, "speed-index")),
    }


def accessibility_violations(report: dict) -> list[dict]:
    """Failed axe-core rules of impact serious or critical, from the accessibility category: rule id, impact,
    description and the number of offending nodes; worst first, bounded."""
    audits = report.get("audits") or {}
    refs = ((report.get("categories") or {}).get("accessibility") or {}).get("auditRefs") or []
    found = []
    for ref in refs:
        audit = audits.get(ref.get("id")) or {}
        details = audit.get("details") or {}
        impact = ((details.get("debugData") or {}).get("impact") or "").lower()
        if audit.get("score") == 0 and impact in ACCESSIBILITY_IMPACTS:
            found.append(
                {
                    "rule": ref["id"],
                    "impact": impact,
                    "description": _short((audit.get("title") or ref["id"]).replace("`", "")),
                    "nodes": len(details.get("items") or []),
                }
            )
    found.sort(key=lambda item: (ACCESSIBILITY_IMPACTS.index(item["impact"]), item["rule"]))
    return found[:ACCESSIBILITY_VIOLATIONS_KEPT]


def parse_report(report: dict) -> dict:
    """Scores (0-100) and lab metrics from a Lighthouse JSON report; status failed on a runtimeError."""
    scores = {}
    for category in LIGHTHOUSE_CATEGORIES:
        score = (report.get("categories", {}).get(category) or {}).get("score")
        scores[category.replace("-", "_")] = None if score is None else round(score * 100)
    audits = report.get("audits") or {}
    cls = _numeric(audits, "cumulative-layout-shift")
    result = {
        "status": LighthouseResult.Status.OK,
        "error": "",
        **scores,
        "lcp_ms": _ms(_numeric(audits, "largest-contentful-paint")),
        "cls": None if cls is None else round(cls, 4),
        "tbt_ms": _ms(_numeric(audits, "total-blocking-time")),
        "inp_ms": _ms(_numeric(audits, "interaction-to-next-paint", "experimental-interaction-to-next-paint")),
        "ttfb_ms": _ms(_numeric(audits, "server-response-time")),
        "fcp_ms": _ms(_numeric(audits, "first-contentful-paint")),
        "summary": report_summary(report),
    }
    if runtime_error := report.get("runtimeError"):
        result["status"] = LighthouseResult.Status.FAILED
        result["error"] = _short(f"{runtime_error.get('code', 'ERROR')}: {runtime_error.get('message', '')}")
    return result


def _stop(proc: subprocess.Popen, profile_dir: Path) -> None:
    """End a run and every browser it started.

    SIGINT first: chrome-launcher then kills its Chromium and exits. Chromium runs in its own process group
    (chrome-launcher spawns it detached), so a CLI that had to be SIGKILLed leaves it behind; it is found by
    the run's own profile directory, which no other process names.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=LIGHTHOUSE_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _kill_strays(str(profile_dir))


def _kill_strays(marker: str) -> None:
    proc_root = Path("/proc")
    if not proc_root.is_dir():
        return
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read


def _chrome_flags_argument(flags: list[str]) -> str:
    """Lighthouse's --chrome-flags is one space-separated string (split by yargs-parser): a value with a
    space, as --host-resolver-rules has, goes in single quotes."""
    out = []
    for flag in flags:
        name, sep, value = flag.partition("=")
        out.append(f"{name}='{value}'" if sep and " " in value else flag)
    return " ".join(out)


def lighthouse_run_page(
    url: str,
    strategy: str,
    *,
    report_to: Path | None = None,
    timeout_s: float = LIGHTHOUSE_TIMEOUT_S,
) -> dict:
    """Run the Lighthouse CLI once on `url` ("mobile" or "desktop"); never raises.

    Returns LighthouseResult field values (status, error, scores, metrics, duration_ms). With `report_to`,
    the JSON report is moved there and `report_bytes` is set.
    """
    started = time.monotonic()
    lighthouse, reason = find_lighthouse()
    if lighthouse is None:
        return _failed(reason, started)
    chromium, reason = find_chromium()
    if chromium is None:
        return _failed(reason, started)

    with tempfile.TemporaryDirectory(prefix="sitewarden-lh-", ignore_cleanup_errors=True) as tmp:
        output = Path(tmp) / "report.json"
        profile = Path(tmp) / "profile"
        flags = chromium_flags(user_data_dir=profile)
        cmd = [
            *lighthouse,
            url,
            "--output=json",
            f"--output-path={output}",
            "--quiet",
            f"--chrome-flags={_chrome_flags_argument(flags)}",
            f"--only-categories={','.join(LIGHTHOUSE_CATEGORIES)}",
            f"--max-wait-for-load={LIGHTHOUSE_MAX_WAIT_FOR_LOAD_MS}",
        ]
        if strategy == LighthouseResult.Strategy.DESKTOP:
            cmd.append("--preset=desktop")
        env = {**os.environ, "CHROME_PATH": chromium, "TMPDIR": tmp}
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=tmp,
                start_new_session=True,
            )
        except OSError as exc:
            return _failed(f"Could not start Lighthouse: {exc}", started)
        try:
            _, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc, profile)
            proc.communicate()
            return _failed(f"Lighthouse timed out after {timeout_s:.0f} s", started)
        _stop(proc, profile)  # a Chromium the CLI failed to close

        result: dict = {}
        if output.is_file():
            try:
                result = parse_report(json.loads(output.read_bytes()))
            except (ValueError, UnicodeDecodeError) as exc:
                result = _failed(f"Unreadable Lighthouse report: {exc}", started)
        if not result:
            lines = [ln for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
            result = _failed(f"Lighthouse exited with {proc.returncode}: {' '.join(lines[-5:])}", started)
        elif proc.returncode != 0 and result["status"] == LighthouseResult.Status.OK:
            result.update(status=LighthouseResult.Status.FAILED, error=f"Lighthouse exited with {proc.returncode}")
        result["duration_ms"] = int((time.monotonic() - started) * 1000)

        if report_to is not None and output.is_file():
            report_to.parent.mkdir(parents=True, exist_ok=True)
            partial = report_to.with_name(report_to.name + ".partial")
            shutil.move(output, partial)
            os.replace(partial, report_to)  # readers never see half a report
            result["report_bytes"] = report_to.stat().st_size
        return result


# --- The phase ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Run:
    page: Page
    template: str
    strategy: str

    @property
    def result_id(self):
        return lighthouse_id_for(self.page.audit_id, self.page.id, self.strategy)


def _report_file(audit_id, result_id) -> Path:
    return Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit_id) / f"{result_id}.json"


def lighthouse_reports_delete(*, audit_id) -> None:
    """Remove an audit's Lighthouse report files (the rows go with the audit; the files do not)."""
    shutil.rmtree(Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit_id), ignore_errors=True)


def _heartbeat(audit_id) -> bool:
    """Move the audit's heartbeat; False when the audit is no longer running (cancelled, failed)."""
    return bool(Audit.objects.filter(id=audit_id, status=Audit.Status.RUNNING).update(last_progress_at=timezone.now()))


def _note(audit_id, note: str, phase: str | None = None) -> None:
    with phase_atomic(audit_id, phase):
        Audit.objects.filter(id=audit_id).update(lighthouse_note=_short(note))


_METRIC_FIELDS = (
    "performance",
    "accessibility",
    "best_practices",
    "seo",
    "lcp_ms",
    "cls",
    "tbt_ms",
    "inp_ms",
    "ttfb_ms",
    "fcp_ms",
)


def _store(run: _Run, result: dict, phase: str | None) -> LighthouseResult:
    audit_id = run.page.audit_id
    report = _report_file(audit_id, run.result_id)
    report_bytes = result.pop("report_bytes", 0)
    if not report_bytes:
        report.unlink(missing_ok=True)  # a rerun that produced no report must not keep the old one
    values = {
        "audit_id": audit_id,
        "page_id": run.page.id,
        "url": run.page.url,
        "template": run.template[:500],
        "strategy": run.strategy,
        "status": result.get("status", LighthouseResult.Status.FAILED),
        "error": result.get("error", ""),
        "report_path": str(report.relative_to(Path(settings.MEDIA_ROOT))) if report_bytes else "",
        "report_bytes": report_bytes,
        "duration_ms": result.get("duration_ms"),
    }
    for name in _METRIC_FIELDS:
        values[name] = result.get(name)  # None on a failed run: a rerun must not keep old figures
    values["summary"] = result.get("summary") or {}
    with phase_atomic(audit_id, phase):
        row, _ = LighthouseResult.objects.update_or_create(id=run.result_id, defaults=values)
    return row


def lighthouse_issues_for_audit(*, audit, phase: str | None = None) -> list[Issue]:
    """Replace the audit's Lighthouse issues with those its current results call for (idempotent); given `phase`,
    only while the audit is still in it (audits.fencing.phase_atomic).

    Thresholds, severities and disabled types come from the check registry with the audit's overrides.
    """
    check_settings = CheckSettings.for_audit(audit)
    min_score = check_settings.threshold("poor-performance-score", "min_score")
    max_lcp_ms = check_settings.threshold("poor-lcp", "max_ms")
    max_cls = check_settings.threshold("poor-cls", "max_cls")
    issues: dict = {}

    def add(row: LighthouseResult, issue_type: str, value, threshold, unit: str) -> None:
        issue = make_issue(
            audit.id,
            issue_type,
            page_id=row.page_id,
            page_url=row.url,
            details={"value": value, "threshold": threshold, "unit": unit, "strategy": row.strategy},
            dedupe_key=row.strategy,
            settings=check_settings,
        )
        if issue is not None:
            issues[issue.id] = issue

    results = LighthouseResult.objects.filter(audit_id=audit.id, status=LighthouseResult.Status.OK)
    for row in results.order_by("url", "strategy"):
        # One issue per page and rule: a rule failing on mobile and desktop is one fault of the page.
        for violation in (row.summary or {}).get("accessibility_violations") or []:
            issue = make_issue(
                audit.id,
                "accessibility-violation",
                page_id=row.page_id,
                page_url=row.url,
                details={**violation, "strategy": row.strategy},
                dedupe_key=violation["rule"],
                settings=check_settings,
            )
            if issue is not None and issue.id not in issues:
                if violation["impact"] == "critical" and "accessibility-violation" not in check_settings.severities:
                    issue.severity = Issue.Severity.CRITICAL
                issues[issue.id] = issue
        if row.performance is not None and row.performance < min_score:
            add(row, "poor-performance-score", row.performance, min_score, "score")
        if row.lcp_ms is not None and row.lcp_ms > max_lcp_ms:
            add(row, "poor-lcp", row.lcp_ms, max_lcp_ms, "ms")
        if row.cls is not None and row.cls > max_cls:
            add(row, "poor-cls", row.cls, max_cls, "unitless")
    with phase_atomic(audit.id, phase):
        Issue.objects.filter(audit_id=audit.id, type__in=LIGHTHOUSE_TYPES).delete()
        issues_insert(issues.values())
    return list(issues.values())


def lighthouse_run_for_audit(*, audit, phase: str | None = None) -> bool:
    """The Lighthouse phase: sample, run mobile and desktop two at a time, store rows, reports and issues. Never
    raises: missing tools are noted (`audit.lighthouse_note`) and the phase skipped; a failed run is a failed row;
    anything unexpected is logged and noted. Given the step's `phase`, each write lands only while the audit is in
    it (audits.fencing): False when it moved on (a twin of this run, handed out again, finished first)."""
    try:
        _run_for_audit(audit, phase)
    except PhaseLeft:
        logger.info("Lighthouse run of audit %s stopped: the audit left its Lighthouse phase", audit.id)
        return False
    except Exception as exc:
        logger.exception("Lighthouse phase failed for audit %s", audit.id)
        try:
            _note(audit.id, f"Lighthouse phase error: {type(exc).__name__}: {exc}", phase)
        except PhaseLeft:
            return False
    return True


def _run_for_audit(audit, phase: str | None) -> None:
    lighthouse, reason = find_lighthouse()
    if lighthouse is None:
        _note(audit.id, f"Skipped: {reason}", phase)
        return
    chromium, reason = find_chromium()
    if chromium is None:
        _note(audit.id, f"Skipped: {reason}", phase)
        return
    pages = sample_pages(audit)
    if not pages:
        _note(audit.id, "Skipped: no indexable 2xx HTML page to sample", phase)
        lighthouse_issues_for_audit(audit=audit, phase=phase)
        return
    runs = [_Run(page, url_template(page.url), strategy) for page in pages for strategy in STRATEGIES]
    deadline = time.monotonic() + LIGHTHOUSE_PHASE_BUDGET_S
    pending = list(reversed(runs))
    in_flight: dict[Future, _Run] = {}
    done = failed = 0
    stopped = ""
    with ThreadPoolExecutor(max_workers=LIGHTHOUSE_CONCURRENCY, thread_name_prefix="lighthouse") as pool:
        while pending or in_flight:
            while pending and len(in_flight) < LIGHTHOUSE_CONCURRENCY and not stopped:
                remaining_s = deadline - time.monotonic()
                if remaining_s < 10:
                    stopped = f"phase time budget ({LIGHTHOUSE_PHASE_BUDGET_S} s) spent"
                    break
                run = pending.pop()
                report_to = _report_file(audit.id, run.result_id)
                timeout_s = min(LIGHTHOUSE_TIMEOUT_S, remaining_s)
                future = pool.submit(
                    lighthouse_run_page, run.page.url, run.strategy, report_to=report_to, timeout_s=timeout_s
                )
                in_flight[future] = run
            if not in_flight:
                break
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                run = in_flight.pop(future)
                try:
                    result = future.result()
                except Exception as exc:  # lighthouse_run_page does not raise; a bug must not end the phase
                    result = {"status": LighthouseResult.Status.FAILED, "error": f"{type(exc).__name__}: {exc}"}
                row = _store(run, result, phase)  # PhaseLeft: the pool's exit waits for the runs in flight
                done += 1
                failed += row.status == LighthouseResult.Status.FAILED
                if not _heartbeat(audit.id) and not stopped:
                    stopped = "the audit is no longer running"
    not_run = len(runs) - done
    lighthouse_issues_for_audit(audit=audit, phase=phase)
    note = "" if not failed else f"{failed} of {done} Lighthouse runs failed"
    if stopped:
        note = f"Stopped: {stopped}; {not_run} of {len(runs)} runs not started" + (f"; {note}" if note else "")
    _note(audit.id, note, phase)


# --- The HTML report ----------------------------------------------------------------------------------

RENDER_SCRIPT = RUNNER_DIR / "render-report.mjs"
REPORT_RENDER_TIMEOUT_S = 30  # node renders a stored report in about 0.1 s


class ReportRenderFailed(Exception):
    """Lighthouse's HTML report could not be made from a stored JSON report (no Node, or the renderer failed)."""


def report_html(json_path: Path) -> Path:
    """Lighthouse's own HTML report of a stored JSON report, rendered once by the pinned package's report renderer
    (render-report.mjs) and kept beside it (`….html`); raises ReportRenderFailed."""
    html_path = json_path.with_suffix(".html")
    if html_path.is_file() and html_path.stat().st_mtime >= json_path.stat().st_mtime:
        return html_path
    node = shutil.which("node")
    if node is None or not RENDER_SCRIPT.is_file():
        raise ReportRenderFailed(f"Node.js or the report renderer is missing ({_LIGHTHOUSE_HINT})")
    partial = html_path.with_name(f".{html_path.name}.{os.getpid()}.part")  # renamed whole: never half read
    try:
        subprocess.run(  # noqa: S603 - fixed script, paths of our own files
            [node, str(RENDER_SCRIPT), str(json_path), str(partial)],
            cwd=RUNNER_DIR,
            capture_output=True,
            timeout=REPORT_RENDER_TIMEOUT_S,
            check=True,
        )
        partial.replace(html_path)
    except (OSError, subprocess.SubprocessError) as exc:
        stderr = getattr(exc, "stderr", b"") or b""
        raise ReportRenderFailed(_short(f"{exc} {stderr.decode('utf-8', 'replace')}")) from exc
    finally:
        partial.unlink(missing_ok=True)
    return html_path
