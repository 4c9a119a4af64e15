"""List mode: an audit of exactly a given list of URLs, or of one sitemap's URLs, following no links.

A local site where a listed page links to unlisted ones: only the listed pages are crawled, their links are
recorded (a broken one among the listed pages is reported), robots.txt still refuses what it disallows.
Started from the engine, the dashboard form (pasted or uploaded), the API and the CLI; bad lines are refused
with their line numbers and leave nothing behind.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import token_create
from audits.errors import AuditRefused
from audits.models import Audit, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start, url_list_lines
from scratchpad.models import LinkEdge
from tests.factories import ProjectFactory, UserFactory
from tests.support.sites.pages import html_route, page, serve
from tests.support.workers import run_cli

ROBOTS = "User-agent: *\nDisallow: /private\n"


def _routes(base_sitemap: str = "") -> dict:
    """/ links everything; /a (to be listed) links /b and /unlisted-gone (both unlisted) and /c (listed, 404)."""
    routes = {
        "/robots.txt": (200, {"Content-Type": "text/plain"}, ROBOTS.encode()),
        "/": html_route(page("home", links=[("/a", "A"), ("/b", "B"), ("/d", "D")])),
        "/a": html_route(
            page("a", links=[("/b", "Page B"), ("/c", "Page C"), ("/unlisted-gone", "Gone"), ("/", "Home")])
        ),
        "/b": html_route(page("b", links=[("/d", "D")])),
        "/d": html_route(page("d")),
        "/private/x": html_route(page("private")),
    }
    return routes  # /c and /unlisted-gone are not routed: 404


def _sitemap(base: str, paths: list[str]) -> tuple[int, dict, bytes]:
    locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    body = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
    return 200, {"Content-Type": "application/xml"}, body.encode()


def _run(audit: Audit) -> Audit:
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _crawled(audit: Audit, base: str) -> set[str]:
    return {url.removeprefix(base) for url in Page.objects.filter(audit=audit).values_list("url", flat=True)}


@pytest.mark.django_db(transaction=True)
def test_only_the_listed_pages_are_crawled_and_their_broken_links_reported():
    with serve(_routes()) as base:
        project = ProjectFactory(base_url=base + "/")
        listed = ["# spot check", f"{base}/a", "", f"{base}/c", f"{base}/private/x", f"{base}/a"]
        audit = _run(audit_start(project=project, urls=listed, dispatch=False))

    assert audit.config["mode"] == "list"
    assert audit.config["list_urls"] == [f"{base}/a", f"{base}/c", f"{base}/private/x"]  # deduplicated
    assert audit.max_pages == 3  # the budget is the list's length
    assert _crawled(audit, base) == {"/a", "/c"}  # not /, not the linked /b, /d; robots.txt refused /private/x
    assert audit.discovery["listed_urls_disallowed"] == 1
    assert audit.discovery["listed_urls_disallowed_examples"] == [f"{base}/private/x"]

    # The listed page's links are recorded as edges, followed or not.
    a = Page.objects.get(audit=audit, url=f"{base}/a")
    targets = set(LinkEdge.objects.filter(source_page=a).values_list("target_url", flat=True))
    assert targets == {f"{base}/b", f"{base}/c", f"{base}/unlisted-gone", f"{base}/"}
    assert a.internal_links == 4
    # /a -> /c, both listed, /c a 404: reported. The unlisted 404 was not fetched, so nothing says it is broken.
    broken = Issue.objects.filter(audit=audit, type="broken-internal-link")
    assert [(i.page_url, i.details["target_url"]) for i in broken] == [(f"{base}/a", f"{base}/c")]
    # Orphans and click depth mean nothing without following links.
    assert not Issue.objects.filter(audit=audit, type__in=["orphan-page", "deep-page"]).exists()
    assert "not followed" in audit.discovery["list_mode_note"]


@pytest.mark.django_db(transaction=True)
def test_the_same_site_crawled_follows_the_links_the_list_does_not():
    """The clean twin: in crawl mode /b and /d are reached from the same pages, so list mode's limit is its own."""
    with serve(_routes()) as base:
        project = ProjectFactory(base_url=base + "/")
        audit = _run(audit_start(project=project, max_pages=20, dispatch=False))
    assert {"/", "/a", "/b", "/c", "/d", "/unlisted-gone"} <= _crawled(audit, base)


