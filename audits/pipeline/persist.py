"""Persist a chunk's page records in batches: pages and their issues upserted with deterministic ids,
link edges and newly found URLs recorded, leases marked done, the heartbeat moved; one transaction each.

Every batch is fenced: it first locks the URLs this run still holds (lease key and generation) and writes
only for those, and it rolls back whole when the audit is no longer running (the counter update that ends
it is conditional on status, and a cancel's update waits for it or it waits for the cancel). So a run that
was taken over, or outlived its audit, writes nothing, and pages_crawled always equals the page rows."""

import functools

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audits.bulk import issues_insert, rows_insert, rows_stored
from audits.checks.page import PAGE_CHECK_TYPES
from audits.checks.skips import skip_sentence
from audits.limits import (
    CHUNK_SEEN_URLS_MAX,
    EXTRACTION_PAGE_BUDGET_S,
    EXTRACTOR_STOPS_BEFORE_SKIP,
    PERSIST_BATCH_PAGES,
)
from audits.models import Audit, AuditEvent, Issue, Page
from audits.pipeline.lifecycle import audit_event
from audits.pipeline.page_record import PageRecord
from audits.pipeline.politeness import Politeness
from audits.pipeline.traps import frontier_caps, shape_pages, shape_traps_record, url_shaped
from crawler.traps import TrapLimits
from scratchpad.models import Throttle
from scratchpad.services import frontier_hold, frontier_record_batch


class _Fenced(Exception):
    """Raised inside a batch's transaction to roll it back: the audit stopped running."""


