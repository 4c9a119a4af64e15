"""Starting, reading (with the lazy reconcile), cancelling and deleting audits; refusals mapped to statuses."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import CreditEntry, Plan
from api.errors import REFUSAL_STATUS, refusal_status
from audits.checks.score import SCORE_FORMULA_VERSION, score_breakdown
from audits.models import Audit
from audits.stats import audit_stats_count
from tests.api.conftest import assert_problem
from tests.factories import AuditFactory, ProjectFactory
from tests.support.canary import PASSWORD, USER, site_and_canary


def start_url(project):
    return f"/api/v1/projects/{project.id}/audits/"


def test_start_answers_202_with_location(api, project):
    response = api.post(start_url(project), {"max_pages": 25}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert response["Location"].endswith(f"/api/v1/audits/{body['id']}/")
    assert body["status"] == "running" and body["current_phase"] == "discovery"
    assert body["config"]["max_pages"] == 25 and body["start_url"] == project.base_url
    audit = Audit.objects.get(id=body["id"])
    assert CreditEntry.objects.filter(audit_ref=audit.id, kind="reserve", units=25).exists()
    # The project's list shows it, filtered by status.
    listed = api.get(start_url(project), {"status": "running"}).json()
    assert [a["id"] for a in listed["results"]] == [body["id"]]
    assert api.get(start_url(project), {"status": "completed"}).json()["count"] == 0


def test_start_with_an_explicit_url_and_defaults(api, project):
    response = api.post(start_url(project), {"start_url": "http://127.0.0.1:1/docs/"}, format="json")
    assert response.status_code == 202
    assert response.json()["start_url"] == "http://127.0.0.1:1/docs/"
    assert response.json()["config"]["max_pages"] == project.max_pages


def _plan(project, **limits):
    plan = Plan.objects.create(name=f"tight-{project.id}", **limits)
    project.account.plan = plan
    project.account.save()


@pytest.mark.parametrize(
    "setup, payload, status, code, field",
    [
        (None, {"start_url": "ftp://example.com/"}, 400, "unsupported_scheme", "start_url"),
        (None, {"start_url": "http://exa mple.com/"}, 400, "invalid_url", "start_url"),
        (None, {"max_pages": 0}, 400, "invalid_max_pages", "max_pages"),
        ("page_limit", {"max_pages": 50}, 403, "audit_page_limit_exceeded", "max_pages"),
        ("credits", {"max_pages": 50}, 402, "insufficient_credits", "max_pages"),
        ("running", {"max_pages": 5}, 409, "audit_already_running", None),
        ("capacity", {"max_pages": 5}, 429, "audit_capacity_reached", None),
    ],
)
def test_start_refusals(api, project, setup, payload, status, code, field):
    if setup == "page_limit":
        _plan(project, pages_per_audit=10)
    elif setup == "credits":
        _plan(project, monthly_units=20)
    elif setup == "running":
        AuditFactory(project=project)
    elif setup == "capacity":
        _plan(project, running_audits=1)
        AuditFactory(project=ProjectFactory(owner=project.owner))
    before = Audit.objects.count()
    response = api.post(start_url(project), payload, format="json")
    assert_problem(response, status, code, field=field)
    if code == "audit_capacity_reached":
        assert response["Retry-After"] == "60"
    assert Audit.objects.count() == before, "a refusal leaves nothing behind"


def test_an_off_site_start_is_refused_and_the_canary_hears_nothing(api, user):
    with site_and_canary() as (site, canary):
        project = ProjectFactory(owner=user, base_url=site.url + "/", auth_username=USER, auth_password=PASSWORD)
        response = api.post(start_url(project), {"start_url": canary.url + "/", "max_pages": 5}, format="json")
        body = assert_problem(response, 400, "start_url_off_site", field="start_url")
        assert site.url in body["detail"]  # names the project's site
        for payload, field in (
            ({"sitemap_url": canary.url + "/sitemap.xml"}, "sitemap_url"),
            ({"urls": [canary.url + "/"]}, "urls"),
        ):
            assert api.post(start_url(project), payload, format="json").json()["field"] == field
    assert not Audit.objects.filter(project=project).exists()
    assert canary.seen == [] and site.seen == []


def test_start_input_validation(api, project):
    assert_problem(api.post(start_url(project), {"max_pages": "many"}, format="json"), 400, "validation_error")
    assert_problem(api.post(start_url(project), "not json", content_type="application/json"), 400, "parse_error")


def test_refusal_status_table():
    assert refusal_status("audit_already_running") == 409
    assert refusal_status("audit_capacity_reached") == 429
    assert refusal_status("insufficient_credits") == 402
    assert refusal_status("audit_page_limit_exceeded") == 403
    assert refusal_status("invalid_url") == 400
    assert refusal_status("some_new_code") == 400
    assert refusal_status("audit_summarised") == 409  # retention pruned the rows a list needs (audits.retention)
    assert set(REFUSAL_STATUS.values()) <= {402, 403, 404, 409, 429}  # 404: fix verification's unknown type


def test_audit_detail_and_list(api, results):
    body = api.get(f"/api/v1/audits/{results.id}/").json()
    assert body["status"] == "completed" and body["health_score"] == 80
    assert body["issues_by_type"] == {
        "broken-internal-link": 1,
        "broken-page": 1,
        "missing-title": 1,
        "title-too-long": 1,
    }
    assert {"error_code", "error_detail", "failed_phase", "pages_crawled", "current_phase"} <= set(body)
    listed = api.get("/api/v1/audits/", {"project": results.project_id, "status": "completed"}).json()
    assert [a["id"] for a in listed["results"]] == [str(results.id)]
    assert_problem(api.get("/api/v1/audits/", {"status": "bogus"}), 400, "validation_error", field="status")


def test_reading_a_stuck_audit_reconciles_it(api, project, settings):
    long_ago = timezone.now() - timedelta(hours=2)
    audit = AuditFactory(
        project=project,
        started_at=long_ago,
        last_progress_at=long_ago,
        current_phase="crawling",
        revivals=settings.RECONCILE_MAX_REVIVALS,
    )
    body = api.get(f"/api/v1/audits/{audit.id}/").json()
    assert body["status"] == "failed"
    assert body["error_code"] == "instance_lost" and body["failed_phase"] == "crawling"
    assert body["reconciled_by"] == "lazy" and body["error_detail"]


def test_cancel(api, project):
    audit = AuditFactory(project=project)
    response = api.post(f"/api/v1/audits/{audit.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert_problem(api.post(f"/api/v1/audits/{audit.id}/cancel/"), 409, "audit_not_running")


def test_delete(api, results):
    assert api.delete(f"/api/v1/audits/{results.id}/").status_code == 204
    assert not Audit.objects.filter(id=results.id).exists()
    assert_problem(api.get(f"/api/v1/audits/{results.id}/"), 404, "not_found")


def test_other_accounts_audits_are_not_found(api, other_api, project, results):
    running = AuditFactory(project=ProjectFactory(owner=project.owner, name="second"))
    assert_problem(other_api.post(start_url(project), {}, format="json"), 404, "not_found")
    assert_problem(other_api.get(start_url(project)), 404, "not_found")
    assert other_api.get("/api/v1/audits/").json()["count"] == 0
    assert_problem(other_api.get(f"/api/v1/audits/{results.id}/"), 404, "not_found")
    assert_problem(other_api.post(f"/api/v1/audits/{running.id}/cancel/"), 404, "not_found")
    assert_problem(other_api.delete(f"/api/v1/audits/{results.id}/"), 404, "not_found")
    running.refresh_from_db()
    assert running.status == "running" and Audit.objects.filter(id=results.id).exists()


def test_an_audit_exposes_its_score_breakdown(api, results):
    """Three criticals on one page of three each (3 x 25 / 3) and a warning on one (8 / 3): 100 - 27.67 = 72; every
    page has an error. The audit's endpoint counts it; a list reads what finalize stored, and nothing else."""
    body = api.get(f"/api/v1/audits/{results.id}/").json()
    score = body["score"]
    assert (score["score"], score["formula_version"], score["pages"]) == (72, SCORE_FORMULA_VERSION, 3)
    assert (score["pages_without_errors"], score["error_free_percent"]) == (0, 0.0)
    categories = {c["category"]: (c["score"], c["issues"]) for c in score["categories"]}
    assert categories["links"] == (92, 1) and categories["metadata"] == (89, 2) and categories["security"] == (100, 0)
    assert score["words"].startswith("72 out of 100: most points are taken off by ")
    listed = api.get("/api/v1/audits/", {"project": results.project_id}).json()["results"]
    assert listed[0]["score"] is None  # nothing stored: a list does not count every audit's pages
    stats = audit_stats_count(audit_id=results.id)  # what finalize stores
    stats["score"] = score_breakdown(audit=results).as_stats()
    Audit.objects.filter(id=results.id).update(stats=stats, score_formula=SCORE_FORMULA_VERSION)
    listed = api.get("/api/v1/audits/", {"project": results.project_id}).json()["results"]
    assert listed[0]["score"] == score and listed[0]["score_formula"] == SCORE_FORMULA_VERSION
