"""Per-audit crawl state: the frontier (what to fetch, who holds it), the crawl chunks of each round (which
instance holds them, when it last renewed), the link graph and the politeness state."""

from django.db import models


class Frontier(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"
        LEASED = "leased"
        DONE = "done"

    class Source(models.TextChoices):
        START = "start"
        LINK = "link"
        SITEMAP = "sitemap"
        REDIRECT = "redirect"
        PAGINATION = "pagination"  # only a rel=next/prev link leads to it

    # No index of its own: the (audit, …) indexes and constraints below serve every lookup by audit.
    audit = models.ForeignKey("audits.Audit", on_delete=models.CASCADE, related_name="frontier", db_index=False)
    url = models.TextField()
    depth = models.PositiveIntegerField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    found_from = models.TextField(
        blank=True, help_text="The crawled page whose link (or redirect, canonical, hreflang) gave the URL its depth"
    )
    in_sitemap = models.BooleanField(default=False)
    redirect_hops = models.PositiveSmallIntegerField(default=0)
    pattern = models.CharField(max_length=250, blank=True, help_text="URL shape, for the optional per-shape cap")
    path_key = models.CharField(
        max_length=250, blank=True, help_text="The URL without its query, when it has one: query variants per path"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    lease_key = models.CharField(max_length=200, blank=True)
    lease_gen = models.PositiveIntegerField(default=0, help_text="Which run of the chunk holds the lease (fencing)")
    leased_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times handed out to a chunk")
    starts = models.PositiveSmallIntegerField(default=0, help_text="Fetches started one at a time, after a crash")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "url"], name="frontier_unique_url_per_audit")]
        indexes = [
            models.Index(fields=["audit", "state", "depth", "id"], name="frontier_claim_order"),
            models.Index(fields=["audit", "lease_key"], name="frontier_lease_key"),
            models.Index(fields=["audit", "pattern"], name="frontier_pattern"),
            models.Index(fields=["audit", "path_key"], name="frontier_path_key", condition=~models.Q(path_key="")),
        ]

    def __str__(self):
        return f"{self.url} [{self.state}]"


class SkippedURL(models.Model):
    """A new link-found URL a trap rule or cap refused (audits/pipeline/traps.py decides, scratchpad.services
    stores): one row per distinct URL, so the audit can say how many URLs each rule skipped under which shape,
    with examples. Purged with the frontier once the audit's site checks turned them into `crawl-urls-skipped` issues.

    `rule` is one of crawler.traps' shape rules (a URL's own signs) or one of the counting rules below."""

    RULE_CALENDAR_DATES = "calendar-dates"  # its shape already has the project's max dated URLs queued
    RULE_QUERY_VARIANTS = "query-variants"  # its path already has the project's max query variants queued
    RULE_PATTERN_CAP = "pattern-cap"  # its shape already has the project's max_urls_per_pattern URLs queued
    RULE_IDENTICAL_PAGES = "identical-pages"  # its shape's crawled pages keep having one main text (ShapeText)

    audit = models.ForeignKey("audits.Audit", on_delete=models.CASCADE, related_name="skipped_urls", db_index=False)
    url = models.TextField()
    rule = models.CharField(max_length=32)
    pattern = models.CharField(max_length=250, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "url"], name="skippedurl_unique_url_per_audit")]
        indexes = [models.Index(fields=["audit", "rule", "pattern"], name="skippedurl_rule_pattern")]

    def __str__(self):
        return f"{self.url} [{self.rule}]"


class ShapeText(models.Model):
    """Crawled pages per (URL shape, main-text fingerprint), and per shape in all (`text_hash` ""): what the
    identical-pages trap rule counts (audits.pipeline.traps.shape_traps_record). A shape is `trapped` once one main
    text holds the project's max identical pages and most of the shape's pages; its new link-found URLs are then
    skipped. Purged with the frontier."""

    audit = models.ForeignKey("audits.Audit", on_delete=models.CASCADE, related_name="shape_texts", db_index=False)
    pattern = models.CharField(max_length=250)
    text_hash = models.CharField(max_length=16, blank=True, help_text='The main text\'s sha1, shortened; "": the shape')
    pages = models.PositiveIntegerField(default=0)
    trapped = models.BooleanField(default=False, help_text="On the shape's row: its new links are skipped")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "pattern", "text_hash"], name="shapetext_unique_per_audit")
        ]

    def __str__(self):
        return f"{self.pattern} {self.text_hash or '(all)'}: {self.pages}"


