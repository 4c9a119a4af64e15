"""Segments in the dashboard: a finding on /blog/ appears under the /blog/ segment and not under /docs/ on the overview,
the issues table, the issue type's evidence, the pages grid, the exports and the comparison; the segment follows the
tabs; an unknown segment is said, never ignored; the project's segments screen adds, previews, edits and deletes."""

import csv
import io

import openpyxl
import pytest
from django.urls import reverse

from audits.models import Segment
from audits.services import segment_create
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.factories import ProjectFactory, SegmentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(owner):
    """Two completed audits of a site with /blog/ and /docs/: the H1 went missing on /blog/a (new) and came back on
    /docs/b (fixed); a page at the root, a site-wide finding."""
    project = ProjectFactory(owner=owner, name="Segmented", base_url=SITE + "/")
    before = finished_audit(project, days_ago=3, pages_crawled=4)
    audit = finished_audit(project, pages_crawled=4)
    pages = {}
    for a in (before, audit):
        for path in ("/", "/blog/a", "/blog/b", "/docs/b"):
            pages[(a.id, path)] = make_page(a, path)
    make_issue(before, pages[(before.id, "/docs/b")], "missing-h1", "warning")
    make_issue(audit, pages[(audit.id, "/blog/a")], "missing-h1", "warning")
    make_issue(audit, pages[(audit.id, "/blog/a")], "broken-page", "critical", status_code=404)
    make_issue(audit, None, "sitemap-missing", "info")
    return audit, before


def _get(client, name, audit, segment="", *args, **query):
    params = {**query, **({"segment": segment} if segment else {})}
    return client.get(reverse(f"audits:{name}", args=[audit.id, *args]), params)


def test_overview_reads_the_segment_and_lists_the_segments(owner_client, site):
    audit, _before = site
    whole = _get(owner_client, "audit-detail", audit)
    assert whole.status_code == 200
    page = whole.content.decode()
    assert 'id="segment-picker"' in page and 'id="segments-table"' in page
    rows = {r.choice.key: r for r in whole.context["overview"]["segments"]}
    assert (rows["/blog/"].pages, rows["/blog/"].issues, rows["/blog/"].pages_with_errors) == (2, 2, 1)
    assert (rows["/docs/"].pages, rows["/docs/"].issues, rows["/docs/"].pages_with_errors) == (1, 0, 0)
    assert rows["other"].pages == 1

    blog = _get(owner_client, "audit-detail", audit, "/blog/")
    assert {t.type for t in blog.context["overview"]["top_issues"]} == {"missing-h1", "broken-page"}
    assert blog.context["overview"]["pages"] == 2
    assert blog.context["overview"]["severity_counts"]["info"] == 0  # the site-wide finding is in no segment
    body = blog.content.decode()
    assert "Showing <strong>/blog/</strong>" in body
    # The score is the segment's: an error (25 points) and a warning (8) each on 1 of its 2 pages: 100 − 16.5.
    assert blog.context["overview"]["score"].score == 84 and rows["/blog/"].score == 84
    assert "Health score of /blog/" in body and 'id="site-score"' in body
    # The tabs and the exports carry the segment.
    assert reverse("audits:audit-issues", args=[audit.id]) + "?segment=%2Fblog%2F" in body
    assert reverse("audits:audit-export", args=[audit.id, "issues", "csv"]) + "?segment=%2Fblog%2F" in body

    docs = _get(owner_client, "audit-detail", audit, "/docs/")
    assert docs.context["overview"]["top_issues"] == []
    assert docs.context["overview"]["score"].score == 100 and rows["/docs/"].score == 100
    assert docs.context["overview"]["pages"] == 1


def test_issues_table_and_evidence_are_the_segments(owner_client, site):
    audit, _before = site
    blog = _get(owner_client, "audit-issues", audit, "/blog/")
    assert {r.type: r.pages for r in blog.context["rows"]} == {"missing-h1": 1, "broken-page": 1}
    assert 'name="segment" value="/blog/"' in blog.content.decode()  # the filters keep it
    docs = _get(owner_client, "audit-issues", audit, "/docs/")
    assert docs.context["rows"] == []

    evidence = _get(owner_client, "audit-issue-type", audit, "/blog/", "missing-h1")
    assert [r["cells"][0]["value"] for r in evidence.context["evidence"]["rows"]] == [SITE + "/blog/a"]
    assert "50.0% of the pages of /blog/" in evidence.content.decode()
    empty = _get(owner_client, "audit-issue-type", audit, "/docs/", "missing-h1")
    assert empty.status_code == 200 and empty.context["evidence"]["rows"] == []
    assert "None in the segment /docs/" in empty.content.decode()


