"""CPU time a run costs: the whole machine's, and one process tree's.

The throughput goal compares a crawler that is bound by one process's GIL with one that uses every core, on a
machine that also serves the site and runs the database. CPU time per page says what wall time cannot: how
many pages a second the product could reach at most on this machine's cores, whatever the scheduling.
"""

from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass
from typing import Self

import psutil

MS_PER_S = 1000


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

    def busy_share(self, seconds: float) -> float:
        """How busy the machine's cores were, on average, over `seconds` of wall time (0-1)."""
        return self.machine_s / (self.cores * seconds) if seconds > 0 else 0.0

    def per_page_ms(self, pages: int) -> tuple[float, float]:
        """(machine, own) CPU milliseconds a page."""
        if pages <= 0:
            return 0.0, 0.0
        return self.machine_s * MS_PER_S / pages, self.own_s * MS_PER_S / pages


class CpuMeter:
    """`with CpuMeter(pid) as cpu: …` then `cpu.use`: the machine's busy CPU seconds over the block and those of
    process `pid`'s tree; with `pid` None, those of this process's children waited for within the block (a
    subprocess.run)."""

    def __init__(self, pid: int | None = None):
        self._proc = psutil.Process(pid) if pid is not None else None
        self._machine = self._own = 0.0
        self.use: CpuUse | None = None

    def _own_seconds(self) -> float:
        return tree_cpu_seconds(self._proc) if self._proc is not None else waited_children_cpu_seconds()

    def __enter__(self) -> Self:
        self._machine, self._own = machine_busy_seconds(), self._own_seconds()
        return self

    def __exit__(self, *exc) -> None:
        self.use = CpuUse(
            machine_s=machine_busy_seconds() - self._machine,
            own_s=self._own_seconds() - self._own,
            cores=os.cpu_count() or 1,
        )
