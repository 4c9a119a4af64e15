"""Fair sharing (issue 15): a big audit is crawling, then a small one starts on another site. The small audit's
end-to-end time (CLI start to exit) beside the big one, over its time alone on the same worker: at most 2x.
Informational: printed, never asserted.

python -m bench.fairness [--big 100000] [--small 500] [--workers 2] [--big-head-start 300]

The big site is bench/dynsite.py's on-the-fly site (nothing written to disk); the small one a generated static
site. Its own database (sitewarden_bench_fair), Redis server and Celery worker, as bench/small.py.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from bench.dynsite import serve_dynamic_site_processes
from bench.run import PG_SERVER_URL, BenchError, _tail, celery_worker, reset_database
from bench.serve import serve_best
from bench.sitegen import generate_site
from bench.small import (
    audit_command,
    bench_env,
    cli_start,
    private_redis,
    small_audit,
)

FAIR_DB_NAME = "sitewarden_bench_fair"
TARGET_SLOWDOWN = 2.0  # the small audit beside a big one, over alone, at most
BIG_START_TIMEOUT_S = 300
POLL_S = 0.5


def _big_audit_state(base_url: str) -> tuple[str, str, int] | None:
    """(id, phase, pages crawled) of the running audit of `base_url`, or None before it exists."""
    with psycopg.connect(f"{PG_SERVER_URL}/{FAIR_DB_NAME}") as conn:
        row = conn.execute(
            "SELECT id::text, current_phase, pages_crawled FROM audits_audit WHERE start_url LIKE %s "
            "ORDER BY created_at DESC LIMIT 1",
            (base_url + "%",),
        ).fetchone()
    return tuple(row) if row else None


def _wait_crawling(base_url: str, *, pages: int, proc: subprocess.Popen, log_path: Path) -> tuple[str, int]:
    deadline = time.monotonic() + BIG_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"the big audit's CLI exited ({proc.returncode}):\n{_tail(log_path)}")
        state = _big_audit_state(base_url)
        if state and state[1] == "crawling" and state[2] >= pages:
            return state[0], state[2]
        time.sleep(POLL_S)
    raise BenchError(f"the big audit did not crawl {pages} pages in {BIG_START_TIMEOUT_S}s:\n{_tail(log_path)}")


def _audit_pages(audit_id: str) -> int:
    with psycopg.connect(f"{PG_SERVER_URL}/{FAIR_DB_NAME}") as conn:
        return conn.execute("SELECT pages_crawled FROM audits_audit WHERE id = %s", (audit_id,)).fetchone()[0]


def _small_share(big_id: str, small_url: str) -> tuple[int, int, float]:
    """While the shared small audit fetched (its first to its last page): its pages, the big audit's pages, and
    the seconds from its start to its first page (the wait for a worker). Less sensitive to the machine's load
    than wall times: it is how the worker's turns were shared."""
    with psycopg.connect(f"{PG_SERVER_URL}/{FAIR_DB_NAME}") as conn:
        small_id, started, first, last, small_pages = conn.execute(
            "SELECT a.id, a.started_at, min(p.fetched_at), max(p.fetched_at), count(p.id) FROM audits_audit a "
            "JOIN audits_page p ON p.audit_id = a.id WHERE a.start_url LIKE %s GROUP BY a.id "
            "ORDER BY a.created_at DESC LIMIT 1",
            (small_url + "%",),
        ).fetchone()
        big_pages = conn.execute(
            "SELECT count(*) FROM audits_page WHERE audit_id = %s AND fetched_at BETWEEN %s AND %s",
            (big_id, first, last),
        ).fetchone()[0]
    return small_pages, big_pages, (first - started).total_seconds()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big", type=int, default=100_000, help="pages of the big (on-the-fly) site")
    parser.add_argument("--small", type=int, default=500, help="pages of the small (static) site")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (--concurrency)")
    parser.add_argument("--big-head-start", type=int, default=300, help="pages the big audit crawls first")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt))

    workdir = Path(tempfile.mkdtemp(prefix="sitewarden-bench-fair-"))
    big_proc = None
    try:
        manifest = generate_site(workdir / "small-site", args.small, seed=args.seed, features=True)
        with (
            serve_best(workdir / "small-site") as small_url,
            serve_dynamic_site_processes(args.big, processes=2) as big_url,
            private_redis() as redis_url,
        ):
            env = bench_env(FAIR_DB_NAME, redis_url)
            expected = len(manifest.expected_urls(small_url))
            reset_database(FAIR_DB_NAME, env)
            with celery_worker(args.workers, workdir / "worker.log", env=env, name="fair") as worker:
                audit_small = {"max_pages": expected + 100, "env": env, "db_name": FAIR_DB_NAME, "workdir": workdir,
                               "worker_pid": worker.pid}  # fmt: skip
                alone = small_audit(small_url, **audit_small)
                print(f"small audit alone: {alone.pages} pages in {alone.seconds:.2f} s", flush=True)
                big_log = workdir / "big-cli.log"
                big_proc = cli_start(audit_command(big_url, args.big, project="big"), env, big_log)
                big_id, big_before = _wait_crawling(big_url, pages=args.big_head_start, proc=big_proc, log_path=big_log)
                print(f"big audit ({args.big} pages) crawling, {big_before} pages done; starting the small one",
                      flush=True)  # fmt: skip
                shared = small_audit(small_url, **audit_small)
                big_during = _audit_pages(big_id) - big_before
                share = _small_share(big_id, small_url)
        report(alone, shared, expected=expected, big_pages=args.big, big_during=big_during, share=share)
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        if big_proc is not None and big_proc.poll() is None:
            big_proc.kill()  # the worker stopped above: the big audit goes no further
            big_proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def report(alone, shared, *, expected: int, big_pages: int, big_during: int, share: tuple[int, int, float]) -> None:
    ratio = shared.seconds / alone.seconds
    verdict = "PASS" if ratio <= TARGET_SLOWDOWN else "MISS"
    print(f"\n== fair sharing: a {expected}-URL audit beside a {big_pages}-page one ==")
    print(f"  small audit alone        {alone.pages:>6} pages {alone.seconds:>8.2f} s")
    print(f"  small beside the big one {shared.pages:>6} pages {shared.seconds:>8.2f} s "
          f"(the big one crawled {big_during} pages meanwhile)")  # fmt: skip
    small_pages, big_beside, wait_s = share
    print(f"  while the small audit crawled: {small_pages} of its pages, {big_beside} of the big one's "
          f"({small_pages / max(1, small_pages + big_beside):.0%} of the pages were the small audit's); "
          f"its first page came {wait_s:.2f} s after its start")  # fmt: skip
    print("  where the shared run's time went (from the CLI's start):")
    shared.timeline.print(indent="    ")
    print(f"  slowdown beside the big audit: {ratio:.2f}x (target <= {TARGET_SLOWDOWN:.0f}x) {verdict}")
    # The CLI's own start (Django, imports) shares the CPUs with the big crawl; inside the product the time
    # runs from the audit row to its completion.
    inside = _in_product_s(shared) / _in_product_s(alone)
    print(f"  the same from the audit row to its completion (without the CLI's start and exit): {inside:.2f}x")


def _in_product_s(run) -> float:
    marks = run.timeline.marks
    return marks["audit completed_at"] - marks["audit row created"]


if __name__ == "__main__":
    raise SystemExit(main())
