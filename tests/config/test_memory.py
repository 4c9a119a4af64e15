"""After a task, a worker gives the heap's free memory back: freed blocks pinned below live ones (what a crawl's
threads leave behind) stay resident until malloc_trim returns them, and Celery runs the trim after every task."""

import ctypes.util
import threading

import psutil
import pytest
from celery.signals import task_postrun

from config import memory
from config.celery import _heap_trim_after_task

BLOCK_BYTES = 4096  # above pymalloc's small objects: from glibc's malloc, in the allocating thread's arena
BLOCKS_PER_THREAD = 12_000  # ~47 MiB a thread
THREADS = 4
KEEP_EVERY = 64  # one block in 64 stays alive, so no heap can shrink from its top on its own
MIB = 1024 * 1024

glibc = pytest.mark.skipif(
    memory._MALLOC_TRIM is None or "libc.so" not in (ctypes.util.find_library("c") or ""), reason="needs glibc"
)


def _fragment(kept: list) -> None:
    blocks = [bytearray(BLOCK_BYTES) for _ in range(BLOCKS_PER_THREAD)]
    kept.extend(blocks[::KEEP_EVERY])


@glibc
def test_trim_returns_freed_blocks_that_live_ones_pin():
    kept: list = []
    threads = [threading.Thread(target=_fragment, args=(kept,)) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    process = psutil.Process()
    before = process.memory_info().rss
    assert memory.heap_trim()
    after = process.memory_info().rss
    freed_mib = (THREADS * BLOCKS_PER_THREAD * BLOCK_BYTES * (1 - 1 / KEEP_EVERY)) / MIB
    assert (before - after) / MIB > freed_mib / 2, (before / MIB, after / MIB, freed_mib)
    assert len(kept) == THREADS * -(-BLOCKS_PER_THREAD // KEEP_EVERY)  # the pinning blocks lived through it all


def test_celery_trims_after_every_task():
    assert _heap_trim_after_task in [receiver() for _, receiver in task_postrun.receivers]


def test_a_pool_process_freezes_the_objects_it_starts_with():
    import gc

    from celery.signals import worker_process_init

    from config.celery import _freeze_startup_objects

    # Connected to the signal each prefork pool process sends once forked (a weak reference: resolved here).
    assert _freeze_startup_objects in [receiver() for _, receiver in worker_process_init.receivers]
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    try:
        _freeze_startup_objects()
        assert gc.get_freeze_count() > 10_000  # Django, the models, numpy, lxml: the modules' objects
    finally:
        gc.unfreeze()
