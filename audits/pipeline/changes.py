"""Stage of finalize: what changed on each URL between the audit and its baseline, stored as PageChange rows (one per
URL and field; a URL only one audit crawled; a line of robots.txt; a sitemap document found, gone or read
differently) and counted into Audit.stats["changes"]
(audits.stats.change_stats_count). Also the baseline's rules: the default (the project's previous completed audit
of the same mode), the checks a chosen one passes, and choosing another later (recomputed by a task).

The database compares: it joins the two audits' pages by URL and returns only the pages where a column a field
reads differs (the thresholds applied), streamed through a server-side cursor; this module turns each into its
field rows and writes them a batch at a time, so memory holds one batch whatever the audit's size. Not an INSERT …
SELECT: a change's id is `page_change_id_for` (uuid5, i.e. SHA-1), which PostgreSQL computes only with an extension
the project does not install, and a few fields are read by rules that live in Python once (robots directives,
indexability's reason, the sets of structured-data types and hreflang), which SQL would have to copy.

What a consultant expects to read: a page fetched in both audits compares its status, redirect, indexability,
depth, inlinks and sitemap presence; its content fields (canonical, robots directives, title, description, H1,
words, main text, structured data, hreflang) only when it was fetched and answered 2xx in both, so a page that now
fails or redirects is a status change (and its indexability), not a dozen emptied fields.
"""

import difflib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from urllib.parse import urlsplit

from django.db import connection, transaction
from django.db.models import Q

from audits.checks.external import db_id
from audits.checks.robots import robots_directives
from audits.dispatch import CHANGES_COMPUTE, task_send
from audits.errors import AuditRefused, ErrorCode
from audits.fencing import FinalizeRun, finalize_atomic
from audits.limits import finalize_time_limit_s
from audits.models import Audit, Page, PageChange, PageCounts, page_change_id_for
from audits.pipeline.discovery import SITEMAP_ERRORS_KEPT, SITEMAPS_KEPT
from audits.pipeline.start import Mode, audit_mode, baseline_checked
from audits.stats import change_stats_count

logger = logging.getLogger(__name__)
Field = PageChange.Field
Direction = PageChange.Direction

# A word count changes when it moves by at least this share of the baseline's count and this many words (both):
# 300 -> 330 words is an edit, 300 -> 420 a rewrite; 10 -> 20 is not worth a row.
WORDS_CHANGE_MIN_RATIO = 0.20
WORDS_CHANGE_MIN_WORDS = 50
# Inlinks change when they move by at least this share of the baseline's and this many links (both): a page
# that lost its link from the navigation loses hundreds, a new blog post moves a few.
INLINKS_CHANGE_MIN_RATIO = 0.20
INLINKS_CHANGE_MIN_LINKS = 10
CHANGE_STREAM_ROWS = 2000  # compared pages fetched (and their change rows written) per batch
ROBOTS_TXT_CHANGES_MAX = 500  # robots.txt lines added or removed, stored at most (a rewritten 500 KiB file)
# Sitemap documents added, removed or changed, stored at most. Discovery keeps 50 sitemaps and 20 errors per audit, so
# two audits name at most 140: a guard, like the robots.txt one, should discovery ever keep more.
SITEMAP_CHANGES_MAX = 100
SITEMAP_READ = "read"  # a sitemap's state when discovery read it without an error (else "error: <message>")
MAIN_TEXT_HASH_SHOWN_CHARS = 8  # of the main text's sha1, beside its word count in before/after

# The columns the fields read, in the order the comparison selects them for each side.
_COLUMNS = (
    "url", "status_code", "fetch_class", "redirect_url", "content_type", "is_indexable", "meta_robots", "x_robots_tag",
    "canonical_url", "canonical_header", "title", "meta_description", "h1", "word_count", "word_unit",
    "main_text_hash", "main_words", "depth", "inlinks_count", "in_sitemap", "sd_types", "hreflang",
)  # fmt: skip


