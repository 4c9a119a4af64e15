"""The comparison people can trust: two real crawls of one site, the second excluding a section, count that
section's pages as no longer crawled (never fixed) and say which settings differ; the baseline is chosen in
the UI among the project's completed audits; the API carries the same counts."""

import pytest
from django.urls import reverse

from audits.comparison import settings_differences
from audits.models import Audit, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.dashboard.conftest import finished_audit, make_issue, make_page
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes

LONG_ENOUGH = " ".join(["Plenty of words about widgets and how they are made."] * 40)


def _page(title: str, h1: str | None, links: list[str]) -> str:
    heading = f"<h1>{h1}</h1>" if h1 else ""
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (
        f"<!doctype html><html lang='en'><head><title>{title} of the example widget shop</title>"
        f"<meta name='description' content='{title}: all about widgets, their making and their care.'>"
        f"</head><body>{heading}<p>{LONG_ENOUGH}</p>{anchors}</body></html>"
    )


def _crawl(project, **config) -> Audit:
    audit = audit_start(project=project, start_url=project.base_url, max_pages=50, dispatch=False)
    if config:
        Audit.objects.filter(id=audit.id).update(config={**audit.config, **config})
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    return audit


@pytest.mark.django_db(transaction=True)
def test_a_second_crawl_that_excluded_a_section_counts_its_pages_as_not_crawled(client, owner):
    """/blog/ pages miss their h1 in both crawls; /shop/ loses its defect between them. The second crawl
    excludes /blog/: the blog issues are "no longer crawled", only the shop one is "fixed"."""
    with serve_routes() as site:
        nav = ["/blog/a", "/blog/b", "/shop/x", "/about"]
        site.add("/", _page("Home", "Home", nav))
        site.add("/blog/a", _page("Blog A", None, ["/"]))
        site.add("/blog/b", _page("Blog B", None, ["/"]))
        site.add("/about", _page("About", "About", ["/"]))
        site.add("/shop/x", _page("Shop X", None, ["/"]))
        project = ProjectFactory(owner=owner, name="Widgets", base_url=site.url + "/")
        first = _crawl(project)
        site.add("/shop/x", _page("Shop X", "Shop X", ["/"]))  # fixed before the second crawl
        second = _crawl(project, exclude_patterns=["/blog/"])

    crawled = set(Page.objects.filter(audit=second).values_list("url", flat=True))
    assert not any("/blog/" in url for url in crawled) and site.url + "/shop/x" in crawled
    client.force_login(owner)
    response = client.get(reverse("audits:audit-compare", args=[second.id]))
    assert response.context["previous"] == first
    rows = {r.type: r for r in response.context["rows"]}
    assert (rows["missing-h1"].fixed, rows["missing-h1"].not_crawled) == (1, 2)
    assert response.context["pages"] == {"both": 3, "not_crawled": 2, "only_now": 0}
    html = response.content.decode()
    assert "pages no longer crawled" in html
    # the settings note names the exclude patterns, with both values
    assert [(d.setting, d.base, d.audit) for d in response.context["settings_differ"]] == [
        ("exclude_patterns", "none", "/blog/")
    ]
    assert "crawled with different settings" in html and "Exclude patterns" in html
    # the listing of the not-crawled URLs links to the baseline's pages, and never calls them fixed
    listing = client.get(
        reverse("audits:audit-compare", args=[second.id]) + "?kind=not_crawled&type=missing-h1"
    ).content.decode()
    blog_a = Page.objects.get(audit=first, url=site.url + "/blog/a")
    assert reverse("audits:page-detail", args=[first.id, blog_a.id]) in listing
    assert "No longer crawled: " in listing
    fixed = client.get(reverse("audits:audit-compare", args=[second.id]) + "?kind=fixed&type=missing-h1")
    assert [i["page_url"] for i in fixed.context["listing"]["issues"]] == [site.url + "/shop/x"]


