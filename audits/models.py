"""The audit domain: projects, audits, the pages they crawled and the issues found.

Plans, accounts and the credit ledger live in `accounts`, webhooks in `webhooks`.
"""

# Why one module of over 600 lines: it is the audits app's schema, one class per table (fourteen models), and most
# of its lines are field declarations with their help texts, constraints and indexes, read one class at a time.
# The models point at each other by foreign key (a page's audit, an issue's page, a change's baseline) and keep
# their deterministic id functions beside them; Django finds an app's models here, and a models/ package would
# only spread the same declarations over files that import each other. The rules live in services and selectors
# (a model has only `__str__` and two small properties).

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.functions import Length

from audits.limits import DEFAULT_MAX_PAGES, PATTERN_CAP_OFF
from audits.secrets import EncryptedTextField

PAGE_NAMESPACE = uuid.UUID("6f1c3c1e-5d2a-4d8e-9a55-2b8e1f0c7a10")
ISSUE_NAMESPACE = uuid.UUID("0b7e5d4a-8a31-4f2f-9d6e-7c1a2e3b4f50")


def page_id_for(audit_id, url: str) -> uuid.UUID:
    """Deterministic page id: the same audit and URL always give the same row."""
    return uuid.uuid5(PAGE_NAMESPACE, f"{audit_id}|{url}")


def _issue_name(audit_id, page_url: str, issue_type: str, dedupe_key: str = "") -> str:
    """What an issue's id is the hash of (set_issue_id_sql builds the same name in SQL)."""
    return f"{audit_id}|{page_url}|{issue_type}|{dedupe_key}"


def issue_id_for(audit_id, page_url: str, issue_type: str, dedupe_key: str = "") -> uuid.UUID:
    return uuid.uuid5(ISSUE_NAMESPACE, _issue_name(audit_id, page_url, issue_type, dedupe_key))


def set_issue_id_for(audit_id, page_url: str, issue_type: str) -> uuid.UUID:
    """The id of an issue that a finalize pass writes as one set in SQL (deep-page): a uuid3, the MD5 of the same
    name issue_id_for hashes, because PostgreSQL has MD5 built in and SHA-1 (uuid5) only through pgcrypto. Such a
    pass replaces every row of its type at once, so no other writer has to agree with it on an id."""
    return uuid.uuid3(ISSUE_NAMESPACE, _issue_name(audit_id, page_url, issue_type))


def set_issue_id_sql(audit_id, page_url_sql: str, issue_type: str) -> tuple[str, list]:
    """set_issue_id_for as a PostgreSQL expression over the page URL that `page_url_sql` gives: (SQL, its
    positional parameters)."""
    # The name around the URL: _issue_name's, without a dedupe key.
    head, tail = _issue_name(audit_id, "\0", issue_type).split("\0")
    digest = "md5(decode(%s, 'hex') || convert_to(%s || " + page_url_sql + " || %s, 'UTF8'))"  # 32 hex digits
    # RFC 4122 version 3: the 13th hex digit becomes 3, the 17th keeps its two low bits under the variant 10.
    template = (
        "(substr({digest}, 1, 12) || '3' || substr({digest}, 14, 3) "
        "|| substr('89ab', (('x' || substr({digest}, 17, 1))::bit(4)::int & 3) + 1, 1) "
        "|| substr({digest}, 18))::uuid"
    )
    # Each use of the digest takes its three parameters (counted on the template: the caller's SQL is not ours).
    params = [ISSUE_NAMESPACE.hex, head, tail] * template.count("{digest}")
    return template.format(digest=digest), params


