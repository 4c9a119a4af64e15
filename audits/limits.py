"""Bounds of the audit pipeline: chunk sizes, batches, deadlines, task time limits, plan defaults."""

import math

CHUNK_TARGET_PAGES = 200  # URLs one crawl_chunk claims at most
# Pages upserted per transaction; each batch moves the heartbeat. A run persists what it has before each claim, so
# this is as large as the largest claim (CHUNK_CLAIM_SLICE_MAX_URLS): one claim's pages, one transaction.
PERSIST_BATCH_PAGES = 100
CHUNK_SOFT_DEADLINE_S = 90  # after this a chunk starts no new fetch and releases the rest
CHUNK_SOFT_TIME_LIMIT_S = 240  # Celery soft limit: > deadline + one slow fetch + a persist
CHUNK_TIME_LIMIT_S = 300  # Celery hard limit; the lease (scratchpad.limits) outlives it
# A chunk claims in slices while its quota, its deadline and the frontier allow (no barrier between depth
# layers: what one batch discovers is claimable at once, by this chunk or another of the round).
CHUNK_CLAIM_SLICE_URLS = 20  # URLs a claim asks for first: a narrow frontier is shared by the round's chunks
# A claim that came back full asks for twice as many next time, up to this; one that came back short goes back to
# CHUNK_CLAIM_SLICE_URLS. A wide frontier is then claimed, and its pages persisted, in fewer and larger steps.
CHUNK_CLAIM_SLICE_MAX_URLS = 100
CHUNK_IDLE_GRACE_S = 5  # a chunk with nothing claimable waits this long for other chunks to discover work
CHUNK_IDLE_POLL_S = 0.5  # how often an idle chunk (or one whose last claim came back empty) claims again
# How often an idle chunk looks whether other chunks still hold live leases: the last idle chunk of a crawl
# sees the end within this (one indexed EXISTS per look), and claims again every CHUNK_IDLE_POLL_S meanwhile.
CHUNK_IDLE_WATCH_S = 0.1
SCOPE_VERDICTS_KEPT = 20_000  # URLs whose scope verdict a chunk remembers (audits.pipeline.scope.allows)
CHUNK_SEEN_URLS_MAX = 50_000  # URLs a chunk remembers having queued, to skip re-inserting them

# Finalize's exact-depth pass (pipeline.depth): page depths written per UPDATE, link pairs read per fetch
# of its server-side cursor, page rows read per fetch, click edges one breadth-first step gathers at a time
# (bounds its numpy temporaries: ~8 bytes each, a few arrays at once), deep pages read per fetch for their issues.
DEPTH_WRITE_BATCH_PAGES = 5_000
DEPTH_EDGE_FETCH_ROWS = 20_000
DEPTH_PAGE_FETCH_ROWS = 5_000
DEPTH_BFS_GATHER_EDGES = 131_072
DEPTH_ISSUE_READ_ROWS = 2_000
DEPTH_SQL_WORK_MEM_MB = 64  # PostgreSQL's work_mem for the pass's transaction (its sorts and hash joins), MiB

ISSUE_WRITE_BATCH = 500  # issue rows a bulk write sends at a time (audits.bulk.issues_insert, the site checks)

# Planner statistics during a crawl (pipeline.statistics): a crawl table is analyzed again once the rows changed
# since its last ANALYZE exceed this share of the rows it held then, and this many rows.
PLANNER_STATS_STALE_SHARE = 0.5
PLANNER_STATS_STALE_MIN_ROWS = 2_000

