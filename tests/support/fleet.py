"""A multi-host deployment on one machine, for the fleet test: worker hosts are network namespaces
(tests.support.netns), each running `celery worker` as docs/DEPLOY.md says a worker host does; the database, the
broker, beat, the CLI and the site live in the root namespace, on the bridge's address. PostgreSQL and RabbitMQ are
private instances (bench.private_services): the machine's own listen on loopback only, which the hosts cannot reach,
and a test must not disturb them.

What a test reads (an audit's status, its page, issue and edge rows) it reads with plain SQL over psycopg: this
deployment's database is not the test session's Django database."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from bench.private_services import PrivatePostgres, PrivateRabbitMQ, process_groups_stop
from bench.serve import serve_site
from bench.sitegen import generate_site
from tests.support.netns import Host, HostNetwork, host_network, unavailable_reason
from tests.support.waits import wait_until
from tests.support.web import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).parent / "celery"
DB_NAME = "sitewarden_fleet"
WORKER_CONCURRENCY = 2  # processes per worker host (the Procfile's worker line)
WORKER_READY_TIMEOUT_S = 90
PROCESS_STOP_TIMEOUT_S = 20
CLI_START_TIMEOUT_S = 120
MANAGE_TIMEOUT_S = 600
POLL_S = 0.5
# Far above the site's pages, as a person sets it. A round has at most one chunk per CHUNK_TARGET_PAGES of the page
# budget: a budget of a few hundred pages would make rounds of two chunks, too few to spread over three hosts.
AUDIT_MAX_PAGES = 10_000


@dataclass
class Crawl:
    """What an audit left: its rows, comparable between two deployments."""

    status: str
    pages_crawled: int
    pages: set[tuple[str, int | None, int | None]]  # url, status, depth
    page_rows: int
    issues: Counter  # (type, page_url) -> rows
    edges: int
    frontier_left: int
    digest: str = field(repr=False, default="")


@dataclass
class Deployment:
    root: Path
    network: HostNetwork
    pg: PrivatePostgres
    rabbit: PrivateRabbitMQ
    site: str
    expected_urls: int
    served_to: Counter
    settings: dict[str, str]
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)
    beat: subprocess.Popen | None = None

    # ------------------------------------------------------------ the processes of each host

    def env(self, host: Host | None = None) -> dict[str, str]:
        """A host's environment: what docs/DEPLOY.md lists, pointing at the bridge's address."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_", "PYTEST", "TEST_"))}
        where = host.netns if host else "root"
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings.local",
            DATABASE_URL=self.pg.url(DB_NAME, host=self.network.address),
            CELERY_BROKER_URL=self.rabbit.url(),
            CELERY_RESULT_BACKEND="django-db",
            ALLOW_PRIVATE_TARGETS="true",
            DJANGO_DEBUG="false",
            LOG_LEVEL="INFO",
            SITEWARDEN_OUTBOX_DIR=str(self.root / "outbox" / where),  # each host's own disk
            PYTHONPATH=str(REPO_ROOT),
            **self.settings,
        )
        return env

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=MANAGE_TIMEOUT_S,
        )

    def log(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    def start_worker(self, host: Host) -> None:
        log_path = self.log(f"worker-{host.netns}")
        offset = log_path.stat().st_size if log_path.exists() else 0
        cmd = host.command(
            [
                str(CELERY), "-A", "config", "worker", "--concurrency", str(WORKER_CONCURRENCY),
                "--loglevel", "INFO", "--without-gossip", "--without-mingle", "-n", f"{host.netns}@%h",
            ]
        )  # fmt: skip
        log = open(log_path, "ab")  # noqa: SIM115 - the child holds it
        self.workers[host.netns] = proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=self.env(host), stdout=log, stderr=log, start_new_session=True
        )

        def ready() -> bool:
            assert proc.poll() is None, f"the worker of {host.netns} exited: {log_path.read_text()[-3000:]}"
            with open(log_path, "rb") as f:
                f.seek(offset)
                return b" ready." in f.read()

        wait_until(ready, WORKER_READY_TIMEOUT_S, f"the worker of {host.netns} ready", every_s=POLL_S)

    def start_beat(self) -> None:
        log = open(self.log("beat"), "ab")  # noqa: SIM115 - the child holds it
        self.beat = subprocess.Popen(
            [str(CELERY), "-A", "config", "beat", "--loglevel", "WARNING"],
            cwd=REPO_ROOT, env=self.env(), stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip

    def stop_processes(self) -> None:
        process_groups_stop([*self.workers.values(), *([self.beat] if self.beat else [])], PROCESS_STOP_TIMEOUT_S)
        self.workers.clear()
        self.beat = None

    # ------------------------------------------------------------ an audit, from the CLI in the root namespace

    def audit_start(self, project: str) -> tuple[subprocess.Popen, str]:
        """`manage.py audit` as a person runs it (it waits for the end); returns it and the audit's id."""
        started = time.time()
        cmd = [
            sys.executable, "manage.py", "audit", self.site + "/", "--max-pages", str(AUDIT_MAX_PAGES),
            "--no-inline", "--json", "--project", project, "--no-external-links",
        ]  # fmt: skip
        out = open(self.log(f"cli-{project}"), "w")  # noqa: SIM115 - the child holds it
        cli = subprocess.Popen(cmd, cwd=REPO_ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT)
        audit_id = wait_until(
            lambda: self._latest_audit(project, started), CLI_START_TIMEOUT_S, f"the audit of {project} started"
        )
        return cli, audit_id

    def _latest_audit(self, project: str, after: float) -> str | None:
        row = self.query(
            "SELECT a.id FROM audits_audit a JOIN audits_project p ON p.id = a.project_id "
            "WHERE p.name = %s AND a.created_at >= to_timestamp(%s) ORDER BY a.created_at DESC LIMIT 1",
            (project, after - 1),
        )
        return str(row[0][0]) if row else None

    def state(self, audit_id: str) -> tuple[str, int]:
        ((status, crawled),) = self.query("SELECT status, pages_crawled FROM audits_audit WHERE id = %s", (audit_id,))
        return status, crawled

    def phase(self, audit_id: str) -> str:
        ((phase,),) = self.query("SELECT current_phase FROM audits_audit WHERE id = %s", (audit_id,))
        return phase

    def host_of_session(self, application_name: str) -> Host | None:
        """The worker host whose database session carries this name (a crawl chunk's run, a finalize run): the
        host doing that work right now. None: no such session."""
        rows = self.query(
            "SELECT host(client_addr) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            (application_name,),
        )
        by_address = {host.address: host for host in self.network.hosts}
        return next((by_address[address] for (address,) in rows if address in by_address), None)

    def crawl(self, audit_id: str) -> Crawl:
        with self._connect() as conn:  # one connection for the whole read

            def rows(sql: str) -> list[tuple]:
                return conn.execute(sql, (audit_id,)).fetchall()

            ((status, crawled),) = rows("SELECT status, pages_crawled FROM audits_audit WHERE id = %s")
            pages = rows("SELECT url, status_code, depth FROM audits_page WHERE audit_id = %s")
            issues = rows("SELECT type, page_url, count(*) FROM audits_issue WHERE audit_id = %s GROUP BY 1, 2")
            full = rows("SELECT * FROM audits_page WHERE audit_id = %s ORDER BY url")
            full += rows("SELECT * FROM audits_issue WHERE audit_id = %s ORDER BY id")
            ((edges,),) = rows("SELECT count(*) FROM scratchpad_linkedge WHERE audit_id = %s")
            ((frontier,),) = rows("SELECT count(*) FROM scratchpad_frontier WHERE audit_id = %s")
        return Crawl(
            status=status,
            pages_crawled=crawled,
            pages=set(pages),
            page_rows=len(pages),
            issues=Counter({(t, u): n for t, u, n in issues}),
            edges=edges,
            frontier_left=frontier,
            digest=hashlib.sha256(repr(full).encode()).hexdigest(),
        )

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._connect() as conn:
            return conn.execute(sql, params).fetchall()

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.pg.url(DB_NAME, host="127.0.0.1"), autocommit=True)


