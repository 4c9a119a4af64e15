"""Every finding one click from its pages, on real crawls: the site with planted findings of every type
(tests/support/sites/crawled.py) and the generated 300-page site, crawled in process by the real pipeline.

For every issue type found, the grid filtered by it lists exactly the pages its issues name and shows the issues
table's "pages affected"; an unknown filter value is said and lists nothing; inlinks read "N links from M pages"
on the grid and the page; a page shows how the crawl found it and its crawl path; the structure screen counts
per folder what the grid filtered by that folder lists. Screenshots of those screens at 1440 and 390 px."""

import csv
import io
import re

import pytest
from django.db.models import Count, Sum
from django.urls import reverse

from audits.models import Audit, Issue, Page
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.priority import issue_summary
from audits.selectors.pages import folder_prefix
from dashboard.structure import site_structure
from scratchpad.models import LinkEdge
from tests.dashboard.test_browser import SCREENSHOTS, sign_in
from tests.dashboard.test_pages_browser import _check
from tests.factories import ProjectFactory, UserFactory
from tests.support.browser import chromium_browser
from tests.support.sites.crawled import crawl_site_routes
from tests.support.sites.page_cases import page_cases
from tests.support.sites.pages import serve

pytestmark = pytest.mark.django_db(transaction=True)

MAX_PAGES = 300
# Types the issue names as missing from the old "Has issue" filter: they must be filters now.
ONCE_MISSING = ("broken-internal-link", "redirect-chain", "duplicate-title", "orphan-page", "near-duplicate-content")


def _crawl(owner, base: str, name: str = "Planted findings") -> Audit:
    project = ProjectFactory(owner=owner, name=name, base_url=base + "/")
    audit = audit_start(project=project, start_url=base + "/", max_pages=MAX_PAGES, dispatch=False)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _planted(owner) -> Audit:
    routes: dict = {}
    with serve(routes) as base:
        routes.update(crawl_site_routes(base, page_cases(base)))
        return _crawl(owner, base)