class Project(models.Model):
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="projects")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)
    base_url = models.URLField(max_length=2048)
    # Typed without a scheme ("example.com"): stored as https, and discovery falls back to http when https
    # does not connect (audits.pipeline.discovery), saying so in an event.
    http_fallback = models.BooleanField(default=False)
    max_pages = models.PositiveIntegerField(default=DEFAULT_MAX_PAGES)
    include_patterns = models.JSONField(default=list, blank=True, help_text="Regular expressions; a URL must match one")
    exclude_patterns = models.JSONField(
        default=list, blank=True, help_text="Regular expressions; a match skips the URL"
    )

    # Crawl options (snapshotted into each audit's config at start; the password never is).
    class QueryPolicy(models.TextChoices):
        KEEP = "keep", "Keep query strings"
        STRIP = "strip", "Strip query strings"
        KEEP_LISTED = "keep_listed", "Keep only the listed keys"

    user_agent = models.CharField(max_length=300, blank=True, help_text="Empty: Sitewarden's own")
    auth_username = models.CharField(max_length=200, blank=True, help_text="HTTP basic auth")
    auth_password = EncryptedTextField(blank=True, help_text="Write-only: never shown back; encrypted at rest")
    follow_nofollow = models.BooleanField(default=False)
    crawl_subdomains = models.BooleanField(default=False)
    render_js = models.BooleanField(default=False, help_text="Render pages with headless Chromium")
    render_budget_pages = models.PositiveIntegerField(default=200, help_text="Pages rendered at most per audit")
    max_depth = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: no limit")
    # Endless URL spaces are refused by their signs (crawler/traps.py); these raise the rules' bounds. The
    # per-shape cap is off by default (PATTERN_CAP_OFF): a 100,000-product catalogue is one shape.
    max_urls_per_pattern = models.PositiveIntegerField(
        default=PATTERN_CAP_OFF,
        help_text="URLs crawled per path shape (digits, dates and ids collapsed); default: no cap",
    )
    max_path_segments = models.PositiveIntegerField(default=15, help_text="Deeper link-found paths are a trap")
    calendar_years_ahead = models.PositiveIntegerField(
        default=3, help_text="Link-found dates this many years after today or more are a calendar trap"
    )
    max_dated_urls_per_pattern = models.PositiveIntegerField(
        default=1000, help_text="Link-found URLs carrying a date crawled per path shape (calendars)"
    )
    max_query_variants_per_path = models.PositiveIntegerField(
        default=500, help_text="Distinct query strings crawled per path (facet combinations)"
    )
    max_identical_pages_per_pattern = models.PositiveIntegerField(
        default=100,
        help_text="Pages of one path shape with the same main text crawled before the shape's new links are a trap",
    )
    query_policy = models.CharField(max_length=16, choices=QueryPolicy.choices, default=QueryPolicy.KEEP)
    query_keep_keys = models.JSONField(default=list, blank=True)
    min_request_interval_ms = models.PositiveIntegerField(default=0, help_text="Between two requests to a host")
    max_concurrency = models.PositiveIntegerField(default=8, help_text="Upper bound of the adaptive window")
    check_overrides = models.JSONField(
        default=dict,
        blank=True,
        help_text='Per-project checks: {"thresholds": {type: {key: value}}, "severities": {type: severity}, '
        '"disabled": [type]}',
    )
    # Outbound links (audits/pipeline/external.py): every distinct external target asked once per audit.
    check_external_links = models.BooleanField(default=True, help_text="Check the site's outbound links")
    external_links_max = models.PositiveIntegerField(
        default=2000, help_text="Distinct external link targets checked per audit; the rest are reported unchecked"
    )
    external_links_budget_s = models.PositiveIntegerField(
        default=300, help_text="Seconds the external link pass may take per audit"
    )
    # What each bot is served (audits/pipeline/bots.py): the start page and one page per URL template.
    bot_sample_max = models.PositiveIntegerField(
        default=10, help_text="Pages fetched as each crawler and as a browser to compare what they are served"
    )
    extractors = models.JSONField(
        default=list,
        blank=True,
        help_text='Custom extraction (audits/extraction.py): [{"name", "kind": xpath|css|regex, "expression", '
        '"multiple", "rule", "rule_value"}]',
    )
    keep_page_rows = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Audits whose pages, issues and links are kept; older ones keep their summary only. "
        "Empty: the instance default (SITEWARDEN_KEEP_PAGE_ROWS)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="project_unique_name_per_account")]
        ordering = ["name"]

    def __str__(self):
        return self.name


class Segment(models.Model):
    """A named part of a project's site its reports can be read for (audits.segments): pages whose URL path starts
    with a prefix, whose URL path matches a regular expression, or whose custom extraction found a value. A page
    belongs to every segment it matches; a project without segments of its own gets one per top-level folder."""

    class Kind(models.TextChoices):
        PREFIX = "prefix", "URL path starts with"
        REGEX = "regex", "URL path matches a regular expression"
        EXTRACTION = "extraction", "Custom extraction value"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="segments")
    name = models.CharField(max_length=80)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # prefix: "/blog/"; regex: the expression, matched against the URL after its origin (path and query);
    # extraction: the value one of the extractor's values must equal.
    value = models.CharField(max_length=500, help_text="The prefix, the regular expression or the extracted value")
    extractor = models.CharField(max_length=40, blank=True, help_text="Custom extraction: the extractor's name")
    position = models.PositiveIntegerField(default=0, help_text="Order in lists and pickers (smallest first)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="segment_unique_name_per_project"),
            models.CheckConstraint(
                condition=models.Q(kind__in=["prefix", "regex", "extraction"]), name="segment_kind_known"
            ),
            models.CheckConstraint(
                condition=~models.Q(kind="extraction") | ~models.Q(extractor=""),
                name="segment_extraction_names_extractor",
            ),
        ]

    def __str__(self):
        return self.name