class BatchPersister:
    """Collects page records and upserts them PERSIST_BATCH_PAGES at a time, one transaction each."""

    def __init__(
        self,
        *,
        audit_id,
        lease_key: str,
        lease_gen: int | None = None,
        batch_size: int | None = None,
        politeness: Politeness | None = None,
        max_per_pattern: int | None = None,
        traps: TrapLimits | None = None,
    ):
        self.audit_id = audit_id
        self.lease_key = lease_key
        self.lease_gen = lease_gen
        self.batch_size = batch_size or PERSIST_BATCH_PAGES
        self.politeness = politeness
        self.max_per_pattern = max_per_pattern
        self.traps = traps  # None: no trap rules (the persister's own tests); a chunk passes its scope's
        self.shape = functools.partial(url_shaped, trap_limits=traps)  # of new URLs the frontier does not know
        self.batch: list[PageRecord] = []
        self.seen_urls: set[str] = set()  # queued by this chunk already: no need to insert them again
        self.finished = 0
        self.stopped = False  # the audit is no longer running, or the run lost its lease: start nothing new
        self.fenced = 0  # page records dropped because the run no longer held them

    def add(self, record: PageRecord) -> None:
        if self.politeness is not None:
            self.politeness.record_rate_limits(record)
        self.batch.append(record)
        if len(self.batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        records, self.batch = self.batch, []
        fenced_before = self.fenced
        try:
            with transaction.atomic():
                held = frontier_hold(
                    audit_id=self.audit_id,
                    lease_key=self.lease_key,
                    lease_gen=self.lease_gen,
                    ids=[r.claimed.id for r in records],
                )
                kept = [r for r in records if r.claimed.id in held]
                self.fenced += len(records) - len(kept)
                if not kept:
                    self.stopped = True  # taken over (or purged): nothing of this run may be written any more
                    return
                finished = self._write(kept)
        except _Fenced:
            self.fenced = fenced_before + len(records)
            self.stopped = True
            return
        self.finished += finished
        if self.politeness is not None:
            self.politeness.end_batch(records)

    def _write(self, records: list[PageRecord]) -> int:
        """The batch's writes, inside flush's transaction; raises _Fenced (rolling all back) when the audit
        is no longer running. Returns how many URLs moved to done."""
        discovered = []
        for record in records:
            for new in record.discovered:
                if new.url not in self.seen_urls:
                    # Only URLs this chunk has not queued yet: most links repeat.
                    discovered.append(new)
                    if len(self.seen_urls) < CHUNK_SEEN_URLS_MAX:
                        self.seen_urls.add(new.url)
        # Pages an earlier run of these URLs stored (a replay) are replaced with what they link and what their page
        # checks found. The others are new, and no other run can write them while this transaction holds their
        # frontier rows: they, their issues and their edges go straight in, with nothing to delete first.
        pages = [r.page for r in records]
        replayed = rows_stored(Page, [page.id for page in pages])
        pages_upsert(pages, fresh=not replayed)
        if replayed:
            # By page id, which is made from the audit and the URL: an (audit, ...) index chosen on stale
            # statistics would read every issue of the audit.
            Issue.objects.filter(page_id__in=replayed, type__in=PAGE_CHECK_TYPES).delete()
        issues_insert((i for r in records for i in r.issues), fresh=not replayed)
        outcome = frontier_record_batch(
            audit_id=self.audit_id,
            lease_key=self.lease_key,
            lease_gen=self.lease_gen,
            done_ids=[r.claimed.id for r in records],
            discovered=discovered,
            edges=[e for r in records for e in r.edges],
            caps=frontier_caps(self.max_per_pattern, self.traps),
            shape=self.shape,
            replayed=replayed,
        )
        if outcome.capped:
            Throttle.objects.filter(audit_id=self.audit_id).update(urls_capped=F("urls_capped") + outcome.capped)
        for first in outcome.first_skips:
            # Once per (rule, shape), in the batch's transaction: a rolled-back batch says nothing.
            audit_event(
                audit_id=self.audit_id,
                kind=AuditEvent.Kind.URLS_SKIPPED,
                message=skip_sentence(first.rule, first.pattern) + f", e.g. {first.example}",
                rule=first.rule,
                pattern=first.pattern,
                example=first.example,
            )
        if self.traps is not None:
            # Late in the transaction: every batch of a shape's pages takes the shape's counter row.
            shape_traps_record(
                audit_id=self.audit_id,
                pages=shape_pages([r.page for r in records]),
                max_identical=self.traps.max_identical_pages_per_pattern,
            )
        # Last, and conditional: this row lock orders the batch against a cancel or a finish.
        running = Audit.objects.filter(id=self.audit_id, status=Audit.Status.RUNNING).update(
            pages_crawled=F("pages_crawled") + outcome.finished,
            # The URLs known (crawled or queued) grow as pages are found, not only between rounds: the progress
            # bars read crawled against them (audits.selectors.crawl_bar).
            pages_total=F("pages_total") + outcome.queued,
            last_progress_at=timezone.now(),
        )
        if not running:
            raise _Fenced
        _extraction_stops_report(self.audit_id, records)
        return outcome.finished


def _extraction_stops_report(audit_id, records: list[PageRecord]) -> None:
    """One warning event per extractor stopped over a page's time budget, the first time in the audit. After the
    audit row's update: it holds that row's lock to the commit, so two chunks' batches cannot both report one."""
    first_page = {}
    for record in records:
        if record.extraction_stopped:
            first_page.setdefault(record.extraction_stopped, record.page.url)
    if not first_page:
        return
    reported = set(
        AuditEvent.objects.filter(
            audit_id=audit_id, kind=AuditEvent.Kind.EXTRACTION_STOPPED, data__extractor__in=list(first_page)
        ).values_list("data__extractor", flat=True)
    )
    for name, url in first_page.items():
        if name not in reported:
            audit_event(
                audit_id=audit_id,
                kind=AuditEvent.Kind.EXTRACTION_STOPPED,
                message=f"Warning: the custom extractor “{name}” was stopped on {url[:200]}: it ran past the "
                f"{EXTRACTION_PAGE_BUDGET_S:g} s extraction budget of a page. Such pages store “stopped” for it and "
                f"run none of the extractors after it; after {EXTRACTOR_STOPS_BEFORE_SKIP} such pages a crawl chunk "
                "runs it no more. The crawl goes on.",
                extractor=name,
                page_url=url,
            )


PAGE_UPSERT_FIELDS = [f.name for f in Page._meta.concrete_fields if f.name not in ("id", "audit") and not f.primary_key]


def pages_upsert(pages: list[Page], *, fresh: bool = False) -> None:
    """Insert the pages, or update every field but the id and audit of those already there (a replayed batch);
    `fresh`: none is there (audits.bulk.rows_insert). Through COPY on PostgreSQL (audits.bulk): Django's
    bulk_create quoted each of a batch's ~1,000 values in Python, ~12 % of a crawl worker's CPU."""
    rows_insert(Page, pages, update_fields=PAGE_UPSERT_FIELDS, fresh=fresh)
