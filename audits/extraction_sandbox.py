"""Custom extraction runs in a child process that can be stopped: lxml evaluates an XPath in C, which no Python
timer or signal interrupts, and an expression can cost the cube of a page's elements (minutes on one page).

One long-lived child per process that extracts (a crawl worker's pool process, the inline runner), started on
the first page of a project with extractors, so a crawl without extractors never starts one. A fetch thread
sends it the page's HTML and the extractors; the child answers each extractor's values as they come. The parent
watches the child's CPU time: past the page's budget it kills the child (SIGKILL: really stopped), names the
extractor that was running, and the next page starts a new child. Fetch threads take turns (one lock); the child
also limits its own CPU (RLIMIT_CPU), so it dies even if its parent cannot kill it.

Child side: `python -m audits.extraction_sandbox`, framed messages on stdin/stdout: the request is a JSON header
then the body's bytes; each answer is JSON (never pickle: the child reads hostile HTML). Free of Django."""

import atexit
import json
import math
import os
import resource
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from audits.extraction_eval import compiled, evaluate

_FRAME = struct.Struct(">I")
_REPO_ROOT = Path(__file__).resolve().parents[1]
POLL_S = 0.02  # how often the parent looks at the child's CPU time while it works
# One extractor's answer: 20 values of 1,000 characters, JSON-escaped (12 bytes for an astral character) and more.
ANSWER_MAX_BYTES = 16 * 1024 * 1024
CHILD_START_MAX_S = 30  # a child that has not imported lxml and the parser by then is broken
# The child's own limit, a backstop when its parent is gone or cannot kill it: this many budgets of CPU time
# (RLIMIT_CPU counts whole seconds).
CHILD_CPU_LIMIT_BUDGETS = 3


@dataclass
class SandboxResult:
    values: list[list[str]] = field(default_factory=list)  # of the extractors that finished, in order
    stopped: int | None = None  # the index of the extractor stopped over the budget (those after it did not run)
    cpu_s: float = 0.0  # the child's CPU time on this page, when it took longer than a poll (else 0)


class _ChildGone(Exception):
    pass


