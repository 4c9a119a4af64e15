"""Does retention slow a crawl? The same audit of the on-the-fly site (bench/dynsite.py) timed alone, then while
`audits_prune` (audits/retention.py) prunes a large synthetic old audit of another project; prints both, their
ratio and how much of the crawl the prune overlapped. Figures are printed, never asserted.

python -m bench.retention [--pages 10000] [--old-pages 100000] [--workers 2] [--repeat 1]

The synthetic old audit has `--old-pages` pages, 3 issues and 10 link edges a page, an external link and an agent
fetch every 100 pages (written by bulk inserts, its stats counted as finalize does), and a newer small audit of its
project that keeps it beyond `keep_page_rows` = 1. Runs in its own database (`sitewarden_bench_retention`) and
Redis db (15). Goal (issue 28): the crawl is not slowed beyond noise (compare the ratio with --repeat's spread).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from audits.limits import PATTERN_CAP_OFF
from bench import run as bench_run
from bench.dynsite import serve_dynamic_site_processes

RETENTION_DB_NAME = "sitewarden_bench_retention"
RETENTION_REDIS_URL = "redis://127.0.0.1:6379/15"
RETENTION_ENV = {
    "DATABASE_URL": f"{bench_run.PG_SERVER_URL}/{RETENTION_DB_NAME}",
    "CELERY_BROKER_URL": RETENTION_REDIS_URL,
    "CELERY_RESULT_BACKEND": RETENTION_REDIS_URL,
    "DEFAULT_PLAN_PAGES_PER_AUDIT": "100000",
    "DEFAULT_PLAN_MONTHLY_UNITS": "10000000",
}
MAX_URLS_PER_PATTERN = PATTERN_CAP_OFF  # every page is /p/{n}.html: one path shape, the per-shape cap off
SEED_TIMEOUT_S = 3600
PRUNED_TABLES = (  # audits.retention.PRUNED_TABLES' tables
    "audits_lighthouseresult", "audits_issue", "scratchpad_linkedge", "audits_externallink", "audits_agentfetch",
    "audits_page",
)  # fmt: skip
PRUNE_STOP_TIMEOUT_S = 30

# The CLI's project for the crawl (as bench.scale makes it), and a "history" project with one old audit of
# `old_pages` pages and a newer small one, so that keep_page_rows = 1 makes the old one due.
SEED_SCRIPT = """
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from accounts.services import account_get_or_create_for_user
from audits.management.commands.audit import CLI_USERNAME
from audits.models import (AgentFetch, Audit, ExternalLink, Issue, Page, agent_fetch_id_for, external_link_id_for,
    issue_id_for, page_id_for)
from audits.projects import project_create
from audits.checks.score import pages_without_errors_count, score_breakdown_from
from audits.stats import audit_stats_count
from scratchpad.models import LinkEdge
owner, _ = get_user_model().objects.get_or_create(username=CLI_USERNAME)
account = account_get_or_create_for_user(user=owner)
project_create(account=account, owner=owner, name="crawl", base_url={base_url!r}, max_urls_per_pattern={cap})
history = project_create(account=account, owner=owner, name="history", base_url="https://history.example/")
history.keep_page_rows = 1
history.save(update_fields=["keep_page_rows"])
site = "https://history.example"
ISSUE_KINDS = (("missing-meta-description", "warning"), ("title-too-long", "info"), ("missing-h1", "critical"))
now = timezone.now()
def audit(days, pages):
    a = Audit.objects.create(project=history, start_url=site + "/", status="completed", current_phase="completed")
    Audit.objects.filter(id=a.id).update(created_at=now - timedelta(days=days), completed_at=now - timedelta(days=days))
    batch = 5000
    for start in range(0, pages, batch):
        rows = []
        for n in range(start, min(pages, start + batch)):
            url = f"{{site}}/p/{{n}}.html"
            rows.append(Page(
                id=page_id_for(a.id, url), audit=a, url=url, status_code=200, fetch_class="ok",
                content_type="text/html", title=f"Page {{n}}", h1=f"Page {{n}}", depth=n % 7,
                word_count=300 + n % 500, is_indexable=True, fetched_at=now, response_time_ms=100 + n % 900,
            ))
        Page.objects.bulk_create(rows)
        issues, edges = [], []
        for n, p in enumerate(rows, start):
            for t, sev in ISSUE_KINDS:
                issues.append(Issue(
                    id=issue_id_for(a.id, p.url, t), audit=a, page=p, page_url=p.url, type=t, severity=sev
                ))
            for j in range(10):
                edges.append(LinkEdge(audit=a, source_page=p, target_url=f"{{site}}/p/{{(n * 7 + j) % pages}}.html"))
            if n % 100 == 0:
                ext = f"https://ext.example/{{n}}"
                ExternalLink.objects.create(
                    id=external_link_id_for(a.id, ext), audit=a, url=ext, host="ext.example", outcome="ok"
                )
                AgentFetch.objects.create(
                    id=agent_fetch_id_for(a.id, p.url, "gptbot"), audit=a, url=p.url, agent="gptbot"
                )
        Issue.objects.bulk_create(issues)
        LinkEdge.objects.bulk_create(edges)
    stats = audit_stats_count(audit_id=a.id)  # as finalize stores them
    _n, clean = pages_without_errors_count(Page.objects.filter(audit_id=a.id))
    score = score_breakdown_from(audit=a, rows=stats["issue_types"], pages=pages, pages_without_errors=clean)
    stats["score"] = score.as_stats()
    Audit.objects.filter(id=a.id).update(
        stats=stats, pages_crawled=pages, health_score=score.score, score_formula=score.formula_version
    )
    return a