class Audit(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Phase(models.TextChoices):
        DISCOVERY = "discovery"
        CRAWLING = "crawling"
        LIGHTHOUSE = "lighthouse"
        FINALIZING = "finalizing"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audits")
    start_url = models.URLField(max_length=2048)
    site_url = models.URLField(max_length=2048, blank=True, help_text="Start URL after its redirects")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    current_phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.DISCOVERY)
    config = models.JSONField(default=dict, blank=True)
    pages_crawled = models.PositiveIntegerField(default=0)
    pages_total = models.PositiveIntegerField(default=0)
    crawl_round = models.PositiveIntegerField(default=0)
    finalize_generation = models.PositiveIntegerField(
        default=0, help_text="Runs of finalize that took this audit so far; only the latest writes (audits.fencing)"
    )
    health_score = models.PositiveSmallIntegerField(null=True, blank=True)
    score_formula = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Version of the score formula health_score was computed with (audits.checks.score)",
    )
    error_code = models.CharField(max_length=64, blank=True)
    error_detail = models.CharField(max_length=500, blank=True)
    failed_phase = models.CharField(max_length=16, blank=True)
    robots_txt = models.TextField(null=True, blank=True, help_text="Raw robots.txt as fetched (None: none)")
    robots_status = models.IntegerField(null=True, blank=True)
    discovery = models.JSONField(default=dict, blank=True, help_text="What discovery found: sitemaps, errors")
    lighthouse_note = models.CharField(max_length=500, blank=True, help_text="Why the Lighthouse phase was skipped")
    bot_access = models.JSONField(
        default=dict,
        blank=True,
        help_text="Which crawlers robots.txt lets in, per folder, and what llms.txt holds (audits/pipeline/bots.py)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    last_progress_at = models.DateTimeField(null=True, blank=True)
    revivals = models.PositiveSmallIntegerField(default=0, help_text="Times the reconciler re-dispatched it")
    reconciled_by = models.CharField(max_length=16, blank=True, help_text="lazy | watchdog, when it ended it")
    scheduled = models.BooleanField(default=False, help_text="Started by the project's schedule")
    baseline = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The audit its changes are measured against (audits/pipeline/changes.py); empty: the project's "
        "previous completed audit, chosen at finalize",
    )
    verifies = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="verifications",
        help_text="A fix check: the audit whose issue type (config['verify_issue_type']) this list re-checks",
    )
    summarised_at = models.DateTimeField(
        null=True, blank=True, help_text="When retention pruned its pages, issues and links (its summary stays)"
    )
    stats = models.JSONField(
        default=dict,
        blank=True,
        help_text="Page and issue figures counted once at finalize (audits.stats); empty before",
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "last_progress_at"], name="audit_status_progress")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(health_score__isnull=True) | models.Q(health_score__lte=100),
                name="audit_health_score_0_100",
            )
        ]

    def __str__(self):
        return f"{self.start_url} ({self.status})"

    @property
    def max_pages(self) -> int:
        return int(self.config.get("max_pages", DEFAULT_MAX_PAGES))

    @property
    def is_finished(self) -> bool:
        return self.status != self.Status.RUNNING


class MostFirstIndex(models.Index):
    """An index for a "most first, empty last" sort: (…, column DESC NULLS LAST, …) on PostgreSQL. SQLite cannot
    say NULLS LAST in an index and needs not: it sorts NULLs last in a descending order by itself, so there the
    index is made with a plain DESC (`make run`'s embedded database migrates too)."""

    def create_sql(self, model, schema_editor, using="", **kwargs):
        if schema_editor.connection.vendor != "sqlite" or not self.expressions:
            return super().create_sql(model, schema_editor, using=using, **kwargs)
        plain = [
            models.OrderBy(e.expression, descending=e.descending) if isinstance(e, models.OrderBy) else e
            for e in self.expressions
        ]
        index = models.Index(*plain, name=self.name, condition=self.condition, db_tablespace=self.db_tablespace)
        return index.create_sql(model, schema_editor, using=using, **kwargs)


