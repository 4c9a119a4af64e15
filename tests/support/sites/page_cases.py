"""The page-check cases: for every page check a page that triggers it and a near miss that must not
(run through the unit layer in tests/audits/checks/test_page_checks.py and crawled in test_crawled_site.py)."""

from crawler.limits import MAX_HTML_BYTES
from crawler.limits import MAX_LINK_TARGETS_PER_PAGE as MAX_LINK_TARGETS
from tests.support.sites import drop_connection
from tests.support.sites.pages import Case, challenge_page, html_route, page, redirect, slow
from tests.support.sites.structured_image_cases import structured_image_cases
from tests.support.sites.url_security_cases import url_security_cases

CONTENT_TYPES = {
    "missing-title", "multiple-titles", "title-too-long", "title-too-short", "missing-meta-description",
    "meta-description-too-long", "meta-description-too-short", "missing-h1", "multiple-h1", "thin-content",
    "no-outgoing-links", "missing-viewport", "missing-html-lang",
}  # fmt: skip
SPA_BODY = '<div id="root"></div><script src="/static/app.js"></script>'
JSONLD_OK = '<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Article"}</script>'
JSONLD_BROKEN = '<script type="application/ld+json">{"@context": "https://schema.org", "@type": }</script>'
BIG_PARAGRAPH_BYTES = 100_000


JAPANESE_SENTENCE = "東京の天気は晴れで、気温は二十度です"  # 17 counted characters (the comma is not one)


def japanese_text(characters: int) -> str:
    """A paragraph of `characters` Japanese characters (punctuation not counted), no space in it."""
    counted = JAPANESE_SENTENCE.replace("、", "")
    text, n = [], 0
    while n < characters:
        part = counted[: characters - n]
        text.append(part + "。")
        n += len(part)
    return "<p>" + "".join(text) + "</p>"


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
        # Japanese, written without spaces: counted in characters (issue 27: 521 characters counted as 140 words
        # were thin). 500 characters are ~200 words: not thin; 200 characters are.
        c("thin-ja-500", ok(page("thin-ja-500", lang="ja", words=0, body=japanese_text(500))), set(), {"thin-content"}),
        c("thin-ja-200", ok(page("thin-ja-200", lang="ja", words=0, body=japanese_text(200))), {"thin-content"}),
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
        # Issue 27: an instant refresh is a redirect, not content: a bare one (no title, no text) gets no on-page
        # finding. Its twin shows its bare page for 5 seconds first: that page is content and judged.
        c(
            "meta-refresh-bare",
            ok('<html><head><meta http-equiv="refresh" content="0;URL=\'/case/clean\'"></head><body></body></html>'),
            {"meta-refresh-redirect"},
            {
                "missing-title",
                "missing-h1",
                "thin-content",
                "missing-meta-description",
                "missing-viewport",
                "missing-html-lang",
                "no-outgoing-links",
            },
        ),  # fmt: skip
        c(
            "meta-refresh-slow",
            ok('<html><head><meta http-equiv="refresh" content="5; url=/case/clean"></head><body></body></html>'),
            {"meta-refresh-redirect", "missing-title", "thin-content"},
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
    cases += url_security_cases()
    cases += structured_image_cases()
    long_116 = _long_path(base, "long-url-116", 116)
    long_115 = _long_path(base, "long-url-115", 115)
    cases += [
        c("long-url-116", ok(page("long-url-116")), {"long-url"}, path=long_116),
        c("long-url-115", ok(page("long-url-115")), set(), {"long-url"}, path=long_115),
    ]
    return cases
