"""Security headers on every page (config/middleware.py, SecurityMiddleware), the API docs pages working
under their policy in a real Chromium, and `check --deploy` clean under production settings."""

import os
import re
import subprocess
import sys

import pytest
from django.core.management.utils import get_random_secret_key
from django.test import Client
from django.urls import path

from config.urls import urlpatterns as product_urlpatterns
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser
from tests.support.workers import REPO_ROOT

PASSWORD = "pw-for-tests"
UI_TIMEOUT_MS = 20_000
CHECK_TIMEOUT_S = 120
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def _boom(request):
    raise RuntimeError("an unexpected error, for the 500 page")


# The product's URLs plus one view that fails (@pytest.mark.urls(__name__)), for the 500 page.
urlpatterns = [path("test-boom/", _boom), *product_urlpatterns]


def directives(policy: str) -> dict[str, str]:
    return {part.split()[0]: " ".join(part.split()[1:]) for part in policy.split(";") if part.strip()}


def assert_strict_headers(response, *, scripts="'self'"):
    policy = directives(response["Content-Security-Policy"])
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == scripts
    assert policy["object-src"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["form-action"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    return policy


@pytest.fixture
def staff_client(db):
    user = UserFactory(username="ops", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.urls(__name__)
@pytest.mark.parametrize(
    ("url", "signed_in", "status"),
    [
        ("/accounts/login/", False, 200),
        ("/admin/login/", False, 200),
        ("/admin/", True, 200),
        ("/admin/audits/project/", True, 200),
        ("/", True, 200),
        ("/no-such-page/", False, 404),
        ("/test-boom/", False, 500),
    ],
)
def test_every_html_page_carries_the_strict_policy(staff_client, url, signed_in, status):
    client = staff_client if signed_in else Client(raise_request_exception=False)
    response = client.get(url)
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    policy = assert_strict_headers(response)
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]
    assert policy["style-src"] == "'self'"


def test_the_lockout_page_and_api_answers_carry_it_too(db):
    assert "frame-ancestors 'none'" in Client().get("/api/v1/projects/")["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in Client().get("/api/schema/")["Content-Security-Policy"]


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_api_docs_admit_only_their_own_inline_script_by_nonce(db, url):
    first, second = Client().get(url), Client().get(url)
    assert first.status_code == 200
    policy = assert_strict_headers(first, scripts=directives(first["Content-Security-Policy"])["script-src"])
    nonce = re.fullmatch(r"'self' 'nonce-([A-Za-z0-9_-]{20,})'", policy["script-src"]).group(1)
    html = first.content.decode()
    assert "fonts.googleapis.com" not in html  # nothing from a CDN
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag or f'nonce="{nonce}"' in tag, tag  # every inline script carries the nonce
    assert nonce not in second["Content-Security-Policy"]  # a fresh nonce per response


# --- the docs (and the admin) in a real browser: rendered, no policy violation --------------------------------


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as chromium:
        yield chromium


@pytest.fixture
def tab(browser):
    """A page that records every CSP violation: console errors and securitypolicyviolation events."""
    context = browser.new_context()
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    page.violations = []
    page.on("console", lambda msg: "Content Security Policy" in msg.text and page.violations.append(msg.text))
    page.on("pageerror", lambda exc: page.violations.append(f"page error: {exc}"))
    page.add_init_script(
        "window.__csp = []; document.addEventListener('securitypolicyviolation',"
        " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    yield page
    context.close()


def violations(page) -> list[str]:
    return page.violations + page.evaluate("window.__csp")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_api_docs_render_in_chromium_without_policy_violations(tab, live_server):
    tab.goto(live_server.url + "/api/docs/")
    tab.locator(".swagger-ui .info .title").filter(has_text="Sitewarden API").wait_for()
    tab.locator(".opblock-tag-section").first.wait_for()  # the operations, from the fetched schema
    assert violations(tab) == []

    tab.goto(live_server.url + "/api/redoc/")
    tab.get_by_role("heading", name=re.compile("Sitewarden API")).first.wait_for()
    tab.locator("[data-section-id]").first.wait_for()  # the operations, from the fetched schema
    # Redoc's bundle hard-codes a logo from its CDN in the menu's footer; the policy blocks it on purpose
    # (the docs load nothing from elsewhere) and Redoc hides the broken image. Nothing else may be refused.
    assert [v for v in violations(tab) if REDOC_CDN_LOGO not in v] == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_sign_in_and_admin_pages_work_in_chromium_without_policy_violations(tab, live_server):
    UserFactory(username="ops", is_staff=True, is_superuser=True)
    project = ProjectFactory(name="Shop")
    tab.goto(live_server.url + "/admin/")
    tab.get_by_label("Username").fill("ops")
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Log in").click()
    tab.get_by_role("link", name="Projects").first.wait_for()
    for url in ("/admin/audits/project/", f"/admin/audits/project/{project.pk}/change/", "/admin/audits/audit/"):
        tab.goto(live_server.url + url)
        tab.locator("#content").wait_for()
    tab.goto(live_server.url + "/")  # the dashboard, signed in by the admin's session
    tab.get_by_role("heading", name="Projects").wait_for()
    assert violations(tab) == []


# --- production settings --------------------------------------------------------------------------------------


def run_check_deploy(tmp_path, **overrides) -> subprocess.CompletedProcess:
    """`manage.py check --deploy` under production settings in a child process, with a real random key and
    none of this machine's DJANGO_* variables, so only the production defaults (and `overrides`) count."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": get_random_secret_key(),
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
            "SITEWARDEN_BROKER_DIR": str(tmp_path / "broker"),
            "PYTHONPATH": str(REPO_ROOT),
            **overrides,
        }
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_S,
    )


def test_a_secret_key_starting_with_a_dollar_sign_is_taken_as_it_is(tmp_path):
    """get_random_secret_key starts about one key in 50 with "$", which django-environ would read as the name of
    another variable; the settings read secrets as they are set."""
    key, old, older = ("$" + get_random_secret_key()[1:] for _ in range(3))
    result = run_check_deploy(tmp_path, DJANGO_SECRET_KEY=key, DJANGO_SECRET_KEY_FALLBACKS=f"{old},{older}")
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "System check identified no issues (0 silenced)." in output, output


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    result = run_check_deploy(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output, output
    assert "WARNING" not in output, output


def test_check_deploy_sees_the_switches(tmp_path):
    """The environment switches reach the settings: turning HSTS and the redirect off is reported."""
    result = run_check_deploy(tmp_path, DJANGO_SECURE_HSTS_SECONDS="0", DJANGO_SECURE_SSL_REDIRECT="false")
    output = result.stdout + result.stderr
    assert "security.W004" in output and "security.W008" in output, output
    assert "identified 2 issues" in output, output