@pytest.mark.django_db
def test_the_baseline_is_chosen_among_the_projects_completed_audits(owner_client, owner):
    project = ProjectFactory(owner=owner)
    oldest = finished_audit(project, days_ago=14)
    older = finished_audit(project, days_ago=7)
    audit = finished_audit(project)
    failed = finished_audit(project, days_ago=3, status=Audit.Status.FAILED)
    elsewhere = finished_audit(ProjectFactory(owner=owner), days_ago=1)
    make_issue(oldest, make_page(oldest, "/old"), "missing-h1", "warning")
    url = reverse("audits:audit-compare", args=[audit.id])

    default = owner_client.get(url)
    assert default.context["previous"] == older  # the last completed one before it
    assert list(default.context["choices"]) == [older, oldest]  # completed ones only, newest first
    assert f'<option value="{older.id}" selected>' in default.content.decode()

    chosen = owner_client.get(url + f"?base={oldest.id}")
    assert chosen.context["previous"] == oldest
    assert f'<option value="{oldest.id}" selected>' in chosen.content.decode()
    assert {r.type: r.not_crawled for r in chosen.context["rows"]} == {"missing-h1": 1}
    # the listing links keep the chosen baseline
    assert f"?base={oldest.id}&amp;kind=not_crawled&amp;type=missing-h1" in chosen.content.decode()

    for bad in (failed.id, elsewhere.id, audit.id, "not-a-uuid"):
        assert owner_client.get(url + f"?base={bad}").status_code == 404, bad

    # two scores of one formula are set side by side; of two formulas, they are said not to be comparable
    assert 'id="formula-differs"' not in chosen.content.decode()
    Audit.objects.filter(id=oldest.id).update(score_formula=1)
    assert (
        ", scored by different formulas: not comparable"
        in owner_client.get(url + f"?base={oldest.id}").content.decode()
    )

    # the first audit has no earlier one: nothing chosen, but the later ones are offered
    first = owner_client.get(reverse("audits:audit-compare", args=[oldest.id]))
    assert first.context["previous"] is None
    assert "Choose an audit" in first.content.decode()


@pytest.mark.django_db
def test_settings_that_differ_are_named_in_words_and_equal_ones_are_not():
    project = ProjectFactory()
    base = finished_audit(project, days_ago=1, config={"max_pages": 500, "render_js": False, "checks": {}})
    same = finished_audit(project, config={"max_pages": 500, "render_js": False, "checks": {}})
    assert settings_differences(audit=same, previous=base) == []
    other = finished_audit(
        project,
        config={
            "max_pages": 100,
            "render_js": True,
            "checks": {"thresholds": {"title-too-long": {"max_chars": 70}}, "disabled": ["thin-content"]},
            "max_depth": 3,  # the baseline did not record it: unknown, not a difference
        },
    )
    diffs = {d.setting: (d.label, d.base, d.audit) for d in settings_differences(audit=other, previous=base)}
    assert diffs == {
        "max_pages": ("Max pages", "500", "100"),
        "render_js": ("JavaScript rendering", "off", "on"),
        "checks": ("Check settings", "defaults", "1 threshold, 1 check off"),
    }


@pytest.mark.django_db
def test_the_api_comparison_carries_not_crawled_pages_and_settings(owner, client):
    project = ProjectFactory(owner=owner)
    base = finished_audit(project, days_ago=1, config={"max_pages": 10})
    audit = finished_audit(project, config={"max_pages": 20})
    gone = make_page(base, "/gone")
    make_issue(base, gone, "missing-h1", "warning")
    make_page(base, "/")
    make_page(audit, "/")
    client.force_login(owner)
    body = client.get(f"/api/v1/audits/{audit.id}/compare/{base.id}/").json()
    assert body["totals"] == {"new": 0, "fixed": 0, "persisting": 0, "not_crawled": 1}
    assert body["pages"] == {"both": 1, "not_crawled": 1, "only_now": 0}
    assert body["settings_differ"] == [{"setting": "max_pages", "label": "Max pages", "base": "10", "audit": "20"}]
