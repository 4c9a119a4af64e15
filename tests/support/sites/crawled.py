"""The crawled test site: a home page linking every crawlable page case and the site-check situations (redirect
chains and loops, sitemap-only pages, duplicates, hreflang, broken targets, canonicals, content, pagination, images)."""

from tests.support.sites.pages import Case, html_route, page, redirect, sitemap_route

# --- the crawled site: every page case plus the site-check situations ------------------------------

DEEP_CHAIN = [f"/deep/{n}" for n in range(1, 6)]  # /deep/1 is at depth 1 ... /deep/5 at depth 5
SITEMAP_PATHS = [
    "/", "/orphan", "/old-sm", "/via-redirect", "/linked-and-in-sitemap", "/noindex-in-sitemap", "/missing",
    "/canon-bad", "/final",
]  # fmt: skip
HOME_LINKS = [
    "/r1", "/moved", "/loop-a", "/into-loop", "/dup1", "/dup2", "/dup3", "/dup-noindex", "/same-a", "/same-b",
    "/desc-a", "/desc-b", "/en", "/de", "/fr", "/es", "/missing", "/forbidden", "/canon-bad", "/canon-redirect",
    "/canon-ok", "/linked-and-in-sitemap", "/noindex-in-sitemap", DEEP_CHAIN[0],
]  # fmt: skip
# Content (issue 14b): near duplicates at 95 % and (twin) 70 %, soft 404s by wording and by a tiny text on
# 5 URLs (min_pages), and their twins: an article about 404s, the same tiny text on only 4 URLs.
NEAR_DUPLICATE_PATHS = ["/near-a", "/near-b", "/near-c", "/near-d"]
SOFT_404_PATHS = [
    "/soft/not-found", "/soft/seite-fehlt", "/soft/page-gone", *(f"/soft/gone-{n}" for n in range(1, 6))
]  # fmt: skip
SOFT_404_TWINS = ["/soft/article-404", "/soft/dict-get", *(f"/soft/four-{n}" for n in range(1, 5))]
HOME_LINKS += NEAR_DUPLICATE_PATHS + SOFT_404_PATHS + SOFT_404_TWINS
# Pagination (issue 14c): a clean 3-page series (the twin), a series whose 2nd page points back elsewhere, one
# whose next page is a 404 and a noindex page, and a 2-page loop.
PAGINATION = {
    "/pg/1": (None, "/pg/2"), "/pg/2": ("/pg/1", "/pg/3"), "/pg/3": ("/pg/2", None),
    "/pgb/1": (None, "/pgb/2"), "/pgb/2": ("/pg/1", None),
    "/pgn/1": (None, "/pgn/missing"), "/pgn/2": ("/pgn/noindex", None), "/pgn/noindex": (None, "/pgn/2"),
    "/pgl/a": ("/pgl/b", "/pgl/b"), "/pgl/b": ("/pgl/a", "/pgl/a"),
}  # fmt: skip
HOME_LINKS += [*PAGINATION, "/pgn/missing"]
# Images (issue 14c): a page showing a missing image and a 400 KB one (over the 300 KB default), and its twin
# showing only a small image. The images are asked once each in finalize.
IMAGES_PAGE, IMAGES_TWIN = "/img/page", "/img/twin"
HOME_LINKS += [IMAGES_PAGE, IMAGES_TWIN]


def shared_text(vocabulary: str, words: int, replaced_from: int | None = None) -> str:
    """`words` distinct words; from `replaced_from` on they are other words (the rest of the text is the same)."""
    end = words if replaced_from is None else replaced_from
    return " ".join([f"{vocabulary}{i}" for i in range(end)] + [f"other{vocabulary}{i}" for i in range(end, words)])


