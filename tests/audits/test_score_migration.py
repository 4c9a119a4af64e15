"""Migration 0023_i25_score_formula: every completed audit is re-scored under the formula of audits/checks/score.py
(from its stored issue counts, or from its issue rows when it has none) and says so in score_formula; backwards,
the old score (the share of pages without errors) comes back."""

import json
import uuid

import pytest
from django.db import connection

from audits.checks.score import SCORE_FORMULA_VERSION
from audits.models import Audit
from tests.support.migrations import apps_at, migrate_to, project_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = "0022_i25_progress_http_fallback"
PAGES = 4


def _migrate(target=None) -> None:
    migrate_to("audits", target)


def _fill(apps) -> dict:
    """Two completed audits scored by the old formula (100: no critical issue anywhere) and a failed one."""
    project = project_at(apps, "before-the-new-score")
    Audit_, Page, Issue = (apps.get_model("audits", m) for m in ("Audit", "Page", "Issue"))
    ids = {}
    for name, with_stats in (("stored", True), ("counted", False)):
        audit = Audit_.objects.create(
            id=uuid.uuid4(), project=project, start_url="https://docs.example/", status="completed", health_score=100
        )
        for n in range(PAGES):
            page = Page.objects.create(id=uuid.uuid4(), audit=audit, url=f"https://docs.example/{n}", fetch_class="ok")
            for type_ in ("missing-h1", "missing-meta-description"):
                Issue.objects.create(id=uuid.uuid4(), audit=audit, page=page, type=type_, severity="warning")
        if with_stats:  # what finalize stored before issue 25: the counts per type, no score
            rows = [
                {"type": t, "severity": "warning", "n": PAGES, "pages": PAGES, "site": 0}
                for t in ("missing-h1", "missing-meta-description")
            ]
            audit.stats = {"pages": PAGES, "issue_types": rows}
            audit.save()
        ids[name] = audit.id
    ids["failed"] = Audit_.objects.create(
        id=uuid.uuid4(), project=project, start_url="https://docs.example/", status="failed"
    ).id
    return ids


def test_old_audits_are_rescored_and_the_old_score_comes_back_backwards():
    _migrate(BEFORE)
    try:
        ids = _fill(apps_at("audits", BEFORE))
    finally:
        _migrate()  # the newest migrations: the models below are today's
    stored, counted, failed = (Audit.objects.get(id=ids[k]) for k in ("stored", "counted", "failed"))
    for audit in (stored, counted):  # two warnings on every page: 100 - 8 - 8
        assert (audit.health_score, audit.score_formula) == (84, SCORE_FORMULA_VERSION)
    assert stored.stats["score"]["pages_without_errors"] == PAGES and stored.stats["score"]["score"] == 84
    assert stored.stats["issue_types"]  # the stored counts are kept
    assert counted.stats == {}  # no stats before: none made up (they are counted when read)
    assert (failed.health_score, failed.score_formula) == (None, None)

    _migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, health_score, stats FROM audits_audit WHERE id = ANY(%s)", [[stored.id, counted.id]]
            )
            rows = {row[0]: row[1:] for row in cursor.fetchall()}
        assert rows[stored.id][0] == rows[counted.id][0] == 100  # every page without errors: the old score
        stats = json.loads(rows[stored.id][1])  # a json column: psycopg hands back its text
        assert "score" not in stats and stats["issue_types"]
    finally:
        _migrate()
    assert Audit.objects.get(id=stored.id).health_score == 84
