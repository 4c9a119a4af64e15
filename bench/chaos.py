"""`make chaos`: inject each fault of issue 13 into a running audit of a generated site, on a real worker fleet
(2 workers of 2 processes, plus beat) over PostgreSQL and each broker (Redis, RabbitMQ), and print per fault:
final status, pages/issues/edges against the undisturbed run, duplicates, time to recover, human needed.

Everything it disturbs is its own: a private PostgreSQL cluster (initdb in a temp dir, port 5544), a private
redis-server (port 6390) and a private RabbitMQ node (port 5682, distribution port 25682). The machine's
PostgreSQL, Redis and RabbitMQ, which tests may be using, are never stopped, restarted or made read-only.

python -m bench.chaos [--pages 1000] [--brokers redis,rabbitmq] [--faults kill,...] [--keep]
"""

# Why one module of over 600 lines: it is one script, read in the order it runs (private services, the product's
# fleet, reading the outcome, one run, the faults, the table), and each fault is a few lines that use the services
# and the fleet of the same run. Nothing imports it; `make chaos` is its only caller.

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.private_services import (
    PrivatePostgres,
    PrivateRabbitMQ,
    PrivateRedis,
    ServiceError,
    process_groups_stop,
)
from bench.serve import serve_best
from bench.sitegen import generate_site

REPO = Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
CELERY = REPO / ".venv" / "bin" / "celery"

PG_PORT = 5544
REDIS_PORT = 6390
RABBIT_PORT = 5682
RABBIT_DIST_PORT = 25682
RABBIT_NODE = "sitewarden-chaos@localhost"
DB_NAME = "sitewarden_chaos"

WORKERS = 2
WORKER_CONCURRENCY = 2
TRIGGER_FRACTION = 0.2  # inject the fault once this share of the expected pages is crawled
RECOVERY_LIMIT_S = 300  # not finished this long after the fault ended: a human is needed
GOAL_RECOVERY_S = 120  # the issue's goal: finished within 2 minutes of the fault ending
WORKER_RESTART_AFTER_S = 10
BROKER_DOWN_S = 2
PG_DOWN_S = 40  # within the issue's 25-60 s
READ_ONLY_S = 20
ZOMBIE_SETTLE_S = 20  # after SIGCONT: time for the resumed chunk to (try to) write
CANCEL_SETTLE_S = 15
SERVICE_START_TIMEOUT_S = 90  # a worker's ready line
PROCESS_STOP_TIMEOUT_S = 20  # a worker or beat asked to stop, before SIGKILL
AUDIT_START_TIMEOUT_S = 120
POLL_S = 0.25
BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"


ChaosError = ServiceError


# ---------------------------------------------------------------- the product


def product_env(broker: str, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_", "PYTEST"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{PG_PORT}/{DB_NAME}",
        ALLOW_PRIVATE_TARGETS="true",
        DJANGO_DEBUG="false",
        LOG_LEVEL="WARNING",
        SITEWARDEN_OUTBOX_DIR=str(root / "outbox"),
        SITEWARDEN_BROKER_DIR=str(root / "embedded-broker"),
        PYTHONPATH=str(REPO),
    )
    if broker == "redis":
        env.update(
            CELERY_BROKER_URL=f"redis://127.0.0.1:{REDIS_PORT}/0",
            CELERY_RESULT_BACKEND=f"redis://127.0.0.1:{REDIS_PORT}/1",
        )
    else:  # RabbitMQ for messages, PostgreSQL for chord results: no Redis in the path at all
        env.update(CELERY_BROKER_URL=f"amqp://guest:guest@127.0.0.1:{RABBIT_PORT}//", CELERY_RESULT_BACKEND="django-db")
    return env