@dataclass(frozen=True)
class _Side:
    """One audit's page of a URL, as the comparison reads it (sd_types: structured_data's "types")."""

    url: str
    status_code: int | None
    fetch_class: str
    redirect_url: str
    content_type: str
    is_indexable: bool
    meta_robots: str
    x_robots_tag: str
    canonical_url: str
    canonical_header: str
    title: str
    meta_description: str | None
    h1: str
    word_count: int
    word_unit: str
    main_text_hash: str
    main_words: int
    depth: int | None
    inlinks_count: int | None
    in_sitemap: bool
    sd_types: object
    hreflang: object

    @property
    def answered_ok(self) -> bool:
        """Fetched and answered 2xx: its content fields say something about the page."""
        return self.fetch_class == Page.FetchClass.OK and self.status_code is not None and 200 <= self.status_code < 300


# --- the baseline ----------------------------------------------------------------------------------


def baseline_default(audit: Audit) -> Audit | None:
    """The project's last completed audit of the same mode started before this one whose pages are kept. A fix
    check (Audit.verifies: a few URLs re-checked) has none and is none."""
    if audit.verifies_id is not None:
        return None
    mode = audit_mode(audit)
    same_mode = Q(config__mode=mode)
    if mode == Mode.CRAWL:
        same_mode |= Q(config__mode__isnull=True)  # started before list mode existed: a crawl
    return (
        Audit.objects.filter(
            same_mode,
            project_id=audit.project_id,
            status=Audit.Status.COMPLETED,
            created_at__lt=audit.created_at,
            summarised_at__isnull=True,
            verifies__isnull=True,
        )
        .exclude(id=audit.id)
        .order_by("-created_at")
        .first()
    )


def audit_baseline_set(*, audit: Audit, baseline) -> Audit:
    """Measure a completed audit's changes against another baseline (an Audit or id): checked, stored, and the
    changes recomputed by the `audits.changes_compute` task after commit. A new audit takes its baseline when it
    starts (audit_start(baseline=)). Refuses with `baseline_invalid`."""
    if audit.status != Audit.Status.COMPLETED:
        raise AuditRefused(
            ErrorCode.BASELINE_INVALID,
            f"Only a completed audit's baseline can be chosen; this one is {audit.status}.",
            field="baseline",
        )
    if audit.summarised_at is not None:
        raise AuditRefused(
            ErrorCode.BASELINE_INVALID,
            "This audit keeps its summary only (its pages were pruned): its changes stay as they were computed.",
            field="baseline",
        )
    chosen = baseline_checked(project=audit.project, baseline=baseline, audit=audit)
    with transaction.atomic():
        Audit.objects.filter(id=audit.id).update(baseline=chosen)
        # finalize's limit for the audit's pages: this is one of its stages, run alone (600 s would not do at 5M)
        task_send(CHANGES_COMPUTE, str(audit.id), time_limit=finalize_time_limit_s(audit.pages_crawled))
    audit.refresh_from_db()
    return audit


def changes_recompute(*, audit_id) -> bool:
    """The `audits.changes_compute` task's work: a completed audit's changes stored again against its baseline and
    their counts written into its stats. False when the audit is not completed or its pages were pruned."""
    audit = Audit.objects.filter(id=audit_id, status=Audit.Status.COMPLETED, summarised_at__isnull=True).first()
    if audit is None:
        return False
    with transaction.atomic():
        changes_store(audit)
        locked = Audit.objects.select_for_update().get(id=audit_id)
        locked.stats = {**(locked.stats or {}), "changes": change_stats_count(audit_id=audit_id)}
        locked.save(update_fields=["stats"])
    return True


# --- the comparison --------------------------------------------------------------------------------


def changes_store(audit: Audit, *, run: FinalizeRun | None = None) -> Audit | None:
    """Replace the audit's PageChange rows with its changes against its baseline (Audit.baseline when it is still a
    valid one, else baseline_default, stored on the audit). Returns the baseline; None: nothing to compare with,
    no rows. Idempotent: the same rows, same ids, each time. Given finalize's `run`, fenced on it (audits.fencing)."""
    with finalize_atomic(run):
        # One computation at a time per audit (finalize, a chosen baseline's task): both delete then insert. The row
        # as stored, not as the caller holds it (robots.txt is written by discovery, after the start's object).
        locked = Audit.objects.select_for_update().get(id=audit.id)
        baseline = _baseline_for(locked)
        if locked.baseline_id != (baseline.id if baseline else None):
            Audit.objects.filter(id=audit.id).update(baseline=baseline)
        audit.baseline = baseline
        PageChange.objects.filter(audit_id=audit.id).delete()
        if baseline is None:
            return None
        stored = 0
        batch: list[PageChange] = []
        for url, field, direction, before, after, key in _changes(locked, baseline):
            batch.append(
                PageChange(
                    id=page_change_id_for(audit.id, url, field, key),
                    audit_id=audit.id,
                    baseline_id=baseline.id,
                    url=url,
                    field=field,
                    direction=direction,
                    before=before,
                    after=after,
                )
            )
            if len(batch) >= CHANGE_STREAM_ROWS:
                stored += len(PageChange.objects.bulk_create(batch))
                batch = []
        stored += len(PageChange.objects.bulk_create(batch))
    logger.info("changes stored", extra={"audit_id": str(audit.id), "baseline": str(baseline.id), "rows": stored})
    return baseline


