"""Small sites start fast (issue 15): a 770-page generated site audited end to end by `manage.py audit` (CLI start
to its exit, with its own database, Redis server and Celery worker), against advertools (Scrapy) crawling the same
site, and where the audit's wall time goes (start, discovery, crawl, finalize, the CLI seeing it), read from the
audit's events and page timestamps. Informational: printed, never asserted.

python -m bench.small [--pages 770] [--workers 2] [--repeat 1] [--skip-advertools] [--no-bytecode-cache]

Our modules run compiled, as installed code does (and as advertools' site-packages do): an environment with
PYTHONDONTWRITEBYTECODE set (this machine's) would otherwise make every process start compile ~120 of them
again (~0.15 s of the CLI's). They are compiled once into the bench's own directory (PYTHONPYCACHEPREFIX), so
the checkout is left alone; --no-bytecode-cache measures the compiling start.

advertools is in requirements/bench.txt (it brings Scrapy); without it the bench prints the pages/s advertools
must be beaten by (TARGET_SPEEDUP times).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis

from bench.cpu import CpuMeter, CpuUse
from bench.run import (
    PG_SERVER_URL,
    PYTHON,
    REPO,
    BenchError,
    _last_json_object,
    _tail,
    celery_worker,
    reset_database,
)
from bench.serve import serve_best
from bench.sitegen import generate_site

SMALL_DB_NAME = "sitewarden_bench_small"
# A Redis server of its own (a db number of the shared one met another run's worker, which took our messages).
REDIS_SERVER = "redis-server"
REDIS_START_TIMEOUT_S = 10
TARGET_SPEEDUP = 10.0  # ours vs advertools on the same small site, end to end
# The last figure measured before advertools could run here (issue 15): ours was 5.3x advertools.
PREVIOUS_SPEEDUP = 5.3
SMALL_SITE_PAGES = 770
# What the CLI and a worker import, compiled before the bench (bytecode_cache_env) by importing it once: a
# cache prefix holds every module's bytecode, the libraries' too.
WARM_IMPORTS = (
    "import django; django.setup(); import config.celery, audits.tasks, audits.management.commands.audit; "
    "from django.urls import get_resolver; get_resolver().url_patterns"
)
COMPILE_TIMEOUT_S = 300
AUDIT_TIMEOUT_S = 600
ADVERTOOLS_TIMEOUT_S = 900


def bench_env(db_name: str, redis_url: str, **extra: str) -> dict[str, str]:
    """The product's environment for a bench of its own: database `db_name`, broker and results on `redis_url`."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "DATABASE_URL": f"{PG_SERVER_URL}/{db_name}",
            "CELERY_BROKER_URL": redis_url,
            "CELERY_RESULT_BACKEND": redis_url,
            "ALLOW_PRIVATE_TARGETS": "true",
            "DJANGO_DEBUG": "false",
            # Room for the fairness bench's two audits at once (and the CLI's own project per site).
            "DEFAULT_PLAN_PAGES_PER_AUDIT": "200000",
            "DEFAULT_PLAN_MONTHLY_UNITS": "10000000",
        }
    )
    env.update(extra)
    return env