# Rows that point at a page by the thousands (issues, link edges, page counts) do so without a database constraint
# (db_constraint=False). PostgreSQL checks a foreign key row by row, and checks it by locking the page row (FOR KEY
# SHARE), which dirties the page heap again: at a million pages the checks of finalize's deep-page issues took 10-12
# of 36 s, those of the page counts 10-22 of 36-48 s. Nothing is lost: a page row is deleted only with its audit,
# by audit_delete (Django's collector deletes what points at it first, as on_delete says) or by retention
# (audits.retention.PRUNED_TABLES: the rows that point at a page go before the pages), and every such row is
# written while its page exists (in the page's transaction or after it, for a running audit: the audit foreign
# keys stay, but for link edges', ~30 a page crawled, written only in their page's batch, which rolls back unless
# its audit is still running). tests/audits/test_page_references.py holds both deletions to leaving nothing behind.
class Page(models.Model):
    class FoundVia(models.TextChoices):  # scratchpad.models.Frontier.Source's values
        START = "start", "the start URL"
        LINK = "link", "a link"
        SITEMAP = "sitemap", "the sitemap"
        REDIRECT = "redirect", "a redirect"
        PAGINATION = "pagination", 'a rel="next" or rel="prev" link'

    class FetchClass(models.TextChoices):
        OK = "ok"
        BLOCKED = "blocked"
        RATE_LIMITED = "rate_limited"
        ERROR = "error"

    id = models.UUIDField(primary_key=True, editable=False)
    # No index of its own: the (audit, …) indexes below serve every lookup by audit, and each index is one more
    # write per page crawled and per page finalize rewrites.
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="pages", db_index=False)
    url = models.TextField()
    status_code = models.IntegerField(null=True, blank=True)
    redirect_url = models.TextField(blank=True)
    fetch_class = models.CharField(max_length=16, choices=FetchClass.choices)
    fetch_error = models.CharField(max_length=500, blank=True)
    content_type = models.CharField(max_length=120, blank=True)
    bytes = models.PositiveIntegerField(default=0)
    truncated = models.BooleanField(default=False)
    response_time_ms = models.PositiveIntegerField(null=True, blank=True)
    depth = models.PositiveIntegerField(
        null=True, blank=True, help_text="Link depth; empty when seen only in a sitemap"
    )
    in_sitemap = models.BooleanField(default=False)
    # How the crawl found the page (copied from its frontier row when it is claimed): the start URL, a link (or
    # canonical, hreflang), the sitemap, a redirect; and the crawled page that led to it, one click closer to the
    # start. Following found_from page by page gives the crawl path (audits.selectors.pages.page_how_found).
    found_via = models.CharField(max_length=16, blank=True, choices=FoundVia.choices)
    found_from = models.TextField(blank=True, help_text="The crawled page that led to this one")
    title = models.TextField(blank=True)
    titles_count = models.PositiveSmallIntegerField(default=0)
    meta_description = models.TextField(null=True, blank=True)
    canonical_url = models.TextField(blank=True)
    canonical_header = models.TextField(blank=True, help_text="From the Link: rel=canonical header")
    canonicals_count = models.PositiveSmallIntegerField(default=0)
    meta_robots = models.CharField(max_length=500, blank=True)
    x_robots_tag = models.CharField(max_length=500, blank=True)
    open_graph = models.JSONField(default=dict, blank=True)
    h1_count = models.PositiveSmallIntegerField(default=0)
    h1 = models.TextField(blank=True, help_text="Text of the first non-empty H1 (bounded)")
    heading_counts = models.JSONField(default=dict, blank=True)
    heading_order = models.JSONField(default=list, blank=True, help_text="Heading levels in document order")
    headings = models.JSONField(
        default=list, blank=True, help_text="Heading outline: [level, text] in document order (bounded)"
    )
    response_headers = models.JSONField(
        default=dict, blank=True, help_text="Response headers, lower-cased names (bounded)"
    )
    word_count = models.PositiveIntegerField(default=0)
    word_unit = models.CharField(
        max_length=10,
        blank=True,
        help_text='"characters": the text is mostly in a language written without spaces (Chinese, Japanese), whose '
        'characters were counted; "": words',
    )
    text_hash = models.CharField(max_length=40, blank=True)
    # Content checks (audits/checks/content.py): the main text without navigation, header, footer and aside.
    main_text_hash = models.CharField(max_length=40, blank=True, help_text="sha1 of the main text's words")
    main_words = models.PositiveIntegerField(default=0, help_text="Words of the main text")
    text_signature = models.TextField(
        blank=True, help_text="MinHash of the main text's words and word pairs (audits.checks.content)"
    )
    soft_404_hint = models.CharField(max_length=200, blank=True, help_text="Why the page reads like an error page")
    security_headers = models.JSONField(
        null=True, blank=True, help_text="Security response headers; null: not recorded"
    )
    html_lang = models.CharField(max_length=64, blank=True)
    images_total = models.PositiveIntegerField(default=0)
    images_missing_alt = models.PositiveIntegerField(default=0)
    internal_links = models.PositiveIntegerField(default=0)
    external_links = models.PositiveIntegerField(default=0)
    hreflang = models.JSONField(default=list, blank=True)
    structured_data = models.JSONField(default=dict, blank=True)
    extracted = models.JSONField(
        default=dict, blank=True, help_text="Custom extraction: {extractor name: [values]} (audits/extraction.py)"
    )
    # Pagination and image checks (audits/checks/pagination.py, images.py).
    rel_next = models.TextField("rel=next", blank=True, help_text='<link rel="next"> resolved and normalised')
    rel_prev = models.TextField("rel=prev", blank=True, help_text='<link rel="prev"> resolved and normalised')
    image_urls = models.JSONField(
        "Image URLs",
        default=list,
        blank=True,
        help_text="Distinct internal <img> URLs (bounded), for the image pass in finalize",
    )
    resource_urls = models.JSONField(
        "Resource URLs",
        default=list,
        blank=True,
        help_text="Distinct scripts, stylesheets and icons it loads: [kind, url] (bounded), for the resource pass",
    )
    raw_values = models.JSONField(
        null=True,
        blank=True,
        help_text="Rendered pages: the values of the HTML as served, before JavaScript (title, meta description, "
        "canonical, robots, H1, links, words); null: not rendered",
    )
    is_indexable = models.BooleanField(default=False)
    fetched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "url"], name="page_unique_url_per_audit")]
        indexes = [
            # The grid filtered by a status code lists its pages by URL; sorted by status, most first, it reads
            # the same index in order (audits.selectors.pages).
            MostFirstIndex(
                F("audit"), F("status_code").desc(nulls_last=True), F("url"), name="page_audit_status_desc_url"
            ),
            models.Index(fields=["audit", "fetch_class"], name="page_audit_fetch_class"),
            models.Index(fields=["audit", "fetched_at"], name="page_audit_fetched"),
            # The grid's "most first" sorts that a top-N sort over every page made slow on 100,000 pages: each
            # is the grid's exact ORDER BY (the column DESC NULLS LAST, then the URL), so a page of the grid,
            # however deep, is an index range (audits.selectors.pages.page_list, page_keyset_columns). The
            # counts finalize stores have theirs on PageCounts.
            MostFirstIndex(F("audit"), F("word_count").desc(nulls_last=True), F("url"), name="page_audit_words_desc"),
            MostFirstIndex(
                F("audit"), Length("title").desc(nulls_last=True), F("url"), name="page_audit_title_len_desc"
            ),
        ]

    def __str__(self):
        return self.url


