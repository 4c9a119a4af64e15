"""A small site served in two versions, for what changes between two audits (issue 28: the Changes view, alerts,
the release gate, fix verification). The test audits version 1, flips `site.version = 2`, audits again.

    with serve_versions() as site:              # version 1 on a free port of 127.0.0.1
        first = audit_versions(site)            # a completed audit of it (a new project unless one is given)
        site.version = 2
        second = audit_versions(site, project=first.project)

Version 2 differs from version 1 by exactly these, each on its own page (paths below; `site.url_of(path)`):

- TITLE_CHANGED: its <title> is reworded (OLD_TITLE -> NEW_TITLE).
- NOINDEXED: gains <meta name="robots" content="noindex">.
- CANONICAL_MOVED: a print view whose canonical moves from CANONICAL_BEFORE to CANONICAL_AFTER (non-indexable,
  canonicalized, in both versions: only the canonical changes).
- REMOVED: the page is deleted and answers 404, while the blog still links to it. Removed as sites remove pages:
  the URL is still found and now broken (a status change, a broken internal link, a critical issue), not a URL the
  crawl no longer meets. A URL the crawl stops meeting is BLOCKED below.
- REDIRECTED: answers 301 to REDIRECT_TARGET (a page that exists in both versions).
- ADDED: a new blog post, linked from the blog's <nav> (so no other page's main text changes).
- robots.txt gains ROBOTS_RULE_ADDED, which disallows BLOCKED: a page linked from home that version 1 let the
  crawl fetch and version 2 keeps it from (the audit no longer has it: a URL removed).
- Both serve /sitemap.xml (found at the default location, not declared) listing the home page; version 2's
  robots.txt also gains a `Sitemap:` line (`sitemap_line(site.url)`) declaring SITEMAP_ADDED, which lists IN_SITEMAP, a
  page both audits crawl: a sitemap added, a robots.txt line added, and that page now in a sitemap.

Nothing else differs: every page keeps its exact word count (tests.support.sites.pages.page pads to it), and
no links are added or dropped except the one to ADDED (in a <nav>, outside the main text), so inlinks and depths
move by at most one link, below any change threshold. `expected_changes(site)` is the PageChange rows the second
audit must have against the first (audits.pipeline.changes), and nothing else.
"""

import contextlib
from collections.abc import Iterator

from audits.models import Audit, Project
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import RoutedSite, serve_routes
from tests.support.sites.pages import html_route, page, redirect, sitemap_route

TITLE_CHANGED = "/about"
OLD_TITLE = "About Acme"
NEW_TITLE = "About Acme, makers of lamps"
NOINDEXED = "/pricing"
CANONICAL_MOVED = "/shop/lamp-print"
CANONICAL_BEFORE = "/shop/lamp"
CANONICAL_AFTER = "/shop/lamp-classic"
REMOVED = "/blog/winter-sale"
REDIRECTED = "/team"
REDIRECT_TARGET = "/about"
ADDED = "/blog/spring-launch"
BLOCKED = "/drafts/autumn"
ROBOTS_RULE_ADDED = "Disallow: /drafts/"
SITEMAP = "/sitemap.xml"
SITEMAP_ADDED = "/sitemap-blog.xml"
IN_SITEMAP = "/blog/autumn-notes"
ROBOTS_V1 = "User-agent: *\nDisallow: /admin/\n"
ROBOTS_V2 = f"User-agent: *\nDisallow: /admin/\n{ROBOTS_RULE_ADDED}\n"  # then sitemap_line(base)

VERSIONS = (1, 2)

# path -> (name, links) of the pages both versions serve alike (the changed pages are built in _pages).
_HOME_LINKS = [
    ("/about", "About us"),
    (REDIRECTED, "Our team"),
    (NOINDEXED, "Pricing"),
    ("/shop", "Shop"),
    ("/blog", "Blog"),
    (BLOCKED, "Autumn draft"),
]
_SHOP_LINKS = [("/", "Home page"), ("/shop/lamp", "Lamp"), ("/shop/lamp-classic", "Classic lamp"),
               (CANONICAL_MOVED, "Print view")]  # fmt: skip
_BLOG_LINKS = [("/", "Home page"), (REMOVED, "Winter sale"), (IN_SITEMAP, "Autumn notes")]


def sitemap_line(base: str) -> str:
    """The `Sitemap:` line version 2's robots.txt ends with (`base`: the site's URL, as in VersionedSite.url)."""
    return f"Sitemap: {base}{SITEMAP_ADDED}"


