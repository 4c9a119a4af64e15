"""Reads about retention (audits.retention prunes; this module only reads): whether an audit is summarised only,
the counts of a comparison stored before its page-level rows went, and the database space a project takes."""

from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum

from audits.comparison import CompareRow, check_spec, settings_differences
from audits.models import (
    AgentFetch,
    Audit,
    AuditEvent,
    ExternalLink,
    Issue,
    LighthouseResult,
    Page,
    PageChange,
    PageCounts,
    Project,
)
from scratchpad.models import LinkEdge

SUMMARISED_MESSAGE = (
    "{subject} is summarised only: its pages, issues and links were removed on {date} to save space (the project "
    "keeps them for {kept}). Its score, issue counts by type, changes and trend point stay."
)


def keep_page_rows_for(project: Project) -> int:
    """How many completed audits of the project keep their page-level rows (at least one: the latest)."""
    n = project.keep_page_rows if project.keep_page_rows is not None else settings.SITEWARDEN_KEEP_PAGE_ROWS
    return max(1, int(n))


def audit_is_summarised(audit: Audit) -> bool:
    return audit.summarised_at is not None


def audit_summarised_message(audit: Audit, *, subject: str = "This audit") -> str:
    """The one sentence every face says about a summarised audit (the API's 410 detail, the dashboard's notes)."""
    return SUMMARISED_MESSAGE.format(
        subject=subject,
        date=audit.summarised_at.strftime("%Y-%m-%d") if audit.summarised_at else "?",
        kept=kept_words(keep_page_rows_for(audit.project)),
    )


def kept_words(keep: int) -> str:
    """ "its latest completed audit", "its last 10 completed audits"."""
    return "its latest completed audit" if keep == 1 else f"its last {keep} completed audits"


def comparison_kept(*, audit: Audit, base: Audit) -> dict | None:
    """The counts of `audit` against `base` stored when retention pruned one of them (audits.retention
    .comparison_counts: by_type, totals, pages, new_issues); None when nothing was stored for the pair."""
    for newer, older in ((audit, base), (base, audit)):
        kept = ((newer.stats or {}).get("comparisons") or {}).get(str(older.id))
        if kept is not None:
            return kept if newer is audit else None  # stored the other way round: not this comparison
    return None


def audit_comparison_kept(*, audit: Audit, base: Audit) -> dict | None:
    """audits.selectors.audits.audit_comparison's answer from the counts stored for the pair (comparison_kept);
    None when none were stored."""
    kept = comparison_kept(audit=audit, base=base)
    if kept is None:
        return None
    return {
        "audit": audit.id,
        "base": base.id,
        "totals": kept["totals"],
        "by_type": kept["by_type"],
        "pages": kept["pages"],
        "settings_differ": [vars(d) for d in settings_differences(audit=audit, previous=base)],
    }


def issue_counts_kept(*, audit: Audit) -> list[dict] | None:
    """A summarised audit's issue rows per (type, severity) as stored (audits.stats issue_types); None otherwise."""
    if not audit_is_summarised(audit):
        return None
    return list((audit.stats or {}).get("issue_types") or [])


@dataclass
class TableSpace:
    table: str
    rows: int
    estimated: bool  # the rows are an estimate (see project_space's method)
    bytes: int | None  # None: not known on this database


# Each page-level or history table of a project's audits: (label, model, how its rows are known).
SPACE_TABLES = (
    ("Pages", Page, "counter"),
    ("Page counts", PageCounts, "counter"),  # a row a page, stored at finalize
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


def latest_whole_audit(*, project_id) -> Audit | None:
    """The project's newest completed audit whose page-level rows are kept (where a summarised screen points)."""
    return (
        Audit.objects.filter(project_id=project_id, status=Audit.Status.COMPLETED, summarised_at__isnull=True)
        .order_by("-created_at")
        .first()
    )


def comparison_rows_kept(*, audit: Audit, base: Audit) -> list | None:
    """The comparison screen's rows (audits.comparison.CompareRow) from the counts stored for the pair; None when
    none were stored."""
    kept = comparison_kept(audit=audit, base=base)
    if kept is None:
        return None
    kinds = ("new", "fixed", "persisting", "not_crawled")
    return [CompareRow(r["type"], check_spec(r["type"]), **{k: r[k] for k in kinds}) for r in kept["by_type"]]


def summarised_in(audit_ids) -> set:
    """Which of these audits are summarised only (one query: the trend marks them)."""
    return set(Audit.objects.filter(id__in=list(audit_ids), summarised_at__isnull=False).values_list("id", flat=True))
