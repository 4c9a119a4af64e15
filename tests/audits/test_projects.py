"""audits.projects: every rule about a project, refused with a stable code and field, nothing half-stored."""

import pytest

from accounts.services import account_get_or_create_for_user
from audits.errors import AuditRefused
from audits.models import Audit, Project
from audits.projects import (
    MAX_PATTERNS,
    ProjectInvalid,
    project_create,
    project_delete,
    project_get_or_create,
    project_update,
    project_validate,
    url_checked,
)
from tests.factories import AuditFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db

BASE = "http://127.0.0.1:8000/"


@pytest.fixture
def owner():
    return UserFactory()


@pytest.fixture
def account(owner):
    return account_get_or_create_for_user(user=owner)


def create(account, owner, **fields):
    fields.setdefault("name", "Shop")
    fields.setdefault("base_url", BASE)
    return project_create(account=account, owner=owner, **fields)


def test_create_normalises_and_stores(account, owner):
    project = create(
        account,
        owner,
        name="  Shop  ",
        base_url="127.0.0.1:8000/a/../b",
        include_patterns=["^https?://127\\.0\\.0\\.1:8000/b"],
        user_agent="MyBot/1.0 (+https://example.com/bot)",
        max_concurrency=1,
        max_depth=None,
        check_overrides={"disabled": ["long-url"]},
    )
    project.refresh_from_db()
    assert project.name == "Shop" and project.base_url == "https://127.0.0.1:8000/b"
    assert project.account == account and project.owner == owner and project.max_concurrency == 1


@pytest.mark.parametrize(
    "fields, field, code",
    [
        ({"name": "  "}, "name", "invalid_name"),
        ({"name": "x" * 201}, "name", "invalid_name"),
        ({"name": "two\nlines"}, "name", "invalid_name"),
        ({"base_url": "http://127.0.0.1:0/"}, "base_url", "invalid_port"),
        ({"base_url": "http://127.0.0.1:65536/"}, "base_url", "invalid_port"),
        ({"base_url": "http://[::1]:99999/"}, "base_url", "invalid_port"),
        ({"base_url": "http://127.0.0.1:8a/"}, "base_url", "invalid_port"),
        ({"base_url": "ftp://example.com/"}, "base_url", "unsupported_scheme"),
        ({"base_url": "http://user:pw@127.0.0.1:8000/"}, "base_url", "credentials_in_url"),
        ({"base_url": "http://"}, "base_url", "invalid_url"),
        ({"include_patterns": ["("]}, "include_patterns", "invalid_pattern"),
        ({"exclude_patterns": ["(a)\\1"]}, "exclude_patterns", "invalid_pattern"),  # backtracking only
        ({"exclude_patterns": ["x" * 501]}, "exclude_patterns", "invalid_pattern"),
        ({"include_patterns": ["a"] * (MAX_PATTERNS + 1)}, "include_patterns", "too_many_patterns"),
        ({"include_patterns": "^/shop"}, "include_patterns", "invalid_pattern"),
        ({"user_agent": "Bot/1.0\r\nX-Injected: 1"}, "user_agent", "invalid_user_agent"),
        ({"user_agent": "Bot/1.0\n"}, "user_agent", "invalid_user_agent"),
        ({"user_agent": "Bot\x00"}, "user_agent", "invalid_user_agent"),
        ({"user_agent": "Bot ☃"}, "user_agent", "invalid_user_agent"),
        ({"user_agent": "B" * 301}, "user_agent", "invalid_user_agent"),
        ({"auth_username": "a:b"}, "auth_username", "invalid_auth"),
        ({"auth_password": "pw\r\n"}, "auth_password", "invalid_auth"),
        ({"auth_password": "p" * 201}, "auth_password", "invalid_auth"),
        ({"max_pages": 0}, "max_pages", "invalid_max_pages"),
        ({"max_pages": 10**12}, "max_pages", "invalid_max_pages"),
        ({"max_concurrency": 0}, "max_concurrency", "invalid_max_concurrency"),
        ({"max_concurrency": 65}, "max_concurrency", "invalid_max_concurrency"),
        ({"max_concurrency": True}, "max_concurrency", "invalid_max_concurrency"),
        ({"min_request_interval_ms": -1}, "min_request_interval_ms", "invalid_min_request_interval_ms"),
        ({"render_budget_pages": "5"}, "render_budget_pages", "invalid_render_budget_pages"),
        ({"max_depth": 1001}, "max_depth", "invalid_max_depth"),
        ({"max_urls_per_pattern": 0}, "max_urls_per_pattern", "invalid_max_urls_per_pattern"),
        ({"render_js": "yes"}, "render_js", "invalid_render_js"),
        ({"check_external_links": "no"}, "check_external_links", "invalid_check_external_links"),
        ({"external_links_max": 0}, "external_links_max", "invalid_external_links_max"),
        ({"external_links_max": 20_001}, "external_links_max", "invalid_external_links_max"),
        ({"external_links_budget_s": 301}, "external_links_budget_s", "invalid_external_links_budget_s"),
        ({"bot_sample_max": 101}, "bot_sample_max", "invalid_bot_sample_max"),
        ({"query_policy": "sometimes"}, "query_policy", "invalid_query_policy"),
        ({"query_keep_keys": ["a b\n"]}, "query_keep_keys", "invalid_query_keep_keys"),
        ({"check_overrides": []}, "check_overrides", "invalid_check_overrides"),
        ({"check_overrides": {"disabled": ["no-such-check"]}}, "check_overrides", "invalid_check_overrides"),
        (
            {"check_overrides": {"thresholds": {"title-too-long": {"max_chars": "many"}}}},
            "check_overrides",
            "invalid_check_overrides",
        ),
    ],
)
def test_create_refusals_name_their_field_and_store_nothing(account, owner, fields, field, code):
    with pytest.raises(ProjectInvalid) as refused:
        create(account, owner, **fields)
    assert (refused.value.code, refused.value.field) == (code, field)
    assert refused.value.message
    assert Project.objects.count() == 0