def fleet_unavailable_reason() -> str | None:
    if reason := unavailable_reason():
        return reason
    if shutil.which("rabbitmq-server") is None:
        return "rabbitmq-server is not installed"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")):
        return "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/pg_ctl)"
    return None


@contextmanager
def deployment(*, hosts: int, pages: int, answer_delay_s: float, settings: dict[str, str]) -> Iterator[Deployment]:
    """Build the whole deployment (namespaces, services, schema, site, beat) and tear it down, whatever happened.
    `settings` are extra environment variables for every host (shorter leases for a test)."""
    with ExitStack() as stack:
        yield _deployment_build(stack, hosts=hosts, pages=pages, answer_delay_s=answer_delay_s, settings=settings)


def _deployment_build(stack: ExitStack, *, hosts: int, pages: int, answer_delay_s: float, settings: dict) -> Deployment:
    root = Path(tempfile.mkdtemp(prefix="sitewarden-fleet-"))
    root.chmod(0o755)  # the postgres and rabbitmq users work below it
    (root / "logs").mkdir()
    stack.callback(shutil.rmtree, root, ignore_errors=True)
    network = stack.enter_context(host_network(hosts))
    pg = PrivatePostgres(
        root / "pg", port=free_port(), hosts=("127.0.0.1", network.address), trusted_networks=(network.cidr,)
    )
    pg.init()
    pg.start()
    stack.callback(pg.close)
    pg.sql(f"CREATE DATABASE {DB_NAME}")
    rabbit = PrivateRabbitMQ(
        root / "rabbitmq",
        port=free_port(),
        dist_port=free_port(),
        node=f"sitewarden-fleet-{root.name[-8:]}@localhost",
        host=network.address,
    )
    stack.callback(rabbit.close)
    rabbit.start()
    manifest = generate_site(root / "site", pages=pages, seed=29, page_kb=4)
    served_to: Counter = Counter()
    site = stack.enter_context(
        serve_site(root / "site", host=network.address, delay_s=answer_delay_s, served_to=served_to)
    )
    world = Deployment(
        root=root,
        network=network,
        pg=pg,
        rabbit=rabbit,
        site=site,
        expected_urls=len(manifest.expected_urls(site)),
        served_to=served_to,
        settings=settings,
    )
    stack.callback(world.stop_processes)
    for step in (("migrate", "--noinput"), ("install_watchdog",)):
        done = world.manage(*step)
        assert done.returncode == 0, f"manage.py {' '.join(step)}: {done.stderr[-3000:]}"
    world.start_beat()
    return world
