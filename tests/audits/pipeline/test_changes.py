"""audits.pipeline.changes: what changed on each URL between an audit and its baseline. Real audits of the site served
in two versions (tests.support.sites.versions) for the rows end to end; pages written by the factories for the
thresholds and the rules of each field; the baseline's default, a chosen one, one chosen later, and refusals."""

import pytest
from django.utils import timezone

from audits.errors import AuditRefused
from audits.limits import finalize_time_limit_s
from audits.models import Audit, Page, PageChange, page_change_id_for
from audits.pipeline.changes import (
    INLINKS_CHANGE_MIN_LINKS,
    SITEMAP_CHANGES_MAX,
    WORDS_CHANGE_MIN_WORDS,
    baseline_default,
    changes_store,
    indexability_text,
    robots_txt_change_key,
)
from audits.pipeline.discovery import SITEMAP_ERRORS_KEPT, SITEMAPS_KEPT
from audits.pipeline.finalize import audit_finalize
from audits.pipeline.inline import pipeline_crawl_inline
from audits.pipeline.start import audit_start
from audits.services import audit_baseline_set
from audits.stats import change_stats_count
from audits.tasks import changes_compute
from tests.factories import AuditFactory, PageCountsFactory, PageFactory, ProjectFactory
from tests.support.sites.versions import audit_versions, expected_changes, serve_versions

COMPLETED = Audit.Status.COMPLETED


def _rows(audit) -> set[tuple[str, str, str, str, str]]:
    return set(PageChange.objects.filter(audit=audit).values_list("field", "url", "direction", "before", "after"))


def _counts(expected) -> dict[str, int]:
    counts: dict[str, int] = {}
    for field, *_rest in expected:
        counts[field] = counts.get(field, 0) + 1
    return counts


# --- two real audits of the site in two versions ---------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_second_version_lists_exactly_what_changed_and_an_unchanged_rerun_nothing(monkeypatch):
    with serve_versions() as site:
        first = audit_versions(site)
        site.version = 2
        second = audit_versions(site, project=first.project)
        rerun = audit_versions(site, project=first.project)
        chosen = audit_versions(site, project=first.project, baseline=first)  # audit_start(baseline=)
    expected = expected_changes(site)

    # The first audit has nothing to compare with: no rows, and its figures say so (the faces: "first audit").
    assert first.baseline is None and not _rows(first)
    assert first.stats["changes"] == {"baseline": None}

    assert second.baseline_id == first.id
    assert _rows(second) == expected
    assert second.stats["changes"] == {"baseline": str(first.id), **_counts(expected)}
    robots_lines = [line.strip() for line in second.robots_txt.splitlines() if line.strip()]
    for change in PageChange.objects.filter(audit=second):
        key = ""
        if change.field == "robots_txt":  # its index among the non-blank lines: the third and the fourth
            key = robots_txt_change_key(change.direction, robots_lines.index(change.after))
        assert change.id == page_change_id_for(second.id, change.url, change.field, key)
        assert change.baseline_id == first.id

    assert rerun.baseline_id == second.id and not _rows(rerun)
    assert rerun.stats["changes"] == {"baseline": str(second.id)}

    # A baseline chosen at the start wins over the previous audit.
    assert chosen.baseline_id == first.id and _rows(chosen) == expected

    # Chosen later: stored, then recomputed by the task the service sends after commit.
    sent = []
    monkeypatch.setattr(
        "audits.pipeline.changes.task_send", lambda name, *args, **options: sent.append((name, *args, options))
    )
    assert audit_baseline_set(audit=rerun, baseline=str(first.id)).baseline_id == first.id
    assert sent == [
        ("audits.changes_compute", str(rerun.id), {"time_limit": finalize_time_limit_s(rerun.pages_crawled)})
    ]
    changes_compute.apply(args=[str(rerun.id)]).get()
    rerun.refresh_from_db()
    assert _rows(rerun) == expected
    assert rerun.stats["changes"] == {"baseline": str(first.id), **_counts(expected)}
    assert rerun.stats["pages"] == 12 and rerun.stats["issue_types"]  # the other figures are kept
    audit_baseline_set(audit=rerun, baseline=second)
    changes_compute.apply(args=[str(rerun.id)]).get()
    rerun.refresh_from_db()
    assert not _rows(rerun) and rerun.stats["changes"] == {"baseline": str(second.id)}