@pytest.mark.django_db(transaction=True)
def test_sitemap_only_mode_crawls_exactly_the_sitemaps_urls():
    routes = _routes()
    with serve(routes) as base:
        # /sitemap.xml (found in crawl mode) names /d; the given sitemap names /b and /a only.
        routes["/sitemap.xml"] = _sitemap(base, ["/d"])
        routes["/maps/spot.xml"] = _sitemap(base, ["/b", "/a", "/b"])
        project = ProjectFactory(base_url=base + "/")
        audit = _run(audit_start(project=project, sitemap_url=f"{base}/maps/spot.xml", max_pages=50, dispatch=False))
    assert audit.config["mode"] == "sitemap"
    assert _crawled(audit, base) == {"/a", "/b"}
    assert set(Page.objects.filter(audit=audit).values_list("in_sitemap", flat=True)) == {True}
    assert audit.discovery["sitemap_urls"] == 2
    assert not Issue.objects.filter(audit=audit, type="orphan-page").exists()


@pytest.mark.django_db
def test_bad_lines_are_refused_with_their_line_numbers_and_nothing_is_stored():
    project = ProjectFactory(base_url="https://example.com/")
    lines = [
        "https://example.com/ok",
        "",
        "ftp://example.com/file",
        "https://elsewhere.example/page",
        "not a url at all",
        "https://www.example.com/fine-too",
    ]
    with pytest.raises(AuditRefused) as refused:
        audit_start(project=project, urls=lines, dispatch=False)
    assert refused.value.code == "invalid_url_list" and refused.value.field == "urls"
    message = refused.value.message
    assert "3 line(s)" in message
    assert "line 3:" in message and "line 4:" in message and "line 5:" in message
    assert "line 1:" not in message and "line 6:" not in message  # www. of the site is the site
    assert not Audit.objects.filter(project=project).exists()

    with pytest.raises(AuditRefused) as too_long:
        audit_start(project=project, urls=["https://example.com/a", "https://example.com/b"], max_pages=1)
    assert too_long.value.code == "invalid_max_pages"
    with pytest.raises(AuditRefused) as off_site:
        audit_start(project=project, sitemap_url="https://elsewhere.example/sitemap.xml")
    assert off_site.value.field == "sitemap_url"
    assert not Audit.objects.filter(project=project).exists()


def test_csv_lines_keep_the_files_numbers_and_skip_a_header():
    text = 'Address,Status\nhttps://example.com/a,200\n\n"https://example.com/b",301\n'
    assert url_list_lines(text, first_column=True) == ["", "https://example.com/a", "", "https://example.com/b"]
    assert url_list_lines("a\n\nb") == ["a", "", "b"]


# --- the dashboard, the API, the CLI ------------------------------------------------------------------


def _owner_client(project_base: str):
    owner = UserFactory()
    project = ProjectFactory(owner=owner, base_url=project_base)
    client = Client()
    client.force_login(owner)
    return owner, project, client


@pytest.mark.django_db
def test_dashboard_starts_a_list_audit_from_an_uploaded_csv():
    owner, project, client = _owner_client("https://example.com/")
    upload = SimpleUploadedFile("urls.csv", b"url,note\nhttps://example.com/a,x\nhttps://example.com/b,y\n")
    response = client.post(reverse("audits:audit-new", args=[project.id]), {"mode": "list", "url_file": upload})
    assert response.status_code == 302, response.context["form"].errors
    audit = Audit.objects.get(project=project)
    assert audit.config["mode"] == "list"
    assert audit.config["list_urls"] == ["https://example.com/a", "https://example.com/b"]
    assert audit.max_pages == 2


@pytest.mark.django_db
def test_dashboard_shows_bad_lines_under_the_list():
    owner, project, client = _owner_client("https://example.com/")
    pasted = "https://example.com/a\nhttps://other.example/b\n"
    response = client.post(
        reverse("audits:audit-new", args=[project.id]), {"mode": "list", "url_list": pasted, "max_pages": ""}
    )
    assert response.status_code == 400
    errors = " ".join(response.context["form"].errors["url_list"])
    assert "line 2:" in errors and "not on this project's site" in errors
    assert 'id="id_url_list_error"' in response.content.decode()
    assert not Audit.objects.filter(project=project).exists()
    # A wrong file type is refused by the form itself.
    response = client.post(
        reverse("audits:audit-new", args=[project.id]),
        {"mode": "list", "url_file": SimpleUploadedFile("urls.xlsx", b"PK\x03\x04")},
    )
    assert response.status_code == 400 and response.context["form"].errors["url_file"]