class PageCounts(models.Model):
    """A crawled page's inlinks and issue rows, counted once by finalize (audits.pipeline.page_totals) for the
    pages grid to sort and page by, and a copy of every other column the grid sorts on. Its own narrow table, not
    columns of Page: storing the counts on the page rewrote every page row (~2.2 KB, ten indexes) once more at the
    end of the audit, and the page heap kept the dead copy; here finalize inserts ~250 bytes a page. The URL is
    the page's, repeated so that the grid's sorts, unfiltered, order these rows alone instead of the ~2.6 KB page
    rows (audits.selectors.pages.page_sort_keys); its rank among the audit's URLs stands for it in the count
    sorts' indexes (4 bytes an entry, not the URL). An audit that completed before the counts were stored has no
    rows."""

    # No database constraint (the note above Page): finalize writes a row for every page at once.
    page = models.OneToOneField(
        Page, on_delete=models.CASCADE, primary_key=True, related_name="counts", db_constraint=False
    )
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="+", db_index=False)
    url = models.TextField(help_text="The page's URL (Page.url): the sorts' tie-break")
    url_rank = models.PositiveIntegerField(
        default=0, help_text="The URL's place among the audit's, A to Z from 1: the tie-break in the counts' indexes"
    )
    inlinks = models.PositiveIntegerField(help_text="Links to this URL from the audit's crawled pages")
    inlink_pages = models.PositiveIntegerField(
        null=True, blank=True, help_text="Crawled pages linking to this URL; empty: counted before it was stored"
    )
    issues = models.PositiveIntegerField(help_text="Issue rows of this page")
    # Copies of the page's sorted columns (audits.selectors.pages.PAGE_SORTS), under the names the grid's ordering
    # uses, and whether the text views list the page: the grid's keys, read from ~250-byte rows.
    status_code = models.IntegerField(null=True, blank=True)
    depth = models.PositiveIntegerField(null=True, blank=True)
    title = models.TextField(blank=True)
    title_len = models.PositiveIntegerField(default=0, help_text="Characters of the title")
    description_len = models.PositiveIntegerField(default=0, help_text="Characters of the meta description")
    h1 = models.TextField(blank=True)
    h1_len = models.PositiveIntegerField(default=0, help_text="Characters of the first H1")
    h1_count = models.PositiveSmallIntegerField(default=0)
    response_time_ms = models.PositiveIntegerField(null=True, blank=True)
    bytes = models.PositiveIntegerField(default=0)
    word_count = models.PositiveIntegerField(default=0)
    html = models.BooleanField(default=False, help_text="A 2xx HTML page: the ones the text views list")

    class Meta:
        verbose_name_plural = "page counts"
        # The grid's four sorts on the counts, most and fewest first, each its exact ORDER BY (the count, then the
        # URL ascending either way, by its rank), so that a page of the grid, however deep, is a range of one of
        # them (audits.selectors.pages.page_list): "fewest inlinks first" is how weakly linked pages are found.
        indexes = [
            MostFirstIndex(F("audit"), F("issues").desc(nulls_last=True), F("url_rank"), name="pagecounts_issues_desc"),
            MostFirstIndex(
                F("audit"), F("inlinks").desc(nulls_last=True), F("url_rank"), name="pagecounts_inlinks_desc"
            ),
            models.Index(fields=["audit", "issues", "url_rank"], name="pagecounts_issues_asc"),
            models.Index(fields=["audit", "inlinks", "url_rank"], name="pagecounts_inlinks_asc"),
        ]

    def __str__(self):
        return f"{self.url}: {self.inlinks} inlinks, {self.issues} issues"