@pytest.mark.django_db(transaction=True)
def test_a_finalize_run_again_stores_the_same_rows_once():
    with serve_versions() as site:
        first = audit_versions(site)
        site.version = 2
        project = first.project
        second = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False)
        assert pipeline_crawl_inline(second.id)
    # A first finalize that died after storing the changes, then the redelivered one.
    assert changes_store(second) == first
    stored = sorted(PageChange.objects.filter(audit=second).values_list("id", "field", "url", "before", "after"))
    assert audit_finalize(audit_id=second.id)
    again = sorted(PageChange.objects.filter(audit=second).values_list("id", "field", "url", "before", "after"))
    assert again == stored and _rows(second) == expected_changes(site)
    changes_store(second)  # and once more on the completed audit
    assert sorted(PageChange.objects.filter(audit=second).values_list("id", "field", "url", "before", "after")) == (
        stored
    )


# --- the fields, on pages the factories write ------------------------------------------------------


@pytest.fixture
def pair(db):
    """(baseline, audit): two completed audits of one project, the baseline first."""
    project = ProjectFactory(base_url="https://example.com/")
    baseline = AuditFactory(project=project, status=COMPLETED)
    audit = AuditFactory(project=project, status=COMPLETED)
    return baseline, audit


def _page(audit, path: str, **fields) -> Page:
    """A page; `inlinks_count` is stored as its PageCounts row as finalize stores it (None: no row)."""
    inlinks = fields.pop("inlinks_count", None)
    page = PageFactory(audit=audit, url="https://example.com" + path, **fields)
    if inlinks is not None:
        PageCountsFactory(page=page, inlinks=inlinks)
    return page


def _changes(pair, before: dict, after: dict, path: str = "/p") -> set[tuple[str, str, str, str]]:
    baseline, audit = pair
    _page(baseline, path, **before)
    _page(audit, path, **after)
    assert changes_store(audit) == baseline
    return set(PageChange.objects.filter(audit=audit).values_list("field", "direction", "before", "after"))


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (1000, 1150, set()),  # 15 %: an edit
        (1000, 1250, {("words", "up", "1000", "1250")}),
        (1000, 750, {("words", "down", "1000", "750")}),
        (100, 100 + WORDS_CHANGE_MIN_WORDS - 1, set()),  # 49 % but 49 words
        (100, 100 + WORDS_CHANGE_MIN_WORDS, {("words", "up", "100", "150")}),
        (0, 60, {("words", "up", "0", "60")}),
    ],
)
def test_a_word_count_changes_only_beyond_its_threshold(pair, before, after, expected):
    assert _changes(pair, {"word_count": before}, {"word_count": after}) == expected


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (100, 85, set()),
        (100, 75, {("inlinks", "down", "100", "75")}),
        (5, 5 + INLINKS_CHANGE_MIN_LINKS - 1, set()),  # +180 % but 9 links
        (0, 12, {("inlinks", "up", "0", "12")}),
        (None, 50, set()),  # not counted (an audit finalized before counts were stored): nothing to compare
    ],
)
def test_inlinks_change_only_beyond_their_threshold(pair, before, after, expected):
    assert _changes(pair, {"inlinks_count": before}, {"inlinks_count": after}) == expected