def test_pages_grid_lists_the_segments_pages(owner_client, site):
    audit, _before = site
    blog = _get(owner_client, "audit-pages", audit, "/blog/")
    assert [p.url for p in blog.context["pages"]] == [SITE + "/blog/a", SITE + "/blog/b"]
    assert blog.context["pages"].total == 2
    with_issue = _get(owner_client, "audit-pages", audit, "/docs/", issue="missing-h1")
    assert SITE + "/blog/a" not in with_issue.content.decode()


def _csv_rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_exports_honour_the_segment(owner_client, site):
    audit, _before = site
    blog = _get(owner_client, "audit-export", audit, "/blog/", "issues", "csv")
    assert "segment-blog" in blog["Content-Disposition"]
    assert sorted(r["type"] for r in _csv_rows(blog)) == ["broken-page", "missing-h1"]
    whole = _csv_rows(_get(owner_client, "audit-export", audit, "", "issues", "csv"))
    assert len(whole) == 3  # the site-wide finding too
    assert _csv_rows(_get(owner_client, "audit-export", audit, "/docs/", "issues", "csv")) == []
    per_type = _csv_rows(_get(owner_client, "audit-issue-type-export", audit, "/docs/", "missing-h1", "csv"))
    assert per_type == []
    per_type = _csv_rows(_get(owner_client, "audit-issue-type-export", audit, "/blog/", "missing-h1", "csv"))
    assert [r["page_url"] for r in per_type] == [SITE + "/blog/a"]
    pages = _csv_rows(_get(owner_client, "audit-export", audit, "/docs/", "pages", "csv"))
    assert [r["url"] for r in pages] == [SITE + "/docs/b"]
    grid = _csv_rows(_get(owner_client, "audit-pages-export", audit, "/blog/", "csv"))
    assert [r["url"] for r in grid] == [SITE + "/blog/a", SITE + "/blog/b"]
    xlsx = _get(owner_client, "audit-export", audit, "/docs/", "issues", "xlsx")
    book = openpyxl.load_workbook(io.BytesIO(b"".join(xlsx.streaming_content)), read_only=True)
    assert book.sheetnames == ["Overview"]


def test_comparison_counts_new_and_fixed_in_the_segment(owner_client, site):
    audit, before = site
    blog = _get(owner_client, "audit-compare", audit, "/blog/", base=before.id)
    assert {r.type: (r.new, r.fixed) for r in blog.context["rows"]}["missing-h1"] == (1, 0)
    docs = _get(owner_client, "audit-compare", audit, "/docs/", base=before.id)
    assert {r.type: (r.new, r.fixed) for r in docs.context["rows"]}["missing-h1"] == (0, 1)
    assert "broken-page" not in {r.type for r in docs.context["rows"]}
    assert docs.context["pages"]["both"] == 1
    listing = _get(owner_client, "audit-compare", audit, "/docs/", base=before.id, kind="new", type="missing-h1")
    assert listing.context["listing"]["issues"].paginator.count == 0


@pytest.mark.parametrize("name", ["audit-detail", "audit-issues", "audit-pages", "audit-compare"])
def test_an_unknown_segment_is_said_not_ignored(owner_client, site, name):
    audit, _before = site
    response = _get(owner_client, name, audit, "/nope/")
    assert response.status_code == 400
    body = response.content.decode()
    assert "Unknown segment “/nope/”" in body and "/blog/" in body
    assert 'id="segment-picker"' in body


def test_unknown_segment_on_an_export_is_refused(owner_client, site):
    audit, _before = site
    assert _get(owner_client, "audit-export", audit, "/nope/", "issues", "csv").status_code == 400