@pytest.mark.django_db
def test_dashboard_crawl_mode_is_unchanged_and_the_form_offers_the_modes():
    owner, project, client = _owner_client("https://example.com/")
    page_html = client.get(reverse("audits:audit-new", args=[project.id])).content.decode()
    assert 'enctype="multipart/form-data"' in page_html
    for value in ("crawl", "list", "sitemap"):
        assert f'value="{value}"' in page_html
    response = client.post(
        reverse("audits:audit-new", args=[project.id]), {"start_url": "https://example.com/", "max_pages": "10"}
    )
    assert response.status_code == 302
    assert Audit.objects.get(project=project).config["mode"] == "crawl"


@pytest.mark.django_db
def test_api_starts_a_list_audit_and_refuses_bad_lines():
    user = UserFactory()
    project = ProjectFactory(owner=user, base_url="https://example.com/")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='ci')[1]}")
    url = f"/api/v1/projects/{project.id}/audits/"

    bad = api.post(url, {"urls": ["https://example.com/a", "javascript:alert(1)"]}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_url_list"
    assert "line 2:" in bad.json()["detail"]
    assert not Audit.objects.filter(project=project).exists()

    response = api.post(url, {"urls": ["https://example.com/a", "https://example.com/b"]}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["config"]["mode"] == "list" and body["config"]["max_pages"] == 2
    assert body["config"]["list_urls"] == ["https://example.com/a", "https://example.com/b"]


@pytest.mark.django_db
def test_api_starts_a_sitemap_audit():
    user = UserFactory()
    project = ProjectFactory(owner=user, base_url="https://example.com/")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='ci')[1]}")
    response = api.post(
        f"/api/v1/projects/{project.id}/audits/",
        {"sitemap_url": "https://example.com/sitemap-news.xml", "max_pages": 10},
        format="json",
    )
    assert response.status_code == 202, response.json()
    assert response.json()["config"]["sitemap_url"] == "https://example.com/sitemap-news.xml"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cli_list_audits_exactly_the_file_and_bad_lines_exit_2(tmp_path):
    with serve(_routes()) as base:
        good = tmp_path / "urls.txt"
        good.write_text(f"{base}/a\n{base}/b\n")
        done = run_cli("audit", "--list", str(good), "--json", "--inline")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "completed" and result["pages_crawled"] == 2

        bad = tmp_path / "bad.txt"
        bad.write_text(f"{base}/a\nftp://example.com/x\n")
        refused = run_cli("audit", "--list", str(bad), "--json")
        assert refused.returncode == 2 and refused.stdout == ""
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "line 2:" in lines[0] and "invalid_url_list" in lines[0]

        missing = run_cli("audit", "--list", str(tmp_path / "nope.txt"))
        assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


CSV_FIELD_LIMIT_CHARS = 128 * 1024  # csv.field_size_limit()'s default


def test_a_csv_field_over_the_csv_modules_limit_is_a_list_refusal_not_a_crash():
    text = "url\nhttps://example.com/a\n" + "x" * (CSV_FIELD_LIMIT_CHARS + 1) + "\n"
    with pytest.raises(AuditRefused) as refused:
        url_list_lines(text, first_column=True)
    assert (refused.value.code, refused.value.field) == ("invalid_url_list", "urls")
    assert refused.value.message.startswith("line 3: ")


@pytest.mark.django_db
def test_dashboard_refuses_an_uploaded_csv_with_an_oversized_field_under_the_upload():
    owner, project, client = _owner_client("https://example.com/")
    body = b'url\nhttps://example.com/a\n"' + b"x" * (CSV_FIELD_LIMIT_CHARS + 1) + b'"\n'
    response = client.post(
        reverse("audits:audit-new", args=[project.id]),
        {"mode": "list", "url_file": SimpleUploadedFile("urls.csv", body)},
    )
    assert response.status_code == 400
    assert "line 3: not a CSV row of URLs" in " ".join(response.context["form"].errors["url_file"])
    assert not Audit.objects.filter(project=project).exists()
