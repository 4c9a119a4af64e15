"""Bounds of the per-audit crawl state."""

# The lease length is the CRAWL_LEASE_DURATION_S setting (default 360 s): longer than a chunk's hard
# time limit, so a live chunk never loses its URLs.
# A URL handed out this often without being finished is recorded as an error (backstop).
MAX_HANDOUTS_PER_URL = 10
# A URL whose fetch was started this often (one at a time, after its chunk died) without finishing
# is taken to kill its worker and is recorded as an error page.
MAX_CAREFUL_STARTS_PER_URL = 2
LINKS_STORED_PER_PAGE = 500
NEW_URLS_PER_BATCH = 20_000
SQL_IN_BATCH = 900  # values per IN (...) list: well under SQLite's variable limit