def test_a_page_that_now_fails_is_a_status_change_not_a_dozen_emptied_fields(pair):
    ok = {"title": "Lamps", "meta_description": "All our lamps", "h1": "Lamps", "word_count": 800}
    failed = {"status_code": None, "fetch_class": "error", "content_type": "", "title": "", "h1": "",
              "word_count": 0, "is_indexable": False, "meta_description": None}  # fmt: skip
    assert _changes(pair, ok, failed) == {
        ("status", "changed", "200", "no answer"),
        ("indexability", "down", "indexable", "non-indexable: no answer"),
    }


def test_content_fields_are_read_as_the_product_reads_them(pair):
    before = {
        "meta_robots": "NOINDEX, follow",
        "is_indexable": False,
        "structured_data": {"types": ["Product", "Offer"]},
        "hreflang": [["en", "https://example.com/p"], ["de", "https://example.com/de/p"]],
        "meta_description": None,
        "canonical_header": "https://example.com/p",
    }
    after = {
        "meta_robots": "follow",
        "x_robots_tag": "noindex",  # the same directives, one from the header now
        "is_indexable": False,
        "structured_data": {"types": ["Offer", "Product"]},  # the same set
        "hreflang": [["de", "https://example.com/de/p"], ["en", "https://example.com/p"]],
        "meta_description": "",  # absent either way
        "canonical_url": "https://example.com/p",  # the same canonical, from the HTML now
    }
    assert _changes(pair, before, after) == set()


def test_each_content_field_gives_its_row(pair):
    before = {"title": "Lamp", "h1": "Lamp", "meta_description": "", "canonical_url": "https://example.com/p",
              "structured_data": {"types": ["Product"]}, "hreflang": [], "main_text_hash": "a" * 40,
              "main_words": 300, "depth": None, "in_sitemap": False, "meta_robots": ""}  # fmt: skip
    after = {"title": "Lamp, classic", "h1": "", "meta_description": "A lamp", "canonical_url": "https://example.com/q",
             "structured_data": {"types": ["Product", "BreadcrumbList"]}, "hreflang": [["en", "https://example.com/p"]],
             "main_text_hash": "b" * 40, "main_words": 310, "depth": 3, "in_sitemap": True,
             "meta_robots": "nofollow", "is_indexable": False}  # fmt: skip
    assert _changes(pair, before, after) == {
        ("title", "changed", "Lamp", "Lamp, classic"),
        ("h1", "removed", "Lamp", ""),
        ("description", "added", "", "A lamp"),
        ("canonical", "changed", "https://example.com/p", "https://example.com/q"),
        ("structured_data", "changed", "Product", "BreadcrumbList, Product"),
        ("hreflang", "added", "", "en https://example.com/p"),
        ("content", "changed", "300 words (aaaaaaaa)", "310 words (bbbbbbbb)"),
        ("depth", "added", "", "3"),
        ("in_sitemap", "added", "no", "yes"),
        ("robots", "added", "", "nofollow"),
        ("indexability", "down", "indexable", "non-indexable: canonicalized"),
    }


def test_indexability_gives_the_reason_page_record_decided_on(db):
    audit = AuditFactory()
    cases = [
        ({}, "indexable"),
        ({"status_code": 404, "is_indexable": False}, "non-indexable: non-2xx status"),
        ({"status_code": 301, "redirect_url": "https://x/", "is_indexable": False}, "non-indexable: redirect"),
        ({"fetch_class": "blocked", "status_code": 403, "is_indexable": False}, "non-indexable: blocked"),
        ({"content_type": "application/pdf", "is_indexable": False}, "non-indexable: not HTML"),
        ({"x_robots_tag": "googlebot: noindex", "is_indexable": False}, "non-indexable: noindex"),
    ]
    for n, (fields, text) in enumerate(cases):
        page = PageFactory(audit=audit, url=f"{audit.start_url}p{n}", **fields)
        assert indexability_text(page) == text


