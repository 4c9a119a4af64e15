"""The bot access of an audit on the API: `bot_access` on the audit's detail, its sampled pages per agent at
/api/v1/audits/{id}/bot-fetches/ (an audit run for real on a site served on 127.0.0.1), and no one else's."""

import pytest

from audits.models import Audit
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes
from tests.support.sites.bots import BLOG_PAGE, bot_routes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bot_audit(user):
    with serve_routes(bot_routes(planted=True)) as site:
        project = ProjectFactory(owner=user, base_url=site.url + "/", bot_sample_max=2)
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=20, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    return site.url, audit


def test_the_audit_detail_has_bot_access_and_the_bot_fetches_list_each_agent(api, other_api, bot_audit):
    base, audit = bot_audit
    body = api.get(f"/api/v1/audits/{audit.id}/").json()
    robots = body["bot_access"]["robots"]
    googlebot = next(row for row in robots["rows"] if row["crawler"] == "Googlebot")
    assert (googlebot["group"], googlebot["cells"]["/private/"]["state"]) == ("User-agent: Googlebot", "blocked")
    assert body["bot_access"]["llms_txt"]["valid"] is False
    assert body["issues_by_type"]["bot-blocked"] == 1

    listed = api.get(f"/api/v1/audits/{audit.id}/bot-fetches/").json()
    assert listed["count"] == 10  # two sampled pages (the project's size) as five agents
    rows = {(r["url"].removeprefix(base), r["agent"]): r for r in listed["results"]}
    assert rows[(BLOG_PAGE, "googlebot-smartphone")]["status_code"] == 403
    assert rows[(BLOG_PAGE, "browser")]["status_code"] == 200
    assert set(rows[("/", "gptbot")]) == {
        "url", "agent", "status_code", "final_url", "title", "canonical_url", "robots", "main_text_hash",
        "main_words", "error", "fetched_at",
    }  # fmt: skip
    assert other_api.get(f"/api/v1/audits/{audit.id}/bot-fetches/").status_code == 404
