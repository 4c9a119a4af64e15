"""Test sites for the checks: an HTML page builder, the routed server of tests.support, the page-check cases."""

import contextlib
import html
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from crawler.limits import MAX_HTML_BYTES
from crawler.limits import MAX_LINK_TARGETS_PER_PAGE as MAX_LINK_TARGETS
from tests.support.sites import Route, drop_connection, serve_routes

# --- pages -----------------------------------------------------------------------------------------


def page(
    name: str,
    *,
    title: str | None = "",
    titles: list[str] | None = None,
    description: str | None = "",
    head: str = "",
    body: str = "",
    lang: str | None = "en",
    viewport: bool = True,
    h1: str | None = "",
    words: int = 200,
    links: list[tuple[str, str]] | None = None,
) -> str:
    """A page with no issue at all, unless told otherwise; `words` is its exact count of visible words.

    Title, description and text carry `name`, so no two pages of a site are duplicates.
    """
    title = f"Test page {name}" if title == "" else title
    if description == "":
        description = f"The description of the test page called {name}, long enough to be a useful summary."
    h1 = f"Heading {name}" if h1 == "" else h1
    links = [("/", "Home page")] if links is None else links
    parts = ["<!DOCTYPE html>", f'<html lang="{lang}">' if lang is not None else "<html>", "<head>"]
    for t in titles if titles is not None else ([title] if title is not None else []):
        parts.append(f"<title>{html.escape(t)}</title>")
    if description is not None:
        parts.append(f'<meta name="description" content="{html.escape(description)}">')
    if viewport:
        parts.append('<meta name="viewport" content="width=device-width, initial-scale=1">')
    parts += [head, "</head>", "<body>"]
    used = 0
    if h1 is not None:
        parts.append(f"<h1>{html.escape(h1)}</h1>")
        used += len(h1.split())
    link_html = "".join(f'<li><a href="{html.escape(h)}">{html.escape(t)}</a></li>' for h, t in links)
    used += sum(len(t.split()) for _, t in links)
    filler = max(words - used, 0)
    parts.append("<p>" + " ".join(f"{name.replace('-', '')}w{i}" for i in range(filler)) + "</p>")
    parts += [body, f"<ul>{link_html}</ul>" if links else "", "</body></html>"]
    return "\n".join(parts)


def challenge_page() -> str:
    return (
        "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
        "<noscript>Enable JavaScript and cookies to continue</noscript>"
        "<script>window._cf_chl_opt={cvId: '3'};</script></body></html>"
    )


# --- server ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def serve(routes: dict):
    """Serve `routes` (path -> (status, headers, body) or handler function) on 127.0.0.1; yields the base URL."""
    with serve_routes(routes) as site:
        yield site.url


def html_route(body: str, status: int = 200, headers: dict | None = None) -> tuple[int, dict, bytes]:
    return status, {"Content-Type": "text/html; charset=utf-8", **(headers or {})}, body.encode("utf-8")


def redirect(location: str, status: int = 301) -> tuple[int, dict, bytes]:
    return status, {"Location": location, "Content-Type": "text/html"}, b""


def slow(body: str, delay_s: float) -> Callable:
    def respond(handler) -> None:
        time.sleep(delay_s)  # before the headers: what slow-response measures
        data = body.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return respond


# --- page-check cases ------------------------------------------------------------------------------


@dataclass
class Case:
    """One page of the page-check site and what its issues must and must not include."""

    name: str
    route: Route
    present: set = field(default_factory=set)
    absent: set = field(default_factory=set)
    path: str = ""  # default /case/<name>
    crawl: bool = True  # False: only in the unit layer (https URL, site on https, exact timing)
    as_url: str = ""  # unit layer: build the record as if fetched from this URL ("https" -> https base)
    depth: int = 1
    site_https: bool = False
    response_time_ms: int | None = None  # unit layer: replaces the measured time
    unit: bool = True  # False: only crawled (a real 1.6 s wait is paid once)

    def __post_init__(self):
        self.path = self.path or f"/case/{self.name}"