def test_robots_txt_lines_added_and_removed(pair):
    baseline, audit = pair
    Audit.objects.filter(id=baseline.id).update(robots_txt="User-agent: *\nDisallow: /a/\n\nDisallow: /b/\n")
    Audit.objects.filter(id=audit.id).update(robots_txt="User-agent: *\nDisallow: /b/\nDisallow: /c/\n")
    audit.refresh_from_db()
    changes_store(audit)
    rows = set(PageChange.objects.filter(audit=audit).values_list("field", "url", "direction", "before", "after"))
    assert rows == {
        ("robots_txt", "https://example.com/robots.txt", "removed", "Disallow: /a/", ""),
        ("robots_txt", "https://example.com/robots.txt", "added", "", "Disallow: /c/"),
    }


SITEMAP = "https://example.com/sitemap.xml"
BLOG_SITEMAP = "https://example.com/sitemap-blog.xml"
NEWS_SITEMAP = "https://example.com/sitemap-news.xml"


def _sitemap_rows(pair, before: dict, after: dict, mode: str | None = None) -> set[tuple[str, str, str, str]]:
    """The sitemap rows of `after` (the audit's Audit.discovery) against `before` (the baseline's)."""
    baseline, audit = pair
    config = {"mode": mode} if mode else {}
    Audit.objects.filter(id=baseline.id).update(discovery=before, config=config)
    Audit.objects.filter(id=audit.id).update(discovery=after, config=config)
    audit.refresh_from_db()
    changes_store(audit)
    return set(
        PageChange.objects.filter(audit=audit, field="sitemap").values_list("url", "direction", "before", "after")
    )


def test_a_sitemap_found_now_is_added_and_one_gone_is_removed_with_its_state(pair):
    before = {"sitemaps": [SITEMAP, NEWS_SITEMAP], "sitemap_errors": [f"{NEWS_SITEMAP}: HTTP 500"]}
    after = {"sitemaps": [SITEMAP, BLOG_SITEMAP], "sitemap_errors": []}
    assert _sitemap_rows(pair, before, after) == {
        (BLOG_SITEMAP, "added", "", "read"),
        (NEWS_SITEMAP, "removed", "error: HTTP 500", ""),
    }


def test_a_sitemap_that_now_fails_or_fails_otherwise_is_changed_and_an_error_alone_counts_as_found(pair):
    before = {"sitemaps": [SITEMAP, BLOG_SITEMAP], "sitemap_errors": [f"{BLOG_SITEMAP}: HTTP 404"]}
    after = {
        "sitemaps": [SITEMAP, BLOG_SITEMAP],
        "sitemap_errors": [
            f"{SITEMAP}: not XML: Document is empty",
            f"{BLOG_SITEMAP}: HTTP 500",
            f"{NEWS_SITEMAP}: sitemap index nested deeper than 2",
        ],
    }
    assert _sitemap_rows(pair, before, after) == {
        (SITEMAP, "changed", "read", "error: not XML: Document is empty"),
        (BLOG_SITEMAP, "changed", "error: HTTP 404", "error: HTTP 500"),
        (NEWS_SITEMAP, "added", "", "error: sitemap index nested deeper than 2"),
    }


def test_the_same_sitemaps_in_another_order_give_no_row_and_a_rerun_the_same_rows(pair):
    discovery = {"sitemaps": [SITEMAP, BLOG_SITEMAP], "sitemap_errors": [f"{BLOG_SITEMAP}: HTTP 404"]}
    reordered = {"sitemaps": [BLOG_SITEMAP, SITEMAP], "sitemap_errors": [f"{BLOG_SITEMAP}: HTTP 404"]}
    assert _sitemap_rows(pair, discovery, reordered) == set()
    fixed = {"sitemaps": [SITEMAP, BLOG_SITEMAP], "sitemap_errors": []}
    assert _sitemap_rows(pair, discovery, fixed) == {(BLOG_SITEMAP, "changed", "error: HTTP 404", "read")}
    _baseline, audit = pair
    stored = sorted(PageChange.objects.filter(audit=audit).values_list("id", "url", "field", "before", "after"))
    assert [row[0] for row in stored] == [page_change_id_for(audit.id, BLOG_SITEMAP, "sitemap")]
    changes_store(audit)
    assert sorted(PageChange.objects.filter(audit=audit).values_list("id", "url", "field", "before", "after")) == (
        stored
    )