old = audit(60, {old_pages})
audit(30, 10)
print(str(old.id))
"""

PRUNE_SCRIPT = """
import json, time
from audits.retention import audits_prune
started = time.time()
result = audits_prune()
print(json.dumps({{"rows": result.rows, "batches": result.batches, "audits": [str(a) for a in result.audits],
                  "stopped": result.stopped, "started": started, "ended": time.time()}}))
"""


@dataclass
class CrawlTiming:
    label: str
    pages: int
    seconds: float
    pages_per_s: float
    started: float  # time.time()
    ended: float
    status: str


@dataclass
class PruneTiming:
    rows: int
    batches: int
    seconds: float
    rows_per_s: float
    overlap_s: float  # of the crawl it ran beside
    finished: bool


def _shell(script: str, *, timeout_s: float) -> str:
    done = subprocess.run(
        [str(bench_run.PYTHON), "manage.py", "shell", "-c", script],
        cwd=bench_run.REPO, env=bench_run.product_env(), capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    if done.returncode != 0:
        raise bench_run.BenchError(f"manage.py shell failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def crawl(label: str, base_url: str, size: int, *, args, workdir: Path, on_start=None) -> CrawlTiming:
    """One timed `manage.py audit` with its own worker; `on_start()` is called once the worker answers, just before
    the audit starts (the prune starts there, so that it runs beside the crawl, not beside the worker's start)."""
    worker_log = workdir / f"worker-{label}.log"
    cli_log = workdir / f"cli-{label}.log"
    command = [
        str(bench_run.PYTHON), "manage.py", "audit", base_url + "/", "--max-pages", str(size), "--json",
        "--no-external-links",
    ]  # fmt: skip
    timeout_s = max(bench_run.AUDIT_TIMEOUT_MIN_S, size * bench_run.AUDIT_TIMEOUT_PER_PAGE_S)
    with bench_run.celery_worker(args.workers, worker_log):
        if on_start is not None:
            on_start()
        started_wall, started = time.time(), time.perf_counter()
        returncode, stdout = bench_run._run_cli(
            command, cli_log, worker_log, timeout_s=timeout_s, stall_s=args.stall_timeout
        )
        seconds = time.perf_counter() - started
    summary = bench_run._last_json_object(stdout) or {}
    pages = int(summary.get("pages_crawled") or 0)
    return CrawlTiming(
        label, pages, seconds, pages / seconds if seconds else 0.0, started_wall, started_wall + seconds,
        f"{summary.get('status')} (exit {returncode})",
    )  # fmt: skip


def _rows_left(audit_id: str) -> int:
    """The old audit's rows in the tables retention prunes (counted in the bench's database)."""
    import psycopg  # why: only the bench needs it

    with psycopg.connect(RETENTION_ENV["DATABASE_URL"], autocommit=True) as conn:
        return sum(
            conn.execute(f"SELECT count(*) FROM {table} WHERE audit_id = %s", (audit_id,)).fetchone()[0]
            for table in PRUNED_TABLES
        )


def _prune_timing(proc: subprocess.Popen, out_path: Path, crawl: CrawlTiming, *, old_id: str, rows: int) -> PruneTiming:
    """The prune's figures: its JSON line when it finished; a prune still running when the crawl ended is stopped
    (the batches it committed stay: counted from the database) and measured up to then."""
    finished = proc.poll() is not None
    if not finished:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=PRUNE_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stopped_at = time.time()
    data = bench_run._last_json_object(out_path.read_text(errors="replace")) or {}
    started = data.get("started") or crawl.started
    ended = data.get("ended") or stopped_at
    rows = rows - _rows_left(old_id)
    seconds = max(ended - started, 1e-9)
    overlap = max(0.0, min(ended, crawl.ended) - max(started, crawl.started))
    return PruneTiming(rows, int(data.get("batches") or 0), seconds, rows / seconds, overlap, finished)


def run(args, workdir: Path) -> tuple[list[CrawlTiming], list[tuple[CrawlTiming, PruneTiming]]]:
    alone: list[CrawlTiming] = []
    beside: list[tuple[CrawlTiming, PruneTiming]] = []
    with serve_dynamic_site_processes(args.pages, processes=args.processes) as base_url:
        for round_no in range(args.repeat):
            bench_run.reset_database(RETENTION_DB_NAME)
            bench_run.flush_redis()
            started = time.perf_counter()
            old_id = (
                _shell(
                    SEED_SCRIPT.format(base_url=base_url + "/", cap=MAX_URLS_PER_PATTERN, old_pages=args.old_pages),
                    timeout_s=SEED_TIMEOUT_S,
                )
                .strip()
                .splitlines()[-1]
            )
            print(f"seeded old audit {old_id} ({args.old_pages} pages) in {time.perf_counter() - started:.1f}s")
            _shell("from django.db import connection\nconnection.cursor().execute('VACUUM ANALYZE')", timeout_s=600)
            rows = _rows_left(old_id)
            alone.append(crawl(f"alone-{round_no}", base_url, args.pages, args=args, workdir=workdir))
            print_crawl(alone[-1])
            prune_out = workdir / f"prune-{round_no}.json"
            pruner: list[subprocess.Popen] = []

            def prune_start(out_path=prune_out, pruner=pruner):
                with open(out_path, "wb") as out:
                    pruner.append(
                        subprocess.Popen(
                            [str(bench_run.PYTHON), "manage.py", "shell", "-c", PRUNE_SCRIPT.format()],
                            cwd=bench_run.REPO,
                            env=bench_run.product_env(),
                            stdout=out,
                            stderr=subprocess.STDOUT,
                        )
                    )

            timing = None
            try:
                timing = crawl(
                    f"beside-{round_no}", base_url, args.pages, args=args, workdir=workdir, on_start=prune_start
                )
            finally:
                if pruner:
                    prune_timing = _prune_timing(pruner[0], prune_out, timing or alone[-1], old_id=old_id, rows=rows)
            beside.append((timing, prune_timing))
            print_crawl(timing)
            print_prune(prune_timing)
    return alone, beside


def print_crawl(t: CrawlTiming) -> None:
    print(f"crawl {t.label}: {t.pages} pages in {t.seconds:.1f}s ({t.pages_per_s:.1f} pages/s), {t.status}")


def print_prune(p: PruneTiming) -> None:
    state = "finished" if p.finished else "stopped when the crawl ended"
    # A stopped prune prints no summary: its rows are counted from the database, its batches are not known.
    batches = f"{p.batches} batches" if p.finished else "batches not counted"
    print(
        f"prune: {p.rows:,} rows in {batches}, {p.seconds:.1f}s ({p.rows_per_s:.0f} rows/s), "
        f"{p.overlap_s:.1f}s of it beside the crawl, {state}"
    )


def print_summary(alone: list[CrawlTiming], beside: list[tuple[CrawlTiming, PruneTiming]]) -> None:
    if not alone or not beside:
        return
    a = sorted(t.seconds for t in alone)
    b = sorted(t.seconds for t, _ in beside)
    median_a, median_b = statistics.median(a), statistics.median(b)  # of an even count: the middle two's mean
    print(
        f"\ncrawl alone: {median_a:.1f}s (runs {', '.join(f'{s:.1f}' for s in a)}); beside the prune: "
        f"{median_b:.1f}s (runs {', '.join(f'{s:.1f}' for s in b)}); ratio {median_b / median_a:.3f} "
        f"(beside / alone; 1.0 = not slowed; the runs alone spread {(a[-1] - a[0]) / median_a * 100:.0f} %)"
    )
    overlap = [p.overlap_s / t.seconds for t, p in beside if t.seconds]
    print(f"the prune ran beside {min(overlap) * 100:.0f}-{max(overlap) * 100:.0f} % of the crawl")


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=10_000, help="pages of the crawl timed")
    parser.add_argument("--old-pages", type=int, default=100_000, help="pages of the synthetic old audit pruned")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (--concurrency)")
    parser.add_argument("--processes", type=int, default=2, help="site server processes")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (each: seed, crawl alone, crawl beside)")
    parser.add_argument("--stall-timeout", type=float, default=600)
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    bench_run.PRODUCT_ENV.update(RETENTION_ENV)  # this process and its children only
    bench_run.REDIS_URL = RETENTION_REDIS_URL
    workdir = Path(tempfile.mkdtemp(prefix="sitewarden-retention-"))
    print(f"logs in {workdir}")
    alone, beside = [], []
    try:
        alone, beside = run(args, workdir)
    except bench_run.BenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        print_summary(alone, beside)
        if args.json_out:
            data = {"alone": [asdict(t) for t in alone], "beside": [[asdict(t), asdict(p)] for t, p in beside]}
            args.json_out.write_text(json.dumps(data, indent=1))
    ok = all(t.status.startswith("completed") for t in alone + [t for t, _ in beside])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
