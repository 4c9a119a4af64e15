"""The dashboard's project form saves through audits.projects: it refuses what the API refuses, shows why
next to the field, and stores nothing on a refusal."""

import html
import os
from pathlib import Path

import pytest
from django.urls import reverse

from audits.checks.registry import CATEGORIES, CHECKS, CHECKS_BY_TYPE, validate_overrides
from audits.models import Audit, Project
from tests.dashboard.test_browser import sign_in
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser, serious_axe_violations

pytestmark = pytest.mark.django_db

VALID = {
    "name": "Shop",
    "base_url": "http://127.0.0.1:8000/",
    "max_pages": "100",
    "query_policy": "keep",
    "max_urls_per_pattern": "100",
    "max_path_segments": "15",
    "calendar_years_ahead": "3",
    "max_dated_urls_per_pattern": "1000",
    "max_query_variants_per_path": "500",
    "max_identical_pages_per_pattern": "100",
    "render_budget_pages": "1",
    "min_request_interval_ms": "0",
    "max_concurrency": "2",
    "external_links_max": "2000",
    "external_links_budget_s": "300",
    "bot_sample_max": "10",
}


def refused(response, field: str, words: str) -> None:
    """A re-rendered form (not a redirect) with `words` in `field`'s errors and on the page."""
    assert response.status_code == 200, response.status_code
    errors = response.context["form"].errors
    assert field in errors and words in str(errors[field]), errors.as_data()
    assert words in html.unescape(response.content.decode())


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"base_url": "http://127.0.0.1:0/"}, "base_url", "port must be a number from 1 to 65535"),
        ({"base_url": "http://127.0.0.1:65536/"}, "base_url", "port must be a number from 1 to 65535"),
        ({"base_url": "http://editor:pw@127.0.0.1:8000/"}, "base_url", "basic-auth fields"),
        ({"base_url": "ftp://example.com/"}, "base_url", "Only http and https URLs can be audited"),
        ({"base_url": "javascript:alert(1)"}, "base_url", "Only http and https URLs can be audited"),
        ({"base_url": "example.com:80a"}, "base_url", "port must be a number from 1 to 65535"),
        ({"user_agent": "Bot/1.0\r\nX-Injected: yes"}, "user_agent", "one line of printable ASCII"),
        ({"include_patterns": "(["}, "include_patterns", "not a valid regular expression"),
        ({"exclude_patterns": "(a)\\1"}, "exclude_patterns", "backreference"),
        ({"exclude_patterns": "\n".join(f"p{i}" for i in range(51))}, "exclude_patterns", "At most 50 patterns"),
        ({"max_concurrency": "0"}, "max_concurrency", "from 1 to 64"),
        ({"max_pages": "0"}, "max_pages", "from 1 to"),
        ({"min_request_interval_ms": "-5"}, "min_request_interval_ms", "from 0 to 60000"),
        ({"auth_username": "a:b"}, "auth_username", "cannot contain"),
        ({"name": "n" * 201}, "name", "more than 200 characters"),
        ({"name": "a\x00b"}, "name", "without control characters"),
        ({"user_agent": "Bot\x00"}, "user_agent", "one line of printable ASCII"),
        ({"extractors": "p | css | h1\x00"}, "extractors", "Null characters are not allowed"),
    ],
)
def test_create_refuses_what_the_api_refuses(owner_client, change, field, words):
    response = owner_client.post(reverse("audits:project-create"), {**VALID, **change})
    refused(response, field, words)
    assert Project.objects.count() == 0