def edited_text(vocabulary: str, words: int, every: int) -> str:
    """shared_text's words with one word in `every` replaced, spread over the whole text (an edited article)."""
    return " ".join(f"edit{vocabulary}{i}" if i % every == every // 2 else f"{vocabulary}{i}" for i in range(words))


def _content_routes() -> dict:
    ok = html_route

    def text_page(name: str, text: str) -> str:
        return page(name, h1="Our catalogue", words=0, body=f"<p>{text}</p>")

    routes = {
        # 400 words; /near-b differs in one word in 25 all through (96 % the same: 3-word shingles measured ~79 %
        # there), /near-d in its last 120 (70 %).
        "/near-a": ok(text_page("near-a", shared_text("alpha", 400))),
        "/near-b": ok(text_page("near-b", edited_text("alpha", 400, 25))),
        "/near-c": ok(text_page("near-c", shared_text("beta", 400))),
        "/near-d": ok(text_page("near-d", shared_text("beta", 400, replaced_from=280))),
        "/soft/not-found": ok(page("soft-not-found", title="Page not found", h1="Sorry", words=30)),
        "/soft/seite-fehlt": ok(page("soft-seite-fehlt", title="Fehler", h1="Seite nicht gefunden", words=30)),
        # Issue 27: a working reference page whose short text documents "not found" (SciPy's dict.get), and its
        # twin that says it is gone.
        "/soft/dict-get": ok(
            page(
                "soft-dict-get",
                title="get — Reference",
                h1="Mapping.get(key, default)",
                words=0,
                body="<p>Return the value. If the key is not found or no longer exists, return the default.</p>",
            )
        ),  # fmt: skip
        "/soft/page-gone": ok(
            page(
                "soft-page-gone",
                title="Reference",
                h1="Oops",
                words=0,
                body="<p>This page no longer exists. Try the search.</p>",
            )
        ),  # fmt: skip
        "/soft/article-404": ok(
            page("soft-article-404", title="How we fixed our error pages", h1="Fixing 404 errors on a large site")
        ),
    }
    tiny = "<p>Choose a category below.</p>"
    for n in range(1, 6):
        routes[f"/soft/gone-{n}"] = ok(page(f"soft-gone-{n}", h1="Catalogue", words=0, body=tiny))
    for n in range(1, 5):
        routes[f"/soft/four-{n}"] = ok(page(f"soft-four-{n}", h1="Products", words=0, body=tiny))
    return routes


def _hreflang_head(base: str, pairs: list[tuple[str, str]]) -> str:
    return "".join(f'<link rel="alternate" hreflang="{lang}" href="{base}{path}">' for lang, path in pairs)


def site_check_routes(base: str) -> dict:
    """The site-check situations of the crawled test site (paths -> routes); the home page links them."""
    ok = html_route
    routes = {
        # A 3-hop chain, a 1-hop redirect, a loop nothing leads into, a chain into a loop.
        "/r1": redirect("/r2"),
        "/r2": redirect("/r3", 302),
        "/r3": redirect("/final", 307),
        "/final": ok(page("final")),
        "/moved": redirect("/final"),
        "/loop-a": redirect("/loop-b"),
        "/loop-b": redirect("/loop-a"),
        "/into-loop": redirect("/loop-x"),
        "/loop-x": redirect("/loop-y"),
        "/loop-y": redirect("/loop-x"),
        # Sitemap-only pages: an orphan linking only itself; a page reached only through a redirect.
        "/orphan": ok(page("orphan", links=[("/orphan", "This orphan page"), ("/", "Home page")])),
        "/old-sm": redirect("/via-redirect"),
        "/via-redirect": ok(page("via-redirect")),
        "/linked-and-in-sitemap": ok(page("linked-and-in-sitemap")),
        "/noindex-in-sitemap": ok(page("noindex-in-sitemap", head='<meta name="robots" content="noindex">')),
        # Duplicates: three indexable pages share a title (a noindex fourth does not count).
        "/dup1": ok(page("dup1", title="Shared title of three pages", links=[("/", "Home"), ("/missing", "Gone")])),
        "/dup2": ok(page("dup2", title="Shared title of three pages", links=[("/", "Home"), ("/gone", "Old")])),
        "/dup3": ok(page("dup3", title="Shared title of three pages")),
        "/dup-noindex": ok(
            page("dup-noindex", title="Shared title of three pages", head='<meta name="robots" content="noindex">')
        ),
        "/same-a": ok(page("same", title="Same text, first copy", description="The first copy of a text " * 3)),
        "/same-b": ok(page("same", title="Same text, second copy", description="The second copy of a text " * 3)),
        "/desc-a": ok(page("desc-a", description="One description shared by two pages, which is long enough.")),
        "/desc-b": ok(page("desc-b", description="One description shared by two pages, which is long enough.")),
        # hreflang: /en names /de, /de does not name /en; /fr and /es name each other.
        "/en": ok(page("en", head=_hreflang_head(base, [("en", "/en"), ("de", "/de")]))),
        "/de": ok(page("de", head=_hreflang_head(base, [("de", "/de")]))),
        "/fr": ok(page("fr", head=_hreflang_head(base, [("fr", "/fr"), ("es", "/es")]))),
        "/es": ok(page("es", head=_hreflang_head(base, [("es", "/es"), ("fr", "/fr")]))),
        # Broken targets (/missing is not routed: 404), and a refusal that is not a broken link.
        "/gone": ok(page("gone"), 410),
        "/forbidden": ok(page("forbidden"), 403),
        # Canonicals to a 404, to a redirect, and to a fine page.
        "/canon-bad": ok(page("canon-bad", head=f'<link rel="canonical" href="{base}/canon-missing">')),
        "/canon-redirect": ok(page("canon-redirect", head=f'<link rel="canonical" href="{base}/moved">')),
        "/canon-ok": ok(page("canon-ok", head=f'<link rel="canonical" href="{base}/final">')),
        "/robots.txt": (
            200,
            {"Content-Type": "text/plain"},
            f"User-agent: *\nDisallow: /private/\nthis line is not valid\nSitemap: {base}/sitemap.xml\n".encode(),
        ),
        "/sitemap.xml": sitemap_route([base + path for path in SITEMAP_PATHS]),
    }
    for n, path in enumerate(DEEP_CHAIN):
        links = [("/", "Home page")] + ([(DEEP_CHAIN[n + 1], "Next deep page")] if n + 1 < len(DEEP_CHAIN) else [])
        routes[path] = ok(page(f"deep{n + 1}", links=links))
    routes.update(_content_routes())
    routes.update(pagination_routes(base))
    routes.update(image_routes())
    return routes


def image_routes() -> dict:
    def png(size: int):
        return 200, {"Content-Type": "image/png"}, b"\x89PNG" + b"\0" * (size - 4)

    sized = 'alt="Picture" width="10" height="10"'
    body = f'<img src="/img/small.png" {sized}><img src="/img/missing.png" {sized}><img src="/img/big.png" {sized}>'
    return {
        "/img/small.png": png(2_000),
        "/img/big.png": png(400 * 1024),
        IMAGES_PAGE: html_route(page("img-page", body=body)),
        IMAGES_TWIN: html_route(page("img-twin", body=f'<img src="/img/small.png" {sized}>')),
    }


def pagination_routes(base: str) -> dict:
    routes = {}
    for path, (prev, nxt) in PAGINATION.items():
        head = "".join(f'<link rel="{rel}" href="{base}{to}">' for rel, to in (("prev", prev), ("next", nxt)) if to)
        if path == "/pgn/noindex":
            head += '<meta name="robots" content="noindex">'
        routes[path] = html_route(page("pagination" + path.replace("/", "-"), head=head))
    return routes


def crawl_site_routes(base: str, cases: list[Case]) -> dict:
    """Home page linking every crawlable page case and every site-check situation."""
    routes = site_check_routes(base)
    crawled = [c for c in cases if c.crawl]
    for case in crawled:
        routes[case.path.split("?", 1)[0]] = case.route  # the router ignores the query
    links = [(c.path, f"Case {c.name}") for c in crawled] + [(p, f"Go to {p}") for p in HOME_LINKS]
    routes["/"] = html_route(page("home", links=links, words=len(links) * 3 + 20))
    return routes
