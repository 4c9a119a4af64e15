"""Bounds of the per-audit crawl state."""

LEASE_DURATION_S = 360  # longer than a chunk's hard time limit, so a live chunk never loses its URLs
MAX_HANDOUTS_PER_URL = 3  # a URL handed out this often without being finished is recorded as an error
LINKS_STORED_PER_PAGE = 500
NEW_URLS_PER_BATCH = 20_000
SQL_IN_BATCH = 900  # values per IN (...) list: well under SQLite's variable limit
