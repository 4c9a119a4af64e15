"""JavaScript rendering with Playwright and Debian's Chromium: what only scripts build becomes visible."""

from http.server import BaseHTTPRequestHandler

import pytest

from audits.checks.render import RENDER_TYPES
from audits.models import Issue, Page
from audits.pipeline.chromium import find_chromium
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from scratchpad.models import Throttle
from tests.factories import ProjectFactory
from tests.support.sites import serve_handler
from tests.support.sites.pages import serve
from tests.support.sites.render import JS_ADDED_WORDS, JS_LINK_PATHS, render_cases, render_site_routes

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
    assert Page.objects.get(audit=audit, url=app_site + "/").raw_values is None  # not rendered: no raw column


def test_render_budget_bounds_the_rendered_pages(app_site):
    audit = _crawl(app_site, render_js=True, render_budget_pages=1)
    assert Throttle.objects.get(audit=audit).renders_used == 1
    assert Page.objects.filter(audit=audit, url=app_site + "/from-script").exists()  # the one render was home


# --- response vs render (Issue 27): the HTML as served kept beside the rendered page -----------------------


@pytest.fixture
def render_site():
    routes: dict = {}
    with serve(routes) as base:
        routes.update(render_site_routes(base))
        yield base


def test_what_javascript_changed_is_reported_with_both_values(render_site):
    base = render_site
    audit = _crawl(base, render_js=True, render_budget_pages=20)
    cases = render_cases(base)
    pages = {p.url: p for p in Page.objects.filter(audit=audit)}
    assert {base + c.path for c in cases} <= set(pages), sorted(pages)
    issues: dict[str, dict[str, Issue]] = {}
    for issue in Issue.objects.filter(audit=audit, type__in=RENDER_TYPES):
        issues.setdefault(issue.page_url, {})[issue.type] = issue
    for case in cases:
        page = pages[base + case.path]
        assert page.raw_values is not None, case.name  # every page was rendered
        assert set(issues.get(page.url, {})) == case.present, case.name

    # The clean twin: its script rewrote every value to what it was; the columns agree.
    clean = pages[base + "/render/clean"]
    raw = clean.raw_values
    assert (raw["title"], raw["canonical"], raw["meta_robots"], raw["h1"], raw["word_count"]) == (
        clean.title, clean.canonical_url, clean.meta_robots, clean.h1, clean.word_count
    )  # fmt: skip
    assert raw["links_only_rendered"] == 0 and raw["internal_links"] == clean.internal_links

    canonical = issues[base + "/render/canonical"]["render-canonical-changed"]
    assert canonical.severity == "warning"
    assert canonical.details == {
        "raw_canonical": base + "/render/canonical",
        "rendered_canonical": base + "/render/clean",
        "change": "changed",
    }
    added = issues[base + "/render/canonical-added"]["render-canonical-changed"].details
    assert added == {"raw_canonical": None, "rendered_canonical": base + "/render/clean", "change": "added"}

    noindex = issues[base + "/render/noindex"]["render-robots-changed"]
    assert noindex.severity == "critical" and noindex.details["added"] == ["noindex"]
    assert noindex.details["raw_meta_robots"] is None and noindex.details["rendered_meta_robots"] == "noindex"
    assert not pages[base + "/render/noindex"].is_indexable

    links = issues[base + "/render/links-content"]["render-links-only-after-js"].details
    assert links["links_only_rendered"] == len(JS_LINK_PATHS)
    assert sorted(links["examples"]) == sorted(base + path for path in JS_LINK_PATHS)
    content = issues[base + "/render/links-content"]["render-content-only-after-js"].details
    # The script's words and its two links' texts ("More from script").
    assert content["words_only_rendered"] == JS_ADDED_WORDS + 3 * len(JS_LINK_PATHS)
    assert content["raw_words"] == pages[base + "/render/links-content"].raw_values["word_count"]

    title = issues[base + "/render/title"]
    assert title["render-title-changed"].details == {
        "raw_title": "Test page title",
        "rendered_title": "A title written by the script",
        "change": "changed",
    }
    assert title["render-h1-changed"].details["rendered_h1"] == "Heading from script"
    assert title["render-meta-description-changed"].details["rendered_description"] == (
        "A description the script wrote."
    )