STEP_TIME_LIMIT_S = 600  # discovery, and finalize at its least (finalize_time_limit_s)
# The external link pass (audits/pipeline/external.py), a stage of finalize: the project's cap on distinct targets
# and its time budget are bounded here. The budget takes at most half of finalize's time limit, and runs last of
# the passes that ask the network: the depth pass, the site checks, the image, bot and resource passes (up to 120 s
# each) come before it, so its budget is also cut to what they leave (FINALIZE_AFTER_EXTERNAL_RESERVE_S).
EXTERNAL_LINKS_MAX_CEILING = 20_000
EXTERNAL_LINKS_BUDGET_MAX_S = STEP_TIME_LIMIT_S // 2
BOT_SAMPLE_MAX_CEILING = 100  # pages of a project fetched as each of the bot pass's agents (audits/pipeline/bots.py)
# Finalize's time the external link pass leaves to what follows it (its issues, the counts, the figures, the score):
# the pass's budget is cut to what remains of the time limit after the stages before it, less this.
FINALIZE_AFTER_EXTERNAL_RESERVE_S = 120
LIGHTHOUSE_SOFT_TIME_LIMIT_S = 840  # the phase's own budget (pipeline.lighthouse) stays below this
LIGHTHOUSE_TIME_LIMIT_S = 900
LEASE_WAIT_MAX_S = 60  # how long to wait before re-planning when a dead chunk still holds leases
# Transient errors (the database down, restarting, failing over or read-only; the broker's connection
# lost) are retried on every pipeline step for up to STEP_RETRY_WINDOW_S, with exponential backoff from 2 s
# capped at 30 s and up to 20 % jitter; every step is idempotent, so a retry is safe. STEP_MAX_RETRIES is the
# backstop when a message lost its first-failure time: 2+4+8+16+30*10 s is just over the window.
STEP_RETRY_WINDOW_S = 300
STEP_MAX_RETRIES = 14
STEP_RETRY_BACKOFF_S = 2
STEP_RETRY_BACKOFF_MAX_S = 30
STEP_RETRY_JITTER_FRACTION = 0.2
# A failure record made while the database is down is retried by its own task for this long (then it waits
# in the on-disk outbox for the next drain).
FAILURE_RECORD_RETRY_WINDOW_S = 24 * 3600

DEFAULT_MAX_PAGES = 500
# The most pages one audit may crawl (Screaming Frog's database mode defaults to 5 million URLs). bench.scale
# takes the page count as an argument to check how an audit's memory, finalize and bytes a page grow towards it.
MAX_PAGES_CEILING = 5_000_000
# Finalize's hard time limit grows with the audit: STEP_TIME_LIMIT_S, plus this for each page crawled (the limit
# travels on the finalize message: audits.pipeline.flow.step_send). The million-page benchmark audit's finalize took
# 550 s (0.55 ms a page, and a page's share grew ~1.65x per tenfold pages), so the 5,000,000-page ceiling should
# take ~3,900 s: 1.6 ms a page allows 2,200 s at a million pages and 8,600 s at the ceiling, about twice that.
FINALIZE_TIME_LIMIT_MS_PER_PAGE = 1.6
# A running finalize moves its audit's heartbeat (Audit.last_progress_at) at most this often, at its stages' fenced
# checks (audits.fencing.finalize_hold): a finalize longer than RECONCILE_STALE_AFTER_S is not taken for a dead one.
FINALIZE_HEARTBEAT_EVERY_S = 60


def finalize_time_limit_s(pages: int) -> int:
    """Finalize's hard time limit, in seconds, for an audit of `pages` pages."""
    return STEP_TIME_LIMIT_S + math.ceil(max(0, pages) * FINALIZE_TIME_LIMIT_MS_PER_PAGE / 1000)


FINALIZE_TIME_LIMIT_MAX_S = finalize_time_limit_s(MAX_PAGES_CEILING)  # 8,600 s: the brokers' redelivery waits longer
# The per-shape cap's top value, which means "no cap" (the default). It is its own number, not the page ceiling:
# projects store it, and it kept meaning "off" when the ceiling rose from 100,000.
PATTERN_CAP_OFF = 100_000
# List mode: URLs one audit takes as a list (a migration's or spot check's list, not a whole site)
MAX_LIST_URLS = 10_000
LIST_ERRORS_SHOWN = 20  # invalid lines named in one refusal; the count says how many more
ERROR_DETAIL_CHARS = 500

# What a page record keeps of a response for the page detail screen (the full response is never stored).
PAGE_HEADERS_STORED_MAX = 60  # response headers kept per page
PAGE_HEADER_VALUE_MAX_CHARS = 500
PAGE_HEADING_TEXT_MAX_CHARS = 200  # per heading of the stored outline (crawler.limits caps their number)

# Custom extraction (audits/extraction.py, run in audits/extraction_sandbox.py's child process).
EXTRACTION_PAGE_BUDGET_S = 2.0  # CPU seconds all of a project's extractors may spend on one page together
# A page's extraction also ends after this much wall-clock time, however little CPU its child got (a starved or
# stuck child must not hold a fetch thread).
EXTRACTION_PAGE_WALL_MAX_S = 10.0
EXTRACTED_PAGE_MAX_BYTES = 32 * 1024  # Page.extracted as JSON (UTF-8): names, values and marks
# An extractor stopped on this many pages of a chunk is not run on the chunk's other pages: an expression that
# is slow on every page of a site would otherwise cost the budget on every page (a crawl that never ends).
EXTRACTOR_STOPS_BEFORE_SKIP = 3
