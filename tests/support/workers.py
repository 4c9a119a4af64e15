"""Processes of the product the tests start: a real `celery worker`, `manage.py` as a person runs it,
and the environment that points them at this test session's database and Redis db."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis
from celery import Celery
from django.conf import settings
from django.db import connection

from config.celery import app
from tests.support.waits import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_READY_TIMEOUT_S = 60
WORKER_STOP_TIMEOUT_S = 20
WORKER_KILL_TIMEOUT_S = 30
PING_TIMEOUT_S = 0.5
CLI_TIMEOUT_S = 300


def subprocess_env(**extra) -> dict:
    """Environment for a child process of the product that uses this test session's database and broker."""
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        TEST_DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        TEST_CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        TEST_CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND,
        PYTHONPATH=str(REPO_ROOT),
    )
    env.update(extra)
    return env


def flush_test_broker() -> None:
    """Empty this session's Redis db (the settings' broker URL, so a parallel run's db is left alone)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        client.flushdb()
    finally:
        client.close()


class WorkerProcess:
    """A real `celery worker` child process on Redis and this session's PostgreSQL database."""

    def __init__(self, concurrency: int = 2, extra_env: dict | None = None):
        self.concurrency = concurrency
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        # A worker on another broker (TEST_CELERY_BROKER_URL in extra_env) is pinged through that broker.
        broker_url = self.extra_env.get("TEST_CELERY_BROKER_URL")
        self.ping_app = app if broker_url is None else Celery("ping", broker=broker_url)

    def start(self) -> "WorkerProcess":
        cmd = [
            str(REPO_ROOT / ".venv/bin/celery"), "-A", "config", "worker", "--pool", "prefork",
            "--concurrency", str(self.concurrency), "--loglevel", "WARNING",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=subprocess_env(**self.extra_env), start_new_session=True)

        def answers_ping() -> list:
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.proc.returncode}")
            return self.ping_app.control.ping(timeout=PING_TIMEOUT_S)  # waits PING_TIMEOUT_S itself

        wait_until(answers_ping, WORKER_READY_TIMEOUT_S, "the celery worker answering ping", every_s=0)
        return self

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=WORKER_KILL_TIMEOUT_S)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=WORKER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()


def run_cli(*args, env: dict | None = None, timeout: int = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run `manage.py` as a separate process, as a person would."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=env or subprocess_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
