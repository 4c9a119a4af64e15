"""The embedded default (`make run`): SQLite and kombu's filesystem transport, no servers at all."""

import json
import os
import signal
import subprocess

import pytest

from tests.support.workers import REPO_ROOT, run_cli

pytestmark = pytest.mark.slow  # child processes: the CLI in-process and a two-process worker on SQLite


@pytest.fixture
def embedded_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "TEST_", "CELERY_", "DATABASE_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        SITEWARDEN_BROKER_DIR=str(tmp_path / "broker"),
        SITEWARDEN_MEDIA_ROOT=str(tmp_path / "media"),
    )
    migrate = run_cli("migrate", "--noinput", env=env)
    assert migrate.returncode == 0, migrate.stderr
    return env


def test_cli_runs_the_whole_pipeline_in_process(small_site, embedded_env):
    base, manifest = small_site
    done = run_cli("audit", base + "/", "--max-pages", "1000", "--json", env=embedded_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["pages_crawled"] == len(manifest.expected_urls(base))


def test_worker_with_two_processes_runs_chords_on_sqlite(small_site, embedded_env):
    base, manifest = small_site
    worker = subprocess.Popen(
        [str(REPO_ROOT / ".venv/bin/celery"), "-A", "config", "worker", "--concurrency", "2",
         "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO_ROOT, env=embedded_env, start_new_session=True,
    )  # fmt: skip
    try:
        done = run_cli("audit", base + "/", "--max-pages", "1000", "--json", "--no-inline", env=embedded_env)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a warm shutdown still waiting on the transport: not under test
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["pages_crawled"] == len(manifest.expected_urls(base))
