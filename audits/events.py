"""The audit's event log in words: one sentence per event, and its payload as labelled rows, for the
dashboard's events page and the CLI (never a JSON blob).

Public interface:
- event_sentence(event) -> str: what happened, as a sentence
- event_label(kind) -> str: the kind as a short tag ("Phase", "Worker lost")
- event_rows(event) -> [(label, value)]: the payload a sentence does not already say, labelled
- SENTENCES: the kinds with a sentence of their own (a test checks it covers AuditEvent.Kind)

Events written before a field was added to their payload still read well: each sentence falls back to the
event's stored message where a value is missing.
"""

from collections.abc import Callable

from audits.checks.skips import skip_sentence
from audits.limits import EXTRACTION_PAGE_BUDGET_S
from audits.models import Audit, AuditEvent

Kind = AuditEvent.Kind

# Pipeline task names (a wire contract) as the step a person knows.
STEP_NAMES = {
    "audits.discover": "discovery (robots.txt and sitemaps)",
    "crawler.crawl_chunk": "crawl",
    "audits.lighthouse": "Lighthouse",
    "audits.finalize": "final analysis",
}
PHASE_STARTED = {
    Audit.Phase.DISCOVERY: "Discovery started: reading robots.txt and sitemaps",
    Audit.Phase.CRAWLING: "Crawling started",
    Audit.Phase.LIGHTHOUSE: "Crawl done; Lighthouse started on a sample of pages",
    Audit.Phase.FINALIZING: "Crawl done; analysing the pages (checks, duplicates, scores)",
}
# The stages finalize times (audits.pipeline.finalize), in the order they run, as the completed event's
# "final analysis" row names them (slowest first: a jsonb payload keeps no key order).
FINALIZE_STAGES = {
    "statistics": "planner statistics",
    "depths": "click depths",
    "site_checks": "site checks",
    "images": "images",
    "bots": "bots",
    "resources": "resources",
    "external_links": "external links",
    "page_counts": "page counts",
    "changes": "changes",
    "figures": "figures and score",
}
# Who stepped in, by `reconciled_by`.
RECONCILERS = {
    "watchdog": "the watchdog",
    "heal": "the healer",
    "lazy": "a status check",
    "admin": "an administrator",
    "worker_start": "a worker that started",
}
LABELS = {
    Kind.STARTED: "Started",
    Kind.PHASE: "Phase",
    Kind.RETRY: "Retry",
    Kind.LEASE_EXPIRED: "Worker lost",
    Kind.REVIVED: "Revived",
    Kind.RECONCILED: "Watchdog",
    Kind.TASK_FAILED: "Step failed",
    Kind.FAILED: "Failed",
    Kind.CANCELLED: "Cancelled",
    Kind.COMPLETED: "Completed",
    Kind.SCHEDULE_SKIPPED: "Schedule",
    Kind.URLS_SKIPPED: "URLs skipped",
    Kind.EXTRACTION_STOPPED: "Extraction",
    Kind.HTTP_FALLBACK: "http fallback",
}
# Payload keys a sentence already says (or that only the machinery reads): not repeated as rows.
_SAID = {
    Kind.STARTED: {"max_pages"},
    Kind.PHASE: {"phase", "sitemaps", "sitemap_urls", "listed_urls", "listed_urls_seeded", "run"},
    Kind.RETRY: {"task", "reason"},
    Kind.LEASE_EXPIRED: {"expired", "silent_s", "round", "chunks", "lease_s", "reconciled_by"},
    Kind.REVIVED: {"phase", "silent_s", "revival", "reconciled_by"},
    Kind.RECONCILED: {"round", "reason", "reconciled_by", "code"},
    Kind.TASK_FAILED: {"task"},
    Kind.FAILED: {"reconciled_by"},
    Kind.CANCELLED: {"reconciled_by"},
    Kind.COMPLETED: {"reconciled_by"},
    Kind.URLS_SKIPPED: {"rule", "pattern", "example"},
    Kind.EXTRACTION_STOPPED: {"extractor", "page_url"},
    Kind.HTTP_FALLBACK: {"https_url", "http_url", "https_error"},
}
ROW_LABELS = {
    "sitemap_urls_out_of_scope": "Sitemap URLs outside the crawl's scope",
    "listed_urls_disallowed": "Listed URLs refused (robots.txt or the project's rules)",
    "listed_urls_off_site": "Listed URLs on another site",
    "robots_error": "robots.txt could not be read",
    "sitemap_errors": "Sitemap problems",
    "skipped_patterns": "Patterns left out (they cannot run safely)",
    "code": "Error code",
    "task": "Step",
    "reconciled_by": "Noticed by",
    "finalize_stages_s": "Final analysis",
    "finalize_time_limit_s": "Final analysis time limit",
}


