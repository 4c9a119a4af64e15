"""audits.pipeline.start.audit_start: a start URL on the project's site only (start_url_off_site otherwise), no
basic-auth password in what a start stores (the audit's config, its events, the log), a chosen baseline checked."""

import logging

import pytest
from django.utils import timezone

from audits.errors import AuditRefused, ErrorCode
from audits.models import Audit, AuditEvent
from audits.pipeline.start import audit_start
from tests.factories import AuditFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "start_url",
    [
        "https://evil.test/",
        "https://example.com.evil.test/",
        "https://example.com:8443/",  # another port is another origin
        "https://shop.example.com/",  # a subdomain, and the project does not crawl subdomains
        "http://127.0.0.1:2/",
    ],
)
def test_a_start_url_off_the_projects_site_is_refused_and_nothing_is_stored(start_url):
    project = ProjectFactory(base_url="https://example.com/", auth_username="u", auth_password="pw")
    with pytest.raises(AuditRefused) as refused:
        audit_start(project=project, start_url=start_url, max_pages=10, dispatch=False)
    assert (refused.value.code, refused.value.field) == ("start_url_off_site", "start_url")
    assert refused.value.status == 400 and ErrorCode.START_URL_OFF_SITE.status == 400
    assert "https://example.com/" in refused.value.message  # the sentence names the project's site
    assert not Audit.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("start_url", "subdomains"),
    [
        ("https://example.com/deep/page?q=1", False),
        ("https://www.example.com/", False),  # www. or not is one site
        ("http://example.com/", False),  # the scheme is not the site (the credentials keep to https: crawler.auth)
        ("https://shop.example.com/", True),
    ],
)
def test_a_start_url_on_the_projects_site_starts(start_url, subdomains):
    project = ProjectFactory(base_url="https://example.com/", crawl_subdomains=subdomains)
    audit = audit_start(project=project, start_url=start_url, max_pages=10, dispatch=False)
    assert audit.start_url.rstrip("/") == start_url.rstrip("/")


def test_the_subdomain_sentence_says_subdomains_count():
    project = ProjectFactory(base_url="https://example.com/", crawl_subdomains=True)
    with pytest.raises(AuditRefused) as refused:
        audit_start(project=project, start_url="https://example.org/", max_pages=10, dispatch=False)
    assert refused.value.code == "start_url_off_site" and "subdomains" in refused.value.message


def test_an_invalid_url_is_refused_as_such_before_the_site_is_judged():
    project = ProjectFactory(base_url="https://example.com/")
    with pytest.raises(AuditRefused) as refused:
        audit_start(project=project, start_url="ftp://elsewhere.test/", max_pages=10, dispatch=False)
    assert refused.value.code == "unsupported_scheme"


def test_no_password_lands_in_the_config_the_events_or_the_log(caplog):
    password = "never-stored-9f3e"
    project = ProjectFactory(base_url="https://example.com/", auth_username="crawler", auth_password=password)
    with caplog.at_level(logging.DEBUG):
        audit = audit_start(project=project, max_pages=10, dispatch=False)
    audit.refresh_from_db()
    assert audit.config["auth_username"] == "crawler"
    assert password not in repr(audit.config) and "auth_password" not in audit.config
    events = list(AuditEvent.objects.filter(audit=audit).values_list("message", "data"))
    assert events and password not in repr(events)
    assert password not in caplog.text


@pytest.mark.parametrize("kind", ["other_project", "not_completed", "unknown", "not_an_id", "pruned"])
def test_a_start_with_an_invalid_baseline_is_refused_and_nothing_is_stored(kind):
    project = ProjectFactory(base_url="https://example.com/")
    baseline = {
        "other_project": lambda: AuditFactory(status=Audit.Status.COMPLETED),
        "not_completed": lambda: AuditFactory(project=project, status=Audit.Status.CANCELLED),
        "unknown": lambda: "8d0bd2a5-5f0c-4b7e-9e5e-1f00c0ffee00",
        "not_an_id": lambda: "previous",  # the caller resolves "previous"
        "pruned": lambda: AuditFactory(project=project, status=Audit.Status.COMPLETED, summarised_at=timezone.now()),
    }[kind]()
    before = Audit.objects.count()
    with pytest.raises(AuditRefused) as refused:
        audit_start(project=project, max_pages=10, dispatch=False, baseline=baseline)
    assert (refused.value.code, refused.value.field, refused.value.status) == ("baseline_invalid", "baseline", 400)
    assert Audit.objects.count() == before


def test_a_start_with_a_valid_baseline_stores_it():
    project = ProjectFactory(base_url="https://example.com/")
    baseline = AuditFactory(project=project, status=Audit.Status.COMPLETED)
    audit = audit_start(project=project, max_pages=10, dispatch=False, baseline=str(baseline.id))
    assert Audit.objects.get(id=audit.id).baseline == baseline
