"""The score formula of issue 25 (audits/checks/score.py, version 2): Audit.score_formula says which version
scored an audit, and every completed audit is re-scored under version 2, so the trend compares like with like.

Batched: per audit, the issue counts stored at finalize (Audit.stats["issue_types"]; one grouped query for an
audit finished before they were stored) and one aggregate for its pages without errors; rows are written
RESCORE_BATCH_AUDITS at a time. Backwards, health_score goes back to version 1 (the share of pages without
errors, which version 2 stored)."""

from django.db import migrations, models
from django.db.models import Count, Exists, OuterRef, Q

RESCORE_BATCH_AUDITS = 200
FORMULA_V1, FORMULA_V2 = 1, 2


def _rows(Issue, audit) -> list[dict]:
    stored = (audit.stats or {}).get("issue_types")
    if stored is not None:
        return stored
    return list(
        Issue.objects.filter(audit_id=audit.id)
        .order_by()
        .values("type", "severity")
        .annotate(n=Count("id"), pages=Count("page_id", distinct=True), site=Count("id", filter=Q(page_id=None)))
    )


def rescore(apps, schema_editor):
    # The formula itself is not copied here: it lives in one place, and this migration applies the version
    # that place has (2) to the audits scored before it.
    from audits.checks.score import SCORE_FORMULA_VERSION, score_breakdown_from

    assert SCORE_FORMULA_VERSION == FORMULA_V2, "a later formula needs its own migration"
    Audit, Page, Issue = (apps.get_model("audits", name) for name in ("Audit", "Page", "Issue"))
    batch = []
    audits = Audit.objects.filter(status="completed").only("id", "config", "stats", "health_score")
    for audit in audits.iterator(chunk_size=RESCORE_BATCH_AUDITS):
        critical = Issue.objects.filter(page_id=OuterRef("pk"), severity="critical")
        page_row = Page.objects.filter(audit_id=audit.id).aggregate(
            pages=Count("id"), clean=Count("id", filter=~Q(Exists(critical)))
        )
        breakdown = score_breakdown_from(
            audit=audit, rows=_rows(Issue, audit), pages=page_row["pages"], pages_without_errors=page_row["clean"]
        )
        audit.health_score = breakdown.score
        audit.score_formula = FORMULA_V2
        if audit.stats:  # an audit finished before the stats were stored keeps none (they are counted when read)
            audit.stats = {**audit.stats, "score": breakdown.as_stats()}
        batch.append(audit)
        if len(batch) >= RESCORE_BATCH_AUDITS:
            Audit.objects.bulk_update(batch, ["health_score", "score_formula", "stats"])
            batch = []
    if batch:
        Audit.objects.bulk_update(batch, ["health_score", "score_formula", "stats"])
    # Anything else that carries a score (none is expected: only finalize scores) was scored by version 1.
    Audit.objects.filter(health_score__isnull=False, score_formula__isnull=True).update(score_formula=FORMULA_V1)


def unscore(apps, schema_editor):
    """Version 1 back: 100 × pages without errors ÷ pages, half up; its figures are in stats["score"], or counted."""
    Audit, Page, Issue = (apps.get_model("audits", name) for name in ("Audit", "Page", "Issue"))
    batch = []
    audits = Audit.objects.filter(score_formula=FORMULA_V2).only("id", "stats", "health_score")
    for audit in audits.iterator(chunk_size=RESCORE_BATCH_AUDITS):
        stored = (audit.stats or {}).pop("score", None)
        if stored is None:
            critical = Issue.objects.filter(page_id=OuterRef("pk"), severity="critical")
            row = Page.objects.filter(audit_id=audit.id).aggregate(
                pages=Count("id"), clean=Count("id", filter=~Q(Exists(critical)))
            )
            stored = {"pages": row["pages"], "pages_without_errors": row["clean"]}
        pages, clean = stored["pages"], stored["pages_without_errors"]
        audit.health_score = (200 * clean + pages) // (2 * pages) if pages else None
        batch.append(audit)
        if len(batch) >= RESCORE_BATCH_AUDITS:
            Audit.objects.bulk_update(batch, ["health_score", "stats"])
            batch = []
    if batch:
        Audit.objects.bulk_update(batch, ["health_score", "stats"])


class Migration(migrations.Migration):
    dependencies = [
        ("audits", "0022_i25_progress_http_fallback"),
    ]

    operations = [
        migrations.AddField(
            model_name="audit",
            name="score_formula",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Version of the score formula health_score was computed with (audits.checks.score)",
                null=True,
            ),
        ),
        migrations.RunPython(rescore, unscore),
    ]