CONTENT_TYPES = {
    "missing-title", "multiple-titles", "title-too-long", "title-too-short", "missing-meta-description",
    "meta-description-too-long", "meta-description-too-short", "missing-h1", "multiple-h1", "thin-content",
    "no-outgoing-links", "missing-viewport", "missing-html-lang",
}  # fmt: skip
SPA_BODY = '<div id="root"></div><script src="/static/app.js"></script>'
JSONLD_OK = '<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Article"}</script>'
JSONLD_BROKEN = '<script type="application/ld+json">{"@context": "https://schema.org", "@type": }</script>'
BIG_PARAGRAPH_BYTES = 100_000


def _with_title_chars(name: str, chars: int) -> str:
    return page(name, title=("T" * chars))


def _with_description_chars(name: str, chars: int) -> str:
    return page(name, description=("d" * (chars - 1)) + ".")


def _big_page(name: str, total_bytes: int) -> str:
    base = page(name, body="@@PAD@@")
    pad = total_bytes - len(base.encode()) + len("@@PAD@@")
    chunks, rest = divmod(pad - len("<p></p>"), 10)
    return base.replace("@@PAD@@", "<p>" + "word word " * chunks + "x" * rest + "</p>")


def _long_path(base: str, name: str, url_chars: int) -> str:
    prefix = f"/case/{name}/"
    return prefix + "a" * (url_chars - len(base) - len(prefix))


