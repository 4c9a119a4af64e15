"""Caps and timings for talking to the web: every bound the crawler enforces lives here, with its unit."""

USER_AGENT_PRODUCT = "Sitewarden"

# Bodies
# HTML is read up to 15 MiB, what Googlebot reads of a page; past that the page is marked truncated
# (html-too-large). Read into one buffer and parsed in PARSE_FEED_BYTES steps, so a page costs its bytes, its
# tree and one step, never a decoded copy of the whole text on top.
MAX_HTML_BYTES = 15 * 1024 * 1024
PARSE_FEED_BYTES = 1024 * 1024
MAX_ROBOTS_BYTES = 500 * 1024
MAX_SITEMAP_BYTES = 10 * 1024 * 1024  # per sitemap document, after decompression
MAX_SITEMAP_DOCUMENTS = 300
MAX_SITEMAP_INDEX_DEPTH = 3  # sitemap index -> index -> index -> urlset, no deeper
MAX_SITEMAP_REDIRECT_HOPS = 5  # robots.txt and sitemap documents, followed by hand
SITEMAP_DISCOVERY_DEADLINE_S = 180  # all sitemap documents of one audit together
# Sitemap URLs an audit reads (sitemap_url_cap): twenty times its page budget, so "in sitemap" and orphan
# findings see the whole sitemap of the sites a budget is meant for, up to the largest audit's page ceiling
# (audits.limits.MAX_PAGES_CEILING). They are handed on and seeded in lists of SITEMAP_URLS_PER_HANDOFF as they
# are read, never held whole: a worker's memory does not grow with the sitemap.
SITEMAP_URLS_FLOOR = 500
SITEMAP_URLS_PER_MAX_PAGE = 20
SITEMAP_URLS_CEILING = 5_000_000
SITEMAP_URLS_PER_HANDOFF = 10_000

# URLs and redirects
MAX_URL_LENGTH = 2048
MAX_REDIRECT_HOPS = 10
NORMALIZE_CACHE_ENTRIES = 20_000  # per process; ~5 MB at typical URL lengths
SITE_MATCHER_AUTHORITIES_KEPT = 1024  # per SiteMatcher (one a chunk): hosts it has judged, kept

# Per page extraction
# Every link of a page is counted; links to one URL are folded into one target (count, first anchor), and
# targets past this many distinct URLs are counted but not kept (too-many-link-targets): ~10 MB at most.
MAX_LINK_TARGETS_PER_PAGE = 50_000
MAX_ANCHOR_TEXTS_PER_PAGE = 5_000  # distinct link texts kept for the link-text check
MAX_IMAGES_PER_PAGE = 1000
MAX_HEADINGS_PER_PAGE = 200
MAX_HREFLANG_PER_PAGE = 200
MAX_LISTED_RESOURCES_PER_PAGE = 20  # image srcs without alt, insecure resources: examples, not inventories
MAX_STRUCTURED_ITEMS_PER_PAGE = 50  # JSON-LD/microdata/RDFa entities kept for the rich-result checks
MAX_STRUCTURED_PROPERTIES_PER_ITEM = 100  # property names kept per entity
MAX_IMAGE_URLS_PER_PAGE = 100  # distinct image URLs kept for the image HEAD pass (broken, too large)
MAX_RESOURCE_URLS_PER_PAGE = 100  # distinct scripts, stylesheets, icons and preloads kept for the resource pass
MAX_MAIN_WORDS_KEPT = 5000  # main-text words kept per page for near-duplicate signatures and soft-404 patterns
# A main text this short is kept as written outside code samples too (PageData.short_main_prose): soft-404 wording
# counts only on a page this short (audits/checks/content.py).
SHORT_MAIN_TEXT_WORDS_MAX = 150
# Characters of main text outside code samples read to find lorem ipsum's wording: ~150,000 words of prose.
PROSE_SCAN_CHARS_MAX = 1024 * 1024
EVIDENCE_CONTEXT_CHARS = 60  # characters kept on each side of matched wording shown as evidence (lorem ipsum)
# Page text is gathered this many characters at a time and split into words in one go (crawler/parse.py).
TEXT_STEP_CHARS = 64 * 1024
# Main elements whose ancestors are checked before the one text walk; a (hostile) page with more is walked twice,
# as every page was before, instead of paying mains x depth.
MAIN_ELEMENTS_ONE_WALK_MAX = 100
MAX_ANCHOR_TEXT_CHARS = 200
MAX_ROBOTS_INVALID_LINES = 100

# Time
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 15
TOTAL_FETCH_DEADLINE_S = 30  # whole response, headers and body, for one URL
WATCHDOG_RETRY_S = 0.25  # after the deadline, how often the watchdog re-tries to cut a still-open socket

# Connections
HTTP_POOL_MAXSIZE = 16  # connections kept per host: one per crawl thread
HTTP_POOL_HOSTS = 16  # per-host pools a session keeps
READ_CHUNK_BYTES = 64 * 1024
DECODE_STEP_BYTES = 1024 * 1024  # gzip/deflate decoded at most this much per step (a bomb grows the body in steps)
MAX_ERROR_MESSAGE_CHARS = 500


def sitemap_url_cap(max_pages: int) -> int:
    """How many sitemap URLs discovery keeps for an audit of `max_pages`."""
    return min(max(max_pages * SITEMAP_URLS_PER_MAX_PAGE, SITEMAP_URLS_FLOOR), SITEMAP_URLS_CEILING)


# Endless URL spaces (crawler/traps.py): new link-found URLs are refused by their signs, never by how many
# URLs one template has (a 100,000-product catalogue is one template). Each default is a project setting.
TRAP_MAX_PATH_SEGMENTS = 15  # path segments; real sites rarely pass 8, relative-link loops grow without end
TRAP_REPEATED_SEGMENT_RUNS = 3  # one segment this many times in a row (/x/x/x) is a loop, not a folder
TRAP_REPEATED_BLOCK_MAX_SEGMENTS = 4  # a block of 2..4 segments seen twice in a row (/a/b/a/b) is a loop
TRAP_CALENDAR_YEARS_AHEAD = 3  # a date more than this many years after today is a calendar's "next" link
TRAP_CALENDAR_EARLIEST_YEAR = 1995  # a date before the web is a calendar's "previous" link
# URLs carrying a date under one shape (/events/{date}): a calendar running back (or forward) one day at a
# time; a blog's month archives over 20 years are 240, its posts each have their own shape (/{n}/{n}/slug).
TRAP_MAX_DATED_URLS_PER_PATTERN = 1000
TRAP_MAX_QUERY_VARIANTS_PER_PATH = 500  # distinct query strings queued per exact path (facet combinations)
# Pages of one shape whose main text (template parts left out) is the same: one page under endless URLs (a session
# id in the path, filters that change nothing, "no results" for every search). The shape's new link-found URLs
# are skipped once this many crawled pages share one main text and they are most of the shape's pages: a catalogue
# where a few products share a text is not a trap.
TRAP_MAX_IDENTICAL_PAGES_PER_PATTERN = 100
TRAP_IDENTICAL_PAGES_SHARE = 0.9  # of the shape's crawled pages with a main text
