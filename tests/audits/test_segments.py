"""Segments (audits.segments): a real crawl of a small site with /blog/ and /docs/ sections, read per segment.

A finding planted on a /blog/ page is counted under /blog/ and not under /docs/ in the issue summary, the exports and
the comparison; the default segments are the top-level folders; stored segments (prefix, regular expression,
custom-extraction value) replace them; a page in two segments counts in both; an unknown `?segment=` is refused.
"""

import csv
import io
import json

import openpyxl
import pytest

from audits import comparison, exports
from audits.models import Audit, Page, Segment
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.priority import issue_summary
from audits.segment_writes import segment_create, segment_delete, segment_update
from audits.segments import (
    MAX_SEGMENTS_PER_PROJECT,
    OTHER_KEY,
    SEGMENT_REGEX_MAX_CHARS,
    SegmentInvalid,
    UnknownSegment,
    resolve_segment,
    segment_choices,
    segment_preview_count,
    segment_table,
)
from tests.factories import AuditFactory, IssueFactory, PageFactory, ProjectFactory, SegmentFactory
from tests.support.sites.pages import html_route, page, serve

SECTION_EXTRACTOR = {
    "name": "section",
    "kind": "regex",
    "expression": '<meta name="section" content="([^"]+)"',
    "multiple": False,
    "rule": "",
    "rule_value": "",
}
NAV = [("/", "Home"), ("/blog/", "Blog"), ("/docs/", "Docs"), ("/about", "About")]


def _section(name: str) -> str:
    return f'<meta name="section" content="{name}">'


def _routes(*, h1_missing_on: str) -> dict:
    """Seven pages: / and /about at the root, three under /blog/, two under /docs/; the page `h1_missing_on`
    has no H1 (a missing-h1 finding). /blog/post-2 and /docs/guide are both in the "guides" section."""
    pages = {
        "/": page("home", links=NAV),
        "/about": page("about", links=NAV),
        "/blog/": page("blog", links=[*NAV, ("/blog/post-1", "Post 1"), ("/blog/post-2", "Post 2")]),
        "/blog/post-1": page("post1", links=NAV, head=_section("news")),
        "/blog/post-2": page("post2", links=NAV, head=_section("guides")),
        "/docs/": page("docs", links=[*NAV, ("/docs/guide", "Guide")]),
        "/docs/guide": page("guide", links=NAV, head=_section("guides")),
    }
    name = {"/blog/post-1": "post1", "/docs/guide": "guide"}[h1_missing_on]
    head = pages[h1_missing_on].split("<head>")[1].split("</head>")[0]
    pages[h1_missing_on] = page(name, links=NAV, h1=None, head=_section("news") if "post1" == name else head)
    return {path: html_route(body) for path, body in pages.items()}