EXTERNAL_LINK_NAMESPACE = uuid.UUID("9a4e2f61-3c7b-4d58-b1e0-6f2d8c5a7e14")
AGENT_FETCH_NAMESPACE = uuid.UUID("c25b8e07-74d1-4a96-8f3e-1d0a6b9c2e85")


def external_link_id_for(audit_id, url: str) -> uuid.UUID:
    return uuid.uuid5(EXTERNAL_LINK_NAMESPACE, f"{audit_id}|{url}")


def agent_fetch_id_for(audit_id, url: str, agent: str) -> uuid.UUID:
    return uuid.uuid5(AGENT_FETCH_NAMESPACE, f"{audit_id}|{url}|{agent}")


class ExternalLink(models.Model):
    """One distinct external link target of an audit and what asking it once answered (audits/pipeline/external.py).
    The pages linking to it are the audit's LinkEdge rows with this target_url (internal = False)."""

    class Outcome(models.TextChoices):
        OK = "ok", "OK"
        REDIRECTED = "redirected", "Redirects to a working page"
        CLIENT_ERROR = "client_error", "Broken (4xx)"
        SERVER_ERROR = "server_error", "Server error (5xx)"
        TIMEOUT = "timeout", "Timed out"
        DNS_ERROR = "dns_error", "Host not found"
        TLS_ERROR = "tls_error", "TLS error"
        CONNECTION_ERROR = "connection_error", "Connection failed"
        REDIRECT_LOOP = "redirect_loop", "Redirect loop"
        TOO_MANY_REDIRECTS = "too_many_redirects", "Too many redirects"
        REDIRECT_BROKEN = "redirect_broken", "Redirects to a broken page"
        UNVERIFIED = "unverified", "Could not verify (bot protection)"
        REFUSED = "refused", "Not asked (private address)"
        UNCHECKED = "unchecked", "Not checked (cap or time budget)"

    id = models.UUIDField(primary_key=True, editable=False)
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="external_links", db_index=False)
    url = models.TextField()
    host = models.CharField(max_length=255)
    outcome = models.CharField(max_length=24, choices=Outcome.choices, default=Outcome.UNCHECKED)
    status_code = models.IntegerField(null=True, blank=True, help_text="The last answer's status; empty: none")
    method = models.CharField(max_length=4, blank=True, help_text="HEAD, or GET where HEAD was refused")
    final_url = models.TextField(blank=True, help_text="Where its redirects ended")
    redirect_hops = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)
    response_time_ms = models.PositiveIntegerField(null=True, blank=True)
    linking_pages = models.PositiveIntegerField(default=0, help_text="Crawled pages linking to it")
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "url"], name="externallink_unique_url_per_audit")]
        indexes = [models.Index(fields=["audit", "outcome", "url"], name="externallink_audit_outcome")]

    def __str__(self):
        return f"{self.url} [{self.outcome}]"


class AgentFetch(models.Model):
    """One sampled page as one user agent was served it (audits/pipeline/bots.py): what a search or AI crawler
    gets beside what a browser gets."""

    id = models.UUIDField(primary_key=True, editable=False)
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="agent_fetches", db_index=False)
    url = models.TextField()
    agent = models.CharField(max_length=32, help_text="googlebot-smartphone, bingbot, gptbot, browser, ...")
    status_code = models.IntegerField(null=True, blank=True)
    final_url = models.TextField(blank=True)
    title = models.TextField(blank=True)
    canonical_url = models.TextField(blank=True)
    robots = models.CharField(max_length=500, blank=True, help_text="Meta robots and X-Robots-Tag, joined")
    main_text_hash = models.CharField(max_length=40, blank=True)
    main_words = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)
    fetched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "url", "agent"], name="agentfetch_unique_url_agent_per_audit")
        ]

    def __str__(self):
        return f"{self.url} as {self.agent}"