def bytecode_cache_env(env: dict[str, str], cache_dir: Path) -> dict[str, str]:
    """`env` with our modules compiled into `cache_dir` (and read from there), whatever the environment says
    about writing bytecode: the checkout gets no __pycache__ of the bench's."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    done = subprocess.run(
        [str(PYTHON), "-c", WARM_IMPORTS], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=COMPILE_TIMEOUT_S,
    )  # fmt: skip
    if done.returncode != 0:
        raise BenchError(f"compiling our modules failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return env


@contextlib.contextmanager
def private_redis() -> Iterator[str]:
    """A throw-away redis-server on a free port, no persistence; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + REDIS_START_TIMEOUT_S
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if redis.Redis.from_url(url).ping():
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise BenchError(f"{REDIS_SERVER} did not start on port {port}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


def audit_command(base_url: str, max_pages: int, project: str = "small") -> list[str]:
    """`manage.py audit` handing the audit to the workers; each site its own project (both are on 127.0.0.1)."""
    return [
        str(PYTHON), "manage.py", "audit", base_url + "/", "--max-pages", str(max_pages), "--json", "--no-inline",
        "--project", project, "--no-external-links",  # the generated site's example.org links are out of reach
    ]  # fmt: skip


def cli_start(command: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    with open(log_path, "wb") as stderr:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr
        )


def cli_finish(proc: subprocess.Popen, *, timeout_s: float, log_path: Path) -> dict:
    """Wait for a started `manage.py audit --json`; its JSON summary, or BenchError when it did not complete."""
    try:
        stdout, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate()
        raise BenchError(f"manage.py audit did not finish in {timeout_s:.0f}s:\n{_tail(log_path)}") from exc
    summary = _last_json_object(stdout.decode(errors="replace")) or {}
    if proc.returncode != 0 or summary.get("status") != "completed":
        raise BenchError(f"audit did not complete (exit {proc.returncode}): {summary}\n{_tail(log_path, 1500)}")
    return summary


@dataclass
class Timeline:
    """Where one audit's wall time went, in seconds from the CLI's start."""

    cli_s: float
    marks: dict[str, float] = field(default_factory=dict)

    def print(self, indent: str = "  ") -> None:
        previous = 0.0
        for name, at in sorted(self.marks.items(), key=lambda item: item[1]):
            print(f"{indent}{name:<34}{at:>8.2f} s  (+{at - previous:.2f})")
            previous = at
        print(f"{indent}{'CLI exits':<34}{self.cli_s:>8.2f} s  (+{self.cli_s - previous:.2f})")


def audit_timeline(db_name: str, audit_id: str, *, cli_started_epoch: float, cli_s: float) -> Timeline:
    """Marks from the audit's row, its events and its pages' fetch times, relative to the CLI's start."""
    timeline = Timeline(cli_s=cli_s)
    with psycopg.connect(f"{PG_SERVER_URL}/{db_name}") as conn:
        row = conn.execute(
            "SELECT extract(epoch from created_at), extract(epoch from completed_at) FROM audits_audit WHERE id = %s",
            (audit_id,),
        ).fetchone()
        events = conn.execute(
            "SELECT kind, message, extract(epoch from created_at) FROM audits_auditevent WHERE audit_id = %s "
            "ORDER BY created_at, id",
            (audit_id,),
        ).fetchall()
        first, last = conn.execute(
            "SELECT extract(epoch from min(fetched_at)), extract(epoch from max(fetched_at)) FROM audits_page "
            "WHERE audit_id = %s",
            (audit_id,),
        ).fetchone()
    marks = timeline.marks
    marks["audit row created"] = float(row[0]) - cli_started_epoch
    for kind, message, at in events:
        label = f"{kind}: {message}"[:34] if kind != "started" else "started event"
        marks.setdefault(label, float(at) - cli_started_epoch)
    if first is not None:
        marks["first page fetched"] = float(first) - cli_started_epoch
        marks["last page fetched"] = float(last) - cli_started_epoch
    if row[1] is not None:
        marks["audit completed_at"] = float(row[1]) - cli_started_epoch
    return timeline


@dataclass
class SmallRun:
    pages: int
    seconds: float
    timeline: Timeline
    cpu: CpuUse  # the machine's and the worker tree's CPU over the audit, CLI start to exit


@dataclass
class Reference:
    """advertools' crawl of the same site: pages, seconds from its child's start to its exit, and CPU."""

    pages: int
    seconds: float
    cpu: CpuUse


def small_audit(
    base_url: str,
    *,
    max_pages: int,
    env: dict[str, str],
    db_name: str,
    workdir: Path,
    worker_pid: int,
) -> SmallRun:
    """One audit through the CLI against the already running worker `worker_pid`; its pages, wall time,
    timeline and the CPU it cost (the machine's and the worker tree's)."""
    cli_log = workdir / "audit-cli.log"
    with CpuMeter(worker_pid) as meter:
        started_epoch, started = time.time(), time.perf_counter()
        proc = cli_start(audit_command(base_url, max_pages), env, cli_log)
        summary = cli_finish(proc, timeout_s=AUDIT_TIMEOUT_S, log_path=cli_log)
        seconds = time.perf_counter() - started
    timeline = audit_timeline(db_name, summary["id"], cli_started_epoch=started_epoch, cli_s=seconds)
    return SmallRun(pages=int(summary.get("pages_crawled") or 0), seconds=seconds, timeline=timeline, cpu=meter.use)


ADVERTOOLS_SCRIPT = """
import json, sys, time
from urllib.parse import urlsplit
import advertools as adv
started = time.perf_counter()
# allowed_domains by host: Scrapy's offsite filter drops every URL of a domain given with its port
adv.crawl(sys.argv[1], sys.argv[2], follow_links=True, allowed_domains=[urlsplit(sys.argv[1]).hostname],
          custom_settings={"LOG_LEVEL": "WARNING"})
seconds = time.perf_counter() - started
with open(sys.argv[2]) as handle:
    pages = sum(1 for line in handle if line.strip())
print(json.dumps({"pages": pages, "seconds": seconds}))
"""


def advertools_crawl(start_url: str, workdir: Path) -> Reference | None:
    """advertools.crawl(follow_links=True) on the site in a child process: pages, seconds from the child's
    start to its exit (interpreter and imports included, as ours includes the CLI's) and CPU, or None without
    it."""
    try:
        import advertools  # noqa: F401
    except ImportError:
        return None
    output = workdir / "advertools.jl"
    output.unlink(missing_ok=True)
    with CpuMeter() as cpu:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", ADVERTOOLS_SCRIPT, start_url, str(output)],
            cwd=workdir,
            # advertools runs the `scrapy` command: the one beside this interpreter
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"},
            capture_output=True,
            text=True,
            timeout=ADVERTOOLS_TIMEOUT_S,
        )
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise BenchError(f"advertools crawl failed ({done.returncode}):\n{done.stderr[-2000:]}")
    pages = json.loads(done.stdout.strip().splitlines()[-1])["pages"]
    if not pages:
        raise BenchError(f"advertools crawled no page of {start_url}:\n{done.stderr[-2000:]}")
    return Reference(pages=pages, seconds=seconds, cpu=cpu.use)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=SMALL_SITE_PAGES)
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (--concurrency)")
    parser.add_argument("--repeat", type=int, default=1, help="audits in a row on the same worker (best is shown)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-advertools", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the generated site and logs")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="let our processes compile our modules on every start"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt))

    workdir = Path(tempfile.mkdtemp(prefix="sitewarden-bench-small-"))
    try:
        manifest = generate_site(workdir / "site", args.pages, seed=args.seed, features=True)
        with serve_best(workdir / "site") as base_url, private_redis() as redis_url:
            env = bench_env(SMALL_DB_NAME, redis_url)
            if not args.no_bytecode_cache:
                env = bytecode_cache_env(env, workdir / "pycache")
            expected = len(manifest.expected_urls(base_url))
            reset_database(SMALL_DB_NAME, env)
            runs: list[SmallRun] = []
            with celery_worker(args.workers, workdir / "worker.log", env=env, name="small") as worker:
                for _ in range(max(1, args.repeat)):
                    runs.append(small_audit(base_url, max_pages=expected + 100, env=env, db_name=SMALL_DB_NAME,
                                            workdir=workdir, worker_pid=worker.pid))  # fmt: skip
            reference = None if args.skip_advertools else advertools_crawl(base_url + "/", workdir)
        report(runs, expected=expected, reference=reference)
        print(
            "  our modules compiled on each process start (--no-bytecode-cache)"
            if args.no_bytecode_cache
            else "  our modules ran compiled, as installed code does (--no-bytecode-cache: compiled on each start)"
        )
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            print(f"site and logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def report(runs: list[SmallRun], *, expected: int, reference: Reference | None) -> None:
    best = min(runs, key=lambda run: run.seconds)
    print(f"\n== small site end to end ({expected} URLs expected) ==")
    for index, run in enumerate(runs, start=1):
        print(f"  run {index}: {run.pages} pages in {run.seconds:.2f} s ({run.pages / run.seconds:.1f} pages/s)")
    print("  where the best run's time went (from the CLI's start):")
    best.timeline.print(indent="    ")
    ours = best.pages / best.seconds
    if reference is None:
        print(
            f"  advertools not run (skipped, or not installed: pip install -r requirements/bench.txt): to be "
            f"{TARGET_SPEEDUP:.0f}x "
            f"faster, advertools must crawl at most {ours / TARGET_SPEEDUP:.1f} pages/s here "
            f"(last measured: ours {PREVIOUS_SPEEDUP}x advertools)"
        )
        return
    pages, seconds = reference.pages, reference.seconds
    theirs = pages / seconds
    speedup = seconds / best.seconds
    verdict = "PASS" if speedup >= TARGET_SPEEDUP else "MISS"
    print(f"  advertools: {pages} pages in {seconds:.2f} s ({theirs:.1f} pages/s, interpreter start included)")
    print(f"  ours is {speedup:.1f}x faster than advertools end to end (target >= {TARGET_SPEEDUP:.0f}x) {verdict}")
    ours_cpu, theirs_cpu = best.cpu, reference.cpu
    print(
        f"  CPU seconds, all {ours_cpu.cores} cores: ours {ours_cpu.machine_s:.2f} (workers {ours_cpu.own_s:.2f}; "
        f"the rest: CLI, PostgreSQL, Redis, site server), cores {ours_cpu.busy_share(best.seconds):.0%} busy; "
        f"advertools {theirs_cpu.machine_s:.2f} (its process {theirs_cpu.own_s:.2f}), "
        f"{theirs_cpu.busy_share(seconds):.0%} busy"
    )
    floor = ours_cpu.machine_s / ours_cpu.cores
    print(
        f"  with every core busy, ours could take no less than {floor:.2f} s: at most "
        f"{seconds / floor:.1f}x advertools on this machine"
    )


if __name__ == "__main__":
    raise SystemExit(main())
