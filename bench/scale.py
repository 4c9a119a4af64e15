"""Audit the on-the-fly site (bench/dynsite.py) at scale: pages/s, worker peak RSS (the whole audit, then the
crawl and finalize phases apart), finalize time and database bytes per page, for each size, and the RSS ratios
between the largest and the smallest (issue 15's goal: within 20 %). Figures are printed, never asserted.

python -m bench.scale --pages 100000 [--small 10000] [--workers 2] [--processes 2]

Runs in its own database (`sitewarden_bench_scale`) and its own redis-server (port 6391, started and stopped here),
so it can run beside `make bench` and beside any test run: no other worker can take its chunk messages.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from audits.limits import PATTERN_CAP_OFF
from bench import run as bench_run
from bench.dynsite import expected_urls, serve_dynamic_site_processes
from bench.finalize import AUDIT_TABLES
from bench.private_services import PrivateRedis, ServiceError
from bench.rss import RssSampler

SCALE_DB_NAME = "sitewarden_bench_scale"
# A private redis-server, not a db of the machine's: every db of 6379 is booked (tests 1-13, bench.run 14,
# bench.retention 15), and a test worker on a shared db took this bench's chunk messages once (bench/README.md).
SCALE_REDIS_PORT = 6391
SCALE_REDIS_URL = f"redis://127.0.0.1:{SCALE_REDIS_PORT}/0"
SCALE_ENV = {
    "DATABASE_URL": f"{bench_run.PG_SERVER_URL}/{SCALE_DB_NAME}",
    "CELERY_BROKER_URL": SCALE_REDIS_URL,
    "CELERY_RESULT_BACKEND": SCALE_REDIS_URL,
}
# Every page is /p/{n}.html: one path shape, so the per-pattern cap is off (its top value), whatever the page count.
MAX_URLS_PER_PATTERN = PATTERN_CAP_OFF
MIB = 1024 * 1024

# The CLI's owner gets the project first, so `manage.py audit URL` (no --project) picks it with its options.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from accounts.services import account_get_or_create_for_user
from audits.management.commands.audit import CLI_USERNAME
from audits.projects import project_create
owner, _ = get_user_model().objects.get_or_create(username=CLI_USERNAME)
account = account_get_or_create_for_user(user=owner)
project_create(account=account, owner=owner, name="scale", base_url={base_url!r}, max_urls_per_pattern={cap})
"""


@dataclass
class ScaleResult:
    size: int
    expected_urls: int
    pages: int
    seconds: float
    pages_per_s: float
    discovery_s: float | None  # robots.txt, the sitemaps and the seeding (the whole sitemap since e89b128)
    peak_worker_rss_bytes: int
    peak_crawl_rss_bytes: int  # before the phase event that entered finalizing (the whole audit without one)
    peak_finalize_rss_bytes: int | None  # from that event on
    finalize_s: float | None
    finalize_stages_s: dict  # seconds by stage, from the completed event (audits.pipeline.finalize)
    db_bytes: int
    db_bytes_per_page: float
    status: str
    worker_errors: int