def _crawl(project, routes: dict, site: dict) -> Audit:
    site.clear()
    site.update(routes)
    audit = audit_start(project=project, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _types(rows) -> dict[str, int]:
    return {r.type: r.pages for r in rows}


def _csv(chunks) -> list[dict]:
    return list(csv.DictReader(io.StringIO("".join(chunks))))


@pytest.mark.django_db(transaction=True)
def test_a_blog_finding_is_read_under_blog_and_not_docs_on_a_real_crawl(tmp_path):
    site: dict = {}
    with serve(site) as base:
        project = ProjectFactory(base_url=base + "/", extractors=[SECTION_EXTRACTOR])
        before = _crawl(project, _routes(h1_missing_on="/docs/guide"), site)
        audit = _crawl(project, _routes(h1_missing_on="/blog/post-1"), site)

    # Defaults: the top-level folders by pages, then Other (the root's pages).
    choices = segment_choices(audit=audit)
    assert [(c.key, c.pages) for c in choices] == [("/blog/", 3), ("/docs/", 2), (OTHER_KEY, 2)]
    blog = resolve_segment(audit=audit, param="/blog/")
    docs = resolve_segment(audit=audit, param="/docs/")
    other = resolve_segment(audit=audit, param=OTHER_KEY)
    in_other = Page.objects.filter(audit=audit).filter(other.pages_q).values_list("url", flat=True)
    assert {u.removeprefix(base) for u in in_other} == {"/", "/about"}

    # The issue summary, per segment.
    whole = _types(issue_summary(audit=audit))
    assert whole["missing-h1"] == 1
    in_blog = issue_summary(audit=audit, pages_q=blog.pages_q, issues_q=blog.issues_q)
    assert _types(in_blog)["missing-h1"] == 1
    assert next(r for r in in_blog if r.type == "missing-h1").share == pytest.approx(1 / 3)
    assert "missing-h1" not in _types(issue_summary(audit=audit, pages_q=docs.pages_q, issues_q=docs.issues_q))
    assert "missing-h1" not in _types(issue_summary(audit=audit, pages_q=other.pages_q, issues_q=other.issues_q))

    # Exports: the long-form CSV and JSON, the per-type CSV, the pages CSV and the workbook.
    rows = _csv(exports.issues_csv_rows(audit, issues_q=blog.issues_q))
    assert [(r["type"], r["page_url"]) for r in rows if r["type"] == "missing-h1"] == [
        ("missing-h1", f"{base}/blog/post-1")
    ]
    assert all(r["page_url"].startswith(f"{base}/blog/") for r in rows)
    assert not [r for r in _csv(exports.issues_csv_rows(audit, issues_q=docs.issues_q)) if r["type"] == "missing-h1"]
    as_json = json.loads("".join(exports.issues_json_chunks(audit, issues_q=blog.issues_q)))
    assert as_json and all(r["page_url"].startswith(f"{base}/blog/") for r in as_json)
    assert json.loads("".join(exports.issues_json_chunks(audit, issues_q=docs.issues_q))) == []
    assert len(_csv(exports.issue_type_csv_rows(audit, "missing-h1", issues_q=blog.issues_q))) == 1
    assert _csv(exports.issue_type_csv_rows(audit, "missing-h1", issues_q=docs.issues_q)) == []
    pages = _csv(exports.pages_csv_rows(audit, pages_q=docs.pages_q))
    assert [p["url"].removeprefix(base) for p in pages] == ["/docs/", "/docs/guide"]
    path = tmp_path / "blog.xlsx"
    exports.issues_xlsx_write(audit, str(path), segment_name="/blog/", issues_q=blog.issues_q)
    book = openpyxl.load_workbook(path, read_only=True)
    assert "missing-h1" in book.sheetnames
    assert ("Segment", "/blog/") in [r[:2] for r in book["Overview"].iter_rows(values_only=True)]
    exports.issues_xlsx_write(audit, str(path), segment_name="/docs/", issues_q=docs.issues_q)
    assert "missing-h1" not in openpyxl.load_workbook(path, read_only=True).sheetnames

    # Comparison: the H1 moved from /docs/guide (fixed) to /blog/post-1 (new).
    def counts(choice):
        rows = comparison.comparison_summary(audit=audit, previous=before, issues_q=choice.issues_q)
        row = next((r for r in rows if r.type == "missing-h1"), None)
        return (row.new, row.fixed) if row else (0, 0)

    assert counts(blog) == (1, 0)
    assert counts(docs) == (0, 1)
    assert counts(other) == (0, 0)
    listed = comparison.comparison_issues(
        audit=audit, previous=before, kind="new", issue_type="missing-h1", issues_q=docs.issues_q
    )
    assert list(listed) == []
    assert comparison.comparison_pages(audit=audit, previous=before, pages_q=blog.pages_q)["both"] == 3

    # Stored segments replace the defaults: prefix, regular expression, custom-extraction value.
    segment_create(project=project, name="Blog", kind="prefix", value="/blog/")
    segment_create(project=project, name="Guides", kind="extraction", extractor="section", value="guides")
    segment_create(project=project, name="Docs pages", kind="regex", value=r"^/docs/[a-z]+$")
    table = {row.choice.name: row for row in segment_table(audit=audit)}
    assert list(table) == ["Blog", "Guides", "Docs pages"]
    assert (table["Blog"].pages, table["Guides"].pages, table["Docs pages"].pages) == (3, 2, 1)
    # /blog/post-2 is in Blog and in Guides: counted in both.
    guides = resolve_segment(audit=audit, param=str(table["Guides"].choice.segment_id))
    in_guides = set(Page.objects.filter(audit=audit).filter(guides.pages_q).values_list("url", flat=True))
    assert in_guides == {f"{base}/blog/post-2", f"{base}/docs/guide"}
    assert table["Blog"].issues >= 1 and "missing-h1" in _types(
        issue_summary(audit=audit, pages_q=table["Blog"].choice.pages_q, issues_q=table["Blog"].choice.issues_q)
    )
    with pytest.raises(UnknownSegment, match="Unknown segment “/blog/”"):  # the folder defaults are gone
        resolve_segment(audit=audit, param="/blog/")
    # The preview counts on the last completed audit.
    assert segment_preview_count(project=project, kind="regex", value="^/blog/post")[1] == 2


@pytest.mark.django_db
def test_unknown_segment_values_are_refused_with_the_choices():
    audit = AuditFactory(status=Audit.Status.COMPLETED)
    PageFactory(audit=audit, url="http://127.0.0.1:1/shop/a")
    with pytest.raises(UnknownSegment) as refused:
        resolve_segment(audit=audit, param="/nope/")
    assert refused.value.code == "unknown_segment" and refused.value.field == "segment"
    assert "Unknown segment “/nope/”" in refused.value.message and "/shop/" in refused.value.message
    for param in ("99999999999999999999999", "x" * 5000, "0"):
        with pytest.raises(UnknownSegment):
            resolve_segment(audit=audit, param=param)
    assert resolve_segment(audit=audit, param="") is None
    assert resolve_segment(audit=audit, param=None) is None


@pytest.mark.django_db
def test_defaults_are_the_largest_top_level_folders_then_other():
    audit = AuditFactory()
    base = "http://127.0.0.1:1"
    for folder, n in [("big", 5), ("mid", 3), ("small", 1)]:
        for i in range(n):
            PageFactory(audit=audit, url=f"{base}/{folder}/p{i}")
    PageFactory(audit=audit, url=f"{base}/")
    PageFactory(audit=audit, url=f"{base}/search?q=a/b")  # a slash in the query is no folder
    choices = segment_choices(audit=audit)
    assert [(c.key, c.pages) for c in choices] == [("/big/", 5), ("/mid/", 3), ("/small/", 1), (OTHER_KEY, 2)]
    assert all(c.default for c in choices)


@pytest.mark.django_db
def test_issues_of_a_segment_follow_their_page_and_site_wide_findings_belong_to_none():
    audit = AuditFactory()
    blog = PageFactory(audit=audit, url="http://127.0.0.1:1/blog/a")
    docs = PageFactory(audit=audit, url="http://127.0.0.1:1/docs/a")
    IssueFactory(audit=audit, page=blog, type="missing-h1")
    IssueFactory(audit=audit, page=docs, type="missing-h1")
    IssueFactory(audit=audit, page=None, type="no-sitemap", severity="info")
    PageFactory(audit=audit, url="http://127.0.0.1:1/")
    for key in ("/blog/", "/docs/"):
        choice = resolve_segment(audit=audit, param=key)
        assert {i.page_id for i in audit.issues.filter(choice.issues_q)} == {blog.id if key == "/blog/" else docs.id}
    assert not audit.issues.filter(resolve_segment(audit=audit, param=OTHER_KEY).issues_q).exists()


@pytest.mark.django_db
def test_extraction_segments_match_any_of_a_pages_values_exactly():
    project = ProjectFactory(extractors=[{**SECTION_EXTRACTOR, "multiple": True}])
    audit = AuditFactory(project=project)
    a = PageFactory(audit=audit, extracted={"section": ["news", "guides"]})
    PageFactory(audit=audit, extracted={"section": ["guidesx"]})
    PageFactory(audit=audit, extracted={"other": ["guides"]})
    PageFactory(audit=audit, extracted={})
    segment = segment_create(project=project, name="Guides", kind="extraction", extractor="section", value="guides")
    choice = resolve_segment(audit=audit, param=str(segment.id))
    assert list(Page.objects.filter(audit=audit).filter(choice.pages_q)) == [a]


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"kind": "prefix", "value": "blog/"}, "value", "starts with “/”"),
        ({"kind": "prefix", "value": "/a b/"}, "value", "without spaces"),
        ({"kind": "prefix", "value": ""}, "value", "Enter a path prefix"),
        ({"kind": "regex", "value": "(unclosed"}, "value", "not a valid regular expression"),
        ({"kind": "regex", "value": "a" * (SEGMENT_REGEX_MAX_CHARS + 1)}, "value", "at most"),
        ({"kind": "regex", "value": "^/(?=blog)"}, "value", "lookahead"),
        ({"kind": "regex", "value": "(?P<year>\\d+)"}, "value", "database accepts"),
        ({"kind": "extraction", "extractor": "price", "value": "x"}, "extractor", "Choose one of"),
        ({"kind": "teleport", "value": "/x/"}, "kind", "The kind is one of"),
        ({"name": " ", "kind": "prefix", "value": "/x/"}, "name", "Give the segment a name"),
        ({"name": "Taken", "kind": "prefix", "value": "/x/"}, "name", "already has a segment named"),
    ],
)
@pytest.mark.django_db
def test_segments_are_refused_with_the_field_and_a_reason(fields, field, says):
    project = ProjectFactory(extractors=[SECTION_EXTRACTOR])
    SegmentFactory(project=project, name="taken")
    with pytest.raises(SegmentInvalid) as refused:
        segment_create(project=project, **{"name": "New", **fields})
    assert refused.value.field == field
    assert says in refused.value.message
    assert Segment.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_extraction_segments_need_an_extractor_of_the_project():
    with pytest.raises(SegmentInvalid, match="no custom extractors"):
        segment_create(project=ProjectFactory(), name="G", kind="extraction", extractor="section", value="x")