class Issue(models.Model):
    class Severity(models.TextChoices):
        CRITICAL = "critical"
        WARNING = "warning"
        INFO = "info"

    id = models.UUIDField(primary_key=True, editable=False)
    # No index of its own: the (audit, …) indexes below serve every lookup by audit.
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="issues", db_index=False)
    # No database constraint (the note above Page): finalize's passes write issues on most pages at once.
    page = models.ForeignKey(
        Page, on_delete=models.CASCADE, null=True, blank=True, related_name="issues", db_constraint=False
    )
    page_url = models.TextField(blank=True)
    type = models.CharField(max_length=64)
    severity = models.CharField(max_length=16, choices=Severity.choices)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["audit", "type"], name="issue_audit_type"),
            models.Index(fields=["audit", "severity"], name="issue_audit_severity"),
            # The API's issue list pages by keyset on (type, page_url, id): id makes the key unique.
            models.Index(fields=["audit", "type", "page_url", "id"], name="issue_audit_type_url_id"),
        ]

    def __str__(self):
        return f"{self.type} {self.page_url}"


LIGHTHOUSE_NAMESPACE = uuid.UUID("3d9a7c2e-1b44-4e6f-8a0d-5c2f9e7b1a33")


def lighthouse_id_for(audit_id, page_id, strategy: str) -> uuid.UUID:
    return uuid.uuid5(LIGHTHOUSE_NAMESPACE, f"{audit_id}|{page_id}|{strategy}")


CHANGE_NAMESPACE = uuid.UUID("5d8f0b3a-27c4-4e61-9a0d-3b7e1c4f6a92")


def page_change_id_for(audit_id, url: str, field: str, key: str = "") -> uuid.UUID:
    """Deterministic change id: recomputing an audit's changes rewrites the same rows."""
    return uuid.uuid5(CHANGE_NAMESPACE, f"{audit_id}|{url}|{field}|{key}")


class PageChange(models.Model):
    """One thing that differs on one URL between an audit and its baseline (audits/pipeline/changes.py), or a URL
    only one of them crawled, or a line of robots.txt, or a sitemap document found, gone or read differently. Kept
    when retention prunes the audit's pages."""

    class Field(models.TextChoices):
        ADDED = "added", "URL added"
        REMOVED = "removed", "URL removed"
        STATUS = "status", "Status code"
        REDIRECT = "redirect", "Redirect target"
        INDEXABILITY = "indexability", "Indexability"
        CANONICAL = "canonical", "Canonical"
        ROBOTS = "robots", "Robots directives"
        TITLE = "title", "Title"
        DESCRIPTION = "description", "Meta description"
        H1 = "h1", "H1"
        WORDS = "words", "Word count"
        DEPTH = "depth", "Click depth"
        INLINKS = "inlinks", "Inlinks"
        STRUCTURED_DATA = "structured_data", "Structured data types"
        HREFLANG = "hreflang", "Hreflang"
        CONTENT = "content", "Main text"
        IN_SITEMAP = "in_sitemap", "In a sitemap"
        ROBOTS_TXT = "robots_txt", "robots.txt"
        SITEMAP = "sitemap", "Sitemap"  # a sitemap document (url: the sitemap's), not a page's presence in one

    class Direction(models.TextChoices):
        ADDED = "added"  # a URL, a value or a line that was not there
        REMOVED = "removed"  # one that is gone
        CHANGED = "changed"  # a value replaced by another
        UP = "up"  # a number grew; a page became indexable
        DOWN = "down"  # a number fell; a page became non-indexable

    id = models.UUIDField(primary_key=True, editable=False)
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="changes")
    baseline = models.ForeignKey(Audit, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    url = models.TextField()
    field = models.CharField(max_length=24, choices=Field.choices)
    direction = models.CharField(max_length=8, choices=Direction.choices)
    before = models.TextField(blank=True)
    after = models.TextField(blank=True)

    class Meta:
        indexes = [
            # The Changes view and the API list an audit's changes by URL, all fields or one (keyset on (url, id)).
            models.Index(fields=["audit", "url", "id"], name="page_change_audit_url"),
            models.Index(fields=["audit", "field", "url", "id"], name="page_change_audit_field_url"),
        ]

    def __str__(self):
        return f"{self.url} {self.field}: {self.before!r} -> {self.after!r}"


class LighthouseResult(models.Model):
    class Strategy(models.TextChoices):
        MOBILE = "mobile"
        DESKTOP = "desktop"

    class Status(models.TextChoices):
        OK = "ok"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, editable=False)
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="lighthouse_results")
    page = models.ForeignKey(Page, on_delete=models.CASCADE, null=True, blank=True, related_name="lighthouse")
    url = models.TextField()
    template = models.CharField(max_length=500, blank=True, help_text="URL template this page stands for")
    strategy = models.CharField(max_length=16, choices=Strategy.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    error = models.CharField(max_length=500, blank=True)
    performance = models.PositiveSmallIntegerField(null=True, blank=True)  # category scores 0-100
    accessibility = models.PositiveSmallIntegerField(null=True, blank=True)
    best_practices = models.PositiveSmallIntegerField(null=True, blank=True)
    seo = models.PositiveSmallIntegerField(null=True, blank=True)
    lcp_ms = models.PositiveIntegerField(null=True, blank=True)
    cls = models.FloatField(null=True, blank=True)
    tbt_ms = models.PositiveIntegerField(null=True, blank=True)
    inp_ms = models.PositiveIntegerField(null=True, blank=True)
    ttfb_ms = models.PositiveIntegerField(null=True, blank=True)
    fcp_ms = models.PositiveIntegerField(null=True, blank=True)
    summary = models.JSONField(
        default=dict, blank=True, help_text="Top opportunities and diagnostics, parsed from the report when stored"
    )
    report_path = models.CharField(max_length=500, blank=True, help_text="Full JSON report, under MEDIA_ROOT")
    report_bytes = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["url", "strategy"]

    def __str__(self):
        return f"{self.url} [{self.strategy}]"


class AuditEvent(models.Model):
    """Append-only log of what happened to an audit: phases, retries, revivals, reconciliations."""

    class Kind(models.TextChoices):
        STARTED = "started"
        PHASE = "phase"
        RETRY = "retry"
        LEASE_EXPIRED = "lease_expired"
        REVIVED = "revived"
        RECONCILED = "reconciled"
        TASK_FAILED = "task_failed"
        FAILED = "failed"
        CANCELLED = "cancelled"
        COMPLETED = "completed"
        SCHEDULE_SKIPPED = "schedule_skipped"
        URLS_SKIPPED = "urls_skipped"
        EXTRACTION_STOPPED = "extraction_stopped"  # a custom extractor over a page's time budget, once per extractor
        HTTP_FALLBACK = "http_fallback"  # a base URL typed without a scheme: https did not connect, http did

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    message = models.CharField(max_length=500)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"{self.kind}: {self.message}"


class Schedule(models.Model):
    """A project's recurring audit, run by django-celery-beat; each run is an ordinary audit."""

    class Kind(models.TextChoices):
        DAILY = "daily"
        WEEKLY = "weekly"
        CRON = "cron"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="schedule")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    cron = models.CharField(max_length=120, help_text="minute hour day-of-month month day-of-week (UTC)")
    enabled = models.BooleanField(default=True)
    report_recipients = models.JSONField(
        default=list, blank=True, help_text="E-mail addresses each run's report (PDF and summary) is sent to"
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.project} {self.kind} ({self.cron})"


