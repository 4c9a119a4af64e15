"""A site served in two versions for fix verification (issue 28): planted issues in `before`, some of them fixed in
`after` (the route dict is live: `fix_site_after(routes)` changes it in place while it is served).

Planted in `before`, and what `after` does to each URL:
- missing-h1 on /h1-fixed-a, /h1-fixed-b (an H1 added: fixed), /h1-kept (still none: still present), /h1-gone
  (404 now: no longer reachable), /h1-private (robots.txt now disallows /h1-private: no longer reachable);
- broken-internal-link on /links-revived (its target /gone-revived answers 200 now: fixed), /links-edited (the
  broken link removed: fixed), /links-kept (still links /gone-kept, still 404: still present);
- title-too-long on /long-title only (shortened: fixed, so the type is "verified fixed");
- duplicate-title on /dup-a and /dup-b (a whole-crawl type: a verification is refused).
"""

from tests.support.sites.pages import html_route, page

LONG_TITLE = "A title that goes on and on well past anything a search result would ever show in full to anyone"
H1_PAGES = ("/h1-fixed-a", "/h1-fixed-b", "/h1-kept", "/h1-gone", "/h1-private")
LINK_PAGES = ("/links-revived", "/links-edited", "/links-kept")
EXPECTED_H1 = {
    "/h1-fixed-a": "fixed",
    "/h1-fixed-b": "fixed",
    "/h1-kept": "still_present",
    "/h1-gone": "unreachable",
    "/h1-private": "unreachable",
}
EXPECTED_LINKS = {"/links-revived": "fixed", "/links-edited": "fixed", "/links-kept": "still_present"}


def _robots(disallow: str = "") -> tuple[int, dict, bytes]:
    body = "User-agent: *\n" + (f"Disallow: {disallow}\n" if disallow else "Disallow:\n")
    return 200, {"Content-Type": "text/plain"}, body.encode()


def fix_site_before() -> dict:
    everything = [*H1_PAGES, *LINK_PAGES, "/long-title", "/dup-a", "/dup-b"]
    routes = {
        "/robots.txt": _robots(),
        "/": html_route(page("home", links=[(p, f"Page {p.strip('/')}") for p in everything])),
        "/long-title": html_route(page("longtitle", title=LONG_TITLE)),
        "/dup-a": html_route(page("dupa", title="The same title twice")),
        "/dup-b": html_route(page("dupb", title="The same title twice")),
        "/links-revived": html_route(page("revived", links=[("/", "Home page"), ("/gone-revived", "Revived page")])),
        "/links-edited": html_route(page("edited", links=[("/", "Home page"), ("/gone-edited", "Edited page")])),
        "/links-kept": html_route(page("kept", links=[("/", "Home page"), ("/gone-kept", "Kept page")])),
    }
    for path in H1_PAGES:
        routes[path] = html_route(page(path.strip("/").replace("-", ""), h1=None))
    return routes  # /gone-revived, /gone-edited and /gone-kept are not routed: 404


def fix_site_after(routes: dict) -> None:
    """The second version, in place: the fixes described in the module docstring."""
    routes["/robots.txt"] = _robots("/h1-private")
    routes["/h1-fixed-a"] = html_route(page("h1fixeda"))
    routes["/h1-fixed-b"] = html_route(page("h1fixedb"))
    del routes["/h1-gone"]
    routes["/gone-revived"] = html_route(page("gonerevived"))
    routes["/links-edited"] = html_route(page("edited", links=[("/", "Home page")]))
    routes["/long-title"] = html_route(page("longtitle", title="A short title"))
