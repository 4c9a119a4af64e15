"""The web process as `make run` and the Procfile start it: `uvicorn config.asgi:application` as a child process
on a free 127.0.0.1 port, on this test session's database and broker."""

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.waits import wait_until
from tests.support.workers import REPO_ROOT, subprocess_env

SERVER_READY_TIMEOUT_S = 60
SERVER_STOP_TIMEOUT_S = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@contextmanager
def asgi_server(**extra_env) -> Iterator[str]:
    """Run uvicorn serving config.asgi (settings and environment of `subprocess_env`, plus `extra_env`); yields
    its base URL and stops it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=subprocess_env(**extra_env), start_new_session=True)
    try:
        wait_until(lambda: proc.poll() is not None or port_answers(port), SERVER_READY_TIMEOUT_S, "uvicorn listening")
        assert proc.poll() is None, f"uvicorn exited with {proc.returncode}"
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
