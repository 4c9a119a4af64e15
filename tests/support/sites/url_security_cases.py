"""Page cases of issue 14b: URL form, placeholder text, security signals and pixel widths."""

from tests.support.sites.pages import Case, html_route, page


def url_security_cases() -> list[Case]:
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
