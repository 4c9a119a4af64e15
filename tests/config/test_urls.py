"""config/urls.py's error handlers with DEBUG off: the product's own 404, 400, 403 and 500 pages (never Django's
technical pages, which list the URL patterns or a traceback), and problem JSON for the same errors under /api/.
`make run`'s settings (config.settings.local) keep DEBUG off unless DJANGO_DEBUG=true asks for it."""

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.test import Client
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 (this URLconf's handlers)
from config.urls import urlpatterns as product_urlpatterns
from tests.api.conftest import assert_problem
from tests.support.workers import REPO_ROOT

PRODUCT_PAGE_MARKS = ('<a class="brand"', "sitewarden.css")  # the product's header and stylesheet
TECHNICAL_MARKS = ("URLconf", "urlpatterns", "Traceback", "RuntimeError", "DEBUG = True", "technical_500")


def _boom(request):
    raise RuntimeError("an unexpected error, for the 500 page")


def _forbidden(request):
    raise PermissionDenied


def _suspicious(request):
    raise SuspiciousOperation("a refused request")


# The product's URLs, and its handlers (imported above), plus views that fail (@pytest.mark.urls(__name__)).
urlpatterns = [
    path("test-boom/", _boom),
    path("api/test-boom/", _boom),
    path("test-forbidden/", _forbidden),
    path("test-suspicious/", _suspicious),
    *product_urlpatterns,
]


def _product_page(response, status: int, heading: str) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert all(mark in html for mark in PRODUCT_PAGE_MARKS), html[:500]
    assert f"<h1>{heading}</h1>" in html
    assert not any(mark in html for mark in TECHNICAL_MARKS), html[:2000]
    return html


@pytest.fixture
def debug_off(settings):
    settings.DEBUG = False


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("url", ["/r/mistyped-share-link/", "/r/x/report.pdf", "/no-such-page/", "/audits/123/"])
def test_an_unknown_address_is_the_products_404_page(db, debug_off, url):
    html = _product_page(Client().get(url), 404, "Not found")
    assert "mistyped" not in html  # the address is not echoed


@pytest.mark.urls(__name__)
def test_an_unhandled_error_is_the_products_500_page(db, debug_off):
    _product_page(Client(raise_request_exception=False).get("/test-boom/"), 500, "Something went wrong")


@pytest.mark.urls(__name__)
def test_refusals_outside_the_api_are_the_products_400_and_403_pages(db, debug_off):
    _product_page(Client().get("/test-forbidden/"), 403, "Not allowed")
    _product_page(Client().get("/test-suspicious/"), 400, "Bad request")
    # a CSRF refusal too (Django's csrf_failure renders templates/403_csrf.html)
    refused = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "x", "password": "y"})
    _product_page(refused, 403, "Not allowed")


@pytest.mark.urls(__name__)
def test_api_errors_stay_problem_json(db, debug_off):
    assert_problem(Client().get("/api/v1/nonexistent"), 404, "not_found")
    assert_problem(Client().get("/api/v1/audits/not-a-uuid/"), 404, "not_found")
    body = assert_problem(Client(raise_request_exception=False).get("/api/test-boom/"), 500, "server_error")
    assert "RuntimeError" not in json.dumps(body)


def _local_debug(**env) -> bool:
    """DEBUG as config.settings.local computes it in a fresh process with this environment."""
    clean = {k: v for k, v in os.environ.items() if k not in ("DJANGO_DEBUG", "DJANGO_SETTINGS_MODULE")}
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings.local", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "True"


def test_make_runs_settings_keep_debug_off_unless_a_developer_asks():
    assert _local_debug() is False
    assert _local_debug(DJANGO_DEBUG="true") is True
