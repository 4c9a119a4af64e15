"""The Celery app's process setup: `celery worker --logfile` (what `make run` starts) writes its log there."""

import signal
import subprocess

import pytest

from tests.support.waits import wait_until
from tests.support.workers import REPO_ROOT, WORKER_STOP_TIMEOUT_S, subprocess_env

pytestmark = pytest.mark.slow  # a real worker process

READY_TIMEOUT_S = 60
POLL_S = 0.2


def test_the_worker_writes_its_log_to_the_logfile(tmp_path):
    logfile = tmp_path / "worker.log"
    cmd = [
        str(REPO_ROOT / ".venv/bin/celery"), "-A", "config", "worker", "--pool", "solo", "--loglevel", "INFO",
        "--without-gossip", "--without-mingle", "--without-heartbeat", "--logfile", str(logfile),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=subprocess_env(), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(
            lambda: proc.poll() is not None or (logfile.exists() and " ready." in logfile.read_text()),
            READY_TIMEOUT_S,
            "the worker's ready line in its logfile (or its exit)",
            every_s=POLL_S,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=WORKER_STOP_TIMEOUT_S)
    text = logfile.read_text()
    # The worker's own INFO lines (root logger, through Django's LOGGING) reach the file, not only stderr.
    assert "INFO/MainProcess" in text and "Connected to" in text, text
