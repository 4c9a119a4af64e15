"""JavaScript rendering with Playwright and Debian's Chromium: what only scripts build becomes visible."""

from http.server import BaseHTTPRequestHandler

import pytest

from audits.models import Issue, Page
from audits.pipeline.chromium import find_chromium
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from scratchpad.models import Throttle
from tests.factories import ProjectFactory
from tests.support.sites import serve_handler

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(find_chromium()[0] is None, reason="Chromium is not installed (make lighthouse-install)"),
]

APP = b"""<!DOCTYPE html><html lang="en"><head><title>Single page app</title></head>
<body><div id="root"></div><script>
document.getElementById('root').innerHTML =
  '<h1>Rendered heading</h1><p>' + 'word '.repeat(40) + '</p><a href="/from-script">made by script</a>';
</script></body></html>"""


class App(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/":
            body, status = APP, 200
        elif self.path == "/from-script":
            body, status = b"<!DOCTYPE html><title>Only a script links here</title><h1>ok</h1>", 200
        else:
            body, status = b"", 404
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def app_site():
    with serve_handler(App) as (_, base):
        yield base


def _crawl(base, **options):
    project = ProjectFactory(base_url=base + "/", **options)
    audit = audit_start(project=project, start_url=base + "/", max_pages=20, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    return audit


def test_rendering_finds_what_only_javascript_builds(app_site):
    audit = _crawl(app_site, render_js=True, render_budget_pages=5)
    home = Page.objects.get(audit=audit, url=app_site + "/")
    assert home.h1_count == 1 and home.word_count >= 40
    assert Page.objects.filter(audit=audit, url=app_site + "/from-script", status_code=200).exists()
    assert not Issue.objects.filter(audit=audit, type="javascript-rendering-suspected").exists()
    assert Throttle.objects.get(audit=audit).renders_used == 2  # unused budget was given back


def test_without_rendering_the_page_is_flagged_and_its_script_link_unseen(app_site):
    audit = _crawl(app_site)
    assert set(Page.objects.filter(audit=audit).values_list("url", flat=True)) == {app_site + "/"}
    assert Issue.objects.filter(audit=audit, type="javascript-rendering-suspected").exists()


def test_render_budget_bounds_the_rendered_pages(app_site):
    audit = _crawl(app_site, render_js=True, render_budget_pages=1)
    assert Throttle.objects.get(audit=audit).renders_used == 1
    assert Page.objects.filter(audit=audit, url=app_site + "/from-script").exists()  # the one render was home
