"""Bounds of the audit pipeline: chunk sizes, batches, deadlines, task time limits, plan defaults."""

CHUNK_TARGET_PAGES = 200  # URLs one crawl_chunk claims at most
PERSIST_BATCH_PAGES = 25  # pages upserted per transaction; each batch moves the heartbeat
CHUNK_SOFT_DEADLINE_S = 90  # after this a chunk starts no new fetch and releases the rest
CHUNK_SOFT_TIME_LIMIT_S = 240  # Celery soft limit: > deadline + one slow fetch + a persist
CHUNK_TIME_LIMIT_S = 300  # Celery hard limit; the lease (scratchpad.limits) outlives it
CHUNK_SEEN_URLS_MAX = 50_000  # URLs a chunk remembers having queued, to skip re-inserting them

STEP_TIME_LIMIT_S = 600  # discovery and finalize
LIGHTHOUSE_SOFT_TIME_LIMIT_S = 840  # the phase's own budget (pipeline.lighthouse) stays below this
LIGHTHOUSE_TIME_LIMIT_S = 900
LEASE_WAIT_MAX_S = 60  # how long to wait before re-planning when a dead chunk still holds leases
# Transient database errors (a failover, a dropped connection) are retried on every pipeline step, with
# exponential backoff from 5 s capped at 60 s; every step is idempotent, so a retry is safe.
STEP_MAX_RETRIES = 3
STEP_RETRY_BACKOFF_S = 5
STEP_RETRY_BACKOFF_MAX_S = 60

DEFAULT_MAX_PAGES = 500
MAX_PAGES_CEILING = 100_000
ERROR_DETAIL_CHARS = 500