def test_private_address_refused_when_private_targets_are_off(owner_client, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    response = owner_client.post(reverse("audits:project-create"), {**VALID, "base_url": "http://127.0.0.1:8000/"})
    refused(response, "base_url", "not a public address")
    assert Project.objects.count() == 0


def test_a_valid_form_creates_through_the_service(owner_client, owner):
    response = owner_client.post(
        reverse("audits:project-create"),
        {**VALID, "base_url": "127.0.0.1:8000", "exclude_patterns": "(a+)+$"},
    )
    project = Project.objects.get(name="Shop")
    assert response["Location"] == reverse("audits:project-detail", args=[project.id])
    assert project.base_url == "https://127.0.0.1:8000/" and project.exclude_patterns == ["(a+)+$"]
    assert project.owner == owner and project.check_overrides == {}


def test_edit_refusal_keeps_the_stored_project(owner_client, owner):
    project = ProjectFactory(owner=owner, name="Shop", user_agent="Bot/1", max_concurrency=4)
    data = {**VALID, "user_agent": "Bot/2\nX: 1", "name": "Renamed", "max_concurrency": "6"}
    response = owner_client.post(reverse("audits:project-edit", args=[project.id]), data)
    refused(response, "user_agent", "one line of printable ASCII")
    assert "Bot/2" in response.content.decode()  # what was typed is shown back to be fixed
    project.refresh_from_db()
    assert (project.name, project.user_agent, project.max_concurrency) == ("Shop", "Bot/1", 4)


def test_edit_name_taken(owner_client, owner):
    ProjectFactory(owner=owner, name="Taken")
    project = ProjectFactory(owner=owner, name="Mine")
    response = owner_client.post(reverse("audits:project-edit", args=[project.id]), {**VALID, "name": "Taken"})
    refused(response, "name", "already have a project")
    project.refresh_from_db()
    assert project.name == "Mine"


def test_audit_start_form_saves_patterns_through_the_service(owner_client, owner):
    project = ProjectFactory(owner=owner, include_patterns=["^http"])
    response = owner_client.post(
        reverse("audits:audit-new", args=[project.id]),
        {"start_url": project.base_url, "max_pages": "5", "exclude_patterns": "(?=x)"},
    )
    assert response.status_code == 400
    assert "lookahead" in str(response.context["form"].errors["exclude_patterns"])
    project.refresh_from_db()
    assert project.include_patterns == ["^http"] and project.exclude_patterns == []
    assert Audit.objects.count() == 0


@pytest.mark.parametrize(
    ("base_url", "kept"),
    [("http://127.0.0.1:8000/docs/", True), ("http://127.0.0.1:8001/", False), ("http://example.test/", False)],
)
def test_moving_the_base_url_to_another_site_removes_the_password_and_says_so(owner_client, owner, base_url, kept):
    project = ProjectFactory(
        owner=owner, name="Shop", base_url=VALID["base_url"], auth_username="u", auth_password="pw"
    )
    response = owner_client.post(
        reverse("audits:project-edit", args=[project.id]), {**VALID, "base_url": base_url, "auth_username": "u"}
    )
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.base_url == base_url and project.auth_password == ("pw" if kept else "")
    page = html.unescape(owner_client.get(response["Location"]).content.decode())
    assert ("basic-auth password was removed" in page) is not kept


# --- the checks' fields -----------------------------------------------------------------------------------


def checks_as_posted(**changes) -> dict:
    """What a browser posts for the checks when nothing was changed (every check ticked), plus `changes`."""
    data = {f"check__{spec.type}__enabled": "on" for spec in CHECKS}
    data["checks_shown"] = "True"
    for name, value in changes.items():
        if value is None:
            data.pop(name, None)  # an unticked box is not posted
        else:
            data[name] = value
    return data


def test_the_form_shows_each_check_as_fields_grouped_by_category(owner_client):
    page = owner_client.get(reverse("audits:project-create")).content.decode()
    assert page.count('<details class="check-group"') == len(CATEGORIES)
    assert '<details class="check-group" id="checks-metadata">' in page  # all closed when nothing is changed
    assert page.count('type="checkbox" name="check__') == len(CHECKS)
    assert '<option value="" selected>default (warning)</option>' in page  # title-too-long's default
    assert 'name="check__title-too-long__max_chars" placeholder="60" step="1" min="0"' in page
    assert "Maximum, characters" in page and "Default 60" in page
    assert 'name="check__large-html__max_bytes" placeholder="1048576" step="1" min="0" max="15728640"' in page
    assert 'name="check__poor-cls__max_cls" placeholder="0.1" step="any" min="0"' in page
    assert "{&quot;" not in page and "Check settings (JSON)" not in page


def test_only_what_differs_from_the_defaults_is_stored(owner_client):
    changes = {
        "check__long-url__enabled": None,
        "check__missing-h1__severity": "info",
        "check__title-too-long__severity": "",  # "default (warning)"
        "check__title-too-long__max_chars": "70",
        "check__meta-description-too-long__max_chars": "160",  # its default typed: not stored
        "check__poor-cls__max_cls": "0.25",
    }
    response = owner_client.post(reverse("audits:project-create"), {**VALID, **checks_as_posted(**changes)})
    assert response.status_code == 302, response.context["form"].errors
    stored = Project.objects.get(name="Shop").check_overrides
    assert stored == {
        "disabled": ["long-url"],
        "severities": {"missing-h1": "info"},
        "thresholds": {"title-too-long": {"max_chars": 70}, "poor-cls": {"max_cls": 0.25}},
    }
    assert validate_overrides(stored) == {**stored, "thresholds": stored["thresholds"]}  # the crawler's shape


def test_the_edit_form_shows_the_stored_settings_back_and_opens_their_categories(owner_client, owner):
    project = ProjectFactory(
        owner=owner,
        check_overrides={
            "disabled": ["long-url"],
            "severities": {"missing-h1": "info"},
            "thresholds": {"title-too-long": {"max_chars": 70}},
        },
    )
    page = owner_client.get(reverse("audits:project-edit", args=[project.id])).content.decode()
    assert 'name="check__long-url__enabled" id="id_check__long-url__enabled">' in page  # unticked
    assert 'name="check__no-outgoing-links__enabled" id="id_check__no-outgoing-links__enabled" checked>' in page
    assert '<option value="info" selected>info</option>' in page
    assert 'name="check__title-too-long__max_chars" value="70"' in page
    assert '<details class="check-group" id="checks-urls" open>' in page
    assert '<details class="check-group" id="checks-metadata" open>' in page
    assert '<details class="check-group" id="checks-security">' in page
    assert page.count("· 1 changed") == 3  # urls: long-url, metadata: title-too-long, content: missing-h1

    # saved again untouched, it stores the same thing
    form = {**VALID, "name": project.name, "base_url": project.base_url}
    changes = {"check__long-url__enabled": None, "check__missing-h1__severity": "info"}
    owner_client.post(
        reverse("audits:project-edit", args=[project.id]),
        {**form, **checks_as_posted(**changes, **{"check__title-too-long__max_chars": "70"})},
    )
    before = project.check_overrides
    project.refresh_from_db()
    assert project.check_overrides == before


@pytest.mark.parametrize(
    "field, typed, words",
    [
        ("check__title-too-long__max_chars", "-3", "Ensure this value is greater than or equal to 0."),
        ("check__title-too-long__max_chars", "many", "Enter a whole number."),
        ("check__title-too-long__max_chars", "7.5", "Enter a whole number."),
        ("check__large-html__max_bytes", "20000000", "Ensure this value is less than or equal to 15728640."),
        ("check__poor-cls__max_cls", "nan", "Enter a number."),
        ("check__missing-h1__severity", "fatal", "Select a valid choice."),
    ],
)
def test_a_wrong_check_setting_is_refused_next_to_its_field_and_its_category_opens(
    owner_client, owner, field, typed, words
):
    project = ProjectFactory(owner=owner, check_overrides={"disabled": ["long-url"]})
    data = {**VALID, "name": project.name, "base_url": project.base_url, **checks_as_posted(**{field: typed})}
    response = owner_client.post(reverse("audits:project-edit", args=[project.id]), data)
    refused(response, field, words)
    page = response.content.decode()
    category = CHECKS_BY_TYPE[field.split("__")[1]].category
    assert f'<details class="check-group" id="checks-{category}" open>' in page and "1 to fix" in page
    assert f'<p class="error" id="id_{field}_error">' in page
    project.refresh_from_db()
    assert project.check_overrides == {"disabled": ["long-url"]}


def test_a_post_without_the_check_fields_keeps_the_stored_settings(owner_client, owner):
    """An older form or a script that posts only the other fields does not disable every check."""
    project = ProjectFactory(owner=owner, check_overrides={"disabled": ["long-url"]})
    data = {**VALID, "name": "Renamed", "base_url": project.base_url}
    assert owner_client.post(reverse("audits:project-edit", args=[project.id]), data).status_code == 302
    project.refresh_from_db()
    assert project.name == "Renamed" and project.check_overrides == {"disabled": ["long-url"]}


# --- in a browser ------------------------------------------------------------------------------------------

SHOTS = os.environ.get("SHOTS_DIR")


def _page_fits(tab) -> int:
    return tab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_checks_fields_work_and_fit_in_a_browser(live_server):
    owner = UserFactory(username="cleo")
    project = ProjectFactory(
        owner=owner, name="Shop", check_overrides={"thresholds": {"title-too-long": {"max_chars": 70}}}
    )
    errors = []
    with chromium_browser() as browser:
        for width in (1440, 390):
            context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
            tab = context.new_page()
            tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            sign_in(tab, live_server, "cleo")
            tab.goto(f"{live_server.url}/projects/{project.id}/edit/")
            metadata = tab.locator("#checks-metadata")
            assert metadata.get_attribute("open") is not None  # it holds a change
            assert tab.locator("#checks-performance").get_attribute("open") is None
            tab.locator("#checks-performance > summary").click()
            slow = tab.locator("#checks-performance fieldset.check-row").first
            assert slow.get_by_label("Maximum, milliseconds").get_attribute("placeholder") == "1500"
            assert _page_fits(tab) <= 0, f"the project form at {width} px overflows"
            assert not serious_axe_violations(tab)
            if SHOTS:
                Path(SHOTS).mkdir(parents=True, exist_ok=True)
                tab.screenshot(path=f"{SHOTS}/project-form-{width}-full.png", full_page=True)
                tab.locator("#checks-metadata > summary").click()  # closed, to see the categories and one open
                tab.locator("fieldset.checks").screenshot(path=f"{SHOTS}/project-form-{width}-checks.png")
                tab.locator("#checks-metadata > summary").click()
                tab.locator("#checks-performance").scroll_into_view_if_needed()
                tab.screenshot(path=f"{SHOTS}/project-form-{width}-performance.png")
            if width == 390:  # change a few checks as a person would, and save
                slow.get_by_label("Maximum, milliseconds").fill("900")
                tab.locator("#checks-performance").get_by_label("Severity").nth(1).select_option("critical")
                tab.locator("#checks-urls > summary").click()
                tab.locator("#id_check__long-url__enabled").uncheck()
                tab.get_by_role("button", name="Save settings").click()
                tab.wait_for_url(f"{live_server.url}/projects/{project.id}/")
            assert not errors, errors
            context.close()
    project.refresh_from_db()
    assert project.check_overrides == {
        "disabled": ["long-url"],
        "severities": {"large-html": "critical"},
        "thresholds": {"slow-response": {"max_ms": 900}, "title-too-long": {"max_chars": 70}},
    }
