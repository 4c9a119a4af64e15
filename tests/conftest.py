"""Shared fixtures: generated sites served on 127.0.0.1, real Celery worker processes, factories."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings

from bench.serve import serve_site
from bench.sitegen import generate_site
from tests.factories import ProjectFactory

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKER_READY_TIMEOUT_S = 60


@pytest.fixture(scope="session")
def small_site(tmp_path_factory):
    """A generated site of 300 pages with robots.txt, a sitemap index with a gzipped child, an XHTML
    page, a redirect, a 404 and a sitemap-only orphan; yields (base_url, manifest)."""
    root = tmp_path_factory.mktemp("site300")
    manifest = generate_site(root, pages=300, seed=7, page_kb=8)
    with serve_site(root) as base_url:
        yield base_url, manifest


@pytest.fixture
def project(db):
    return ProjectFactory()


def subprocess_env(**extra) -> dict:
    """Environment for a child process of the product that uses this test session's database."""
    from django.db import connection

    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        TEST_DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        PYTHONPATH=str(REPO_ROOT),
    )
    env.update(extra)
    return env


class WorkerProcess:
    """A real `celery worker` child process on Redis and this session's PostgreSQL database."""

    def __init__(self, concurrency: int = 2, extra_env: dict | None = None):
        self.concurrency = concurrency
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        from config.celery import app

        cmd = [
            str(REPO_ROOT / ".venv/bin/celery"), "-A", "config", "worker", "--pool", "prefork",
            "--concurrency", str(self.concurrency), "--loglevel", "WARNING",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=subprocess_env(**self.extra_env), start_new_session=True)
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.proc.returncode}")
            if app.control.ping(timeout=0.5):
                return self
        raise RuntimeError("celery worker did not answer ping")

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def _flush_test_broker() -> None:
    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()


@pytest.fixture
def celery_worker_process(transactional_db):
    """Start a real worker (2 prefork processes) against Redis; stopped before the database is flushed."""
    _flush_test_broker()
    worker = WorkerProcess().start()
    yield worker
    worker.stop()
    _flush_test_broker()


def run_cli(*args, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run `manage.py` as a separate process, as a person would."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=env or subprocess_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
