"""An audit with rows in every table retention prunes (audits.retention), finished the way finalize finishes one:
what the retention tests of the pipeline and of the faces prune."""

from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from audits.checks.score import pages_without_errors_count, score_breakdown_from
from audits.models import (
    AgentFetch,
    Audit,
    ExternalLink,
    Issue,
    LighthouseResult,
    Page,
    agent_fetch_id_for,
    external_link_id_for,
    issue_id_for,
    lighthouse_id_for,
)
from audits.pipeline.page_totals import page_counts_store
from audits.stats import audit_stats_count
from scratchpad.models import LinkEdge
from tests.factories import AuditEventFactory, PageFactory

SITE = "http://127.0.0.1:9"


def audit_with_rows(project, *, days_ago: int, pages: int = 12, status=Audit.Status.COMPLETED, title_of=None) -> Audit:
    """An audit of `project` with page-level rows in every pruned table, finished the way finalize finishes one
    (its stats, score and counter counted by the same functions)."""
    audit = Audit.objects.create(project=project, start_url=SITE + "/", site_url=SITE + "/", status=status)
    Audit.objects.filter(id=audit.id).update(created_at=timezone.now() - timedelta(days=days_ago))
    made = []
    for i in range(pages):
        url = f"{SITE}/p{i}"
        made.append(PageFactory(audit=audit, url=url, title=(title_of or (lambda n: f"Page {n}"))(i)))
    for i, page in enumerate(made):
        # a varying set of issues: page i has missing-meta-description when i % 3 (new ones in later audits)
        kinds = [("missing-meta-description", "warning")] if (i + days_ago) % 3 else []
        if i % 4 == 0:
            kinds.append(("missing-h1", "critical"))
        for issue_type, severity in kinds:
            Issue.objects.create(
                id=issue_id_for(audit.id, page.url, issue_type), audit=audit, page=page, page_url=page.url,
                type=issue_type, severity=severity,
            )  # fmt: skip
        for j in range(3):
            LinkEdge.objects.create(audit=audit, source_page=page, target_url=f"{SITE}/p{(i + j) % pages}")
    Issue.objects.create(
        id=issue_id_for(audit.id, "", "robots-txt-missing"), audit=audit, page=None, page_url="",
        type="robots-txt-missing", severity="warning",
    )  # fmt: skip
    ExternalLink.objects.create(
        id=external_link_id_for(audit.id, "https://example.org/"), audit=audit, url="https://example.org/",
        host="example.org", outcome="ok",
    )  # fmt: skip
    AgentFetch.objects.create(
        id=agent_fetch_id_for(audit.id, SITE + "/p0", "gptbot"), audit=audit, url=SITE + "/p0", agent="gptbot"
    )
    report = Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit.id) / "mobile.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("{}")
    LighthouseResult.objects.create(
        id=lighthouse_id_for(audit.id, made[0].id, "mobile"), audit=audit, page=made[0], url=made[0].url,
        strategy="mobile", status="ok", performance=90, report_path=str(report.relative_to(settings.MEDIA_ROOT)),
    )  # fmt: skip
    AuditEventFactory(audit=audit)
    page_counts_store(audit_id=audit.id)  # its PageCounts rows, as finalize stores them for any audit it ends
    stats = audit_stats_count(audit_id=audit.id)
    if status == Audit.Status.COMPLETED:
        _n, clean = pages_without_errors_count(Page.objects.filter(audit_id=audit.id))
        score = score_breakdown_from(
            audit=audit, rows=stats["issue_types"], pages=stats["pages"], pages_without_errors=clean
        )
        stats["score"] = score.as_stats()
        Audit.objects.filter(id=audit.id).update(
            health_score=score.score, score_formula=score.formula_version, stats=stats
        )
    ended = timezone.now() - timedelta(days=days_ago, hours=-1)  # an hour after it started
    Audit.objects.filter(id=audit.id).update(pages_crawled=pages, completed_at=ended)
    audit.refresh_from_db()
    return audit
