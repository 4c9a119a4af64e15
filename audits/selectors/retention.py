"""Reads about retention (audits.retention prunes; this module only reads): whether an audit is summarised only,
the counts of a comparison stored before its page-level rows went, and the database space a project takes."""

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Sum

from audits.models import AgentFetch, Audit, AuditEvent, ExternalLink, Issue, LighthouseResult, Page, PageChange
from scratchpad.models import LinkEdge

SUMMARISED_MESSAGE = (
    "This audit is summarised only: its pages, issues and links were pruned by the project's history setting "
    "(keep page rows for the last {keep} audits). Its score, issue counts by type, changes and trend point stay."
)


def audit_is_summarised(audit: Audit) -> bool:
    return audit.summarised_at is not None


def comparison_kept(*, audit: Audit, base: Audit) -> dict | None:
    """The counts of `audit` against `base` stored when retention pruned one of them (audits.retention
    .comparison_counts: by_type, totals, pages, new_issues); None when nothing was stored for the pair."""
    for newer, older in ((audit, base), (base, audit)):
        kept = ((newer.stats or {}).get("comparisons") or {}).get(str(older.id))
        if kept is not None:
            return kept if newer is audit else None  # stored the other way round: not this comparison
    return None


@dataclass
class TableSpace:
    table: str
    rows: int
    estimated: bool  # the rows are an estimate (see project_space's method)
    bytes: int | None  # None: not known on this database


# Each page-level or history table of a project's audits: (label, model, how its rows are known).
SPACE_TABLES = (
    ("Pages", Page, "counter"),
    ("Issues", Issue, "stats"),
    ("Link edges", LinkEdge, "ratio"),
    ("External links", ExternalLink, "count"),
    ("Agent fetches", AgentFetch, "count"),
    ("Lighthouse results", LighthouseResult, "count"),
    ("Changes", PageChange, "count"),
    ("Events", AuditEvent, "count"),
)
SPACE_METHOD = (
    "Rows: pages from each audit's page counter, issues from the counts stored at finalize (counted for an audit "
    "that has none), link edges as the project's pages times the instance's link edges per page (the tables' "
    "planner statistics), the others counted. Bytes (PostgreSQL): the rows times the table's average row size, "
    "pg_total_relation_size (table, indexes and TOAST) divided by pg_class.reltuples. SQLite: rows only."
)


def _table_sizes(models_) -> dict:
    """{db_table: (reltuples, total bytes)} from pg_class on PostgreSQL; {} elsewhere."""
    if connection.vendor != "postgresql":
        return {}
    tables = [m._meta.db_table for m in models_]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, GREATEST(reltuples, 0)::bigint, pg_total_relation_size(oid) FROM pg_class "
            "WHERE relkind = 'r' AND relname = ANY(%s)",
            [tables],
        )
        return {name: (tuples, size) for name, tuples, size in cursor.fetchall()}


def project_space(*, project_id) -> list[TableSpace]:
    """The database space the project's audits take, per table (an estimate: SPACE_METHOD)."""
    audits = Audit.objects.filter(project_id=project_id)
    whole = audits.filter(summarised_at__isnull=True)
    pages = whole.aggregate(n=Sum("pages_crawled"))["n"] or 0
    sizes = _table_sizes([model for _label, model, _how in SPACE_TABLES])
    out = []
    for label, model, how in SPACE_TABLES:
        estimated = how in ("counter", "stats", "ratio")
        if how == "counter":
            rows = pages
        elif how == "stats":
            rows = 0
            for audit in whole.only("status", "stats"):
                stored = (audit.stats or {}).get("issue_types") if audit.status == Audit.Status.COMPLETED else None
                if stored is None:
                    rows += Issue.objects.filter(audit_id=audit.id).count()
                else:
                    rows += sum(r["n"] for r in stored)
        elif how == "ratio":
            edges, _ = sizes.get(LinkEdge._meta.db_table, (None, None))
            all_pages, _ = sizes.get(Page._meta.db_table, (None, None))
            if edges is not None and all_pages:
                rows = round(pages * edges / all_pages)
            else:
                rows = LinkEdge.objects.filter(audit__project_id=project_id).count()
                estimated = False
        else:
            rows = model.objects.filter(audit__project_id=project_id).aggregate(n=Count("pk"))["n"]
        tuples, size = sizes.get(model._meta.db_table, (None, None))
        nbytes = None
        if size is not None:
            nbytes = round(rows * size / tuples) if tuples else 0
        out.append(TableSpace(label, rows, estimated, nbytes))
    return out
