"""The admin's retention: a project's keep_page_rows through the project service, its database space per table (an
estimate, with the method stated) on its page, the page rows kept in the list, and summarised audits marked."""

import pytest
from django.db import connection
from django.urls import reverse

from audits.models import Project
from audits.retention import audits_prune
from tests.factories import ProjectFactory
from tests.support.retention import SITE, audit_with_rows

pytestmark = pytest.mark.django_db(transaction=True)


def test_project_page_shows_the_database_space_and_the_list_the_page_rows_kept(admin_client):
    project = ProjectFactory(name="Big shop", base_url=SITE + "/", keep_page_rows=1)
    old = audit_with_rows(project, days_ago=20, pages=6)
    audit_with_rows(project, days_ago=10, pages=4)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    page = admin_client.get(reverse("admin:audits_project_change", args=[project.id])).content.decode()
    assert 'id="database-space"' in page and "<th>Pages</th><td>10 (est.)</td>" in page
    assert "pg_total_relation_size" in page and "Audits kept whole: its latest completed audit." in page
    listing = admin_client.get(reverse("admin:audits_project_changelist")).content.decode()
    assert "Page rows kept" in listing and '<td class="field-page_rows_kept">10</td>' in listing

    audits_prune(project=project)
    page = admin_client.get(reverse("admin:audits_project_change", args=[project.id])).content.decode()
    assert "<th>Pages</th><td>4 (est.)</td>" in page
    audits = admin_client.get(reverse("admin:audits_audit_changelist") + "?summarised_at__isnull=False")
    assert audits.status_code == 200
    assert str(old.id) in admin_client.get(reverse("admin:audits_audit_changelist")).content.decode()


def test_keep_page_rows_is_judged_by_the_project_service(admin_client):
    project = ProjectFactory(name="Blog", base_url=SITE + "/")
    url = reverse("admin:audits_project_change", args=[project.id])
    form = admin_client.get(url).content.decode()
    assert 'name="keep_page_rows"' in form
    data = {
        "account": project.account_id, "owner": project.owner_id, "name": "Blog", "base_url": SITE + "/",
        "query_policy": "keep", "include_patterns": "[]", "exclude_patterns": "[]", "query_keep_keys": "[]",
        "check_overrides": "{}", "extractors": "[]", "keep_page_rows": "5",
        "segments-TOTAL_FORMS": "0", "segments-INITIAL_FORMS": "0",
    }  # fmt: skip
    for name in (
        "max_pages", "render_budget_pages", "max_urls_per_pattern", "max_path_segments", "calendar_years_ahead",
        "max_dated_urls_per_pattern", "max_query_variants_per_path", "max_identical_pages_per_pattern",
        "min_request_interval_ms", "max_concurrency", "external_links_max", "external_links_budget_s",
        "bot_sample_max",
    ):  # fmt: skip
        data[name] = str(getattr(project, name))
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Project.objects.get(id=project.id).keep_page_rows == 5
    data["keep_page_rows"] = "0"
    refused = admin_client.post(url, data)
    assert refused.status_code == 200 and "from 1 to 1000" in refused.content.decode()
