"""The API of a summarised audit (audits.retention pruned its page-level rows): every page-level list answers 409
with the problem code audit_summarised; the audit, its issue counts by type and its comparison with its baseline
stay; keep_page_rows is a project field."""

import pytest
from django.urls import reverse

from audits.models import Page
from audits.retention import audits_prune
from tests.factories import ProjectFactory
from tests.support.retention import SITE, audit_with_rows

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pruned(user):
    project = ProjectFactory(owner=user, base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=20, pages=4)
    latest = audit_with_rows(project, days_ago=10, pages=4)
    audits_prune(project=project)
    old.refresh_from_db()
    assert old.summarised_at is not None
    return project, old, latest


@pytest.mark.parametrize(
    "name",
    [
        "audit-issues",
        "audit-pages",
        "audit-external-links",
        "audit-bot-fetches",
        "audit-segments",
        "export-issues-csv",
        "export-issues-xlsx",
        "export-pages-json",
    ],
)
def test_page_level_lists_of_a_summarised_audit_answer_409_audit_summarised(api, pruned, name):
    _project, old, latest = pruned
    response = api.get(reverse(f"api:{name}", kwargs={"pk": old.id}))
    assert response.status_code == 409
    assert response["Content-Type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["code"] == "audit_summarised" and "summarised only" in problem["detail"]
    assert api.get(reverse(f"api:{name}", kwargs={"pk": latest.id})).status_code == 200


def test_page_detail_of_a_summarised_audit_answers_409(api, pruned):
    _project, old, latest = pruned
    page = Page.objects.filter(audit=latest).first()
    response = api.get(reverse("api:audit-page-detail", kwargs={"pk": old.id, "page_pk": page.id}))
    assert response.status_code == 409 and response.json()["code"] == "audit_summarised"


def test_the_audit_its_counts_and_its_comparison_stay(api, pruned):
    _project, old, latest = pruned
    audit = api.get(reverse("api:audit-detail", kwargs={"pk": old.id})).json()
    assert audit["summarised_at"] and audit["health_score"] == old.health_score
    assert audit["issues_by_type"] == {"missing-h1": 1, "missing-meta-description": 3, "robots-txt-missing": 1}
    summary = api.get(reverse("api:audit-issue-summary", kwargs={"pk": old.id})).json()
    assert {r["type"]: r["count"] for r in summary} == audit["issues_by_type"]
    assert {r["title"] for r in summary} and summary[0]["severity"] == "critical"
    assert api.get(reverse("api:audit-issue-summary", kwargs={"pk": old.id}) + "?segment=other").status_code == 409
    compare = api.get(reverse("api:audit-compare", kwargs={"pk": latest.id, "base_pk": old.id}))
    assert compare.status_code == 200
    assert compare.json()["pages"] == {"both": 4, "not_crawled": 0, "only_now": 0}
    backwards = api.get(reverse("api:audit-compare", kwargs={"pk": old.id, "base_pk": latest.id}))
    assert backwards.status_code == 409 and backwards.json()["code"] == "audit_summarised"
    whole = api.get(reverse("api:audit-detail", kwargs={"pk": latest.id})).json()
    assert whole["summarised_at"] is None


def test_keep_page_rows_is_a_project_field(api, project):
    url = reverse("api:project-detail", kwargs={"pk": project.id})
    assert api.get(url).json()["keep_page_rows"] is None
    assert api.patch(url, {"keep_page_rows": 4}, format="json").json()["keep_page_rows"] == 4
    refused = api.patch(url, {"keep_page_rows": 0}, format="json")
    assert refused.status_code == 400 and "keep_page_rows" in refused.json()["errors"]
    assert api.patch(url, {"keep_page_rows": None}, format="json").json()["keep_page_rows"] is None