def test_stored_segments_replace_the_folders_in_the_picker(owner_client, site):
    audit, _before = site
    segment = segment_create(project=audit.project, name="Articles", kind="regex", value="^/blog/[a-z]$")
    response = _get(owner_client, "audit-detail", audit, str(segment.id))
    assert [r.choice.name for r in response.context["overview"]["segments"]] == ["Articles"]
    assert response.context["overview"]["pages"] == 2
    assert _get(owner_client, "audit-detail", audit, "/blog/").status_code == 400


def test_segments_screen_adds_previews_edits_and_deletes(owner_client, site):
    audit, _before = site
    project = audit.project
    url = reverse("audits:project-segments", args=[project.id])
    assert owner_client.get(url).status_code == 200
    preview = owner_client.post(url, {"name": "Blog", "kind": "prefix", "prefix": "/blog/", "action": "preview"})
    assert preview.status_code == 200 and preview.context["preview"]["pages"] == 2
    assert not Segment.objects.filter(project=project).exists()
    refused = owner_client.post(url, {"name": "Blog", "kind": "prefix", "prefix": "blog/", "action": "save"})
    assert refused.status_code == 400
    assert "starts with “/”" in str(refused.context["form"].errors["prefix"])
    refused = owner_client.post(url, {"name": "Bad", "kind": "regex", "pattern": "(", "action": "save"})
    assert "not a valid regular expression" in str(refused.context["form"].errors["pattern"])
    added = owner_client.post(url, {"name": "Blog", "kind": "prefix", "prefix": "/blog/", "action": "save"})
    assert added.status_code == 302
    segment = Segment.objects.get(project=project)
    listed = owner_client.get(url)
    assert listed.context["segments"][0][1].pages == 2  # counted on the last completed audit

    edit = reverse("audits:project-segment-edit", args=[project.id, segment.id])
    assert owner_client.get(edit).context["form"].initial["prefix"] == "/blog/"
    saved = owner_client.post(edit, {"name": "Docs", "kind": "prefix", "prefix": "/docs/", "action": "save"})
    assert saved.status_code == 302
    segment.refresh_from_db()
    assert (segment.name, segment.value) == ("Docs", "/docs/")
    delete = reverse("audits:project-segment-delete", args=[project.id, segment.id])
    assert owner_client.post(delete).status_code == 302
    assert not Segment.objects.filter(project=project).exists()


def test_segments_screen_is_scoped_to_the_account(client, stranger, site):
    audit, _before = site
    segment = SegmentFactory(project=audit.project)
    client.force_login(stranger)
    assert client.get(reverse("audits:project-segments", args=[audit.project.id])).status_code == 404
    edit = reverse("audits:project-segment-edit", args=[audit.project.id, segment.id])
    assert client.post(edit, {"name": "x", "kind": "prefix", "prefix": "/x/"}).status_code == 404
    assert _get(client, "audit-detail", audit, str(segment.id)).status_code == 404


HOSTILE = ["a\x00b", "\x00", "x" * 5000, "line\r\nbreak", "<script>", "%00", "‮", "٣", "99999999999999999999", "-1"]
REGEXES = ["(?P<x>a)", "[[:alpha:]]+", "\\", "(a+)+$", "a{1000}{1000}", "(?i)BLOG", "\\d", "[z-a]", "(?", "$^"]


@pytest.mark.parametrize("value", HOSTILE + REGEXES + ["/blog/", "other", ""])
def test_hostile_segment_values_never_fail_the_server(owner_client, site, value):
    audit, _before = site
    for name in ("audit-detail", "audit-issues", "audit-pages", "audit-compare"):
        response = owner_client.get(reverse(f"audits:{name}", args=[audit.id]), {"segment": value})
        assert response.status_code in (200, 400), (name, value, response.status_code)
    url = reverse("audits:project-segments", args=[audit.project.id])
    for kind, field in (("prefix", "prefix"), ("regex", "pattern"), ("extraction", "value")):
        for action in ("preview", "save"):
            data = {"name": value or "x", "kind": kind, field: value, "extractor": value, "position": value}
            response = owner_client.post(url, {**data, "action": action})
            assert response.status_code in (200, 302, 400), (kind, value, action, response.status_code)