def _baseline_for(audit: Audit) -> Audit | None:
    chosen = audit.baseline
    if chosen is not None:
        try:
            return baseline_checked(project=audit.project, baseline=chosen, audit=audit)
        except AuditRefused:  # deleted, pruned or otherwise unusable since it was chosen: the default instead
            logger.info("chosen baseline unusable", extra={"audit_id": str(audit.id), "baseline": str(chosen.id)})
    return baseline_default(audit)


def _changes(audit: Audit, baseline: Audit) -> Iterator[tuple[str, str, str, str, str, str]]:
    """(url, field, direction, before, after, id key) of every change, as the database hands the pages over."""
    yield from _only_in(audit.id, baseline.id, Field.ADDED)
    # A list audit looked for its URLs only: one it was not given is not gone (a fix check of 12 URLs against a
    # 100,000-page crawl would list 99,988).
    if audit_mode(audit) != Mode.LIST:
        yield from _only_in(baseline.id, audit.id, Field.REMOVED)
    for url, now, then in _compared_pages(audit.id, baseline.id):
        for field, direction, before, after in page_changes(now, then):
            yield url, field, direction, before, after, ""
    yield from islice(_robots_txt_changes(audit, baseline), ROBOTS_TXT_CHANGES_MAX)
    yield from islice(_sitemap_changes(audit, baseline), SITEMAP_CHANGES_MAX)


def _only_in(audit_id, other_id, field: str) -> Iterator[tuple]:
    """URLs of `audit_id` the other audit did not crawl: added (this audit's) or removed (the baseline's), with the
    status the audit that has them got."""
    table = connection.ops.quote_name(Page._meta.db_table)
    sql = f"""
        SELECT p.url, p.status_code, p.fetch_class FROM {table} p
        WHERE p.audit_id = %s AND NOT EXISTS (SELECT 1 FROM {table} o WHERE o.audit_id = %s AND o.url = p.url)
    """
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [db_id(audit_id), db_id(other_id)])
        while rows := cursor.fetchmany(CHANGE_STREAM_ROWS):
            for url, status_code, fetch_class in rows:
                status = status_text(status_code, fetch_class)
                if field == Field.ADDED:
                    yield url, field, Direction.ADDED, "", status, ""
                else:
                    yield url, field, Direction.REMOVED, status, "", ""