@pytest.mark.parametrize(
    ("before", "after", "mode"),
    [
        ({"sitemaps": [SITEMAP]}, {"mode": "list", "listed_urls": 3}, None),  # the audit read no sitemap
        ({"robots_fetched": True}, {"sitemaps": [SITEMAP]}, None),  # nor did its baseline
        ({"sitemaps": [SITEMAP]}, {"sitemaps": [BLOG_SITEMAP]}, "list"),  # lists compare no sitemaps
    ],
)
def test_sitemaps_are_compared_only_when_both_audits_read_them(pair, before, after, mode):
    assert _sitemap_rows(pair, before, after, mode) == set()


def test_a_sitemap_audit_against_a_crawl_compares_no_sitemaps(pair):
    baseline, audit = pair
    Audit.objects.filter(id=baseline.id).update(discovery={"sitemaps": [SITEMAP, BLOG_SITEMAP]})
    Audit.objects.filter(id=audit.id).update(
        discovery={"sitemaps": [BLOG_SITEMAP]},
        config={"mode": "sitemap", "sitemap_url": BLOG_SITEMAP},
        baseline=baseline,
    )
    audit.refresh_from_db()
    changes_store(audit)
    assert not PageChange.objects.filter(audit=audit, field="sitemap").exists()


def test_what_the_stored_lists_caps_left_out_is_not_guessed_and_the_rows_are_bounded(pair):
    many = [f"https://example.com/sitemap-{n:03}.xml" for n in range(SITEMAPS_KEPT)]
    # The audit's list is full: a sitemap of the baseline's not in it may be past the cap, not gone; its own new
    # ones are added against the baseline's complete list.
    rows = _sitemap_rows(pair, {"sitemaps": [SITEMAP]}, {"sitemaps": many})
    assert len(rows) == SITEMAPS_KEPT and {row[1] for row in rows} == {"added"}
    # The baseline's errors list is full: a sitemap it has no error for may have had one past the cap.
    errors = [f"https://example.com/broken-{n:02}.xml: HTTP 404" for n in range(SITEMAP_ERRORS_KEPT)]
    full = {"sitemaps": [SITEMAP], "sitemap_errors": errors}
    rows = _sitemap_rows(pair, full, {"sitemaps": [SITEMAP], "sitemap_errors": [f"{SITEMAP}: HTTP 500"]})
    assert (SITEMAP, "changed", "read", "error: HTTP 500") not in rows
    assert rows == {(error.partition(": ")[0], "removed", "error: HTTP 404", "") for error in errors}
    # Two audits whose lists are just below their caps, nothing in common: SITEMAP_CHANGES_MAX rows, the first by URL.
    other = [f"https://example.com/other-{n:03}.xml" for n in range(SITEMAPS_KEPT)]
    other_errors = [f"https://example.com/other-broken-{n:02}.xml: HTTP 404" for n in range(SITEMAP_ERRORS_KEPT)]
    before = {"sitemaps": many[:-1], "sitemap_errors": errors[:-1]}
    after = {"sitemaps": other[:-1], "sitemap_errors": other_errors[:-1]}
    rows = _sitemap_rows(pair, before, after)
    named = sorted(many[:-1] + other[:-1] + [error.partition(": ")[0] for error in errors[:-1] + other_errors[:-1]])
    assert len(named) > SITEMAP_CHANGES_MAX and {row[0] for row in rows} == set(named[:SITEMAP_CHANGES_MAX])


# --- the baseline ----------------------------------------------------------------------------------


