"""Peak resident memory of a process (or a process and all its children), sampled in a background thread.

One sampler for the benchmark (the worker tree, the baseline crawler, finalize) and the tests that bound a
worker's memory.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Self

import psutil

RSS_SAMPLE_INTERVAL_S = 0.2


def tree_rss_bytes(proc: psutil.Process) -> int:
    """Summed RSS of `proc` and all its descendants; a process that exits meanwhile counts as 0."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += p.memory_info().rss
    return total


class RssSampler:
    """`with RssSampler(pid) as rss: …` then `rss.peak` (bytes) and `rss.samples`.

    `pid` None: this process. `tree`: sum the process and its children (a prefork worker's pool).
    Samples on entry, every `interval_s`, and on exit. `timeline`: also keep every sample as (Unix time, bytes)
    in `rss.timeline`, so a caller can split the peak by phase (`rss.peak_between(start, end)`).
    """

    def __init__(
        self,
        pid: int | None = None,
        *,
        tree: bool = True,
        interval_s: float = RSS_SAMPLE_INTERVAL_S,
        timeline: bool = False,
    ):
        self._proc = psutil.Process(pid)
        self._tree = tree
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peak = 0
        self.samples = 0
        self.timeline: list[tuple[float, int]] | None = [] if timeline else None

    def _sample(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            rss = tree_rss_bytes(self._proc) if self._tree else self._proc.memory_info().rss
            self.peak = max(self.peak, rss)
            self.samples += 1
            if self.timeline is not None:
                self.timeline.append((time.time(), rss))

    def peak_between(self, start: float | None = None, end: float | None = None) -> int:
        """Highest sample taken at or after `start` and before `end` (Unix times; None: unbounded); 0 when no
        sample falls in the window. Needs `timeline=True`."""
        if self.timeline is None:
            raise ValueError("RssSampler(timeline=True) keeps the samples peak_between reads")
        return max(
            (rss for at, rss in self.timeline if (start is None or at >= start) and (end is None or at < end)),
            default=0,
        )

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def __enter__(self) -> Self:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
