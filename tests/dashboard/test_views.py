"""Dashboard views through Django's test client: every screen, account scoping, forms and refusals,
filters, the comparison, failed audits and the lazily reconciled live block."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from audits.checks.registry import CHECKS
from audits.models import Audit, Project, Schedule
from audits.segments import segment_choices
from audits.selectors.audits import ERROR_EXPLANATIONS
from scratchpad.models import LinkEdge
from tests.dashboard.conftest import finished_audit, make_issue, make_page
from tests.factories import AuditFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def audit_urls(r) -> list[str]:
    """Every URL that shows or serves something of the audit `r.audit`."""
    a = r.audit.id
    return [
        reverse("audits:audit-detail", args=[a]),
        reverse("audits:audit-live", args=[a]),
        reverse("audits:audit-issues", args=[a]),
        reverse("audits:audit-issue-type", args=[a, "missing-meta-description"]),
        reverse("audits:audit-pages", args=[a]),
        reverse("audits:audit-pages", args=[a]) + "?status=4xx&sort=-issues",
        reverse("audits:page-detail", args=[a, r.home.id]),
        reverse("audits:audit-performance", args=[a]),
        reverse("audits:lighthouse-report", args=[a, r.lighthouse.id]),
        reverse("audits:audit-events", args=[a]),
        reverse("audits:audit-compare", args=[a]),
        reverse("audits:audit-compare", args=[a]) + "?kind=new&type=missing-meta-description",
        *[
            reverse("audits:audit-export", args=[a, what, fmt])
            for what in ("issues", "pages")
            for fmt in ("csv", "json")
        ],
    ]


def project_urls(project) -> list[str]:
    p = project.id
    return [
        reverse("audits:project-detail", args=[p]),
        reverse("audits:project-edit", args=[p]),
        reverse("audits:audit-new", args=[p]),
    ]


def test_every_screen_renders_for_the_owner(owner_client, results):
    for url in audit_urls(results) + project_urls(results.project) + [reverse("audits:project-list")]:
        response = owner_client.get(url)
        assert response.status_code == 200, url
        if not response.streaming and "text/html" in response["Content-Type"]:
            assert "script-src 'self'" in response["Content-Security-Policy"], url


def test_another_accounts_urls_answer_404(client, stranger, results):
    client.force_login(stranger)
    for url in audit_urls(results) + project_urls(results.project):
        assert client.get(url).status_code == 404, url
    for name in ("audits:audit-cancel", "audits:audit-delete"):
        assert client.post(reverse(name, args=[results.audit.id])).status_code == 404
    assert (
        client.post(reverse("audits:project-schedule", args=[results.project.id]), {"kind": "daily"}).status_code == 404
    )
    # a page or report of the owner's audit under an audit of the stranger's own is not found either
    own = finished_audit(ProjectFactory(owner=stranger))
    assert client.get(reverse("audits:page-detail", args=[own.id, results.home.id])).status_code == 404
    assert client.get(reverse("audits:lighthouse-report", args=[own.id, results.lighthouse.id])).status_code == 404
    assert Audit.objects.filter(id=results.audit.id).exists()
    # the stranger's project list does not show the owner's project
    assert b"Shop" not in client.get(reverse("audits:project-list")).content


def test_anonymous_is_sent_to_sign_in(client, results):
    response = client.get(reverse("audits:audit-detail", args=[results.audit.id]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_overview_shows_health_formula_severities_and_chart(owner_client, results):
    html = owner_client.get(reverse("audits:audit-detail", args=[results.audit.id])).content.decode()
    assert "The site starts at 100 points" in html  # SCORE_FORMULA_WORDS, under "How is this calculated?"
    assert re.search(r'<span class="n">1</span> critical', html)
    assert re.search(r'<span class="n">3</span> warning', html)
    assert "<svg" in html and "Missing meta description" in html
    assert 'data-finished="true"' in html


def test_issues_table_with_registry_texts_and_paginated_evidence(owner_client, results):
    html = owner_client.get(reverse("audits:audit-issues", args=[results.audit.id])).content.decode()
    assert 'id="issues-table"' in html and "Broken page (4xx)" in html
    listing = owner_client.get(reverse("audits:audit-issue-type", args=[results.audit.id, "missing-meta-description"]))
    assert listing.context["issues"].paginator.count == 2
    assert "How to fix:" in listing.content.decode()


def test_pages_filters_sort_and_query_count(owner_client, results, django_assert_max_num_queries):
    url = reverse("audits:audit-pages", args=[results.audit.id])

    def listed(query):
        response = owner_client.get(url + query)
        return [p.url for p in response.context["pages"]]

    assert listed("?status=404") == [results.missing.url]
    assert listed("?status=2xx") == [results.home.url, results.about.url]
    assert listed("?indexable=no") == [results.missing.url]
    assert listed("?issue=thin-content") == [results.about.url]
    assert listed("?q=ABOUT") == [results.about.url]
    assert listed("?sort=-issues")[0] == results.about.url
    assert listed("?sort=-url") == sorted([results.home.url, results.about.url, results.missing.url], reverse=True)
    banana = owner_client.get(url + "?status=banana")
    assert list(banana.context["pages"]) == [] and banana.context["unknown"]  # an invalid filter lists nothing, said
    for i in range(60):
        make_page(results.audit, f"/p{i}")
    cursor = owner_client.get(url + "?sort=-issues").context["pages"].next_cursor  # keyset pages: rows 51-63
    with django_assert_max_num_queries(12):  # session, user, account, audit, issue types, page: no N+1
        response = owner_client.get(url, {"sort": "-issues", "cursor": cursor})
    assert len(response.context["pages"].object_list) == 13 and not response.context["pages"].has_next


def test_page_detail_shows_fields_issues_inlinks_and_outlinks(owner_client, results):
    response = owner_client.get(reverse("audits:page-detail", args=[results.audit.id, results.about.id]))
    html = response.content.decode()
    assert "Thin content" in html or "thin-content" in html
    names = {f.name for f in response.context["fields"]}
    assert {"url", "status_code", "title", "word_count", "open_graph", "fetched_at"} <= names
    assert "About us" in html  # inlink anchor from the home page
    assert reverse("audits:page-detail", args=[results.audit.id, results.home.id]) in html  # outlink to a page


def test_lighthouse_report_is_served_to_the_owner_only_as_json(owner_client, results):
    response = owner_client.get(reverse("audits:lighthouse-report", args=[results.audit.id, results.lighthouse.id]))
    assert response["Content-Type"] == "application/json"
    assert b"lighthouseVersion" in b"".join(response.streaming_content)
    results.lighthouse.report_path = "../../etc/passwd"
    results.lighthouse.save()
    assert (
        owner_client.get(
            reverse("audits:lighthouse-report", args=[results.audit.id, results.lighthouse.id])
        ).status_code
        == 404
    )


def test_comparison_new_fixed_persisting_by_type_and_url(owner_client, results):
    response = owner_client.get(reverse("audits:audit-compare", args=[results.audit.id]))
    rows = {row.type: (row.new, row.fixed, row.persisting, row.not_crawled) for row in response.context["rows"]}
    assert rows["missing-meta-description"] == (1, 0, 1, 0)
    assert rows["missing-h1"] == (0, 0, 0, 1)  # its page was not crawled this time: not "fixed"
    assert rows["title-too-short"] == (0, 1, 0, 0)
    assert rows["broken-page"] == (1, 0, 0, 0)
    gone = owner_client.get(
        reverse("audits:audit-compare", args=[results.audit.id]) + "?kind=not_crawled&type=missing-h1"
    )
    html = gone.content.decode()
    # the URL is gone from this crawl: the link goes to the previous audit's page
    assert reverse("audits:page-detail", args=[results.previous.id, results.old_gone.id]) in html
    still = owner_client.get(
        reverse("audits:audit-compare", args=[results.audit.id]) + "?kind=fixed&type=title-too-short"
    )
    assert reverse("audits:page-detail", args=[results.audit.id, results.home.id]) in still.content.decode()


@pytest.mark.parametrize("code", sorted(ERROR_EXPLANATIONS))
def test_failed_audit_explains_its_code_and_keeps_partial_results(owner_client, owner, code):
    audit = finished_audit(
        ProjectFactory(owner=owner),
        status=Audit.Status.FAILED,
        error_code=code,
        error_detail="boom <b>detail</b>",
        failed_phase="crawling",
        health_score=None,
    )
    make_page(audit, "/partial")
    html = owner_client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert ERROR_EXPLANATIONS[code] in html.replace("&#x27;", "'")
    assert "boom &lt;b&gt;detail&lt;/b&gt;" in html
    assert "step-failed" in html
    # never scored: no breakdown made up from its partial pages
    assert "Not scored: the audit did not complete" in html and 'id="error-free"' not in html
    pages = owner_client.get(reverse("audits:audit-pages", args=[audit.id]))
    assert len(pages.context["pages"].object_list) == 1


def test_live_block_reconciles_a_stuck_audit_lazily(owner_client, owner):
    long_ago = timezone.now() - timedelta(hours=3)
    audit = AuditFactory(
        project=ProjectFactory(owner=owner), started_at=long_ago, last_progress_at=long_ago, revivals=2
    )
    Audit.objects.filter(id=audit.id).update(created_at=long_ago, current_phase=Audit.Phase.CRAWLING)
    response = owner_client.get(reverse("audits:audit-live", args=[audit.id]))
    assert response["Cache-Control"].startswith("max-age=0")
    html = response.content.decode()
    assert 'data-status="failed"' in html and 'data-finished="true"' in html
    assert ERROR_EXPLANATIONS["instance_lost"] in html.replace("&#x27;", "'")


def test_running_audit_shows_progress_feed_and_cancel(owner_client, owner):
    audit = AuditFactory(
        project=ProjectFactory(owner=owner), started_at=timezone.now(), last_progress_at=timezone.now()
    )
    Audit.objects.filter(id=audit.id).update(current_phase=Audit.Phase.CRAWLING, pages_crawled=2, pages_total=8)
    for i in range(12):
        make_page(audit, f"/n{i}", fetched_at=timezone.now() - timedelta(seconds=30 - i))
    html = owner_client.get(reverse("audits:audit-detail", args=[audit.id])).content.decode()
    assert 'value="2"' in html and 'max="8"' in html and "25%" in html
    assert 'aria-current="step"' in html and "pages/s" in html
    feed = re.search(r'<ol class="feed" id="feed">(.*?)</ol>', html, re.S).group(1)
    assert feed.count("<li>") == 10 and feed.index("/n11") < feed.index("/n2<")
    response = owner_client.post(reverse("audits:audit-cancel", args=[audit.id]))
    assert response.status_code == 302
    audit.refresh_from_db()
    assert audit.status == Audit.Status.CANCELLED


def test_cancel_requires_csrf(owner, results):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post(reverse("audits:audit-cancel", args=[results.audit.id])).status_code == 403


@pytest.mark.parametrize(
    ("data", "code", "field"),
    [
        ({"start_url": "ftp://example.com/"}, "unsupported_scheme", "start_url"),
        ({"start_url": "http://exa mple.com/"}, "invalid_url", "start_url"),
        ({"start_url": "https://example.com/" + "a" * 3000}, "url_too_long", "start_url"),
        ({"start_url": "https://elsewhere.example/"}, "start_url_off_site", "start_url"),
        ({"max_pages": "0"}, "invalid_max_pages", "max_pages"),
        ({"max_pages": "50000"}, "audit_page_limit_exceeded", "max_pages"),
    ],
)
def test_start_refusals_are_shown_next_to_their_field(owner_client, owner, data, code, field):
    project = ProjectFactory(owner=owner, base_url="https://example.com/")
    plan = project.account.plan
    plan.pages_per_audit = 10_000  # an operator's plan below the ceiling (the default allows the whole of it)
    plan.save()
    form = {"start_url": "https://example.com/", "max_pages": "10", **data}
    response = owner_client.post(reverse("audits:audit-new", args=[project.id]), form)
    assert response.status_code == 400
    assert response.context["form"].errors[field], (code, response.context["form"].errors)
    assert f'id="id_{field}_error"' in response.content.decode()
    assert not Audit.objects.filter(project=project).exists()


def test_private_address_refused_next_to_the_url(owner_client, owner, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    project = ProjectFactory(owner=owner, base_url="http://127.0.0.1/")
    response = owner_client.post(
        reverse("audits:audit-new", args=[project.id]), {"start_url": "http://127.0.0.1/", "max_pages": "10"}
    )
    assert "private network" in str(response.context["form"].errors["start_url"])


def test_plan_refusals_in_words(owner_client, owner):
    project = ProjectFactory(owner=owner, base_url="https://example.com/")
    plan = project.account.plan
    plan.monthly_units = 50
    plan.save()
    form = {"start_url": "https://example.com/", "max_pages": "100"}
    response = owner_client.post(reverse("audits:audit-new", args=[project.id]), form)
    assert "credits" in str(response.context["form"].errors["max_pages"])  # insufficient_credits
    plan.monthly_units, plan.running_audits = 10_000, 1
    plan.save()
    AuditFactory(project=ProjectFactory(owner=owner))  # another project's audit runs
    response = owner_client.post(reverse("audits:audit-new", args=[project.id]), form)
    assert "runs 1 audits at once" in " ".join(response.context["form"].non_field_errors())
    assert 'id="form-errors"' in response.content.decode()


def test_start_refusal_without_a_field_is_at_the_top(owner_client, owner):
    project = ProjectFactory(owner=owner, base_url="https://example.com/")
    AuditFactory(project=project)  # running
    response = owner_client.post(
        reverse("audits:audit-new", args=[project.id]),
        {"start_url": "https://example.com/", "max_pages": "10", "include_patterns": "/blog/"},
    )
    assert response.status_code == 400
    assert "still running" in " ".join(response.context["form"].non_field_errors())
    project.refresh_from_db()
    assert project.include_patterns == []  # saved patterns roll back with the refusal


def test_start_creates_a_running_audit_with_patterns(owner_client, owner):
    project = ProjectFactory(owner=owner, base_url="http://127.0.0.1:9/")
    response = owner_client.post(
        reverse("audits:audit-new", args=[project.id]),
        {
            "start_url": "http://127.0.0.1:9/",
            "max_pages": "25",
            "lighthouse": "on",
            "exclude_patterns": "\\?sort=\n/tag/",
        },
    )
    audit = Audit.objects.get(project=project)
    assert response["Location"] == reverse("audits:audit-detail", args=[audit.id])
    assert audit.config["max_pages"] == 25 and audit.config["lighthouse"] is True
    assert audit.config["exclude_patterns"] == ["\\?sort=", "/tag/"]
    bad = owner_client.post(
        reverse("audits:audit-new", args=[project.id]),
        {"start_url": "http://x.test/", "max_pages": "5", "include_patterns": "(["},
    )
    assert "not a valid regular expression" in str(bad.context["form"].errors["include_patterns"])


def test_project_create_edit_and_write_only_password(owner_client, owner):
    response = owner_client.post(
        reverse("audits:project-create"),
        {
            "name": "Blog",
            "base_url": "https://blog.test/",
            "max_pages": "300",
            "include_patterns": "^https://blog.test/posts/",
            "user_agent": "MyBot/1.0",
            "auth_username": "editor",
            "auth_password": "s3cret-pass",
            "query_policy": "strip",
            "max_urls_per_pattern": "500",
            "max_path_segments": "15",
            "calendar_years_ahead": "3",
            "max_dated_urls_per_pattern": "1000",
            "max_query_variants_per_path": "500",
            "max_identical_pages_per_pattern": "100",
            "render_budget_pages": "10",
            "min_request_interval_ms": "250",
            "max_concurrency": "4",
            "external_links_max": "2000",
            "external_links_budget_s": "300",
            "bot_sample_max": "10",
            "max_depth": "6",
            "follow_nofollow": "on",
        },
    )
    project = Project.objects.get(name="Blog")
    assert response["Location"] == reverse("audits:project-detail", args=[project.id])
    assert project.account.memberships.filter(user=owner).exists()
    assert project.auth_password == "s3cret-pass" and project.include_patterns == ["^https://blog.test/posts/"]
    assert project.max_depth == 6 and project.follow_nofollow and project.query_policy == "strip"
    edit_url = reverse("audits:project-edit", args=[project.id])
    page = owner_client.get(edit_url).content.decode()
    assert "s3cret-pass" not in page and "A password is stored" in page
    form = owner_client.get(edit_url).context["form"]
    data = {k: v for k, v in form.initial.items() if v is not None and k in form.fields}
    data.update(include_patterns="^https://blog.test/posts/", auth_password="", name="Blog 2", max_depth="")
    data = {k: ("on" if v is True else v) for k, v in data.items() if v is not False}
    owner_client.post(edit_url, data)
    project.refresh_from_db()
    assert project.name == "Blog 2" and project.auth_password == "s3cret-pass"  # blank kept it
    owner_client.post(edit_url, {**data, "clear_auth_password": "on"})
    project.refresh_from_db()
    assert project.auth_password == ""
    dup = owner_client.post(reverse("audits:project-create"), {**data, "name": "Blog 2"})
    assert "already have a project" in str(dup.context["form"].errors["name"])
    assert (
        owner_client.post(
            reverse("audits:project-create"), {**data, "name": "x", "base_url": "ftp://a.test/"}
        ).status_code
        == 200
    )


def test_project_check_settings_are_fields_not_json(owner_client, owner):
    base = {"name": "Checks", "base_url": "https://c.test/", "max_pages": "10", "query_policy": "keep"}
    base.update(max_urls_per_pattern="100", render_budget_pages="1", min_request_interval_ms="0", max_concurrency="2")
    traps = {"max_path_segments": "15", "calendar_years_ahead": "3", "max_dated_urls_per_pattern": "1000"}
    base.update(traps, max_query_variants_per_path="500", max_identical_pages_per_pattern="100")
    base.update(external_links_max="2000", external_links_budget_s="300", bot_sample_max="10")
    checks = {f"check__{spec.type}__enabled": "on" for spec in CHECKS if spec.type != "long-url"}
    url = reverse("audits:project-create")
    bad = owner_client.post(url, {**base, **checks, "checks_shown": "True", "check__title-too-long__max_chars": "x"})
    assert "Enter a whole number." in str(bad.context["form"].errors["check__title-too-long__max_chars"])
    owner_client.post(url, {**base, **checks, "checks_shown": "True"})
    project = Project.objects.get(name="Checks")
    assert project.check_overrides == {"disabled": ["long-url"]}
    page = owner_client.get(reverse("audits:project-edit", args=[project.id])).content.decode()
    assert 'name="check__long-url__enabled" id="id_check__long-url__enabled">' in page  # shown unticked
    assert "&quot;long-url&quot;" not in page and "check_overrides" not in page


@pytest.mark.parametrize("name", ["audit-detail", "audit-issues", "audit-compare", "page-detail", "audit-events"])
def test_screens_use_a_bounded_number_of_queries(owner_client, results, name, django_assert_max_num_queries):
    for i in range(30):  # more rows must not mean more queries
        page = make_page(results.audit, f"/more/{i}")
        make_issue(results.audit, page, "missing-h1", "warning")
        LinkEdge.objects.create(audit=results.audit, source_page=page, target_url=results.home.url, anchor_text="x")
        LinkEdge.objects.create(audit=results.audit, source_page=results.home, target_url=page.url, anchor_text="y")
    args = [results.audit.id, results.home.id] if name == "page-detail" else [results.audit.id]
    # The overview adds its Segments table (audits.segments.segment_table): the project's segments, the audit's top
    # folders, and one aggregate for every segment together (two here: the fixture's audit has no stored counts),
    # then two grouped queries per segment for its score; and two for the score's breakdown (not stored either);
    # one for the newest fix verification of each top issue type ("verified fixed on …"); one for whether the audit
    # or the one before it is summarised (retention: "new since" then reads stored counts). Every screen also counts
    # the person's unread notifications for the header.
    segments = len(segment_choices(audit=results.audit))
    with django_assert_max_num_queries(20 + 2 * segments if name == "audit-detail" else 14):
        assert owner_client.get(reverse(f"audits:{name}", args=args)).status_code == 200


def test_schedule_set_and_clear(owner_client, owner):
    project = ProjectFactory(owner=owner)
    url = reverse("audits:project-schedule", args=[project.id])
    owner_client.post(url, {"kind": "weekly", "action": "set"})
    assert Schedule.objects.get(project=project).cron == "0 3 * * 1"
    owner_client.post(url, {"kind": "cron", "cron": "30 2 * * 1-5", "action": "set"})
    assert Schedule.objects.get(project=project).cron == "30 2 * * 1-5"
    bad = owner_client.post(url, {"kind": "cron", "cron": "99 * * * *", "action": "set"})
    assert bad.status_code == 400 and "does not parse" in bad.content.decode()
    assert "every weekday" not in bad.content.decode()
    page = owner_client.get(reverse("audits:project-detail", args=[project.id])).content.decode()
    assert "30 2 * * 1-5" in page
    owner_client.post(url, {"action": "clear"})
    assert not Schedule.objects.filter(project=project).exists()


def test_project_page_lists_history_with_duration(owner_client, results):
    response = owner_client.get(reverse("audits:project-detail", args=[results.project.id]))
    history = list(response.context["history"])
    assert [a.id for a in history] == [results.audit.id, results.previous.id]
    assert history[0].duration == timedelta(minutes=3)
    assert "3 min 00 s" in response.content.decode()