def _compared_pages(audit_id, baseline_id) -> Iterator[tuple[str, _Side, _Side]]:
    """(url, this audit's page, the baseline's) for every URL both crawled whose compared columns differ."""
    table = connection.ops.quote_name(Page._meta.db_table)
    counts = connection.ops.quote_name(PageCounts._meta.db_table)
    postgres = connection.vendor == "postgresql"

    def differ(a: str, b: str) -> str:  # NULL-safe; SQLite before 3.39 has no IS DISTINCT FROM
        return f"({a} IS DISTINCT FROM {b})" if postgres else f"({a} IS NOT {b})"

    def types(alias: str) -> str:
        column = f"{alias}.structured_data"
        return f"({column} -> 'types')" if postgres else f"json_extract({column}, '$.types')"

    def column(alias: str, name: str) -> str:
        if name == "sd_types":
            return types(alias)
        if name == "inlinks_count":  # PageCounts.inlinks, joined as {alias}k; NULL when not stored
            return f"{alias}k.inlinks"
        return f"{alias}.{name}"

    def select(alias: str) -> str:
        return ", ".join(column(alias, c) for c in _COLUMNS)

    def answered_ok(alias: str) -> str:  # _Side.answered_ok
        return f"{alias}.fetch_class = 'ok' AND {alias}.status_code BETWEEN 200 AND 299"

    # A superset of the pages page_changes() finds a change on (of the thresholds, only their absolute parts): the
    # exact rules are page_changes', written once.
    sql = f"""
        SELECT {select("c")}, {select("b")}
        FROM {table} c JOIN {table} b ON b.audit_id = %s AND b.url = c.url
        LEFT JOIN {counts} ck ON ck.page_id = c.id LEFT JOIN {counts} bk ON bk.page_id = b.id
        WHERE c.audit_id = %s AND (
            {differ("c.status_code", "b.status_code")} OR c.fetch_class <> b.fetch_class
            OR c.redirect_url <> b.redirect_url OR c.is_indexable <> b.is_indexable
            OR (NOT c.is_indexable AND (c.content_type <> b.content_type OR c.meta_robots <> b.meta_robots
                OR c.x_robots_tag <> b.x_robots_tag OR c.canonical_url <> b.canonical_url
                OR c.canonical_header <> b.canonical_header))
            OR {differ("c.depth", "b.depth")} OR c.in_sitemap <> b.in_sitemap
            OR ABS(COALESCE(ck.inlinks, 0) - COALESCE(bk.inlinks, 0)) >= %s
            OR ({answered_ok("c")} AND {answered_ok("b")} AND (
                c.canonical_url <> b.canonical_url OR c.canonical_header <> b.canonical_header
                OR c.meta_robots <> b.meta_robots OR c.x_robots_tag <> b.x_robots_tag
                OR c.title <> b.title OR {differ("c.meta_description", "b.meta_description")} OR c.h1 <> b.h1
                OR ABS(c.word_count - b.word_count) >= %s OR c.main_text_hash <> b.main_text_hash
                OR {differ(types("c"), types("b"))} OR {differ("c.hreflang", "b.hreflang")}))
        )
    """
    width = len(_COLUMNS)
    params = [db_id(baseline_id), db_id(audit_id), INLINKS_CHANGE_MIN_LINKS, WORDS_CHANGE_MIN_WORDS]
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHANGE_STREAM_ROWS):
            for row in rows:
                yield row[0], _Side(*row[:width]), _Side(*row[width:])


# --- the fields ------------------------------------------------------------------------------------


def page_changes(now: _Side, then: _Side) -> Iterator[tuple[str, str, str, str]]:
    """(field, direction, before, after) for each field that differs between the baseline's page (`then`) and this
    audit's (`now`) of one URL."""
    yield from _text_change(
        Field.STATUS, status_text(then.status_code, then.fetch_class), status_text(now.status_code, now.fetch_class)
    )
    yield from _text_change(Field.REDIRECT, then.redirect_url, now.redirect_url)
    before, after = indexability_text(then), indexability_text(now)
    if before != after:
        if then.is_indexable != now.is_indexable:
            yield Field.INDEXABILITY, Direction.UP if now.is_indexable else Direction.DOWN, before, after
        else:
            yield Field.INDEXABILITY, Direction.CHANGED, before, after
    yield from _number_change(Field.DEPTH, then.depth, now.depth)
    if then.inlinks_count is not None and now.inlinks_count is not None:
        if _beyond(then.inlinks_count, now.inlinks_count, INLINKS_CHANGE_MIN_RATIO, INLINKS_CHANGE_MIN_LINKS):
            yield from _number_change(Field.INLINKS, then.inlinks_count, now.inlinks_count)
    if then.in_sitemap != now.in_sitemap:
        yield (Field.IN_SITEMAP, Direction.ADDED if now.in_sitemap else Direction.REMOVED,
               _yes_no(then.in_sitemap), _yes_no(now.in_sitemap))  # fmt: skip
    if not (then.answered_ok and now.answered_ok):
        return
    yield from _text_change(Field.CANONICAL, _canonical(then), _canonical(now))
    yield from _text_change(Field.ROBOTS, robots_text(then), robots_text(now))
    yield from _text_change(Field.TITLE, then.title, now.title)
    yield from _text_change(Field.DESCRIPTION, then.meta_description or "", now.meta_description or "")
    yield from _text_change(Field.H1, then.h1, now.h1)
    if then.word_unit == now.word_unit and _beyond(
        then.word_count, now.word_count, WORDS_CHANGE_MIN_RATIO, WORDS_CHANGE_MIN_WORDS
    ):
        yield from _number_change(Field.WORDS, then.word_count, now.word_count)
    if then.main_text_hash != now.main_text_hash:
        yield from _text_change(Field.CONTENT, _main_text(then), _main_text(now))
    yield from _text_change(Field.STRUCTURED_DATA, _types_text(then.sd_types), _types_text(now.sd_types))
    yield from _text_change(Field.HREFLANG, _hreflang_text(then.hreflang), _hreflang_text(now.hreflang))


