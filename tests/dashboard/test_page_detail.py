"""The page detail screen: issues grouped by type with their evidence in columns, outlinks with their
targets' status, the heading outline, the SERP preview (cut as Google cuts) and the response headers."""

import pytest
from django.urls import reverse

from audits.limits import PAGE_HEADER_VALUE_MAX_CHARS, PAGE_HEADERS_STORED_MAX
from audits.pipeline.page_record import _stored_headers
from dashboard.pages import serp_breadcrumb, serp_truncate
from scratchpad.models import LinkEdge
from tests.dashboard.conftest import SITE, finished_audit, make_issue, make_page
from tests.factories import IssueFactory, ProjectFactory


@pytest.fixture
def detail(owner):
    audit = finished_audit(ProjectFactory(owner=owner, name="Detail"))
    page = make_page(
        audit,
        "/guide",
        title="How to choose a tent for a long walk in the mountains when it rains a lot",
        meta_description="Short.",
        headings=[[1, "Choosing a tent"], [2, "Weight"], [4, "Ultralight fabrics"], [2, "Price"]],
        response_headers={"content-type": "text/html; charset=utf-8", "cache-control": "max-age=60"},
    )
    gone = make_page(audit, "/gone", status_code=404, is_indexable=False)
    moved = make_page(audit, "/moved", status_code=301, redirect_url=SITE + "/guide")
    for target, anchor in ((gone.url, "Old guide"), (moved.url, "Moved"), (SITE + "/never", "Never crawled")):
        LinkEdge.objects.create(audit=audit, source_page=page, target_url=target, anchor_text=anchor)
    for n in range(3):
        details = {"target_url": f"{SITE}/gone-{n}", "status_code": 404, "anchor_text": f"link {n}", "links": 1}
        IssueFactory(
            audit=audit, page=page, type="broken-internal-link", severity="critical", details=details, dedupe_key=str(n)
        )
    make_issue(audit, page, "title-too-long", "warning", title=page.title, chars=len(page.title), max_chars=60)
    return audit, page


def _get(client, audit, page):
    response = client.get(reverse("audits:page-detail", args=[audit.id, page.id]))
    assert response.status_code == 200
    return response


def test_issues_are_grouped_one_card_per_type_with_named_columns(owner_client, detail):
    audit, page = detail
    response = _get(owner_client, audit, page)
    groups = {g.type: g for g in response.context["groups"]}
    assert list(groups) == ["broken-internal-link", "title-too-long"]  # critical first
    broken = groups["broken-internal-link"]
    assert broken.count == 3 and broken.count_label == "3 links"
    assert ("target_url", "Target") in broken.columns and all(key != "page_url" for key, _ in broken.columns)
    assert {row["target_url"] for row in broken.rows} == {f"{SITE}/gone-{n}" for n in range(3)}
    html = response.content.decode()
    assert html.count('class="issue-group') == 2  # not one card per issue
    assert '<th scope="col">Target</th>' in html and f"{SITE}/gone-2" in html
    assert '"target_status_code"' not in html  # no JSON blob


def test_outlinks_show_each_target_s_status(owner_client, detail):
    audit, page = detail
    response = _get(owner_client, audit, page)
    statuses = {link["target_url"]: link["target_status"] for link in response.context["outlinks"]}
    assert statuses == {SITE + "/gone": 404, SITE + "/moved": 301, SITE + "/never": None}
    html = response.content.decode()
    assert 'class="code code-4">404<' in html and 'class="code code-3">301<' in html and "not crawled" in html


def test_heading_outline_marks_skipped_levels(owner_client, detail):
    audit, page = detail
    outline = _get(owner_client, audit, page).context["outline"]
    assert [(h.level, h.text, h.skipped) for h in outline] == [
        (1, "Choosing a tent", False),
        (2, "Weight", False),
        (4, "Ultralight fabrics", True),
        (2, "Price", False),
    ]


def test_serp_preview_cuts_the_title_at_a_word_and_shows_the_breadcrumb(owner_client, detail):
    audit, page = detail
    response = _get(owner_client, audit, page)
    serp = response.context["serp"]
    assert serp["title_cut"] and serp["title"] == "How to choose a tent for a long walk in the mountains when ..."
    assert serp["breadcrumb"] == "https://site.test › guide"
    assert serp["description"] == "Short." and not serp["description_cut"]
    assert "cut after about 60" in response.content.decode()


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        ("Short title", 60, ("Short title", False)),
        ("x" * 60, 60, ("x" * 60, False)),  # exactly at the limit: whole
        ("one two three four", 9, ("one two ...", True)),  # cut back to the last whole word
        ("one two three", 7, ("one two ...", True)),  # the limit falls on a word's end: that word stays
        ("abcdefghijklmnop", 5, ("abcde ...", True)),  # one long word: cut inside it
        ("  spaced   out  words ", 60, ("spaced out words", False)),  # whitespace collapsed as a browser does
    ],
)
def test_serp_truncate(text, limit, expected):
    assert serp_truncate(text, limit) == expected


def test_serp_breadcrumb_decodes_segments():
    assert serp_breadcrumb("https://example.com/blog/caf%C3%A9/?q=1") == "https://example.com › blog › café"


def test_response_headers_are_listed_and_stored_bounded(owner_client, detail):
    audit, page = detail
    response = _get(owner_client, audit, page)
    assert response.context["headers"] == [
        ("cache-control", "max-age=60"),
        ("content-type", "text/html; charset=utf-8"),
    ]
    hostile = {f"x-h{n}": "v" * 5000 for n in range(500)}
    stored = _stored_headers(hostile)
    assert len(stored) == PAGE_HEADERS_STORED_MAX
    assert max(len(v) for v in stored.values()) == PAGE_HEADER_VALUE_MAX_CHARS


def test_the_word_count_says_its_unit(owner_client, detail):
    audit, page = detail
    japanese = make_page(audit, "/ja/guide", word_count=521, word_unit="characters")
    html = _get(owner_client, audit, japanese).content.decode()
    assert '<span id="page-words">521 characters (Chinese or Japanese text, counted by character)</span>' in html
    page.word_count = 700
    page.save(update_fields=["word_count"])
    assert '<span id="page-words">700 words</span>' in _get(owner_client, audit, page).content.decode()