class Sandbox:
    """The parent's end: one child, started on demand, replaced after a kill."""

    def __init__(self):
        self._lock = threading.Lock()
        self._child: subprocess.Popen | None = None
        self._process: psutil.Process | None = None
        self._owner_pid = os.getpid()  # a forked copy of this object (and its atexit hook) leaves the child alone
        self.starts = 0  # children started (tests and the timing script read it)

    def run(
        self,
        specs: list[tuple[str, str, bool]],
        body: bytes,
        *,
        charset: str | None,
        budget_s: float,
        wall_max_s: float,
    ) -> SandboxResult:
        """The values of each (kind, expression, multiple) on this page; an extractor still running when the
        child's CPU time on the page passes `budget_s` (or the wall clock `wall_max_s`: a starved child) is
        stopped with the child."""
        header = json.dumps({"specs": specs, "charset": charset, "cpu_limit_s": budget_s}).encode()
        with self._lock:
            for attempt in (1, 2):
                child = self._running_child()
                try:
                    _write_frame(child.stdin, header)
                    _write_frame(child.stdin, body)
                    child.stdin.flush()
                    break
                except (BrokenPipeError, OSError):
                    self._stop()  # died since the last page (its CPU limit, an OOM kill): one new child
                    if attempt == 2:
                        raise
            return self._answers(len(specs), budget_s=budget_s, wall_max_s=wall_max_s)

    def close(self) -> None:
        if os.getpid() != self._owner_pid:
            return
        with self._lock:
            self._stop()

    # --- inside ------------------------------------------------------------------------------------------

    def _running_child(self) -> subprocess.Popen:
        if self._child is None or self._child.poll() is not None:
            self._stop()
            self._child = subprocess.Popen(
                [sys.executable, "-m", "audits.extraction_sandbox"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=_REPO_ROOT,
                env=_child_env(),
            )
            self._process = psutil.Process(self._child.pid)
            self.starts += 1
            try:  # its imports are not a page's CPU time: wait for them
                fd = self._child.stdout.fileno()
                if not _readable(fd, CHILD_START_MAX_S) or json.loads(_read_frame(fd)) != {"ready": True}:
                    raise _ChildGone
            except (_ChildGone, ValueError):
                self._stop()
                raise RuntimeError("The extraction sandbox's child process did not start.") from None
        return self._child

    def _cpu_s(self) -> float:
        try:
            times = self._process.cpu_times()
        except psutil.Error:
            return 0.0
        return times.user + times.system

    def _answers(self, count: int, *, budget_s: float, wall_max_s: float) -> SandboxResult:
        result = SandboxResult()
        # The child's CPU time is read only once a page takes longer than a poll (~25 µs a read): from there,
        # counting the first poll as all CPU, so the budget errs by at most POLL_S, never in the page's favour.
        started_cpu, started_wall = None, time.monotonic()
        fd = self._child.stdout.fileno()
        try:
            while True:
                if _readable(fd, POLL_S):
                    answer = json.loads(_read_frame(fd, ANSWER_MAX_BYTES))
                    if answer.get("done"):
                        if started_cpu is not None:
                            result.cpu_s = self._cpu_s() - started_cpu
                        return result
                    result.values.append(answer["values"])
                    continue
                if started_cpu is None:
                    started_cpu = self._cpu_s() - POLL_S
                if self._cpu_s() - started_cpu > budget_s or time.monotonic() - started_wall > wall_max_s:
                    break
        except (_ChildGone, ValueError, KeyError):
            pass  # killed by its own CPU limit, or an answer that is not ours: the same as over the budget
        result.cpu_s = self._cpu_s() - started_cpu if started_cpu is not None else 0.0
        self._stop()  # also when every value came but not the end: the next page must not read this one's answers
        result.stopped = len(result.values) if len(result.values) < count else None
        return result

    def _stop(self) -> None:
        child, self._child, self._process = self._child, None, None
        if child is None:
            return
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            try:
                stream.close()
            except OSError:
                pass


def _child_env() -> dict[str, str]:
    """The child reads hostile HTML with a C parser: it gets no secret of the environment (database, keys)."""
    kept = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TZ") if name in os.environ}
    return {**kept, "PYTHONPATH": str(_REPO_ROOT), "OPENBLAS_NUM_THREADS": "1"}  # numpy loads, never computes


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether `fd` has data (or its end) within timeout_s; poll, not select: a busy worker's descriptors can pass
    select's 1,024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(timeout_s * 1000))


def _write_frame(stream, data: bytes) -> None:
    stream.write(_FRAME.pack(len(data)))
    stream.write(data)


def _read_exact(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise _ChildGone
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _read_frame(fd: int, max_bytes: int | None = None) -> bytes:
    (size,) = _FRAME.unpack(_read_exact(fd, _FRAME.size))
    if max_bytes is not None and size > max_bytes:
        raise _ChildGone  # not an answer of ours
    return _read_exact(fd, size)


_sandbox: Sandbox | None = None
_sandbox_pid: int | None = None
_sandbox_lock = threading.Lock()


def sandbox() -> Sandbox:
    """This process's sandbox (a forked process makes its own: a child's pipes belong to one process)."""
    global _sandbox, _sandbox_pid
    with _sandbox_lock:
        if _sandbox is None or _sandbox_pid != os.getpid():
            _sandbox, _sandbox_pid = Sandbox(), os.getpid()
            atexit.register(_sandbox.close)
        return _sandbox


# --- the child -------------------------------------------------------------------------------------------


def _limit_cpu(cpu_limit_s: float) -> None:
    """This process dies (SIGXCPU) once it has spent CHILD_CPU_LIMIT_BUDGETS budgets on the current page."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    soft = math.ceil(spent + CHILD_CPU_LIMIT_BUDGETS * cpu_limit_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


def child_main() -> None:
    # why: the parser (numpy, w3lib) is loaded before the child says it is ready, so no page pays for it
    import crawler.parse  # noqa: F401

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a CPU-limit death leaves no core file
    fd_in, out = sys.stdin.buffer.fileno(), sys.stdout.buffer
    _write_frame(out, b'{"ready": true}')
    out.flush()
    while True:
        try:
            request = json.loads(_read_frame(fd_in))
            body = _read_frame(fd_in)
        except _ChildGone:
            return  # the parent closed the pipe (or died)
        _limit_cpu(float(request["cpu_limit_s"]))
        extractors = [compiled(kind, expression, bool(multiple)) for kind, expression, multiple in request["specs"]]
        for values in evaluate(extractors, body, charset=request["charset"]):
            _write_frame(out, json.dumps({"values": values}).encode())
            out.flush()
        _write_frame(out, b'{"done": true}')
        out.flush()


if __name__ == "__main__":
    child_main()