def status_text(status_code: int | None, fetch_class: str) -> str:
    """A page's answer in before/after: "200", "no answer", "403 (blocked)", "429 (rate limited)"."""
    if status_code is None:
        return "no answer"
    if fetch_class == Page.FetchClass.BLOCKED:
        return f"{status_code} (blocked)"
    if fetch_class == Page.FetchClass.RATE_LIMITED:
        return f"{status_code} (rate limited)"
    if fetch_class == Page.FetchClass.ERROR:
        return f"{status_code} (not read)"  # a deadline or a broken connection after the headers
    return str(status_code)


def indexability_text(page) -> str:
    """ "indexable", or "non-indexable: <why>" with the first reason audits.pipeline.page_record._is_indexable
    finds, in its order and in the words the sitemap-url-not-indexable check uses (no answer, redirect, non-2xx
    status, noindex, canonicalized) plus those it has no case for (blocked, rate limited, not HTML)."""
    if page.is_indexable:
        return "indexable"
    return f"non-indexable: {non_indexable_reason(page)}"


def non_indexable_reason(page) -> str:
    """Why a page is not indexable, in _is_indexable's order (`page`: a Page or anything with its columns)."""
    if page.fetch_class == Page.FetchClass.BLOCKED:
        return "blocked"
    if page.fetch_class == Page.FetchClass.RATE_LIMITED:
        return "rate limited"
    if page.fetch_class != Page.FetchClass.OK or page.status_code is None:
        return "no answer"
    if not 200 <= page.status_code < 300:
        return "redirect" if page.redirect_url or 300 <= page.status_code < 400 else "non-2xx status"
    if page.redirect_url:  # a 0-second meta refresh
        return "redirect"
    if page.content_type not in ("text/html", "application/xhtml+xml"):
        return "not HTML"
    if "noindex" in robots_directives(page.meta_robots, page.x_robots_tag):
        return "noindex"
    if _canonical(page) not in ("", page.url):
        return "canonicalized"
    return "unknown"  # the stored decision said no for a reason this reading does not know (a rule added since)


def robots_text(page) -> str:
    """The robots directives that apply to us (meta robots and X-Robots-Tag, audits.checks.robots), sorted."""
    return ", ".join(sorted(robots_directives(page.meta_robots, page.x_robots_tag)))


def _canonical(page) -> str:
    return page.canonical_url or page.canonical_header


def _main_text(page: _Side) -> str:
    if not page.main_text_hash:
        return ""
    return f"{page.main_words} words ({page.main_text_hash[:MAIN_TEXT_HASH_SHOWN_CHARS]})"


def _json(value):
    return json.loads(value) if isinstance(value, str | bytes) else value


def _types_text(value) -> str:
    types = _json(value)
    return ", ".join(sorted({str(t) for t in types})) if isinstance(types, list) else ""


def _hreflang_text(value) -> str:
    pairs = _json(value)
    if not isinstance(pairs, list):
        return ""
    kept = {f"{pair[0]} {pair[1]}" for pair in pairs if isinstance(pair, list | tuple) and len(pair) == 2}
    return "; ".join(sorted(kept))


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _beyond(before: int, after: int, min_ratio: float, min_amount: int) -> bool:
    moved = abs(after - before)
    return moved >= min_amount and moved >= min_ratio * before


def _text_change(field: str, before: str, after: str) -> Iterator[tuple]:
    if before == after:
        return
    if not before:
        direction = Direction.ADDED
    elif not after:
        direction = Direction.REMOVED
    else:
        direction = Direction.CHANGED
    yield field, direction, before, after


def _number_change(field: str, before: int | None, after: int | None) -> Iterator[tuple]:
    if before == after:
        return
    if before is None or after is None:
        direction = Direction.ADDED if before is None else Direction.REMOVED
    else:
        direction = Direction.UP if after > before else Direction.DOWN
    yield field, direction, "" if before is None else str(before), "" if after is None else str(after)