def manage(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(PYTHON), "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


class Fleet:
    """Two `celery worker` processes (as the Procfile's worker line) and one beat, each in its own group."""

    def __init__(self, env: dict, logdir: Path, tag: str):
        self.env, self.logdir, self.tag = env, logdir, tag
        self.workers: list[subprocess.Popen | None] = [None] * WORKERS
        self.beat: subprocess.Popen | None = None

    def _worker_log(self, i: int) -> Path:
        return self.logdir / f"{self.tag}-worker{i}.log"

    def start_worker(self, i: int) -> None:
        log_path = self._worker_log(i)
        offset = log_path.stat().st_size if log_path.exists() else 0
        cmd = [
            str(CELERY), "-A", "config", "worker", "--concurrency", str(WORKER_CONCURRENCY), "--loglevel", "INFO",
            "--without-gossip", "--without-mingle", "-n", f"chaos{i}-{self.tag}@%h",
        ]  # fmt: skip
        log = open(log_path, "ab")  # noqa: SIM115 - the child holds it
        env = {**self.env, "REMAP_SIGTERM": "SIGQUIT"}
        self.workers[i] = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + SERVICE_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.workers[i].poll() is not None:
                raise ChaosError(f"worker {i} exited: see {log_path}")
            with open(log_path, "rb") as f:
                f.seek(offset)
                if b" ready." in f.read():
                    return
            time.sleep(0.3)
        raise ChaosError(f"worker {i} not ready: see {log_path}")

    def start(self) -> None:
        for i in range(WORKERS):
            self.start_worker(i)
        log = open(self.logdir / f"{self.tag}-beat.log", "ab")  # noqa: SIM115
        self.beat = subprocess.Popen(
            [str(CELERY), "-A", "config", "beat", "--loglevel", "WARNING", "-S", BEAT_SCHEDULER],
            cwd=REPO, env=self.env, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip

    def signal(self, i: int, sig: int) -> None:
        proc = self.workers[i]
        if proc and proc.poll() is None:
            os.killpg(proc.pid, sig)

    def kill(self, i: int) -> None:
        self.signal(i, signal.SIGKILL)
        self.workers[i].wait(timeout=30)

    def stop(self) -> None:
        process_groups_stop([p for p in [*self.workers, self.beat] if p is not None], PROCESS_STOP_TIMEOUT_S)


# ---------------------------------------------------------------- reading the outcome (Django in this process)


def _django_setup(root: Path) -> None:
    os.environ.update(product_env("redis", root))
    os.environ["CELERY_BROKER_URL"] = "memory://"  # this process only reads rows and sends nothing
    import django  # why: settings come from the private cluster's environment, set just above

    django.setup()


def db(read: Callable, timeout_s: float = RECOVERY_LIMIT_S + 120):
    """`read()` through the faults this run makes: reconnect and retry while the database is away."""
    from django.db import DatabaseError, close_old_connections, connection  # why: after django.setup()

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return read()
        except DatabaseError:
            if time.monotonic() > deadline:
                raise
            with contextlib.suppress(Exception):
                connection.close()
            close_old_connections()
            time.sleep(0.5)


@dataclass
class Snapshot:
    status: str
    pages: int
    pages_crawled: int
    issues: int
    edges: int
    frontier: int
    page_keys: set = field(repr=False)
    issue_keys: Counter = field(repr=False)
    digest: str = ""


def snapshot(audit_id) -> Snapshot:
    from audits.models import Audit, Issue, Page  # why: after django.setup()
    from scratchpad.models import Frontier, LinkEdge

    def read() -> Snapshot:
        audit = Audit.objects.get(id=audit_id)
        pages = list(Page.objects.filter(audit_id=audit_id).order_by("url").values_list())
        issues = list(Issue.objects.filter(audit_id=audit_id).order_by("id").values_list())
        page_keys = set(Page.objects.filter(audit_id=audit_id).values_list("url", "status_code"))
        issue_keys = Counter(Issue.objects.filter(audit_id=audit_id).values_list("type", "page_url"))
        digest = hashlib.sha256(repr((pages, issues)).encode()).hexdigest()[:12]
        return Snapshot(
            status=audit.status,
            pages=len(pages),
            pages_crawled=audit.pages_crawled,
            issues=len(issues),
            edges=LinkEdge.objects.filter(audit_id=audit_id).count(),
            frontier=Frontier.objects.filter(audit_id=audit_id).count(),
            page_keys=page_keys,
            issue_keys=issue_keys,
            digest=digest,
        )

    return db(read)


def latest_audit(project: str, after: float):
    from audits.models import Audit  # why: after django.setup()

    def read():
        audit = Audit.objects.filter(project__name=project).order_by("-created_at").first()
        return audit if audit is not None and audit.created_at.timestamp() >= after - 1 else None

    return db(read)


def audit_state(audit_id) -> tuple[str, int]:
    from audits.models import Audit  # why: after django.setup()

    return db(lambda: tuple(Audit.objects.filter(id=audit_id).values_list("status", "pages_crawled").get()))


# ---------------------------------------------------------------- one run


@dataclass
class Row:
    broker: str
    fault: str
    status: str = "-"
    pages: str = "-"
    issues: str = "-"
    edges: str = "-"
    duplicates: str = "-"
    recover_s: str = "-"
    total_s: str = "-"
    cli: str = "-"
    human: str = "-"
    note: str = ""


@dataclass
class Ctx:
    broker: str
    root: Path
    site: str
    max_pages: int
    trigger_pages: int
    pg: PrivatePostgres
    redis: PrivateRedis
    rabbit: PrivateRabbitMQ | None
    fleet: Fleet | None = None
    baseline: Snapshot | None = None
    baseline_s: float = 0.0


def _start_cli(ctx: Ctx, project: str) -> tuple[subprocess.Popen, Path]:
    out = ctx.root / "logs" / f"{project}.json"
    err = ctx.root / "logs" / f"{project}.stderr"
    cmd = [
        str(PYTHON), "manage.py", "audit", ctx.site + "/", "--max-pages", str(ctx.max_pages),
        "--no-inline", "--json", "--project", project, "--no-external-links",  # example.org is out of reach
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=product_env(ctx.broker, ctx.root),
        stdout=open(out, "w"),
        stderr=open(err, "w"),  # noqa: SIM115
    )
    return proc, out


def _wait(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(POLL_S)
    return False


def _compare(snap: Snapshot, base: Snapshot | None) -> tuple[str, str, str]:
    if base is None:
        return str(snap.pages), str(snap.issues), str(snap.edges)

    def diff(n: int, extra: int, missing: int) -> str:
        return f"{n} (=)" if not extra and not missing else f"{n} (+{extra} -{missing})"

    pages = diff(snap.pages, len(snap.page_keys - base.page_keys), len(base.page_keys - snap.page_keys))
    extra_issues = sum((snap.issue_keys - base.issue_keys).values())
    missing_issues = sum((base.issue_keys - snap.issue_keys).values())
    edges = f"{snap.edges} (=)" if snap.edges == base.edges else f"{snap.edges} ({snap.edges - base.edges:+d})"
    return pages, diff(snap.issues, extra_issues, missing_issues), edges


def run_one(ctx: Ctx, fault: Fault) -> Row:
    row = Row(ctx.broker, fault.name)
    tag = f"{ctx.broker}-{fault.name}"
    ctx.fleet = Fleet(product_env(ctx.broker, ctx.root), ctx.root / "logs", tag)
    ctx.fleet.start()
    clis: list[tuple[subprocess.Popen, Path]] = []
    try:
        t0 = time.time()
        projects = [f"{tag}-{n}" for n in range(fault.audits)]
        clis = [_start_cli(ctx, p) for p in projects]
        audits = []
        for p in projects:
            found = _wait(lambda p=p: latest_audit(p, t0) is not None, AUDIT_START_TIMEOUT_S)
            if not found:
                raise ChaosError(f"the CLI did not start an audit for {p}")
            audits.append(latest_audit(p, t0).id)
        if fault.inject is not None:
            _wait(lambda: audit_state(audits[0])[1] >= ctx.trigger_pages or audit_state(audits[0])[0] != "running", 300)
            if audit_state(audits[0])[0] != "running":
                row.note = "finished before the fault"
            fault_end = fault.inject(ctx, audits[0])
        else:
            fault_end = time.time()
        finished = _wait(
            lambda: all(audit_state(a)[0] != "running" for a in audits),
            max(0, fault_end + RECOVERY_LIMIT_S - time.time()),
        )
        t_done = time.time()
        if fault.after is not None:
            row.note = (row.note + " " + fault.after(ctx, audits[0])).strip()
        snaps = [snapshot(a) for a in audits]
        codes = []
        for proc, _out in clis:
            try:
                codes.append(proc.wait(timeout=120 if finished else 5))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes.append("hung")
        if fault.name == "undisturbed":
            ctx.baseline, ctx.baseline_s = snaps[0], t_done - t0
        expected_status = fault.expected_status
        row.status = "/".join(s.status for s in snaps)
        compared = [_compare(s, ctx.baseline if expected_status == "completed" else None) for s in snaps]
        row.pages, row.issues, row.edges = (" | ".join(c[i] for c in compared) for i in range(3))
        drift = [s.pages_crawled - s.pages for s in snaps]
        leftovers = [s.frontier for s in snaps]
        row.duplicates = ("0" if not any(drift) else f"counter-rows {drift}") + (
            "" if not any(leftovers) else f", frontier left {leftovers}"
        )
        row.recover_s = f"{max(0.0, t_done - fault_end):.1f}" if finished and fault.inject else "-"
        row.total_s = f"{t_done - t0:.1f}"
        row.cli = ",".join(str(c) for c in codes)
        identical = all(
            s.status == expected_status
            and (expected_status != "completed" or ctx.baseline is None or _compare(s, ctx.baseline)[0].endswith("(=)"))
            for s in snaps
        )
        if ctx.baseline is not None and expected_status == "completed":
            odd = Counter()
            for snap in snaps:
                odd.update(f"+{t}" for t, _ in (snap.issue_keys - ctx.baseline.issue_keys).elements())
                odd.update(f"-{t}" for t, _ in (ctx.baseline.issue_keys - snap.issue_keys).elements())
            if odd:
                row.note = (row.note + " issues differ: " + ", ".join(f"{k} x{n}" for k, n in odd.items())).strip()
        row.human = "no" if finished and identical and not any(drift) and not any(leftovers) else "YES"
        if not finished:
            row.note = (row.note + f" still running {RECOVERY_LIMIT_S}s after the fault").strip()
            for a in audits:  # clean up for the next fault: what a person would have had to do
                manage(product_env(ctx.broker, ctx.root), "shell", "-c", _CANCEL_CODE.format(audit_id=a))
    finally:
        for proc, _ in clis:
            if proc.poll() is None:
                proc.kill()
        ctx.fleet.stop()
    return row


_CANCEL_CODE = (
    "from audits.models import Audit; from audits.pipeline.lifecycle import audit_cancel; "
    "audit_cancel(audit=Audit.objects.get(id='{audit_id}'))"
)


# ---------------------------------------------------------------- the faults


@dataclass
class Fault:
    name: str
    inject: Callable[[Ctx, object], float] | None  # returns when the fault ended (epoch seconds)
    brokers: tuple[str, ...] = ("redis", "rabbitmq")
    audits: int = 1
    expected_status: str = "completed"
    after: Callable[[Ctx, object], str] | None = None


def kill_worker(ctx: Ctx, audit_id) -> float:
    ctx.fleet.kill(0)
    time.sleep(WORKER_RESTART_AFTER_S)
    ctx.fleet.start_worker(0)
    return time.time()


def broker_restart(ctx: Ctx, audit_id) -> float:
    if ctx.broker == "redis":
        ctx.redis.restart_without_persistence(BROKER_DOWN_S)
    else:
        ctx.rabbit.restart(BROKER_DOWN_S)
    return time.time()


def pg_restart(ctx: Ctx, audit_id) -> float:
    ctx.pg.restart()
    return time.time()


def pg_down(ctx: Ctx, audit_id) -> float:
    ctx.pg.stop()
    time.sleep(PG_DOWN_S)
    ctx.pg.start()
    return time.time()


def pg_read_only(ctx: Ctx, audit_id) -> float:
    ctx.pg.sql(f"ALTER DATABASE {DB_NAME} SET default_transaction_read_only = on")
    ctx.pg.cut_connections(DB_NAME)
    time.sleep(READ_ONLY_S)
    ctx.pg.sql(f"ALTER DATABASE {DB_NAME} RESET default_transaction_read_only")
    ctx.pg.cut_connections(DB_NAME)  # sessions opened read-only stay so
    return time.time()


def sigstop_worker(ctx: Ctx, audit_id) -> float:
    """Freeze worker 0 (every process of it) mid-chunk; it is thawed after the audit finished (see `thaw`)."""
    ctx.fleet.signal(0, signal.SIGSTOP)
    return time.time()


def thaw_and_compare(ctx: Ctx, audit_id) -> str:
    before = snapshot(audit_id)
    ctx.fleet.signal(0, signal.SIGCONT)
    time.sleep(ZOMBIE_SETTLE_S)
    after = snapshot(audit_id)
    changed = before.digest != after.digest or (before.frontier, before.edges) != (after.frontier, after.edges)
    return "zombie wrote rows!" if changed else f"zombie resumed {ZOMBIE_SETTLE_S}s: no row changed"


def cancel(ctx: Ctx, audit_id) -> float:
    done = manage(ctx.fleet.env, "shell", "-c", _CANCEL_CODE.format(audit_id=audit_id))
    if done.returncode:
        raise ChaosError(done.stderr[-500:])
    time.sleep(CANCEL_SETTLE_S)  # a batch in flight must not write after the cancel
    return time.time()


FAULTS = [
    Fault("undisturbed", None),
    Fault("kill-worker", kill_worker),
    Fault("kill-worker-2-audits", kill_worker, audits=2),
    Fault("broker-restart", broker_restart),
    Fault("pg-restart", pg_restart),
    Fault(f"pg-down-{PG_DOWN_S}s", pg_down),
    Fault(f"read-only-{READ_ONLY_S}s", pg_read_only),
    Fault("sigstop-past-lease", sigstop_worker, after=thaw_and_compare),
    Fault("cancel", cancel, expected_status="cancelled"),
]


# ---------------------------------------------------------------- main


def print_table(rows: list[Row]) -> None:
    headers = ["broker", "fault", "status", "pages", "issues", "edges", "dup", "recover s", "total s", "cli", "human"]
    keys = [
        "broker",
        "fault",
        "status",
        "pages",
        "issues",
        "edges",
        "duplicates",
        "recover_s",
        "total_s",
        "cli",
        "human",
    ]
    table = [headers] + [[str(getattr(r, k)) for k in keys] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(headers))]
    for n, line in enumerate(table):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    notes = [f"- {r.broker} {r.fault}: {r.note}" for r in rows if r.note]
    if notes:
        print("\n".join(["", "notes:", *notes]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--brokers", default="redis,rabbitmq")
    parser.add_argument("--faults", default=",".join(f.name for f in FAULTS), help="names, comma-separated")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, cluster) afterwards")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sitewarden-chaos-"))
    root.chmod(0o755)  # the postgres and rabbitmq users work below it
    (root / "logs").mkdir()
    print(f"chaos: private PostgreSQL :{PG_PORT}, Redis :{REDIS_PORT}, RabbitMQ :{RABBIT_PORT}; work dir {root}")
    pg, redis_, rabbit = PrivatePostgres(root / "pg", port=PG_PORT), PrivateRedis(root / "redis", port=REDIS_PORT), None
    rows: list[Row] = []
    wanted = set(args.faults.split(","))
    try:
        pg.init()
        pg.start()
        pg.sql(f"CREATE DATABASE {DB_NAME}")
        redis_.start()
        brokers = [b for b in args.brokers.split(",") if b]
        if "rabbitmq" in brokers:
            try:
                rabbit = PrivateRabbitMQ(
                    root / "rabbitmq", port=RABBIT_PORT, dist_port=RABBIT_DIST_PORT, node=RABBIT_NODE
                )
                rabbit.start()
            except (ChaosError, subprocess.CalledProcessError) as exc:
                print(f"chaos: no private RabbitMQ node ({exc}); RabbitMQ runs skipped")
                brokers.remove("rabbitmq")
        env = product_env("redis", root)
        for step in (("migrate", "--noinput"), ("install_watchdog",)):
            done = manage(env, *step)
            if done.returncode:
                raise ChaosError(f"{' '.join(step)} failed: {done.stderr[-2000:]}")
        _django_setup(root)
        manifest = generate_site(root / "site", pages=args.pages, seed=13, page_kb=8)
        with serve_best(root / "site") as site:
            expected = len(manifest.expected_urls(site))
            print(f"chaos: site of {expected} URLs at {site}; brokers {', '.join(brokers)}\n")
            for broker in brokers:
                ctx = Ctx(
                    broker=broker, root=root, site=site, max_pages=expected + 100,
                    trigger_pages=int(expected * TRIGGER_FRACTION), pg=pg, redis=redis_, rabbit=rabbit,
                )  # fmt: skip
                for fault in FAULTS:
                    if fault.name != "undisturbed" and (fault.name not in wanted or broker not in fault.brokers):
                        continue
                    try:
                        row = run_one(ctx, fault)
                    except Exception as exc:  # one broken fault must not hide the others' figures
                        row = Row(broker, fault.name, status="error", human="?", note=f"{type(exc).__name__}: {exc}")
                    rows.append(row)
                    print(json.dumps({"chaos": asdict(row)}), flush=True)
        print()
        print_table(rows)
        print(f"\ngoal: every fault completed (cancel: cancelled), identical to undisturbed, within {GOAL_RECOVERY_S}s")
    finally:
        for service in (rabbit, redis_, pg):
            if service is not None:
                service.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if rows and all(r.human == "no" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
