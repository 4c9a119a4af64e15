"""Private PostgreSQL, Redis and RabbitMQ instances that a run starts, disturbs and removes itself: `make chaos`
(restarts, read-only, cut connections) and the fleet test (worker hosts in network namespaces reaching them over a
bridge). The machine's own services, which tests may be using, are never touched.

Each instance lives under a work directory the caller owns and listens where the caller says: loopback for the
chaos run, loopback and a bridge address for the fleet (its worker hosts are not on the root namespace's
loopback). PostgreSQL and RabbitMQ refuse to run as root, so as root they run as their own users.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SERVICE_START_TIMEOUT_S = 90
PORT_POLL_S = 0.2
MAX_CONNECTIONS = 200  # a fleet of workers, its CLI and its readers


class ServiceError(Exception):
    """A private service could not be started or reached."""


def process_groups_stop(procs: list[subprocess.Popen], timeout_s: float) -> None:
    """Stop processes each started in its own session (a worker and its pool): SIGCONT (a frozen one cannot exit)
    and SIGTERM to every group first, then wait for each, SIGKILLing a group that outlives `timeout_s`."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout_s)


def as_user(user: str, cmd: list[str]) -> list[str]:
    """Run `cmd` as `user` when we are root (PostgreSQL and RabbitMQ refuse to run as root)."""
    return ["runuser", "-u", user, "--", *cmd] if os.geteuid() == 0 else cmd


def wait_port(port: int, *, host: str = "127.0.0.1", timeout_s: float = SERVICE_START_TIMEOUT_S, up=True) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            if up:
                return
        except OSError:
            if not up:
                return
        time.sleep(PORT_POLL_S)
    raise ServiceError(f"{host}:{port} did not go {'up' if up else 'down'} in {timeout_s}s")


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) != 0


class PrivatePostgres:
    """A cluster made by initdb under `root`, trusting loopback and `trusted_networks` (CIDRs)."""

    def __init__(self, root: Path, *, port: int, hosts: tuple[str, ...] = ("127.0.0.1",), trusted_networks=()):
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if not versions:
            raise ServiceError("no /usr/lib/postgresql/*/bin/pg_ctl")
        self.bin = versions[-1].parent
        self.root = root
        self.port = port
        self.hosts = hosts
        self.trusted_networks = tuple(trusted_networks)
        self.data = root / "data"
        self.log = root / "postgres.log"

    def _ctl(self, *args: str) -> None:
        cmd = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), *args]
        subprocess.run(as_user("postgres", cmd), check=True, capture_output=True, timeout=SERVICE_START_TIMEOUT_S)

    def init(self) -> None:
        if not port_free(self.port):
            raise ServiceError(f"port {self.port} is taken: another run?")
        self.root.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        cmd = [str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"]
        subprocess.run(as_user("postgres", cmd), check=True, capture_output=True)
        if self.trusted_networks:
            with open(self.data / "pg_hba.conf", "a") as hba:
                for network in self.trusted_networks:
                    hba.write(f"host all all {network} trust\n")

    def start(self) -> None:
        listen = ",".join(self.hosts)
        opts = (
            f"-p {self.port} -k {self.root} -c listen_addresses={listen} -c fsync=off "
            f"-c max_connections={MAX_CONNECTIONS}"
        )
        self._ctl("-o", opts, "-w", "start")

    def stop(self) -> None:
        self._ctl("-m", "fast", "-w", "stop")

    def restart(self) -> None:
        self._ctl("-m", "fast", "-w", "restart")

    def sql(self, *statements: str, dbname: str = "postgres") -> None:
        import psycopg  # why: the driver is only needed once the cluster runs

        with psycopg.connect(host=self.hosts[0], port=self.port, user="postgres", dbname=dbname, autocommit=True) as c:
            for statement in statements:
                c.execute(statement)

    def cut_connections(self, dbname: str) -> None:
        self.sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{dbname}' AND pid <> pg_backend_pid()"
        )

    def url(self, dbname: str, host: str | None = None) -> str:
        return f"postgres://postgres@{host or self.hosts[0]}:{self.port}/{dbname}"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()


class PrivateRedis:
    def __init__(self, root: Path, *, port: int):
        self.root = root
        self.port = port
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if not port_free(self.port):
            raise ServiceError(f"port {self.port} is taken")
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        log = open(self.root / "redis.log", "ab")  # noqa: SIM115 - the child holds it
        self.proc = subprocess.Popen(cmd, cwd=self.root, stdout=log, stderr=log, start_new_session=True)
        wait_port(self.port)

    def restart_without_persistence(self, down_s: float) -> None:
        """`shutdown nosave`: every queued message, result and chord counter is gone."""
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True)
        if self.proc:
            self.proc.wait(timeout=30)
        time.sleep(down_s)
        self.start()

    def close(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True)


class PrivateRabbitMQ:
    """A RabbitMQ node of its own (name, ports, Mnesia directory, no plugins). `host` is the address it listens
    on; off loopback, the guest user is let in from other hosts (RabbitMQ keeps it to loopback by default)."""

    def __init__(self, root: Path, *, port: int, dist_port: int, node: str, host: str = "127.0.0.1"):
        self.root = root
        self.port = port
        self.dist_port = dist_port
        self.node = node
        self.host = host
        self.proc: subprocess.Popen | None = None

    def _env(self) -> dict:
        return {
            **os.environ,
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": self.host,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.root / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.root / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.root / "enabled_plugins"),  # none: no management port
            "RABBITMQ_CONFIG_FILE": str(self.root / "rabbitmq"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(self.root / "mnesia" / "feature_flags"),
            "RABBITMQ_PID_FILE": str(self.root / "pid"),
        }

    def _ctl(self, *args: str) -> None:
        subprocess.run(["rabbitmqctl", "-q", "-n", self.node, *args], env=self._env(), check=True, capture_output=True)

    def start(self) -> None:
        if shutil.which("rabbitmq-server") is None:
            raise ServiceError("rabbitmq-server is not installed")
        if not port_free(self.port, self.host) or not port_free(self.dist_port):
            raise ServiceError(f"port {self.port} or {self.dist_port} is taken")
        for sub in ("mnesia", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "enabled_plugins").write_text("[].\n")
        if self.host != "127.0.0.1":
            (self.root / "rabbitmq.conf").write_text("loopback_users = none\n")
        if os.geteuid() == 0:  # the server script drops to the rabbitmq user
            for path in [self.root, *self.root.rglob("*")]:
                shutil.chown(path, "rabbitmq", "rabbitmq")
        log = open(self.root / "server.out", "ab")  # noqa: SIM115 - the child holds it
        self.proc = subprocess.Popen(
            ["rabbitmq-server"], env=self._env(), stdout=log, stderr=log, start_new_session=True
        )
        wait_port(self.port, host=self.host)

    def restart(self, down_s: float) -> None:
        """Stop and start the broker application (the Erlang VM stays): connections drop; durable queues and
        persistent messages come back."""
        self._ctl("stop_app")
        time.sleep(down_s)
        self._ctl("start_app")
        wait_port(self.port, host=self.host)

    def url(self) -> str:
        return f"amqp://guest:guest@{self.host}:{self.port}//"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._ctl("shutdown")
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