class ShareLink(models.Model):
    """A read-only link to one audit's report for people without an account (audits.sharing). Only the
    token's sha256 is stored: the link is shown once, when it is made, and a leaked database holds none."""

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="share_links")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the token, hex")
    label = models.CharField(max_length=100, blank=True, help_text="Who it was made for")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: until revoked")
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_viewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"share link {self.id} of {self.audit_id}"


class ReportPdf(models.Model):
    """An ended audit's report printed to PDF, stored once per fingerprint of what it shows (audits.report_pdfs):
    asked for by the first request (pending), printed by the `dashboard.render_report_pdf` task on the `reports`
    queue (ready, or failed with the reason), then served from storage until what the report shows changes."""

    class Status(models.TextChoices):
        PENDING = "pending"
        READY = "ready"
        FAILED = "failed"

    # No plain (audit) index: the unique (audit, fingerprint) one serves every lookup by audit.
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="report_pdfs", db_index=False)
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the printed HTML, hex")
    segment = models.CharField(
        max_length=100, blank=True, help_text="The segment's ?segment= value (audits.segments); empty: the whole site"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    file = models.CharField(max_length=255, blank=True, help_text="Its name in the default storage, once ready")
    error = models.CharField(max_length=500, blank=True)
    requested_at = models.DateTimeField(help_text="When a render was last asked for")
    rendered_at = models.DateTimeField(null=True, blank=True, help_text="When the last render ended")
    render_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "fingerprint"], name="report_pdf_unique_per_audit")]

    def __str__(self):
        return f"report PDF {self.fingerprint[:12]} of {self.audit_id} ({self.status})"


class ReportEmail(models.Model):
    """The outbox of a scheduled audit's report e-mail (audits.report_emails): written when the audit completes with
    recipients on its schedule, claimed by one worker at a time (a conditional UPDATE that sets `lease_until`),
    marked sent right after the SMTP server accepted it, retried with backoff by the beat sweep. One per audit,
    so a report is sent once however many workers die on the way."""

    class Status(models.TextChoices):
        PENDING = "pending"  # written, or waiting for a retry
        SENDING = "sending"  # claimed until `lease_until`; a dead worker's claim expires and the sweep sends again
        SENT = "sent"
        FAILED = "failed"  # gave up: attempts exhausted

    audit = models.OneToOneField(Audit, on_delete=models.CASCADE, related_name="report_email")
    recipients = models.JSONField(default=list, help_text="The schedule's addresses when the audit completed")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="report_email_due")]

    def __str__(self):
        return f"report e-mail of {self.audit_id} ({self.status})"