def test_private_address_refused_without_naming_the_address(account, owner, settings):
    settings.ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(ProjectInvalid) as refused:
        create(account, owner, base_url="http://localhost:8000/")
    assert (refused.value.code, refused.value.field) == ("private_address", "base_url")
    assert "127.0.0.1" not in refused.value.message and "::1" not in refused.value.message
    assert "ALLOW_PRIVATE_TARGETS=true" in refused.value.message and "ALLOWED_PRIVATE_NETWORKS" in refused.value.message
    assert Project.objects.count() == 0


def test_a_catastrophic_pattern_is_stored_for_the_linear_time_engine(account, owner):
    # (a+)+$ backtracks exponentially in Python's re; RE2 runs it in linear time, so it may be kept.
    project = create(account, owner, exclude_patterns=["(a+)+$"])
    assert project.exclude_patterns == ["(a+)+$"]


def test_names_are_unique_per_account(account, owner):
    first = create(account, owner)
    with pytest.raises(AuditRefused) as refused:
        create(account, owner, name="Shop")
    assert (refused.value.code, refused.value.field) == ("project_name_taken", "name")
    other = create(account, owner, name="Blog")
    with pytest.raises(AuditRefused):
        project_update(project=other, name="Shop")
    assert Project.objects.get(pk=other.pk).name == "Blog"
    elsewhere = UserFactory()
    assert create(account_get_or_create_for_user(user=elsewhere), elsewhere, name="Shop").name == first.name


def test_update_checks_and_changes_only_the_given_fields(account, owner):
    project = create(account, owner, user_agent="Bot/1", max_pages=40)
    for refused_fields in ({"max_concurrency": 0}, {"user_agent": "a\r\nb"}, {"base_url": "http://127.0.0.1:0/"}):
        with pytest.raises(ProjectInvalid):
            project_update(project=project, max_pages=50, **refused_fields)
        stored = Project.objects.get(pk=project.pk)
        assert (stored.max_pages, stored.user_agent, stored.max_concurrency) == (40, "Bot/1", 8)
    project_update(project=project, max_pages=60)
    stored = Project.objects.get(pk=project.pk)
    assert stored.max_pages == 60 and stored.user_agent == "Bot/1" and stored.base_url == BASE


def test_validate_writes_nothing_and_refuses_unknown_fields(account, owner):
    cleaned = project_validate(account=account, owner=owner, name="New", base_url="127.0.0.1:9")
    assert cleaned["base_url"] == "https://127.0.0.1:9/" and Project.objects.count() == 0
    with pytest.raises(TypeError):
        project_validate(account=account, name="New", base_url=BASE, secret_field=1)