def _n(value, one: str, many: str | None = None) -> str:
    """`1 page`, `1,240 pages`."""
    return f"{value:,} {one if value == 1 else (many or one + 's')}"


def _step(task) -> str:
    return STEP_NAMES.get(task or "", f"“{task}”" if task else "pipeline")


def _who(data: dict) -> str:
    by = data.get("reconciled_by") or ""
    return RECONCILERS.get(by, f"“{by}”" if by else "the watchdog")


def _started(event, data, audit) -> str:
    budget = data.get("max_pages")
    text = event.message.rstrip(".")
    return f"{text}, with a page budget of {_n(budget, 'page')}" if isinstance(budget, int) else text


def _phase(event, data, audit) -> str:
    phase = data.get("phase", "")
    if phase == Audit.Phase.CRAWLING and "listed_urls" in data:
        listed, seeded = data["listed_urls"], data.get("listed_urls_seeded", data["listed_urls"])
        return f"Discovery queued {seeded:,} of the {_n(listed, 'listed URL')}; crawling started"
    if phase == Audit.Phase.CRAWLING and "sitemap_urls" in data:
        sitemaps = data.get("sitemaps", 0)
        if not sitemaps:
            return "Discovery found no sitemap; crawling started from the start URL"
        return f"Discovery found {_n(sitemaps, 'sitemap')} with {_n(data['sitemap_urls'], 'URL')}; crawling started"
    run = data.get("run")
    if phase == Audit.Phase.FINALIZING and isinstance(run, int) and run > 1:
        # audits.fencing: a finalize handed out again (its worker lost the broker, or the reconciler re-sent it)
        return (
            f"The analysis started again (run {run}): the previous run stopped answering or its step was handed out "
            "twice; only this run's results are kept"
        )
    return PHASE_STARTED.get(phase, f"The audit moved to its “{phase}” phase")


def _retry(event, data, audit) -> str:
    reason = data.get("reason") or event.message.partition(" retried: ")[2]
    text = f"The {_step(data.get('task'))} step hit a passing error and is tried again"
    return f"{text}: {reason}" if reason else text


def _lease_expired(event, data, audit) -> str:
    if "chunks" in data:
        lease = f" for over {data['lease_s']} s" if "lease_s" in data else ""
        return (
            f"Worker lost: {_n(data['chunks'], 'crawl chunk')} of round {data.get('round', '?')} stopped reporting"
            f"{lease} and {'was' if data['chunks'] == 1 else 'were'} handed to another worker"
        )
    if "expired" in data:
        silent = f" after {data['silent_s']:,} s without progress" if "silent_s" in data else ""
        return f"Worker lost: the leases of {_n(data['expired'], 'URL')} being crawled expired{silent}"
    return f"Worker lost: {event.message}"


def _revived(event, data, audit) -> str:
    if "silent_s" in data:
        phase = data.get("phase") or "current"
        return (
            f"No progress for {data['silent_s']:,} s and no worker on it: {_who(data)} restarted the {phase} step "
            f"(revival {data.get('revival', '?')})"
        )
    return f"Restarted by {_who(data)}: {event.message}"


def _reconciled(event, data, audit) -> str:
    reason = data.get("reason")
    if reason == "callback_lost":
        return (
            f"Every crawl chunk of round {data.get('round', '?')} had finished but the next round never began: "
            f"{_who(data)} started it"
        )
    if reason == "replan_lost":
        round_no = data.get("round", "?")
        return f"Round {round_no} waited for a re-plan that never came: {_who(data)} planned the next round"
    if reason == "failed":
        return f"{_who(data).capitalize()} ended the audit: {event.message}"
    return f"{_who(data).capitalize()} stepped in: {event.message}"


def _task_failed(event, data, audit) -> str:
    detail = event.message.removeprefix(f"{data.get('task', '')}: ") if data.get("task") else event.message
    return f"The {_step(data.get('task'))} step failed for good: {detail}"


def _failed(event, data, audit) -> str:
    if audit is not None and audit.error_detail:
        phase = f" during {audit.failed_phase}" if audit.failed_phase else ""
        return f"The audit failed{phase}: {audit.error_detail}"
    detail = event.message.partition("): ")[2] if event.message.startswith("Failed (") else event.message
    return f"The audit failed: {detail}" if detail else "The audit failed"


def _cancelled(event, data, audit) -> str:
    if audit is None:
        return "The audit was cancelled; the pages crawled until then are kept"
    kept = "is" if audit.pages_crawled == 1 else "are"
    return f"The audit was cancelled; the {_n(audit.pages_crawled, 'page')} crawled until then {kept} kept"


