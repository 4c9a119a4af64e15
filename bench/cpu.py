"""CPU time a run costs: the whole machine's, and one process tree's.

The throughput goal compares a crawler that is bound by one process's GIL with one that uses every core, on a
machine that also serves the site and runs the database. CPU time per page says what wall time cannot: how
many pages a second the product could reach at most on this machine's cores, whatever the scheduling.
"""

from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass, field
from typing import Self

import psutil

MS_PER_S = 1000
PG_CONNECT_TIMEOUT_S = 5  # postgres_server_pid gives up on a server that does not answer


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent not idle (user, system, interrupts, steal) since boot."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def tree_cpu_seconds(proc: psutil.Process) -> float:
    """User and system CPU seconds of `proc` and its descendants, with the children each of them waited for
    (a Celery pool process that was replaced still counts, through its parent); a process that exits
    meanwhile counts as 0."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def waited_children_cpu_seconds() -> float:
    """User and system CPU seconds of this process's children that have exited and been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class CpuUse:
    """CPU seconds of one measured span: the machine's (all cores) and the measured part's."""

    machine_s: float
    own_s: float
    cores: int
    # Named parts of "the rest" measured on their own (process trees, or this process's children waited for
    # within the span), CPU seconds each: where the machine's CPU beyond the measured part went.
    parts: dict[str, float] = field(default_factory=dict)

    def busy_share(self, seconds: float) -> float:
        """How busy the machine's cores were, on average, over `seconds` of wall time (0-1)."""
        return self.machine_s / (self.cores * seconds) if seconds > 0 else 0.0

    def per_page_ms(self, pages: int) -> tuple[float, float]:
        """(machine, own) CPU milliseconds a page."""
        if pages <= 0:
            return 0.0, 0.0
        return self.machine_s * MS_PER_S / pages, self.own_s * MS_PER_S / pages

    def parts_per_page_ms(self, pages: int) -> dict[str, float]:
        """Each named part's CPU milliseconds a page."""
        return {name: seconds * MS_PER_S / pages for name, seconds in self.parts.items()} if pages > 0 else {}


def postgres_server_pid(conninfo: str) -> int | None:
    """The PostgreSQL server's (postmaster's) pid, the parent of the backend a connection to `conninfo` gets;
    None when it is not on this machine or cannot be read. Its process tree, with the backends it has waited for,
    is the server's whole CPU."""
    import psycopg  # why: only the benches that split the server's CPU out need it

    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=PG_CONNECT_TIMEOUT_S) as conn:
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            # Read while the connection holds the backend: once it closes, the backend exits, and a read after it
            # found no process in 166 of 300 tries with the cores busy (a `make bench` lost its PostgreSQL part).
            return psutil.Process(backend).ppid()
    except (psycopg.Error, psutil.Error):
        return None


class CpuMeter:
    """`with CpuMeter(pid) as cpu: …` then `cpu.use`: the machine's busy CPU seconds over the block and those of
    process `pid`'s tree; with `pid` None, those of this process's children waited for within the block (a
    subprocess.run).

    `parts` names other process trees to measure over the block (e.g. {"PostgreSQL": its server's pid});
    `waited_part` names, when given, the CPU of this process's children waited for within the block (a CLI run
    by subprocess while `pid`'s tree is measured)."""

    def __init__(self, pid: int | None = None, *, parts: dict[str, int] | None = None, waited_part: str = ""):
        self._proc = psutil.Process(pid) if pid is not None else None
        self._parts: dict[str, psutil.Process] = {}
        for name, part_pid in (parts or {}).items():
            with contextlib.suppress(psutil.Error):
                self._parts[name] = psutil.Process(part_pid)
        self._waited_part = waited_part
        self._machine = self._own = 0.0
        self._parts_start: dict[str, float] = {}
        self.use: CpuUse | None = None

    def _parts_seconds(self) -> dict[str, float]:
        seconds = {name: tree_cpu_seconds(proc) for name, proc in self._parts.items()}
        if self._waited_part:
            seconds[self._waited_part] = waited_children_cpu_seconds()
        return seconds

    def _own_seconds(self) -> float:
        return tree_cpu_seconds(self._proc) if self._proc is not None else waited_children_cpu_seconds()

    def __enter__(self) -> Self:
        self._machine, self._own = machine_busy_seconds(), self._own_seconds()
        self._parts_start = self._parts_seconds()
        return self

    def __exit__(self, *exc) -> None:
        parts_end = self._parts_seconds()
        self.use = CpuUse(
            machine_s=machine_busy_seconds() - self._machine,
            own_s=self._own_seconds() - self._own,
            cores=os.cpu_count() or 1,
            parts={name: parts_end[name] - start for name, start in self._parts_start.items()},
        )
