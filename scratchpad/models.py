"""Per-audit crawl state: the frontier (what to fetch, who holds it) and the link graph."""

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

    audit = models.ForeignKey("audits.Audit", on_delete=models.CASCADE, related_name="frontier")
    url = models.TextField()
    depth = models.PositiveIntegerField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    in_sitemap = models.BooleanField(default=False)
    redirect_hops = models.PositiveSmallIntegerField(default=0)
    pattern = models.CharField(max_length=250, blank=True, help_text="URL shape, for the endless-space cap")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    lease_key = models.CharField(max_length=200, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times handed out to a chunk")
    starts = models.PositiveSmallIntegerField(default=0, help_text="Fetches started one at a time, after a crash")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "url"], name="frontier_unique_url_per_audit")]
        indexes = [
            models.Index(fields=["audit", "state", "depth", "id"], name="frontier_claim_order"),
            models.Index(fields=["audit", "lease_key"], name="frontier_lease_key"),
            models.Index(fields=["audit", "pattern"], name="frontier_pattern"),
        ]

    def __str__(self):
        return f"{self.url} [{self.state}]"


class LinkEdge(models.Model):
    audit = models.ForeignKey("audits.Audit", on_delete=models.CASCADE, related_name="link_edges")
    source_page = models.ForeignKey("audits.Page", on_delete=models.CASCADE, related_name="outlinks")
    target_url = models.TextField()
    anchor_text = models.CharField(max_length=200, blank=True)
    nofollow = models.BooleanField(default=False)
    internal = models.BooleanField(default=True)

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
    urls_capped = models.PositiveIntegerField(default=0, help_text="New URLs dropped by the per-pattern cap")
    renders_used = models.PositiveIntegerField(default=0, help_text="Pages rendered with Chromium so far")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"throttle {self.audit_id}: window {self.window}"
