"""Basic-auth credentials stay home: sent to the project's own origin, never to another one that a redirect
or robots.txt points at; credentials typed into a URL are refused."""

import contextlib

import pytest

from audits.errors import AuditRefused
from audits.models import Audit, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from crawler.urls import InvalidURL, validate_start_url
from tests.factories import ProjectFactory
from tests.support.canary import BASIC, PASSWORD, USER, serve_recording

pytestmark = pytest.mark.django_db(transaction=True)


@contextlib.contextmanager
def two_origins():
    """The project's site behind basic auth and a canary, on two ports of 127.0.0.1 (so two origins). Yields
    (a, b) as (base_url, routes, seen) triples; fill the routes before crawling."""
    with serve_recording(needs_auth=True) as a, serve_recording() as b:
        yield (a.url, a.routes, a.seen), (b.url, b.routes, b.seen)


def _page(*links: str) -> tuple:
    body = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return 200, f"<!DOCTYPE html><html><head><title>t</title></head><body>{body}</body></html>", {}


def _sitemap(*urls: str) -> tuple:
    locs = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
    return 200, body, {"Content-Type": "application/xml"}


def _audit(base: str) -> Audit:
    project = ProjectFactory(base_url=base + "/", auth_username=USER, auth_password=PASSWORD)
    audit = audit_start(project=project, start_url=base + "/", max_pages=50, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    return audit


def test_a_start_url_that_redirects_to_another_origin_gets_no_credentials_there():
    with two_origins() as ((base_a, routes_a, seen_a), (base_b, routes_b, seen_b)):
        routes_a["/"] = (302, "", {"Location": base_b + "/"})
        routes_b["/"] = _page("/inner")
        routes_b["/inner"] = _page("/")
        audit = _audit(base_a)

    assert audit.site_url == base_b + "/"  # the crawl followed the redirect to B...
    assert {"/", "/inner", "/robots.txt"} <= {path for path, _ in seen_b}
    assert [auth for _, auth in seen_b if auth] == []  # ...without ever sending B the credentials
    assert seen_a and all(auth == BASIC for _, auth in seen_a)  # while A, the project's origin, got them
    assert Page.objects.filter(audit=audit, url=base_b + "/inner", status_code=200).exists()


def test_sitemaps_on_another_origin_get_no_credentials_and_the_site_gets_them_everywhere():
    with two_origins() as ((base_a, routes_a, seen_a), (base_b, routes_b, seen_b)):
        routes_a["/robots.txt"] = (
            200,
            f"User-agent: *\nAllow: /\nSitemap: {base_b}/sitemap.xml\nSitemap: {base_a}/moved-sitemap.xml\n",
            {"Content-Type": "text/plain"},
        )
        routes_a["/"] = _page("/p1")
        routes_a["/p1"] = _page()
        routes_a["/p2"] = _page()
        routes_a["/p3"] = _page()
        routes_a["/sitemap.xml"] = _sitemap(base_a + "/p1")
        # A sitemap of the site that moved to another origin: the redirect hop goes without credentials.
        routes_a["/moved-sitemap.xml"] = (301, "", {"Location": base_b + "/moved.xml"})
        routes_b["/sitemap.xml"] = _sitemap(base_a + "/p2")
        routes_b["/moved.xml"] = _sitemap(base_a + "/p3")
        audit = _audit(base_a)

    assert {path for path, _ in seen_b} == {"/sitemap.xml", "/moved.xml"}
    assert [auth for _, auth in seen_b if auth] == []
    assert {"/robots.txt", "/sitemap.xml", "/moved-sitemap.xml", "/", "/p1", "/p2", "/p3"} <= {p for p, _ in seen_a}
    assert all(auth == BASIC for _, auth in seen_a)
    # B's sitemaps were read (their pages were crawled) and every page of A accepted the credentials.
    pages = dict(Page.objects.filter(audit=audit).values_list("url", "status_code"))
    assert pages == {base_a + path: 200 for path in ("/", "/p1", "/p2", "/p3")}


# --- credentials typed into a URL ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://user:hunter2@127.0.0.1:8000/",
        "https://hunter2@example.com/",
        "https://example.com@evil.test/",  # looks like example.com, is evil.test with a user name
        "hunter2@example.com/shop",  # no scheme typed
        "//user:hunter2@example.com/",
    ],
)
def test_a_url_with_credentials_is_refused_pointing_at_the_basic_auth_fields(url):
    with pytest.raises(InvalidURL) as refused:
        validate_start_url(url, allow_private=True)
    assert refused.value.code == "credentials_in_url"
    assert "basic-auth fields" in str(refused.value)
    assert "hunter2" not in str(refused.value)  # the refusal does not echo the secret back


def test_an_at_sign_in_the_path_or_query_is_not_a_credential():
    assert validate_start_url("https://example.com/@team?by=a@b", allow_private=True).startswith("https://example.com/")


def test_audit_start_refuses_a_start_url_with_credentials_and_stores_nothing():
    project = ProjectFactory(base_url="http://127.0.0.1:1/")
    with pytest.raises(AuditRefused) as refused:
        audit_start(project=project, start_url="http://user:pass@127.0.0.1:1/", max_pages=10, dispatch=False)
    assert (refused.value.code, refused.value.field) == ("credentials_in_url", "start_url")
    assert not Audit.objects.filter(project=project).exists()