@pytest.mark.django_db
def test_a_project_has_a_bounded_number_of_segments_in_order():
    project = ProjectFactory()
    for i in range(MAX_SEGMENTS_PER_PROJECT):
        segment_create(project=project, name=f"s{i}", kind="prefix", value=f"/s{i}/")
    assert list(Segment.objects.filter(project=project).values_list("position", flat=True)) == list(
        range(MAX_SEGMENTS_PER_PROJECT)
    )
    with pytest.raises(SegmentInvalid, match="at most"):
        segment_create(project=project, name="one more", kind="prefix", value="/x/")


@pytest.mark.django_db
def test_update_checks_the_whole_segment_and_delete_removes_it():
    project = ProjectFactory()
    segment = segment_create(project=project, name="Blog", kind="prefix", value="/blog/")
    other = segment_create(project=project, name="Docs", kind="prefix", value="/docs/")
    segment = segment_update(segment=segment, name=" Blog  posts ", value="/posts/")
    assert (segment.name, segment.value) == ("Blog posts", "/posts/")
    with pytest.raises(SegmentInvalid, match="already has"):
        segment_update(segment=other, name="blog POSTS")
    with pytest.raises(SegmentInvalid, match="starts with"):
        segment_update(segment=segment, kind="prefix", value="nope")
    segment.refresh_from_db()
    assert segment.value == "/posts/"
    segment_delete(segment=segment)
    assert list(Segment.objects.filter(project=project)) == [other]


@pytest.mark.django_db
def test_a_completed_audits_segment_figures_are_counted_once_per_set_of_rules(django_assert_num_queries):
    audit = AuditFactory(status=Audit.Status.COMPLETED)
    blog = PageFactory(audit=audit, url="http://127.0.0.1:1/blog/a")
    PageFactory(audit=audit, url="http://127.0.0.1:1/docs/a")
    IssueFactory(audit=audit, page=blog, type="missing-h1")
    choices = segment_choices(audit=audit)
    first = [(r.choice.key, r.pages, r.issues) for r in segment_table(audit=audit, choices=choices)]
    assert first == [("/blog/", 1, 1), ("/docs/", 1, 0)]
    with django_assert_num_queries(0):
        assert [(r.choice.key, r.pages, r.issues) for r in segment_table(audit=audit, choices=choices)] == first
    segment_create(project=audit.project, name="Blog", kind="prefix", value="/blog/")
    assert [(r.choice.name, r.pages) for r in segment_table(audit=audit)] == [("Blog", 1)]  # new rules, counted