def _grid_urls(client, audit, **params) -> tuple[set[str], int]:
    """Every URL the grid lists for `params`, page after page (keyset cursors), and the total it shows."""
    url = reverse("audits:audit-pages", args=[audit.id])
    listed: list[str] = []
    cursor, total = None, None
    while True:
        response = client.get(url, {**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200
        grid = response.context["pages"]
        total = grid.total if total is None else total
        listed += [p.url for p in grid]
        if not grid.has_next:
            break
        cursor = grid.next_cursor
    assert len(listed) == len(set(listed))
    return set(listed), total


def test_the_grid_filters_by_every_issue_type_found_and_counts_its_pages_affected(client):
    owner = UserFactory(username="grid-owner")
    audit = _planted(owner)
    client.force_login(owner)
    summaries = issue_summary(audit=audit, pages_crawled=audit.pages_crawled)
    named = [s for s in summaries if not s.site_wide]
    site_wide = [s for s in summaries if s.site_wide]
    assert len(named) >= 20 and site_wide, [s.type for s in summaries]
    assert set(ONCE_MISSING) <= {s.type for s in named}

    screen = client.get(reverse("audits:audit-pages", args=[audit.id]))
    choices = dict(screen.context["form"].fields["issue"].choices)
    assert set(choices) - {""} == {s.type for s in named}  # every type naming a page, and nothing else
    html = screen.content.decode()
    for s in site_wide:  # left out of the choices, and said so
        assert s.title in html.split('id="site-wide-note"', 1)[1].split("</p>", 1)[0]

    for s in named:
        pages = set(
            Issue.objects.filter(audit=audit, type=s.type).exclude(page=None).values_list("page__url", flat=True)
        )
        listed, total = _grid_urls(client, audit, issue=s.type)
        assert listed == pages, s.type
        assert total == s.pages == len(pages), s.type
        assert choices[s.type] == f"{s.title} ({s.pages} page{'s' if s.pages != 1 else ''})"

        # The issue's own screen leads to the grid filtered by it.
        detail = client.get(reverse("audits:audit-issue-type", args=[audit.id, s.type])).content.decode()
        link = re.search(r'<a href="([^"]+)" id="issue-grid-link">View the (\d+) pages? in the grid</a>', detail)
        assert link and int(link.group(2)) == s.pages, s.type
        assert link.group(1).endswith(f"?issue={s.type}")

    # A link-level type lists the pages holding the links; a redirect chain its first URL; a group every page.
    broken = Issue.objects.filter(audit=audit, type="broken-internal-link").exclude(page=None)
    assert _grid_urls(client, audit, issue="broken-internal-link")[0] == set(broken.values_list("page_url", flat=True))
    groups = dict(
        Issue.objects.filter(audit=audit, type="duplicate-title").values_list("details__title", "details__group_size")
    )
    assert _grid_urls(client, audit, issue="duplicate-title")[1] == sum(groups.values()) >= 2


def test_an_unknown_filter_value_is_said_and_lists_no_page(client):
    owner = UserFactory(username="unknown-owner")
    audit = _planted(owner)
    client.force_login(owner)
    url = reverse("audits:audit-pages", args=[audit.id])

    response = client.get(url, {"issue": "no-such-type"})
    assert response.context["pages"].total == 0 and not list(response.context["pages"])
    text = response.content.decode()
    assert "Unknown issue type “no-such-type”" in text and "showing no pages" in text

    response = client.get(url, {"fetch_class": "bogus"})
    assert response.context["pages"].total == 0
    assert "Unknown fetch class “bogus”" in response.content.decode()

    response = client.get(url, {"status": "abc"})
    assert response.context["pages"].total == 0
    assert "Status code: Use a code (404)" in response.content.decode()

    # A catalogue type this crawl did not find (Lighthouse did not run) is not unknown: no page has it.
    response = client.get(url, {"issue": "poor-lcp"})
    assert response.context["pages"].total == 0
    assert "No page of this audit has the issue “Slow Largest Contentful Paint”" in response.content.decode()

    # An unknown sort still lists the pages, in URL order, and says so.
    response = client.get(url, {"sort": "-nonsense"})
    assert response.context["pages"].total == audit.pages_crawled
    assert "Unknown sort “-nonsense”" in response.content.decode()
    assert "sorted by URL, A to Z" in response.content.decode()

    # The export of an unknown filter is empty too: an export has exactly the rows on screen.
    export = client.get(reverse("audits:audit-pages-export", args=[audit.id, "csv"]), {"issue": "no-such-type"})
    rows = list(csv.reader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert len(rows) == 1  # the header alone


def test_inlinks_read_links_from_pages_the_same_on_the_grid_and_the_page(client):
    owner = UserFactory(username="inlinks-owner")
    audit = _planted(owner)
    client.force_login(owner)
    # The home page: every case links to it, some more than once.
    home = Page.objects.get(audit=audit, depth=0)
    edges = LinkEdge.objects.filter(audit=audit, target_url=home.url)
    links, pages = edges.aggregate(n=Sum("link_count"))["n"], edges.count()
    assert links > pages > 1 or links >= pages > 1
    label = f"{links} link{'s' if links != 1 else ''} from {pages} page{'s' if pages != 1 else ''}"

    grid = client.get(reverse("audits:audit-pages", args=[audit.id]), {"sort": "-inlinks"})
    assert "sorted by inlinks, most first" in grid.content.decode()
    row = next(p for p in grid.context["pages"] if p.url == home.url)
    assert (row.inlinks, row.inlink_pages) == (links, pages)
    assert label in grid.content.decode()

    detail = client.get(reverse("audits:page-detail", args=[audit.id, home.id])).content.decode()
    assert detail.count(label) == 2  # the facts line and the inlinks heading
    assert not re.search(r"\d+ inlinks?\b", detail)  # the old label that counted pages and said "inlinks"


def test_a_deep_page_shows_how_it_was_found_and_its_crawl_path(client, small_site):
    base, _manifest = small_site
    owner = UserFactory(username="path-owner")
    audit = _crawl(owner, base, "Generated site")
    client.force_login(owner)
    start = Page.objects.get(audit=audit, url=audit.start_url)
    assert (start.found_via, start.found_from) == ("start", "")
    # The sitemap lists the site, so most pages were found there first; the link crawl still reached them.
    assert Page.objects.filter(audit=audit, found_via="sitemap").count() > 100
    reached = Page.objects.filter(audit=audit, depth__gt=0)
    assert reached.count() > 100 and not reached.filter(found_from="").exists()

    page = Page.objects.filter(audit=audit, depth=3).order_by("url").first()
    assert page is not None, "the generated site has pages three clicks deep"
    response = client.get(reverse("audits:page-detail", args=[audit.id, page.id]))
    path = [step.url for step in response.context["how_found"].path]
    assert path[0] == audit.start_url and path[-1] == page.url
    assert len(path) == page.depth + 1  # one click a step: found_from follows the depth the crawl gave it
    for source, target in zip(path, path[1:], strict=False):  # each step is a real link of the crawled page
        assert LinkEdge.objects.filter(audit=audit, source_page__url=source, target_url=target).exists(), target
    html = response.content.decode()
    assert f"Found via <strong>{Page.FoundVia(page.found_via).label}</strong>; first reached from" in html
    crawl_path = html.split('id="crawl-path"', 1)[1].split("</ol>", 1)[0]
    assert [url for url in path if url in crawl_path] == path

    # A redirect's target was found via the redirect, from the redirecting URL.
    redirected = Page.objects.filter(audit=audit, found_via="redirect").first()
    assert redirected is not None
    assert Page.objects.filter(audit=audit, url=redirected.found_from, redirect_url=redirected.url).exists()


def _expected_score(issues, pages: int) -> int:
    """The score formula worked out by hand: each type takes off its severity's points (critical 25, warning 8,
    info 2; a type's severity is that of most of its rows) times the share of the folder's pages it affects."""
    by_type: dict[str, dict] = {}
    for row in issues.values("type", "severity").annotate(n=Count("id"), pages=Count("page", distinct=True)):
        kept = by_type.setdefault(row["type"], {"n": 0, "pages": 0, "severity": row["severity"], "top": 0})
        if row["n"] > kept["top"]:
            kept["severity"], kept["top"] = row["severity"], row["n"]
        kept["n"] += row["n"]
        kept["pages"] += row["pages"]
    points = {"critical": 25, "warning": 8, "info": 2}
    taken = sum(points[t["severity"]] * min(t["pages"] / pages, 1.0) for t in by_type.values())
    return max(0, int(100 - taken + 0.5 + 1e-9))


def test_the_structure_screen_counts_what_the_grid_filtered_by_each_folder_lists(client, small_site):
    base, _manifest = small_site
    owner = UserFactory(username="structure-owner")
    audit = _crawl(owner, base, "Generated site")
    client.force_login(owner)
    response = client.get(reverse("audits:audit-structure", args=[audit.id]))
    assert response.status_code == 200
    structure = response.context["structure"]
    (root,) = structure.roots
    assert root.filter == "/" and root.pages == structure.pages == audit.pages_crawled
    folders = [root, *root.shown]
    assert len(root.shown) >= 5  # /section-N/ folders
    for folder in folders:
        prefix = folder_prefix(audit=audit, folder=folder.filter)
        pages = Page.objects.filter(audit=audit, url__startswith=prefix)
        issues = Issue.objects.filter(audit=audit, page__in=pages)
        assert folder.pages == pages.count(), folder.filter
        assert folder.issues == issues.count(), folder.filter
        errors = issues.filter(severity="critical").values("page").annotate(n=Count("id")).count()
        assert folder.pages_with_errors == errors, folder.filter
        listed, total = _grid_urls(client, audit, folder=folder.filter)
        assert total == folder.pages and listed == set(pages.values_list("url", flat=True)), folder.filter
        assert folder.score == _expected_score(issues, pages.count()), folder.filter
    html = response.content.decode()
    first = root.shown[0]
    assert f'?folder={first.filter}"' in html
    assert site_structure(audit=audit).pages == audit.pages_crawled
    # The folder filter shows its scope on the grid.
    grid = client.get(reverse("audits:audit-pages", args=[audit.id]), {"folder": first.filter}).content.decode()
    assert f"In folder <code>{base}{first.filter}</code>" in grid


@pytest.mark.browser
def test_grid_page_and_structure_screens_fit_and_pass_axe(live_server, settings, tmp_path, small_site):
    owner = UserFactory(username="carol")
    audit = _planted(owner)
    deep_base, _manifest = small_site
    generated = _crawl(owner, deep_base, "Generated site")
    deep = Page.objects.filter(audit=generated, depth=3).order_by("url").first()
    base = f"{live_server.url}/audits/{audit.id}"
    screens = [
        ("grid-issue-filtered", f"{base}/pages/?issue=broken-internal-link"),
        ("grid-unknown-filter", f"{base}/pages/?issue=no-such-type"),
        ("grid-inlinks-sorted", f"{base}/pages/?sort=-inlinks"),
        ("page-detail-crawl-path", f"{live_server.url}/audits/{generated.id}/pages/{deep.id}/"),
        ("structure", f"{live_server.url}/audits/{generated.id}/structure/"),
        ("structure-planted", f"{base}/structure/"),
        ("grid-folder", f"{live_server.url}/audits/{generated.id}/pages/?folder=/section-1/"),
    ]
    with chromium_browser() as chromium:
        for width in (1440, 390):
            _visit(chromium, live_server, screens, width)
    assert (SCREENSHOTS / "12b-i25-structure-390.png").exists()


def _visit(chromium, live_server, screens: list, width: int) -> None:
    context = chromium.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    sign_in(tab, live_server, "carol")
    for name, url in screens:
        response = tab.goto(url)
        assert response.status == 200, (name, response.status)
        _check(tab, f"i25-{name}", width)
    assert not errors, errors
    context.close()
