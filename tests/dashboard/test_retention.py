"""The dashboard of a summarised audit (audits.retention pruned its page-level rows): the overview, the audit list and
the trend say so; the screens that need page rows answer with an empty state that says what is gone and what stays;
the comparison keeps its counts; the project form sets how many audits are kept."""

import pytest
from django.urls import reverse

from audits.models import Audit, Page, Project
from audits.retention import audits_prune
from tests.factories import ProjectFactory
from tests.support.retention import SITE, audit_with_rows

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pruned(owner):
    """Three audits of a project keeping one: the two older ones summarised."""
    project = ProjectFactory(owner=owner, name="Shop", base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=30, pages=5)
    middle = audit_with_rows(project, days_ago=20, pages=5)
    latest = audit_with_rows(project, days_ago=10, pages=5)
    audits_prune(project=project)
    for audit in (old, middle, latest):
        audit.refresh_from_db()
    assert old.summarised_at and middle.summarised_at and latest.summarised_at is None
    return project, old, middle, latest


def _url(name, audit, *args):
    return reverse(f"audits:{name}", args=[audit.id, *args])


def test_overview_audit_list_and_trend_say_which_audits_are_summarised(owner_client, pruned):
    project, old, middle, latest = pruned
    body = owner_client.get(_url("audit-detail", middle)).content.decode()
    assert 'id="summarised-note"' in body and "summarised only" in body
    assert "keeps them for its latest completed audit)" in body
    assert reverse("audits:audit-detail", args=[latest.id]) in body  # the latest whole audit is linked
    assert "No exports" in body and "pages CSV" not in body
    assert 'id="history-summarised-note"' in body and "2 audits of this trend are summarised only" in body
    assert str(middle.health_score) in body  # the score stays
    whole = owner_client.get(_url("audit-detail", latest)).content.decode()
    assert 'id="summarised-note"' not in whole and "pages CSV" in whole
    listing = owner_client.get(reverse("audits:project-detail", args=[project.id])).content.decode()
    assert listing.count("summary only</span>") == 2


@pytest.mark.parametrize(
    ("name", "what", "status"),
    [
        ("audit-pages", "Pages of this audit are no longer kept", 200),
        ("audit-external", "External links of this audit are no longer kept", 200),
        ("audit-structure", "Folders of this audit are no longer kept", 200),
        ("audit-performance", "Lighthouse results of this audit are no longer kept", 200),
    ],
)
def test_screens_that_need_page_rows_answer_with_an_empty_state(owner_client, pruned, name, what, status):
    _project, _old, middle, latest = pruned
    response = owner_client.get(_url(name, middle))
    body = response.content.decode()
    assert response.status_code == status and what in body
    assert _url(name, latest) in body  # the same screen of the latest whole audit
    assert "<table" not in body  # no empty table


def test_page_detail_issue_evidence_and_exports_of_a_summarised_audit(owner_client, pruned):
    _project, _old, middle, latest = pruned
    page_id = Page.objects.filter(audit=latest).values_list("id", flat=True).first()  # its own are gone
    assert owner_client.get(_url("page-detail", middle, page_id)).status_code == 410
    evidence = owner_client.get(_url("audit-issue-type", middle, "missing-h1"))
    body = evidence.content.decode()
    assert evidence.status_code == 200 and "Affected URLs of this audit are no longer kept" in body
    assert "found 2 times in this audit" in body  # the stored count (pages 0 and 4 of 5)
    assert _url("audit-issue-type", latest, "missing-h1") in body  # the type's evidence in the latest whole audit
    assert owner_client.get(_url("audit-issue-type", middle, "no-such-type")).status_code == 404
    assert owner_client.get(_url("audit-export", middle, "issues", "csv")).status_code == 410
    assert owner_client.get(_url("audit-pages-export", middle, "csv")).status_code == 410
    assert owner_client.get(_url("audit-issue-type-export", middle, "missing-h1", "csv")).status_code == 410


def test_comparison_keeps_its_counts_and_says_the_urls_are_gone(owner_client, pruned):
    _project, old, middle, latest = pruned
    body = owner_client.get(_url("audit-compare", latest) + f"?base={middle.id}").content.decode()
    assert 'id="summarised-note"' in body and "crawled by both" in body  # the stored page counts
    assert "Missing H1" in body or "missing-h1" in body.lower()
    listing = owner_client.get(_url("audit-compare", latest) + f"?base={middle.id}&kind=persisting&type=missing-h1")
    assert 'id="listing-gone"' in listing.content.decode()
    # latest against old: no counts were stored for that pair.
    far = owner_client.get(_url("audit-compare", latest) + f"?base={old.id}").content.decode()
    assert "were not kept" in far


def test_project_form_sets_how_many_audits_are_kept(owner_client, owner):
    project = ProjectFactory(owner=owner, name="Blog", base_url=SITE + "/")
    url = reverse("audits:project-edit", args=[project.id])
    form = owner_client.get(url).content.decode()
    assert 'name="keep_page_rows"' in form and "this instance&#x27;s default (10)" in form
    data = {"name": "Blog", "base_url": SITE + "/", "max_pages": 100, "query_policy": "keep", "keep_page_rows": 3}
    for name in ("max_concurrency", "min_request_interval_ms", "render_budget_pages", "max_urls_per_pattern"):
        data[name] = getattr(project, name)
    for name in ("max_path_segments", "calendar_years_ahead", "max_dated_urls_per_pattern"):
        data[name] = getattr(project, name)
    for name in ("max_query_variants_per_path", "max_identical_pages_per_pattern", "external_links_max"):
        data[name] = getattr(project, name)
    data.update(external_links_budget_s=project.external_links_budget_s, bot_sample_max=project.bot_sample_max)
    response = owner_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Project.objects.get(id=project.id).keep_page_rows == 3
    data["keep_page_rows"] = 0
    refused = owner_client.post(url, data)
    assert refused.status_code == 200 and "from 1 to 1000" in refused.content.decode()
    assert Project.objects.get(id=project.id).keep_page_rows == 3
    assert not Audit.objects.filter(project=project).exists()
