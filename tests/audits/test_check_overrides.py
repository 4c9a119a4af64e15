"""A project's check overrides reach the audit: thresholds, severities and disabled checks."""

import pytest

from audits.errors import AuditRefused
from audits.models import Issue
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = b"""<!DOCTYPE html><html lang="en"><head><title>A title of thirty characters!</title>
<meta name="viewport" content="width=device-width"></head><body><p>Short page.</p></body></html>"""


@pytest.fixture
def one_page_site(httpserver):
    """A site of one page at /; anything else (robots.txt, sitemaps) is a 404."""
    httpserver.no_handler_status_code = 404
    httpserver.expect_request("/").respond_with_data(PAGE, content_type="text/html; charset=utf-8")
    return httpserver.url_for("/").rstrip("/")


def _issues(base, overrides):
    project = ProjectFactory(base_url=base + "/", check_overrides=overrides)
    audit = audit_start(project=project, max_pages=5, dispatch=False)
    pipeline_run_inline(audit.id)
    return {i.type: i for i in Issue.objects.filter(audit=audit, page_url=base + "/")}


def test_overrides_change_thresholds_severities_and_disable_checks(one_page_site):
    default = _issues(one_page_site, {})
    assert "title-too-long" not in default and "missing-meta-description" in default
    assert default["missing-h1"].severity == "warning"
    changed = _issues(
        one_page_site,
        {
            "thresholds": {"title-too-long": {"max_chars": 20}},
            "severities": {"missing-h1": "critical"},
            "disabled": ["missing-meta-description"],
        },
    )
    assert changed["title-too-long"].details["max_chars"] == 20
    assert changed["missing-h1"].severity == "critical"
    assert "missing-meta-description" not in changed


def test_invalid_overrides_refuse_the_start():
    project = ProjectFactory(check_overrides={"thresholds": {"no-such-check": {"x": 1}}})
    with pytest.raises(AuditRefused) as exc:
        audit_start(project=project, dispatch=False)
    assert exc.value.code == "invalid_check_overrides"