def page_cases(base: str) -> list[Case]:
    """Every page check: a page that triggers it and a near miss that must not. `base` has no trailing /."""
    ok = html_route
    c = Case
    cases = [
        c("clean", ok(page("clean")), absent={"*"}),
        # Refusals: reported as blocked, never as content problems.
        c("blocked-403", ok(page("blocked-403"), 403), {"blocked-page"}, {"broken-page", *CONTENT_TYPES}),
        c("blocked-401", ok(page("blocked-401"), 401), {"blocked-page"}, {"broken-page"}),
        c(
            "blocked-cf-header",
            ok(challenge_page(), 200, {"cf-mitigated": "challenge"}),
            {"blocked-page"},
            {"broken-page", *CONTENT_TYPES},
        ),
        c("blocked-challenge-200", ok(challenge_page()), {"blocked-page"}, CONTENT_TYPES),
        c("blocked-challenge-202", ok(challenge_page(), 202), {"blocked-page"}, CONTENT_TYPES),
        c(
            "login-with-captcha",
            ok(
                page(
                    "login-with-captcha",
                    title="Sign in to your account",
                    words=30,
                    body='<form><div class="g-recaptcha"></div>captcha</form>',
                )
            ),
            set(),
            {"blocked-page"},
        ),
        c(
            "cloudflare-jsd",
            ok(page("cloudflare-jsd", head='<script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>')),
            set(),
            {"blocked-page"},
        ),
        # Status classes
        # Retry-After: 0 so the crawler's retries (waited out as the site asks) cost no test time.
        c(
            "rate-limited",
            ok(page("rate-limited"), 429, {"Retry-After": "0"}),
            {"rate-limited-page"},
            {"broken-page", "blocked-page"},
        ),
        c("server-500", ok(page("server-500"), 500), {"server-error"}, {"broken-page", *CONTENT_TYPES}),
        c("server-503", ok(page("server-503"), 503), {"server-error"}, {"broken-page"}),
        c("broken-404", ok(page("broken-404"), 404), {"broken-page"}, {"server-error", "blocked-page"}),
        c("broken-410", ok(page("broken-410"), 410), {"broken-page"}),
        c("drop-connection", drop_connection, {"fetch-error"}, {"broken-page", "server-error"}),
        # Timing
        c("slow", slow(page("slow"), 1.6), {"slow-response"}, unit=False),
        c("slow-1501", ok(page("slow-1501")), {"slow-response"}, crawl=False, response_time_ms=1501),
        c("slow-1500", ok(page("slow-1500")), set(), {"slow-response"}, crawl=False, response_time_ms=1500),
        # Non-HTML
        c(
            "file-pdf",
            (200, {"Content-Type": "application/pdf"}, b"%PDF-1.4 test"),
            {"non-html-content"},
            CONTENT_TYPES,
            path="/case/file.pdf",
        ),
        c(
            "missing-pdf",
            (404, {"Content-Type": "application/pdf"}, b""),
            {"broken-page"},
            {"non-html-content"},
            path="/case/missing.pdf",
        ),
        # Robots directives
        c(
            "noindex-thin",
            ok(page("noindex-thin", words=10, links=[], head='<meta name="robots" content="noindex">')),
            {"noindex-page"},
            {"thin-content", "no-outgoing-links", "nofollow-page"},
        ),
        c("noindex-header", ok(page("noindex-header"), headers={"X-Robots-Tag": "noindex"}), {"noindex-page"}),
        c(
            "noindex-other-bot",
            ok(page("noindex-other-bot"), headers={"X-Robots-Tag": "otherbot: noindex"}),
            set(),
            {"noindex-page"},
        ),
        c(
            "index-follow",
            ok(page("index-follow", head='<meta name="robots" content="index, follow">')),
            set(),
            {"noindex-page", "nofollow-page"},
        ),
        c(
            "nofollow-meta",
            ok(page("nofollow-meta", head='<meta name="robots" content="nofollow">')),
            {"nofollow-page"},
            {"noindex-page"},
        ),
        c(
            "robots-none",
            ok(page("robots-none", head='<meta name="robots" content="none">')),
            {"noindex-page", "nofollow-page"},
            {"thin-content"},
        ),
        c(
            "nofollow-link",
            ok(page("nofollow-link", body='<a rel="nofollow" href="/">Home again</a>')),
            set(),
            {"nofollow-page"},
        ),
        # Canonicals
        c(
            "canonical-two",
            ok(
                page(
                    "canonical-two",
                    head=f'<link rel="canonical" href="{base}/case/canonical-two">'
                    f'<link rel="canonical" href="{base}/case/clean">',
                )
            ),
            {"canonical-conflict"},
        ),
        c(
            "canonical-header-mismatch",
            ok(
                page(
                    "canonical-header-mismatch",
                    head=f'<link rel="canonical" href="{base}/case/canonical-header-mismatch">',
                ),
                headers={"Link": f'<{base}/case/clean>; rel="canonical"'},
            ),
            {"canonical-conflict"},
        ),
        c(
            "canonical-agree",
            ok(
                page("canonical-agree", head=f'<link rel="canonical" href="{base}/case/canonical-agree">'),
                headers={"Link": f'<{base}/case/canonical-agree>; rel="canonical"'},
            ),
            set(),
            {"canonical-conflict", "canonicalized-page", "canonical-relative"},
        ),
        c(
            "canonicalized",
            ok(page("canonicalized", words=10, head=f'<link rel="canonical" href="{base}/case/clean">')),
            {"canonicalized-page"},
            {"thin-content", "canonical-relative", "canonical-conflict"},
        ),
        c(
            "canonical-relative",
            ok(page("canonical-relative", head='<link rel="canonical" href="/case/canonical-relative">')),
            {"canonical-relative"},
            {"canonicalized-page", "canonical-conflict", "canonical-non-http"},
        ),
        c(
            "canonical-file",
            ok(page("canonical-file", head='<link rel="canonical" href="file:///srv/build/index.html">')),
            {"canonical-non-http"},
            {"canonical-relative", "canonicalized-page", "canonical-conflict"},
        ),
        # Depth: judged in finalize on exact depths (tests/audits/pipeline/test_depth.py; the crawled site has
        # a chain of links for it)
        # JavaScript apps
        c(
            "spa",
            ok(page("spa", h1=None, words=0, links=[], body=SPA_BODY)),
            {"javascript-rendering-suspected"},
        ),
        c(
            "ssr-app",
            ok(page("ssr-app", body='<div id="app"><h2>Rendered</h2></div><script src="/static/app.js"></script>')),
            set(),
            {"javascript-rendering-suspected"},
        ),
        c(
            "root-without-script",
            ok(page("root-without-script", h1=None, words=0, links=[], body='<div id="root"></div>')),
            set(),
            {"javascript-rendering-suspected"},
        ),
        # Titles
        c("no-title", ok(page("no-title", title=None)), {"missing-title"}, {"title-too-short", "multiple-titles"}),
        c("empty-title", ok(page("empty-title", titles=["   "])), {"missing-title"}, {"title-too-short"}),
        c("two-titles", ok(page("two-titles", titles=["First title here", "Second title here"])), {"multiple-titles"}),
        c(
            "svg-title",
            ok(page("svg-title", body="<svg><title>Icon</title></svg>")),
            set(),
            {"multiple-titles", "missing-title"},
        ),
        c("title-61", ok(_with_title_chars("title-61", 61)), {"title-too-long"}),
        c("title-60", ok(_with_title_chars("title-60", 60)), set(), {"title-too-long", "title-too-short"}),
        c("title-9", ok(_with_title_chars("title-9", 9)), {"title-too-short"}),
        c("title-10", ok(_with_title_chars("title-10", 10)), set(), {"title-too-short", "title-too-long"}),
        # Meta descriptions
        c("no-description", ok(page("no-description", description=None)), {"missing-meta-description"}),
        c(
            "empty-description",
            ok(page("empty-description", head='<meta name="description" content="">', description=None)),
            {"missing-meta-description"},
            {"meta-description-too-short"},
        ),
        c(
            "blank-description",
            ok(page("blank-description", head='<meta name="description" content="  ">', description=None)),
            {"missing-meta-description"},
            {"meta-description-too-short"},
        ),
        c("desc-161", ok(_with_description_chars("desc-161", 161)), {"meta-description-too-long"}),
        c("desc-160", ok(_with_description_chars("desc-160", 160)), set(), {"meta-description-too-long"}),
        c("desc-69", ok(_with_description_chars("desc-69", 69)), {"meta-description-too-short"}),
        c("desc-70", ok(_with_description_chars("desc-70", 70)), set(), {"meta-description-too-short"}),
        # Headings
        c("no-h1", ok(page("no-h1", h1=None)), {"missing-h1"}, {"multiple-h1"}),
        c("empty-h1", ok(page("empty-h1", h1=None, body="<h1>  </h1>")), {"missing-h1"}),
        c("two-h1", ok(page("two-h1", body="<h1>Second heading</h1>")), {"multiple-h1"}, {"missing-h1"}),
        c("h1-and-empty-h1", ok(page("h1-and-empty-h1", body="<h1></h1>")), set(), {"multiple-h1", "missing-h1"}),
        c(
            "heading-skip",
            ok(page("heading-skip", body="<h2>Section</h2><h4>Too deep</h4>")),
            {"heading-order-skip"},
        ),
        c(
            "heading-order-ok",
            ok(page("heading-order-ok", body="<h2>A</h2><h3>B</h3><h2>C</h2><h3>D</h3><h1>E</h1>")),
            set(),
            {"heading-order-skip"},
        ),
        # Words
        c("thin-149", ok(page("thin-149", words=149)), {"thin-content"}),
        c("thin-150", ok(page("thin-150", words=150)), set(), {"thin-content"}),
        # Images
        c("img-no-alt", ok(page("img-no-alt", body='<img src="/static/a.png">')), {"images-missing-alt"}),
        c(
            "img-empty-alt",
            ok(page("img-empty-alt", body='<img src="/static/a.png" alt="">')),
            set(),
            {"images-missing-alt"},
        ),
        # Links
        c("no-links", ok(page("no-links", links=[])), {"no-outgoing-links"}),
        c("fragment-link-only", ok(page("fragment-link-only", links=[("#top", "Top")])), {"no-outgoing-links"}),
        c("links-251", ok(page("links-251", links=[("/", "Home page")] * 251)), {"too-many-links"}),
        c("links-250", ok(page("links-250", links=[("/", "Home page")] * 250)), set(), {"too-many-links"}),
        c("click-here", ok(page("click-here", links=[("/", "Click here!")])), {"non-descriptive-link-text"}),
        c(
            "fragment-click-here",  # same-page links are links too
            ok(page("fragment-click-here", links=[("#usage", "click here"), ("#usage", "click here"), ("/", "Home")])),
            {"non-descriptive-link-text"},
        ),
        c(
            "code-link-texts",  # an option and a function are names, not the word "link"
            ok(page("code-link-texts", links=[("/", "--link"), ("/", "link()"), ("/", "[link-check]")])),
            set(),
            {"non-descriptive-link-text"},
        ),
        c(
            "link-targets-over-cap",
            ok(page("link-targets-over-cap", links=[(f"/t/{n}", "t") for n in range(MAX_LINK_TARGETS + 1)])),
            {"too-many-link-targets", "too-many-links"},
            crawl=False,  # 50,001 URLs to queue: the unit layer is enough
        ),
        c(
            "link-targets-at-cap",
            ok(page("link-targets-at-cap", links=[(f"/t/{n}", "t") for n in range(MAX_LINK_TARGETS)])),
            {"too-many-links"},
            {"too-many-link-targets"},
            crawl=False,
        ),
        c(
            "descriptive-link",
            ok(page("descriptive-link", links=[("/", "Read more about the home page")])),
            set(),
            {"non-descriptive-link-text"},
        ),
        # Head basics
        c("no-viewport", ok(page("no-viewport", viewport=False)), {"missing-viewport"}),
        c("no-lang", ok(page("no-lang", lang=None)), {"missing-html-lang"}),
        # Security
        c(
            "mixed-https",
            ok(page("mixed-https", body='<img src="http://cdn.example.com/a.png" alt="a">')),
            {"mixed-content"},
            crawl=False,
            as_url="https",
        ),
        c(
            "mixed-http",
            ok(page("mixed-http", body='<img src="http://cdn.example.com/a.png" alt="a">')),
            set(),
            {"mixed-content"},
        ),
        c(
            "https-link-only",
            ok(page("https-link-only", body='<a href="http://example.com/">Example site</a>')),
            set(),
            {"mixed-content"},
            crawl=False,
            as_url="https",
        ),
        c("http-on-https-site", ok(page("http-on-https-site")), {"insecure-page"}, crawl=False, site_https=True),
        c("http-on-http-site", ok(page("http-on-http-site")), set(), {"insecure-page"}),
        c(
            "http-redirect-on-https-site",
            redirect("/case/clean"),
            set(),
            {"insecure-page"},
            crawl=False,
            site_https=True,
        ),
        # Head directives and data
        c(
            "meta-refresh",
            ok(page("meta-refresh", head='<meta http-equiv="refresh" content="0; url=/case/clean">')),
            {"meta-refresh-redirect"},
        ),
        c(
            "meta-refresh-reload",
            ok(page("meta-refresh-reload", head='<meta http-equiv="refresh" content="30">')),
            set(),
            {"meta-refresh-redirect"},
        ),
        c("jsonld-broken", ok(page("jsonld-broken", head=JSONLD_BROKEN)), {"invalid-structured-data"}),
        c("jsonld-ok", ok(page("jsonld-ok", head=JSONLD_OK)), set(), {"invalid-structured-data"}),
        c("large", ok(_big_page("large", 1024 * 1024 + 50_000)), {"large-html"}, {"html-too-large"}),
        # Past the 15 MiB read limit: its only link comes after the cut, which is not "no outgoing links".
        c(
            "html-over-15mb",
            ok(_big_page("html-over-15mb", MAX_HTML_BYTES + 100_000)),
            {"html-too-large"},
            {"large-html", "no-outgoing-links"},
        ),
        c("big-not-truncated", ok(_big_page("big-not-truncated", 1_000_000)), set(), {"large-html"}),
        # hreflang
        c(
            "hreflang-bad",
            ok(
                page(
                    "hreflang-bad",
                    head=f'<link rel="alternate" hreflang="en-UK" href="{base}/case/hreflang-bad">'
                    f'<link rel="alternate" hreflang="en_US" href="{base}/case/clean">',
                )
            ),
            {"hreflang-invalid"},
        ),
        c(
            "hreflang-good",
            ok(
                page(
                    "hreflang-good",
                    head="".join(
                        f'<link rel="alternate" hreflang="{code}" href="{base}/case/hreflang-good">'
                        for code in ("en-GB", "x-default", "zh-Hant-TW", "es-419", "DE")
                    ),
                )
            ),
            set(),
            {"hreflang-invalid"},
        ),
    ]
    cases += _issue_14b_cases()
    cases += _issue_14c_cases()
    long_116 = _long_path(base, "long-url-116", 116)
    long_115 = _long_path(base, "long-url-115", 115)
    cases += [
        c("long-url-116", ok(page("long-url-116")), {"long-url"}, path=long_116),
        c("long-url-115", ok(page("long-url-115")), set(), {"long-url"}, path=long_115),
    ]
    return cases