# --- robots.txt ------------------------------------------------------------------------------------


def robots_txt_url(audit: Audit) -> str:
    """The site's /robots.txt, the URL of its line changes."""
    parts = urlsplit(audit.site_url or audit.start_url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


def _robots_lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _robots_txt_changes(audit: Audit, baseline: Audit) -> Iterator[tuple]:
    """One row per non-blank line removed or added (in order: a line moved to another group is both)."""
    before, after = _robots_lines(baseline.robots_txt), _robots_lines(audit.robots_txt)
    url = robots_txt_url(audit)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, b1, b2, a1, a2 in matcher.get_opcodes():
        if op == "equal":
            continue
        lines = [(Direction.REMOVED, i, before[i], "") for i in range(b1, b2)]
        lines += [(Direction.ADDED, i, "", after[i]) for i in range(a1, a2)]
        for direction, index, old, new in lines:
            yield url, Field.ROBOTS_TXT, direction, old, new, robots_txt_change_key(direction, index)


def robots_txt_change_key(direction: str, line_index: int) -> str:
    """The id key of a robots.txt line's change: page_change_id_for(audit, robots.txt URL, "robots_txt", key), the
    line's index among the non-blank lines of the file it is in (the baseline's when removed)."""
    return f"{direction}|{line_index}"


# --- sitemaps --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SitemapReading:
    """What one audit's discovery stored of its sitemap documents: URL -> state (SITEMAP_READ or "error: <message>"),
    and how far the stored lists, capped by discovery, can be taken as the whole story."""

    states: dict[str, str]
    all_errors: bool  # the errors list is below its cap: a sitemap without a stored error was read
    all_found: bool  # neither list is at its cap: a sitemap absent from both was not found


def sitemap_reading(discovery) -> SitemapReading | None:
    """The sitemaps of Audit.discovery: those found ("sitemaps") and those that failed ("sitemap_errors", "URL:
    message"; one not in "sitemaps", such as an index's child nested too deep, counts as found with its error).
    None when the audit read no sitemap (a URL list)."""
    if not isinstance(discovery, dict) or not isinstance(discovery.get("sitemaps"), list):
        return None
    found = [str(url) for url in discovery["sitemaps"]]
    errors = [str(error) for error in discovery.get("sitemap_errors") or []]
    states = dict.fromkeys(found, SITEMAP_READ)
    failed: dict[str, list[str]] = {}
    for error in errors:
        url, _sep, message = error.partition(": ")  # a URL holds no ": " (a space is escaped)
        failed.setdefault(url, []).append(message)
    for url, messages in failed.items():
        states[url] = "error: " + "; ".join(messages)
    all_errors = len(errors) < SITEMAP_ERRORS_KEPT
    return SitemapReading(states=states, all_errors=all_errors, all_found=all_errors and len(found) < SITEMAPS_KEPT)


def _sitemap_changes(audit: Audit, baseline: Audit) -> Iterator[tuple]:
    """One row per sitemap document (url: the sitemap's) found by one audit only (added with its state now, removed
    with its state then) or found by both in another state (changed: read <-> an error, or another error), by URL.
    Only when both read sitemaps, the same way: a URL list reads none, and a sitemap
    audit only its sitemap, where a crawl reads robots.txt's and /sitemap.xml. What the stored lists' caps may have
    left out is not guessed: no added or removed row against a list at its cap, no "read" from a full errors list."""
    mode = audit_mode(audit)
    if mode == Mode.LIST or audit_mode(baseline) != mode:
        return
    now, then = sitemap_reading(audit.discovery), sitemap_reading(baseline.discovery)
    if now is None or then is None:  # one of them stored no list of sitemaps
        return
    for url in sorted(now.states.keys() | then.states.keys()):
        before, after = then.states.get(url), now.states.get(url)
        if before == after:
            continue
        if before is None:
            if not then.all_found:
                continue
            direction, before = Direction.ADDED, ""
        elif after is None:
            if not now.all_found:
                continue
            direction, after = Direction.REMOVED, ""
        elif (before == SITEMAP_READ and not then.all_errors) or (after == SITEMAP_READ and not now.all_errors):
            continue
        else:
            direction = Direction.CHANGED
        # One row per sitemap and field: the URL alone keys its id (page_change_id_for), as a page's fields do.
        yield url, Field.SITEMAP, direction, before, after, ""
