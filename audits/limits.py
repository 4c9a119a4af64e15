"""Bounds of the audit pipeline: chunk sizes, batches, deadlines, plan defaults."""

CHUNK_TARGET_PAGES = 200  # URLs one crawl_chunk claims at most
PERSIST_BATCH_PAGES = 25  # pages upserted per transaction; each batch moves the heartbeat
CHUNK_SOFT_DEADLINE_S = 90  # after this a chunk starts no new fetch and releases the rest
CHUNK_SOFT_TIME_LIMIT_S = 240  # Celery soft limit: > deadline + one slow fetch + a persist
CHUNK_TIME_LIMIT_S = 300  # Celery hard limit; the lease (scratchpad.limits) outlives it
CHUNK_SEEN_URLS_MAX = 50_000  # URLs a chunk remembers having queued, to skip re-inserting them

DEFAULT_MAX_PAGES = 500
MAX_PAGES_CEILING = 100_000
ERROR_DETAIL_CHARS = 500