def test_the_default_baseline_is_the_previous_completed_audit_of_the_same_mode_with_its_pages(db):
    project = ProjectFactory()
    crawl = AuditFactory(project=project, status=COMPLETED)
    AuditFactory(project=project, status=Audit.Status.FAILED)
    old_style = AuditFactory(project=project, status=COMPLETED, config={})  # no mode: a crawl
    listed = AuditFactory(project=project, status=COMPLETED, config={"mode": "list"})
    AuditFactory(project=project, status=COMPLETED, summarised_at=timezone.now())  # pages pruned
    AuditFactory(project=project, status=COMPLETED, verifies=crawl, config={"mode": "list"})  # a fix check
    audit = AuditFactory(project=project, config={"mode": "crawl"})
    AuditFactory(project=project, status=COMPLETED)  # later
    AuditFactory(status=COMPLETED)  # another project
    assert baseline_default(audit) == old_style
    assert baseline_default(AuditFactory(project=project, config={"mode": "list"})) == listed
    assert baseline_default(AuditFactory(project=project, verifies=crawl, config={"mode": "list"})) is None
    assert baseline_default(AuditFactory(project=project, config={"mode": "sitemap"})) is None


def test_no_baseline_no_changes_and_the_figures_say_so(pair):
    _baseline, audit = pair
    Audit.objects.filter(project=audit.project).exclude(id=audit.id).delete()
    _page(audit, "/p")
    assert changes_store(audit) is None
    assert not PageChange.objects.filter(audit=audit).exists()
    assert change_stats_count(audit_id=audit.id) == {"baseline": None}


def test_a_chosen_baseline_deleted_since_falls_back_to_the_default(pair):
    baseline, audit = pair
    other = AuditFactory(project=audit.project, status=COMPLETED)
    Audit.objects.filter(id=audit.id).update(baseline=other)
    Audit.objects.filter(id=other.id).update(summarised_at=timezone.now())  # pruned since it was chosen
    audit.refresh_from_db()
    assert changes_store(audit) == baseline
    audit.refresh_from_db()
    assert audit.baseline == baseline


def test_a_list_audit_has_no_removed_urls_only_what_it_was_given(pair):
    baseline, audit = pair
    Audit.objects.filter(id=audit.id).update(config={"mode": "list", "list_urls": ["https://example.com/a"]})
    audit.refresh_from_db()
    _page(baseline, "/a", title="A")
    _page(baseline, "/b")  # not on the list: not looked for
    _page(audit, "/a", title="A, new")
    Audit.objects.filter(id=audit.id).update(baseline=baseline)  # a crawl chosen as a list's baseline
    audit.refresh_from_db()
    changes_store(audit)
    assert _rows(audit) == {("title", "https://example.com/a", "changed", "A", "A, new")}


@pytest.mark.parametrize("kind", ["itself", "other_project", "baseline_running", "audit_running", "audit_pruned"])
def test_choosing_an_invalid_baseline_later_is_refused_and_nothing_is_sent(pair, kind, monkeypatch):
    baseline, audit = pair
    sent = []
    monkeypatch.setattr("audits.pipeline.changes.task_send", lambda *args: sent.append(args))
    if kind == "itself":
        choice = audit
    elif kind == "other_project":
        choice = AuditFactory(status=COMPLETED)
    elif kind == "baseline_running":
        choice = AuditFactory(project=audit.project)
    else:
        choice = baseline
        fields = {"status": Audit.Status.RUNNING} if kind == "audit_running" else {"summarised_at": timezone.now()}
        Audit.objects.filter(id=audit.id).update(**fields)
        audit.refresh_from_db()
    with pytest.raises(AuditRefused) as refused:
        audit_baseline_set(audit=audit, baseline=choice)
    assert (refused.value.code, refused.value.field) == ("baseline_invalid", "baseline")
    assert Audit.objects.get(id=audit.id).baseline_id is None and sent == []