def _issue_14b_cases() -> list[Case]:
    """URL form, placeholder text, security signals and pixel widths: each planted, with a twin that must not fire."""
    ok = html_route
    c = Case
    return [
        # URLs (robots.txt disallows /private/: the tracking links are judged, never crawled)
        c("url-upper", ok(page("url-upper")), {"url-uppercase"}, path="/case/URL-Upper"),
        c("url-lower", ok(page("url-lower")), set(), {"url-uppercase"}, path="/case/url-lower"),
        c("url-under", ok(page("url-under")), {"url-underscores"}, path="/case/url_under"),
        c("url-hyphen", ok(page("url-hyphen")), set(), {"url-underscores"}, path="/case/url-hyphen"),
        c("url-double", ok(page("url-double")), {"url-multiple-slashes"}, path="/case//url-double"),
        c("url-single", ok(page("url-single")), set(), {"url-multiple-slashes"}, path="/case/url-single/"),
        c("url-cafe-accent", ok(page("url-cafe-accent")), {"url-non-ascii"}, path="/case/caf%C3%A9"),
        c("url-cafe", ok(page("url-cafe")), set(), {"url-non-ascii"}, path="/case/cafe"),
        c("url-space", ok(page("url-space")), {"url-spaces"}, path="/case/with%20space"),
        c("url-no-space", ok(page("url-no-space")), set(), {"url-spaces"}, path="/case/without-space"),
        c("url-params-4", ok(page("url-params-4")), {"url-too-many-parameters"}, path="/case/params-4?a=1&b=2&c=3&d=4"),
        c(
            "url-params-3",
            ok(page("url-params-3")),
            set(),
            {"url-too-many-parameters"},
            path="/case/params-3?a=1&b=2&c=3",
        ),
        c("url-repeat", ok(page("url-repeat")), {"url-repetitive-path"}, path="/case/shop/shop/item"),
        c("url-dated", ok(page("url-dated")), set(), {"url-repetitive-path"}, path="/case/shop/2020/01/01"),
        c(
            "tracking-link",
            ok(page("tracking-link", links=[("/", "Home page"), ("/private/offer?utm_source=news", "Our offer")])),
            {"url-tracking-parameters"},
        ),
        c(
            "plain-param-link",
            ok(page("plain-param-link", links=[("/", "Home page"), ("/private/offer?page=2", "Our offer")])),
            set(),
            {"url-tracking-parameters"},
        ),
        # Placeholder text
        c("lorem", ok(page("lorem", body="<p>Lorem ipsum dolor sit amet, consectetur.</p>")), {"lorem-ipsum"}),
        c("lorem-street", ok(page("lorem-street", body="<p>Visit us on Lorem Street.</p>")), set(), {"lorem-ipsum"}),
        c(  # a page documenting a placeholder tag: the wording is the subject of its code samples (issue 25)
            "lorem-in-code",
            ok(page("lorem-in-code", body="<p>The tag prints:</p><pre><code>Lorem ipsum dolor sit amet</code></pre>")),
            set(),
            {"lorem-ipsum"},
        ),
        # Security
        c(
            "form-to-http",
            ok(page("form-to-http", body='<form method="post" action="http://example.com/login"></form>')),
            {"form-posts-to-http"},
            crawl=False,
            as_url="https",
        ),
        c(
            "form-relative",
            ok(page("form-relative", body='<form method="post" action="/login"></form>')),
            set(),
            {"form-posts-to-http"},
            crawl=False,
            as_url="https",
        ),
        c(
            "blank-opener",
            ok(page("blank-opener", body='<a target="_blank" href="http://example.com/">Example site</a>')),
            {"target-blank-without-noopener"},
        ),
        c(
            "blank-noopener",
            ok(
                page(
                    "blank-noopener",
                    body='<a target="_blank" rel="noopener" href="http://example.com/">Example site</a>'
                    '<a target="_blank" href="/">Home in a new tab</a>',
                )
            ),
            set(),
            {"target-blank-without-noopener"},
        ),
        c(
            "protocol-relative",
            ok(page("protocol-relative", body='<img src="//cdn.example.com/a.png" alt="a">')),
            {"protocol-relative-resource"},
        ),
        c(
            "absolute-resource",
            ok(page("absolute-resource", body='<img src="https://cdn.example.com/a.png" alt="a">')),
            set(),
            {"protocol-relative-resource"},
        ),
        # Pixel widths: 35 W are 661 px (under 60 characters), 60 i are 266 px.
        c("title-wide", ok(page("title-wide", title="W" * 35)), {"title-too-wide"}, {"title-too-long"}),
        c("title-narrow", ok(page("title-narrow", title="i" * 60)), set(), {"title-too-wide", "title-too-long"}),
        c(
            "desc-wide",
            ok(page("desc-wide", description="W" * 100 + ".")),
            {"meta-description-too-wide"},
            {"meta-description-too-long"},
        ),
        c(
            "desc-narrow",
            ok(page("desc-narrow", description="i" * 159 + ".")),
            set(),
            {"meta-description-too-wide", "meta-description-too-long"},
        ),
    ]