def test_get_or_create_validates_the_name_before_anything(owner):
    with pytest.raises(ProjectInvalid) as refused:
        project_get_or_create(owner=owner, name="p" * 500, base_url=BASE)
    assert refused.value.code == "invalid_name" and Project.objects.count() == 0
    made = project_get_or_create(owner=owner, name="cli", base_url=BASE)
    assert project_get_or_create(owner=owner, name="cli", base_url="http://127.0.0.1:9/") == made


@pytest.mark.parametrize(
    "url, code",
    [
        ("http://127.0.0.1:65536/", "invalid_port"),
        ("//127.0.0.1:0/", "invalid_port"),
        ("127.0.0.1:70000", "invalid_port"),
        ("http://127.0.0.1:99999999999999999999/", "invalid_port"),
        ("http://127.0.0.1:８０/", "invalid_port"),  # fullwidth digits: int() would take them
        ("http://[::1/", "invalid_url"),
        (None, "invalid_url"),
    ],
)
def test_url_checked_never_raises_anything_but_a_refusal(url, code):
    with pytest.raises(AuditRefused) as refused:
        url_checked(url, field="start_url")
    assert (refused.value.code, refused.value.field) == (code, "start_url")


def test_url_checked_accepts_ports_in_range():
    assert url_checked("http://127.0.0.1:65535/", field="url") == "http://127.0.0.1:65535/"
    assert url_checked("http://[::1]:1/x", field="url") == "http://[::1]:1/x"
    assert url_checked("http://127.0.0.1:/", field="url") == "http://127.0.0.1/"


def test_delete_removes_audits_then_the_project(account, owner):
    project = create(account, owner)
    AuditFactory(project=project)
    project_delete(project=project)
    assert not Project.objects.filter(pk=project.pk).exists() and Audit.objects.count() == 0


def test_factory_projects_still_update(account):
    project = ProjectFactory()
    assert project_update(project=project, name="Renamed").name == "Renamed"


# --- the basic-auth password belongs to the project's site ----------------------------------------------


@pytest.mark.parametrize(
    ("new_base_url", "kept"),
    [
        ("http://127.0.0.1:8000/docs/", True),  # same origin, another path
        ("http://www.127.0.0.1:8000/", True),  # www. or not is one site (as the crawl and the auth see it)
        ("https://127.0.0.1:8000/", True),  # up to https: the password only gets safer
        ("http://127.0.0.1:8001/", False),  # another port is another origin
        ("http://example.test:8000/", False),
    ],
)
def test_moving_the_base_url_to_another_origin_removes_the_password(account, owner, new_base_url, kept):
    project = create(account, owner, auth_username="u", auth_password="pw")
    updated = project_update(project=project, base_url=new_base_url)
    assert updated.auth_password_cleared is not kept
    project.refresh_from_db()
    assert project.auth_password == ("pw" if kept else "") and project.auth_username == "u"


def test_down_to_plain_http_removes_the_password(account, owner):
    project = create(account, owner, base_url="https://example.test/", auth_username="u", auth_password="pw")
    assert project_update(project=project, base_url="http://example.test/").auth_password_cleared
    project.refresh_from_db()
    assert project.auth_password == ""


def test_a_new_password_given_with_the_move_is_kept(account, owner):
    project = create(account, owner, auth_username="u", auth_password="old")
    assert not project_update(
        project=project, base_url="http://example.test/", auth_password="new"
    ).auth_password_cleared
    project.refresh_from_db()
    assert project.auth_password == "new"


def test_other_changes_and_a_project_without_password_say_nothing(account, owner):
    project = create(account, owner, auth_username="u", auth_password="pw")
    assert not project_update(project=project, max_pages=5).auth_password_cleared
    bare = create(account, owner, name="Bare")
    assert not project_update(project=bare, base_url="http://example.test/").auth_password_cleared


def test_the_cli_names_a_new_project_after_host_and_port_when_the_host_is_another_site(owner):
    site = project_get_or_create(owner=owner, name=None, base_url="http://127.0.0.1:8000/")
    assert site.name == "127.0.0.1"
    assert project_get_or_create(owner=owner, name=None, base_url="http://127.0.0.1:8000/docs/") == site
    other = project_get_or_create(owner=owner, name=None, base_url="http://127.0.0.1:8001/")
    assert other != site and other.name == "127.0.0.1:8001" and other.base_url == "http://127.0.0.1:8001/"