def _sql(query: str, *params) -> list[tuple]:
    with psycopg.connect(SCALE_ENV["DATABASE_URL"], autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []


def _events(audit_id: str) -> list[tuple[str, str, datetime]]:
    return _sql(
        "SELECT kind, message, created_at FROM audits_auditevent WHERE audit_id = %s ORDER BY created_at, id",
        audit_id,
    )


def _phase_at(rows: list[tuple[str, str, datetime]], phase: str) -> datetime | None:
    """When the phase event entering `phase` ("crawl", "finaliz") was written, None without one."""
    return next((at for kind, message, at in rows if kind == "phase" and phase in message.lower()), None)


def _finalize_window(audit_id: str) -> tuple[datetime | None, datetime | None]:
    """(the phase event that entered finalizing, the completion event): their times, None when missing."""
    rows = _events(audit_id)
    end = next((at for kind, _, at in rows if kind == "completed"), None)
    return _phase_at(rows, "finaliz"), end


def _discovery_seconds(audit_id: str) -> float | None:
    """From the started event to the phase event that entered crawling: robots.txt, the sitemaps and the seeding."""
    rows = _events(audit_id)
    start = next((at for kind, _, at in rows if kind == "started"), None)
    crawling = _phase_at(rows, "crawl")
    return (crawling - start).total_seconds() if start and crawling else None


def _finalize_seconds(audit_id: str) -> float | None:
    """From the phase event that entered finalizing to the completion event."""
    start, end = _finalize_window(audit_id)
    return (end - start).total_seconds() if start and end else None


def _finalize_stages(audit_id: str) -> dict:
    """The seconds by stage the completed event stores ({} without one)."""
    rows = _sql(
        "SELECT data->'finalize_stages_s' FROM audits_auditevent WHERE audit_id = %s AND kind = 'completed'", audit_id
    )
    return (rows[0][0] if rows else None) or {}


def _db_bytes() -> int:
    return sum(_sql("SELECT pg_total_relation_size(%s)", table)[0][0] for table in AUDIT_TABLES)


def scale_audit(size: int, *, args, workdir: Path) -> ScaleResult:
    bench_run.reset_database(SCALE_DB_NAME)
    bench_run.flush_redis()  # the private server's: main() pointed bench_run.REDIS_URL at it
    with serve_dynamic_site_processes(size, processes=args.processes) as base_url:
        subprocess.run(
            [str(bench_run.PYTHON), "manage.py", "shell", "-c",
             SETUP_SCRIPT.format(base_url=base_url + "/", cap=MAX_URLS_PER_PATTERN)],
            cwd=bench_run.REPO, env=bench_run.product_env(), check=True, capture_output=True,
        )  # fmt: skip
        worker_log = workdir / f"worker-{size}.log"
        cli_log = workdir / f"cli-{size}.log"
        command = [
            str(bench_run.PYTHON), "manage.py", "audit", base_url + "/", "--max-pages", str(size), "--json",
            "--no-external-links",  # the generated site's example.org links are out of reach (bench/run.py)
        ]  # fmt: skip
        timeout_s = max(bench_run.AUDIT_TIMEOUT_MIN_S, size * bench_run.AUDIT_TIMEOUT_PER_PAGE_S)
        print(f"auditing {size} pages at {base_url}/ (logs in {workdir})...", flush=True)
        with (
            bench_run.celery_worker(args.workers, worker_log) as worker,
            RssSampler(worker.pid, interval_s=bench_run.RSS_SAMPLE_INTERVAL_S, timeline=True) as rss,
        ):
            started = time.perf_counter()
            returncode, stdout = bench_run._run_cli(
                command, cli_log, worker_log, timeout_s=timeout_s, stall_s=args.stall_timeout
            )
            seconds = time.perf_counter() - started
    summary = bench_run._last_json_object(stdout) or {}
    pages = int(summary.get("pages_crawled") or 0)
    _sql("VACUUM ANALYZE")  # sizes as autovacuum leaves them, not with dead tuples from the crawl's updates
    db_bytes = _db_bytes()
    finalize_start, _ = _finalize_window(summary["id"]) if summary.get("id") else (None, None)
    split_at = finalize_start.timestamp() if finalize_start else None
    return ScaleResult(
        size=size,
        expected_urls=len(expected_urls(size)),
        pages=pages,
        seconds=seconds,
        pages_per_s=pages / seconds if seconds else 0.0,
        discovery_s=_discovery_seconds(summary["id"]) if summary.get("id") else None,
        peak_worker_rss_bytes=rss.peak,
        peak_crawl_rss_bytes=rss.peak_between(None, split_at) if split_at else rss.peak,
        peak_finalize_rss_bytes=rss.peak_between(split_at, None) if split_at else None,
        finalize_s=_finalize_seconds(summary["id"]) if summary.get("id") else None,
        finalize_stages_s=_finalize_stages(summary["id"]) if summary.get("id") else {},
        db_bytes=db_bytes,
        db_bytes_per_page=db_bytes / pages if pages else 0.0,
        status=f"{summary.get('status')} (exit {returncode})",
        worker_errors=bench_run._count_errors(worker_log),
    )


def print_results(results: list[ScaleResult]) -> None:
    print(
        f"\n{'pages':>8}{'expected':>10}{'seconds':>10}{'pages/s':>9}{'disc. s':>9}{'RSS MiB':>9}{'crawl':>8}"
        f"{'finalize':>10}{'finalize s':>12}{'DB MiB':>9}{'DB B/page':>11}  status"
    )
    for r in results:
        fin = f"{r.finalize_s:.1f}" if r.finalize_s is not None else "-"
        disc = f"{r.discovery_s:.1f}" if r.discovery_s is not None else "-"
        fin_rss = f"{r.peak_finalize_rss_bytes / MIB:.1f}" if r.peak_finalize_rss_bytes else "-"
        print(
            f"{r.pages:>8}{r.expected_urls:>10}{r.seconds:>10.1f}{r.pages_per_s:>9.1f}{disc:>9}"
            f"{r.peak_worker_rss_bytes / MIB:>9.1f}{r.peak_crawl_rss_bytes / MIB:>8.1f}{fin_rss:>10}"
            f"{fin:>12}{r.db_bytes / MIB:>9.1f}{r.db_bytes_per_page:>11.0f}"
            f"  {r.status}, {r.worker_errors} ERROR lines"
        )
    if len(results) >= 2:
        small, large = min(results, key=lambda r: r.size), max(results, key=lambda r: r.size)
        for label, field in [
            ("worker peak RSS", "peak_worker_rss_bytes"),
            ("  crawl phase", "peak_crawl_rss_bytes"),
            ("  finalize phase", "peak_finalize_rss_bytes"),
        ]:
            small_rss, large_rss = getattr(small, field), getattr(large, field)
            if small_rss and large_rss:
                print(
                    f"{label} {large.size}/{small.size}: {large_rss / MIB:.1f}/{small_rss / MIB:.1f} MiB, "
                    f"ratio {large_rss / small_rss:.2f} (goal <= 1.2)"
                )
        if small.finalize_s and large.finalize_s:
            per_small, per_large = small.finalize_s / small.pages, large.finalize_s / large.pages
            print(
                f"finalize ms/page: {per_small * 1000:.2f} at {small.size}, {per_large * 1000:.2f} at {large.size}, "
                f"ratio {per_large / per_small:.2f} (goal <= 1.2)"
            )
        print_stages(small, large)


def print_stages(small: ScaleResult, large: ScaleResult) -> None:
    """Each finalize stage's seconds and ms a page at both sizes: the stage that grows faster than the pages."""
    stages = sorted(set(large.finalize_stages_s) & set(small.finalize_stages_s), key=large.finalize_stages_s.get)[::-1]
    if not stages:
        return
    print(f"\n{'finalize stage':<18}{small.size:>10} s{'ms/page':>9}{large.size:>10} s{'ms/page':>9}{'ratio':>7}")
    for stage in stages:
        s_small, s_large = small.finalize_stages_s[stage], large.finalize_stages_s[stage]
        ms_small, ms_large = s_small * 1000 / small.pages, s_large * 1000 / large.pages
        ratio = f"{ms_large / ms_small:.2f}" if ms_small >= 0.001 else "-"
        print(f"{stage:<18}{s_small:>12.1f}{ms_small:>9.3f}{s_large:>12.1f}{ms_large:>9.3f}{ratio:>7}")


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=None, help="also audit this size first (RSS comparison)")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (--concurrency)")
    parser.add_argument("--processes", type=int, default=2, help="site server processes")
    parser.add_argument("--stall-timeout", type=float, default=600)
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    # This process and its children only: its own database and Redis (the worker's ping reads REDIS_URL).
    bench_run.PRODUCT_ENV.update(SCALE_ENV)
    bench_run.REDIS_URL = SCALE_REDIS_URL
    workdir = Path(tempfile.mkdtemp(prefix="sitewarden-scale-"))
    results: list[ScaleResult] = []
    redis_server = PrivateRedis(workdir / "redis", port=SCALE_REDIS_PORT)
    try:
        redis_server.start()
    except ServiceError as exc:
        print(f"FAILED: the bench's own redis-server: {exc}", file=sys.stderr)
        return 1
    try:
        for size in sorted({args.pages, args.small or args.pages}):
            results.append(scale_audit(size, args=args, workdir=workdir))
            print_results(results[-1:])
    except bench_run.BenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        redis_server.close()
        print_results(results)
        if args.json_out:
            args.json_out.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0 if all(r.status.startswith("completed") for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