def _completed(event, data, audit) -> str:
    if audit is None:
        return "The audit completed"
    text = f"The audit completed: {_n(audit.pages_crawled, 'page')} crawled"
    if audit.max_pages and audit.pages_crawled >= audit.max_pages:
        text += f"; the crawl stopped at the page budget of {audit.max_pages:,}"
    return text


def _schedule_skipped(event, data, audit) -> str:
    return "A scheduled audit of this project was skipped because this one was still running"


def _urls_skipped(event, data, audit) -> str:
    if "rule" not in data:
        return event.message
    example = f", for example {data['example']}" if data.get("example") else ""
    return f"{skip_sentence(data['rule'], data.get('pattern', ''))}{example}"


def _extraction_stopped(event, data, audit) -> str:
    name = data.get("extractor", "?")
    return (
        f"Custom extraction “{name}” stopped on {data.get('page_url', 'a page')}: over its "
        f"{EXTRACTION_PAGE_BUDGET_S:g} s budget per page. That page stores “stopped” for it; the crawl goes on"
    )


def _http_fallback(event, data, audit) -> str:
    if "http_url" not in data:
        return event.message
    error = data.get("https_error") or "no answer"
    return f"Fell back to http:// because https:// failed: {error}. Crawled {data['http_url']}"


SENTENCES: dict[str, Callable] = {
    Kind.STARTED: _started,
    Kind.PHASE: _phase,
    Kind.RETRY: _retry,
    Kind.LEASE_EXPIRED: _lease_expired,
    Kind.REVIVED: _revived,
    Kind.RECONCILED: _reconciled,
    Kind.TASK_FAILED: _task_failed,
    Kind.FAILED: _failed,
    Kind.CANCELLED: _cancelled,
    Kind.COMPLETED: _completed,
    Kind.SCHEDULE_SKIPPED: _schedule_skipped,
    Kind.URLS_SKIPPED: _urls_skipped,
    Kind.EXTRACTION_STOPPED: _extraction_stopped,
    Kind.HTTP_FALLBACK: _http_fallback,
}


def _audit_of(event) -> Audit | None:
    """The event's audit if it is loaded (select_related, or set by the caller): a sentence never queries."""
    return event._state.fields_cache.get("audit")


def event_sentence(event) -> str:
    """What happened, in one sentence ending with a full stop. An unknown kind says its stored message (its
    payload is then all in event_rows)."""
    data = event.data if isinstance(event.data, dict) else {}
    build = SENTENCES.get(event.kind)
    if build is None:
        text = event.message or f"An event of kind “{event.kind}”"
    else:
        text = build(event, data, _audit_of(event))
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def event_label(kind: str) -> str:
    return LABELS.get(kind, kind.replace("_", " ").capitalize())


def _label(key: str) -> str:
    return ROW_LABELS.get(key, key.replace("_", " ").capitalize())


def _value(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return "; ".join(f"{_label(str(k))}: {_value(v)}" for k, v in value.items()) or "–"
    if isinstance(value, (list, tuple)):
        return ", ".join(_value(v) for v in value) or "–"
    if value is None or value == "":
        return "–"
    return str(value)


def _stages(seconds) -> str:
    """`41.2 s: site checks 20.4 s, click depths 3.1 s, …`: the slowest stage first, those under 0.1 s left out."""
    if not isinstance(seconds, dict) or not all(isinstance(v, (int, float)) for v in seconds.values()):
        return _value(seconds)
    slowest = sorted(((v, k) for k, v in seconds.items() if v >= 0.1), reverse=True)
    named = ", ".join(f"{FINALIZE_STAGES.get(k, k)} {v:.1f} s" for v, k in slowest)
    return f"{sum(seconds.values()):.1f} s" + (f": {named}" if named else "")


_FORMATS = {"finalize_stages_s": _stages, "finalize_time_limit_s": lambda seconds: _value(seconds) + " s"}


def event_rows(event) -> list[tuple[str, str]]:
    """The payload the sentence does not already say, as (label, value) rows; for an unknown kind, all of it."""
    data = event.data if isinstance(event.data, dict) else {}
    said = _SAID.get(event.kind, set()) if event.kind in SENTENCES else set()
    known = event.kind in SENTENCES
    # a known kind's zero counts say nothing worth a row ("0 sitemap URLs out of scope"); an unknown kind shows all
    empty = (None, "", 0, False, [], {}) if known else (None, "")
    return [
        (_label(key), _FORMATS.get(key, _value)(value))
        for key, value in data.items()
        if key not in said and value not in empty
    ]
