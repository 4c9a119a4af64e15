"""Give the C heap's free memory back to the operating system after each Celery task (glibc's malloc_trim).

A crawl worker's fetch threads allocate in several glibc arenas and free most of it when a chunk ends, but glibc
keeps freed pages mapped while anything sits above them: over a 100,000-page audit the pool processes' resident
memory crept up by tens of MiB, and finalize's peak came on top. Trimming after each task (a few ms, a chunk runs
for seconds) returns what is free. A no-op where the C library has no malloc_trim (musl, macOS)."""

import ctypes
import ctypes.util


def _malloc_trim():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


def heap_trim() -> bool:
    """Return free heap memory to the OS; True when the C library released some."""
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))
