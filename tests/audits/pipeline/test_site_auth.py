"""The project's basic auth through real crawls (audits.pipeline.scope.audit_site_auth, used by discovery and the
chunks): the project's own origin gets the credentials on robots.txt, sitemaps and pages; a canary on another
loopback port that the site links to, redirects to or names a sitemap on gets none, whatever the audit's start
URL says."""

import pytest

from audits.models import Audit, AuditEvent, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.scope import audit_site_auth
from audits.pipeline.start import audit_start
from tests.factories import AuditFactory, ProjectFactory
from tests.support.canary import BASIC, PASSWORD, USER, site_and_canary

pytestmark = pytest.mark.django_db(transaction=True)


def _project(site_url: str, **options):
    return ProjectFactory(base_url=site_url + "/", auth_username=USER, auth_password=PASSWORD, **options)


def _run(audit: Audit) -> Audit:
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    return audit


def test_links_redirects_and_sitemaps_to_another_origin_carry_no_credentials():
    with site_and_canary() as (site, canary):
        site.routes["/robots.txt"] = (
            200,
            f"User-agent: *\nAllow: /\nSitemap: {canary.url}/sitemap.xml\nSitemap: {site.url}/sitemap.xml\n",
            {"Content-Type": "text/plain"},
        )
        site.page("/", "/a", f"{canary.url}/linked", "/moved", images=("/logo.png", f"{canary.url}/pixel.png"))
        site.routes["/logo.png"] = (200, "png", {"Content-Type": "image/png"})
        canary.routes["/pixel.png"] = (200, "png", {"Content-Type": "image/png"})
        site.page("/a", "/")
        site.page("/b")
        site.redirect("/moved", f"{canary.url}/landing")  # an internal URL that redirects off-site
        site.sitemap("/sitemap.xml", f"{site.url}/a")
        canary.sitemap("/sitemap.xml", f"{site.url}/b", f"{canary.url}/listed")
        canary.page("/landing")
        audit = _run(audit_start(project=_project(site.url), max_pages=50, dispatch=False))

    # The canary was reached (its sitemap was read: /b was crawled from it; the images check asked for its image;
    # an off-site redirect target is recorded, not fetched) and never got the credentials.
    assert {"/sitemap.xml", "/pixel.png"} <= canary.paths()
    assert canary.credentials_received() == []
    # The site got them on every request: robots.txt, its sitemap, its pages, the redirecting URL and the image
    # the images check asked for (so it is not reported broken with a 401).
    assert {"/robots.txt", "/sitemap.xml", "/", "/a", "/b", "/moved", "/logo.png"} <= site.paths()
    assert all(auth == BASIC for _, auth in site.seen), site.seen
    pages = dict(Page.objects.filter(audit=audit).values_list("url", "status_code"))
    assert {site.url + path: 200 for path in ("/", "/a", "/b")}.items() <= pages.items()
    assert not Issue.objects.filter(audit=audit, type="broken-image").exists()


def test_an_audit_whose_start_url_is_on_another_origin_sends_it_nothing():
    # An audit row started before start URLs were held to the project's site (or written by any other path):
    # the fetcher itself still sends the credentials only to the project's origin.
    with site_and_canary() as (site, canary):
        canary.page("/", "/inner")
        canary.page("/inner", "/")
        project = _project(site.url)
        audit = AuditFactory(
            project=project,
            start_url=canary.url + "/",
            site_url=canary.url + "/",
            config={"max_pages": 10, "auth_username": USER},
        )
        AuditEvent.objects.create(audit=audit, kind=AuditEvent.Kind.STARTED, message="started")
        _run(audit)

    assert {"/", "/inner", "/robots.txt"} <= canary.paths()
    assert canary.credentials_received() == []
    assert site.seen == []


def test_a_subdomain_gets_the_credentials_only_when_the_project_crawls_subdomains():
    base = "https://example.com/"
    with_subdomains = AuditFactory(project=ProjectFactory(base_url=base, auth_username=USER, crawl_subdomains=True))
    without = AuditFactory(project=ProjectFactory(base_url=base, auth_username=USER))
    assert audit_site_auth(with_subdomains).sends_to("https://shop.example.com/")
    assert not audit_site_auth(without).sends_to("https://shop.example.com/")
    assert audit_site_auth(without).sends_to("https://www.example.com/deep")


def test_credentials_follow_the_project_not_the_audits_start_url():
    project = ProjectFactory(base_url="https://example.com/", auth_username=USER, auth_password=PASSWORD)
    audit = AuditFactory(project=project, start_url="https://evil.test/", site_url="https://evil.test/")
    auth = audit_site_auth(audit)
    assert auth.sends_to("https://example.com/robots.txt")
    assert not auth.sends_to("https://evil.test/") and not auth.sends_to("https://evil.test/robots.txt")