def _jsonld(data: dict) -> str:
    return f'<script type="application/ld+json">{json.dumps({"@context": "https://schema.org", **data})}</script>'


PRODUCT_COMPLETE = {
    "@type": "Product", "name": "Kettle", "image": "https://x.test/k.png", "description": "A kettle.",
    "brand": {"@type": "Brand", "name": "Acme"}, "sku": "K1", "offers": {"@type": "Offer", "price": "20"},
}  # fmt: skip
ARTICLE_COMPLETE = {
    "@type": "BlogPosting", "headline": "News", "author": {"@type": "Person", "name": "A"}, "image": "/a.png",
    "datePublished": "2026-01-01", "dateModified": "2026-01-02",
}  # fmt: skip
MICRODATA_EVENT = '<div itemscope itemtype="https://schema.org/Event"><span itemprop="name">Concert</span>{more}</div>'
RDFA_RECIPE = '<div vocab="https://schema.org/" typeof="Recipe"><span property="name">Soup</span>{more}</div>'
LONG_ALT = "A very long description of a picture " * 3  # 111 characters once collapsed


def _issue_14c_cases() -> list[Case]:
    """Structured data (JSON-LD, microdata, RDFa) and image attributes: each planted, with a clean twin."""
    ok = html_route
    c = Case
    sd = {"structured-data-missing-required", "structured-data-missing-recommended"}
    event_more = (
        '<span itemprop="startDate">2026-05-01</span><span itemprop="location">Hall</span>'
        '<span itemprop="description">Music</span><span itemprop="endDate">2026-05-02</span>'
        '<span itemprop="image">/e.png</span><span itemprop="offers">Free</span>'
        '<span itemprop="organizer">Us</span><span itemprop="eventStatus">EventScheduled</span>'
    )
    recipe_more = (
        '<img property="image" src="/soup.png" alt="Soup" width="10" height="10"><span property="author">A</span>'
        '<span property="datePublished">2026</span><span property="description">Hot</span>'
        '<span property="recipeIngredient">Water</span><span property="recipeInstructions">Boil</span>'
        '<span property="totalTime">PT1H</span><span property="recipeYield">2</span>'
    )
    return [
        c(
            "sd-product-lacking",
            ok(page("sd-product-lacking", head=_jsonld({"@type": "Product", "description": "Only words"}))),
            sd,
        ),
        c("sd-product-complete", ok(page("sd-product-complete", head=_jsonld(PRODUCT_COMPLETE))), set(), sd),
        c(
            "sd-article-headline-only",
            ok(page("sd-article-headline-only", head=_jsonld({"@type": "NewsArticle", "headline": "News"}))),
            {"structured-data-missing-recommended"},
            {"structured-data-missing-required"},
        ),
        c("sd-article-complete", ok(page("sd-article-complete", head=_jsonld(ARTICLE_COMPLETE))), set(), sd),
        c(
            "sd-microdata-event-lacking",
            ok(page("sd-microdata-event-lacking", body=MICRODATA_EVENT.format(more=""))),
            {"structured-data-missing-required"},
        ),
        c(
            "sd-microdata-event-complete",
            ok(page("sd-microdata-event-complete", body=MICRODATA_EVENT.format(more=event_more))),
            set(),
            sd,
        ),
        c(
            "sd-rdfa-recipe-lacking",
            ok(page("sd-rdfa-recipe-lacking", body=RDFA_RECIPE.format(more=""))),
            {"structured-data-missing-required"},
        ),
        c(
            "sd-rdfa-recipe-complete",
            ok(page("sd-rdfa-recipe-complete", body=RDFA_RECIPE.format(more=recipe_more))),
            set(),
            sd,
        ),
        # Images: width/height, alt length (threshold 100 characters)
        c(
            "img-no-size",
            ok(page("img-no-size", body='<img src="/static/a.png" alt="A" width="10">')),
            {"image-missing-size"},
        ),
        c(
            "img-sized",
            ok(page("img-sized", body='<img src="/static/a.png" alt="A" width="10" height="10">')),
            set(),
            {"image-missing-size", "image-alt-too-long"},
        ),
        c(
            "img-alt-long",
            ok(page("img-alt-long", body=f'<img src="/static/b.png" alt="{LONG_ALT}" width="1" height="1">')),
            {"image-alt-too-long"},
            {"image-missing-size"},
        ),
        c(
            "img-alt-100",
            ok(page("img-alt-100", body=f'<img src="/static/b.png" alt="{"x" * 100}" width="1" height="1">')),
            set(),
            {"image-alt-too-long"},
        ),
    ]


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
SOFT_404_PATHS = ["/soft/not-found", "/soft/seite-fehlt", *(f"/soft/gone-{n}" for n in range(1, 6))]
SOFT_404_TWINS = ["/soft/article-404", *(f"/soft/four-{n}" for n in range(1, 5))]
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


def _content_routes() -> dict:
    ok = html_route

    def text_page(name: str, text: str) -> str:
        return page(name, h1="Our catalogue", words=0, body=f"<p>{text}</p>")

    routes = {
        # 400 words; /near-b differs in its last 20 (95 % the same), /near-d in its last 120 (70 %).
        "/near-a": ok(text_page("near-a", shared_text("alpha", 400))),
        "/near-b": ok(text_page("near-b", shared_text("alpha", 400, replaced_from=380))),
        "/near-c": ok(text_page("near-c", shared_text("beta", 400))),
        "/near-d": ok(text_page("near-d", shared_text("beta", 400, replaced_from=280))),
        "/soft/not-found": ok(page("soft-not-found", title="Page not found", h1="Sorry", words=30)),
        "/soft/seite-fehlt": ok(page("soft-seite-fehlt", title="Fehler", h1="Seite nicht gefunden", words=30)),
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
        "/sitemap.xml": (
            200,
            {"Content-Type": "application/xml"},
            (
                '<?xml version="1.0" encoding="UTF-8"?>'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                + "".join(f"<url><loc>{base}{p}</loc></url>" for p in SITEMAP_PATHS)
                + "</urlset>"
            ).encode(),
        ),
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
