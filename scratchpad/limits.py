"""Bounds of the per-audit crawl state."""

# The lease length is the CRAWL_LEASE_DURATION_S setting (default 60 s), renewed by the working chunk every
# CRAWL_LEASE_RENEW_EVERY_S (default 15 s): a live chunk keeps its URLs, a dead one's are free within a minute.
# A URL handed out this often without being finished is recorded as an error (backstop).
MAX_HANDOUTS_PER_URL = 10
# A URL whose fetch was started this often (one at a time, after its chunk died) without finishing
# is taken to kill its worker and is recorded as an error page.
MAX_CAREFUL_STARTS_PER_URL = 2
# Links stored per page: every distinct target, up to crawler.limits.MAX_LINK_TARGETS_PER_PAGE (one edge each).
NEW_URLS_PER_BATCH = 20_000
SQL_IN_BATCH = 900  # values per IN (...) list: well under SQLite's variable limit