class CrawlChunk(models.Model):
    """One chunk of a crawl round and the run of it that holds it: the liveness signal of the crawl.

    A run takes the chunk by moving `generation` (only when it is queued or its holder stopped renewing), renews
    `renewed_at` while it works, and fences every write on (lease key, generation): a run that was paused past its
    lease and taken over finds its generation gone and writes nothing.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"

    audit = models.ForeignKey("audits.Audit", on_delete=models.CASCADE, related_name="crawl_chunks", db_index=False)
    lease_key = models.CharField(max_length=200)
    round_no = models.PositiveIntegerField()
    quota = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    generation = models.PositiveIntegerField(default=0, help_text="Runs that took this chunk so far")
    sent_at = models.DateTimeField(help_text="Last time its message was sent (first dispatch or a re-send)")
    sends = models.PositiveSmallIntegerField(default=1)
    renewed_at = models.DateTimeField(null=True, blank=True, help_text="The holding run's last lease renewal")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "lease_key"], name="crawlchunk_unique_key")]
        indexes = [models.Index(fields=["audit", "round_no"], name="crawlchunk_round")]

    def __str__(self):
        return f"{self.lease_key} [{self.state} g{self.generation}]"


class LinkEdge(models.Model):
    """One distinct target of a crawled page's links: a page linking a URL ten times is one edge with
    link_count 10, so no finding depends on where on the page a link sits (crawler.parse folds them)."""

    # No index of its own: the (audit, …) indexes and constraints below serve every lookup by audit. No database
    # constraint either (the note above audits.models.Page): ~30 edges a page, each checked by a trigger at its
    # commit, were 86 % of a crawl's foreign key checks and ~0.12 PostgreSQL CPU ms a page. An edge is written only
    # in its page's batch, whose last write is the running audit's row (audits.pipeline.persist): no audit, no edge.
    audit = models.ForeignKey(
        "audits.Audit", on_delete=models.CASCADE, related_name="link_edges", db_index=False, db_constraint=False
    )
    # No database constraint (the note above audits.models.Page): ~30 edges a page, each checked at its commit.
    source_page = models.ForeignKey(
        "audits.Page", on_delete=models.CASCADE, related_name="outlinks", db_constraint=False
    )
    target_url = models.TextField()
    anchor_text = models.CharField(max_length=200, blank=True, help_text="The first non-empty text of its links")
    nofollow = models.BooleanField(default=False, help_text="Every link of the page to the target is nofollow")
    internal = models.BooleanField(default=True)
    link_count = models.PositiveIntegerField(default=1, help_text="Links of the source page to the target")

    class Meta:
        indexes = [models.Index(fields=["audit", "target_url"], name="linkedge_audit_target")]

    def __str__(self):
        return f"{self.target_url} <- {self.source_page_id}"


class Throttle(models.Model):
    """Politeness state of one audit: the adaptive window, the next time a request may start, cooldowns.

    In the database so that it holds across chunks, workers and restarts.
    """

    audit = models.OneToOneField("audits.Audit", on_delete=models.CASCADE, related_name="throttle")
    window = models.PositiveSmallIntegerField(default=2, help_text="Concurrent fetches allowed now")
    next_request_at = models.DateTimeField(null=True, blank=True, help_text="No request starts before this")
    cooldown_total_s = models.FloatField(default=0, help_text="Seconds spent waiting out 429/503 so far")
    consecutive_rate_limited = models.PositiveIntegerField(default=0)
    stopped_reason = models.CharField(max_length=200, blank=True, help_text="Why the crawl stopped early")
    urls_capped = models.PositiveIntegerField(default=0, help_text="New URLs skipped by trap rules and caps")
    renders_used = models.PositiveIntegerField(default=0, help_text="Pages rendered with Chromium so far")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"throttle {self.audit_id}: window {self.window}"
