"""Stage of finalize: every page's inlinks, linking pages and issue rows counted once and stored as its PageCounts
row with a copy of its other sort keys, so the pages grid sorts and pages by plain columns of a narrow table.
Writes; the reads are audits.selectors.pages and audits.selectors.links."""

from itertools import islice

from django.db import connection
from django.db.models import BooleanField, Count, ExpressionWrapper, F, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Length

from audits.fencing import FinalizeRun, finalize_atomic
from audits.models import Issue, Page, PageCounts
from audits.selectors.links import inlink_pages_subquery, page_inlinks_subquery
from audits.selectors.pages import HTML_PAGE_Q, HTML_TYPES
from scratchpad.models import LinkEdge

COUNTS_WRITE_BATCH = 1_000  # PageCounts rows a bulk INSERT where the counts are not one INSERT … SELECT (SQLite)


def _issues_subquery() -> Subquery:
    issues = Issue.objects.filter(page_id=OuterRef("pk")).order_by().values("page_id").annotate(n=Count("id"))
    return Subquery(issues.values("n")[:1], output_field=IntegerField())


# The page's sort keys PageCounts copies (its columns of the same names), in the INSERT's order.
SORT_KEYS = (
    "status_code", "depth", "title", "title_len", "description_len", "h1", "h1_len", "h1_count",
    "response_time_ms", "bytes", "word_count", "html",
)  # fmt: skip


def _sort_key_annotations() -> dict:
    """The sort keys as annotations of a Page queryset (`k_<key>`), for the batched writes of SQLite."""
    computed = {
        "title_len": Length("title"),
        "description_len": Coalesce(Length("meta_description"), Value(0)),
        "h1_len": Length("h1"),
        "html": ExpressionWrapper(HTML_PAGE_Q, output_field=BooleanField()),
    }
    return {f"k_{key}": computed.get(key, F(key)) for key in SORT_KEYS}


def page_counts_store(*, audit_id, run: FinalizeRun | None = None) -> int:
    """Count every page's inlinks, linking pages and issue rows once, after the site checks wrote the last issues
    (finalize calls it), and store them with the page's sort keys (SORT_KEYS) as the audit's PageCounts rows: the
    ones of an earlier run of finalize are replaced in the same transaction, so it can run again. Returns the pages
    counted. Given finalize's `run`, fenced on it (audits.fencing).

    One INSERT … SELECT: the page rows are read, not rewritten (as columns of Page the counts rewrote every ~2.2 KB
    page row and its ten index entries, and left the dead copy in the page heap). On PostgreSQL the edges and
    issues are each aggregated once (a hash join onto the pages) instead of two index lookups per page."""
    with finalize_atomic(run):
        PageCounts.objects.filter(audit_id=audit_id).delete()
        if connection.vendor != "postgresql":
            rows = (
                Page.objects.filter(audit_id=audit_id)
                .annotate(
                    n_inlinks=Coalesce(page_inlinks_subquery(), Value(0)),
                    n_pages=inlink_pages_subquery(),
                    n_issues=Coalesce(_issues_subquery(), Value(0)),
                )
                .annotate(**_sort_key_annotations())
                .order_by("url")
                .values_list("id", "url", "n_inlinks", "n_pages", "n_issues", *(f"k_{key}" for key in SORT_KEYS))
            )
            counts = (
                PageCounts(
                    page_id=page_id,
                    audit_id=audit_id,
                    url=url,
                    url_rank=rank,
                    inlinks=n,
                    inlink_pages=sources,
                    issues=i,
                    **dict(zip(SORT_KEYS, keys, strict=True)),
                )
                for rank, (page_id, url, n, sources, i, *keys) in enumerate(
                    rows.iterator(chunk_size=COUNTS_WRITE_BATCH), start=1
                )
            )
            stored = 0
            while batch := list(islice(counts, COUNTS_WRITE_BATCH)):  # bounded memory on `make run`'s SQLite too
                stored += len(PageCounts.objects.bulk_create(batch))
            return stored
        pages, edges, issues = Page._meta.db_table, LinkEdge._meta.db_table, Issue._meta.db_table
        keys = ", ".join(SORT_KEYS)
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {PageCounts._meta.db_table}
                    (page_id, audit_id, url, url_rank, inlinks, inlink_pages, issues, {keys})
                SELECT p.id, p.audit_id, p.url, ROW_NUMBER() OVER (ORDER BY p.url),
                    COALESCE(l.n, 0), COALESCE(l.sources, 0), COALESCE(i.n, 0),
                    p.status_code, p.depth, p.title, LENGTH(p.title), COALESCE(LENGTH(p.meta_description), 0), p.h1,
                    LENGTH(p.h1), p.h1_count, p.response_time_ms, p.bytes, p.word_count,
                    COALESCE(p.status_code >= 200 AND p.status_code < 300 AND p.content_type = ANY(%(html)s), FALSE)
                FROM {pages} p
                LEFT JOIN (
                    SELECT target_url, SUM(link_count) AS n, COUNT(*) AS sources
                    FROM {edges} WHERE audit_id = %(audit)s GROUP BY target_url
                ) l ON l.target_url = p.url
                LEFT JOIN (
                    SELECT page_id, COUNT(*) AS n FROM {issues}
                    WHERE audit_id = %(audit)s AND page_id IS NOT NULL GROUP BY page_id
                ) i ON i.page_id = p.id
                WHERE p.audit_id = %(audit)s
                """,
                {"audit": audit_id, "html": list(HTML_TYPES)},
            )
            return cursor.rowcount