def _pages(version: int, base: str) -> dict:
    """path -> route of one version, served at `base`."""
    new = version == 2
    blog_nav = f'<nav><a href="{ADDED}">Spring launch</a></nav>' if new else ""
    robots = f"{ROBOTS_V2}{sitemap_line(base)}\n" if new else ROBOTS_V1
    routes = {
        "/robots.txt": (200, {"Content-Type": "text/plain"}, robots.encode()),
        SITEMAP: sitemap_route([base + "/"]),
        "/": html_route(page("home", links=_HOME_LINKS)),
        "/about": html_route(page("about", title=NEW_TITLE if new else OLD_TITLE)),
        REDIRECTED: redirect(REDIRECT_TARGET) if new else html_route(page("team")),
        NOINDEXED: html_route(page("pricing", head='<meta name="robots" content="noindex">' if new else "")),
        "/shop": html_route(page("shop", links=_SHOP_LINKS)),
        "/shop/lamp": html_route(page("lamp")),
        "/shop/lamp-classic": html_route(page("lamp-classic")),
        CANONICAL_MOVED: html_route(
            page("lamp-print", head=f'<link rel="canonical" href="{CANONICAL_AFTER if new else CANONICAL_BEFORE}">')
        ),
        "/blog": html_route(page("blog", links=_BLOG_LINKS, body=blog_nav)),
        IN_SITEMAP: html_route(page("autumn-notes")),
        BLOCKED: html_route(page("autumn-draft")),
    }
    if not new:
        routes[REMOVED] = html_route(page("winter-sale"))  # version 2: the server's 404
    else:
        routes[ADDED] = html_route(page("spring-launch"))
        routes[SITEMAP_ADDED] = sitemap_route([base + IN_SITEMAP])
    return routes


class VersionedSite:
    """The site on 127.0.0.1; `version` (1 or 2) says which one it serves from the next request on."""

    def __init__(self, routed: RoutedSite, version: int):
        self._routed = routed
        self.url = routed.url  # http://127.0.0.1:PORT, no trailing slash
        self.version = version

    @property
    def version(self) -> int:
        return self._version

    @version.setter
    def version(self, version: int) -> None:
        if version not in VERSIONS:
            raise ValueError(f"the site has versions {VERSIONS}, not {version!r}")
        routes = _pages(version, self.url)
        self._routed.routes.clear()  # the server reads this dict on each request
        self._routed.routes.update(routes)
        self._version = version

    def url_of(self, path: str) -> str:
        return self.url + path

    @property
    def requests(self) -> list:
        """(path with query, headers) of every request served."""
        return self._routed.requests


def expected_changes(site: "VersionedSite") -> set[tuple[str, str, str, str, str]]:
    """(field, url, direction, before, after) of every change version 2's audit has against version 1's."""
    url = site.url_of
    return {
        ("title", url(TITLE_CHANGED), "changed", OLD_TITLE, NEW_TITLE),
        ("robots", url(NOINDEXED), "added", "", "noindex"),
        ("indexability", url(NOINDEXED), "down", "indexable", "non-indexable: noindex"),
        ("canonical", url(CANONICAL_MOVED), "changed", url(CANONICAL_BEFORE), url(CANONICAL_AFTER)),
        ("status", url(REMOVED), "changed", "200", "404"),
        ("indexability", url(REMOVED), "down", "indexable", "non-indexable: non-2xx status"),
        ("status", url(REDIRECTED), "changed", "200", "301"),
        ("redirect", url(REDIRECTED), "added", "", url(REDIRECT_TARGET)),
        ("indexability", url(REDIRECTED), "down", "indexable", "non-indexable: redirect"),
        ("added", url(ADDED), "added", "", "200"),
        ("removed", url(BLOCKED), "removed", "200", ""),
        ("robots_txt", url("/robots.txt"), "added", "", ROBOTS_RULE_ADDED),
        ("robots_txt", url("/robots.txt"), "added", "", sitemap_line(site.url)),
        ("sitemap", url(SITEMAP_ADDED), "added", "", "read"),
        ("in_sitemap", url(IN_SITEMAP), "added", "no", "yes"),
    }


@contextlib.contextmanager
def serve_versions(version: int = 1) -> Iterator[VersionedSite]:
    with serve_routes({}) as routed:
        yield VersionedSite(routed, version)


def audit_versions(site: VersionedSite, *, project: Project | None = None, **start_options) -> Audit:
    """A completed audit of the site as it is now, run in this process (a new project unless one is given);
    `start_options` go to audit_start (e.g. baseline=)."""
    project = project or ProjectFactory(base_url=site.url + "/")
    audit = audit_start(project=project, start_url=site.url + "/", max_pages=100, dispatch=False, **start_options)
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, (audit.error_code, audit.error_detail)
    return audit
