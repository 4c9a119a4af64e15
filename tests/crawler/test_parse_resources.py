"""The resources a page loads (PageData.resource_urls): scripts, stylesheets, icons and preloads, for the resource
pass of finalize (audits.pipeline.resources)."""

from crawler import limits
from crawler.parse import parse_html

URL = "https://example.com/dir/page"


def _resources(head: str, body: str = "", url: str = URL) -> list[tuple[str, str]]:
    html = f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"
    return parse_html(html.encode("utf-8"), url).resource_urls


def test_scripts_stylesheets_icons_and_preloads_resolved_in_document_order():
    head = (
        '<link rel="stylesheet" href="/css/site.css">'
        '<link rel="shortcut icon" href="favicon.ico">'
        '<link rel="apple-touch-icon" href="/touch.png">'
        '<link rel="mask-icon" href="/mask.svg" color="#000">'
        '<link rel="preload" href="/fonts/a.woff2" as="font" crossorigin>'
        '<link rel="preload" href="/js/early.js" as="script">'
        '<link rel="preload" href="/css/early.css" as="style">'
        '<link rel="modulepreload" href="/js/mod.js">'
        '<script src="https://cdn.example.net/mathjax/tex-chtml.js#frag" async></script>'
    )
    body = '<script type="module" src="../app.js"></script>'
    assert _resources(head, body) == [
        ("stylesheet", "https://example.com/css/site.css"),
        ("icon", "https://example.com/dir/favicon.ico"),
        ("icon", "https://example.com/touch.png"),
        ("icon", "https://example.com/mask.svg"),
        ("font", "https://example.com/fonts/a.woff2"),
        ("script", "https://example.com/js/early.js"),
        ("stylesheet", "https://example.com/css/early.css"),
        ("script", "https://example.com/js/mod.js"),
        ("script", "https://cdn.example.net/mathjax/tex-chtml.js"),  # another host counts; no fragment
        ("script", "https://example.com/app.js"),
    ]


def test_what_loads_nothing_is_not_a_resource():
    """The clean twin: links that load nothing, inline scripts, data: URIs, non-JavaScript script types,
    preloads of images, non-http schemes."""
    head = (
        '<link rel="canonical" href="/canonical">'
        '<link rel="alternate" hreflang="de" href="/de/">'
        '<link rel="next" href="/page/2">'
        '<link rel="preconnect" href="https://cdn.example.net">'
        '<link rel="preload" href="/hero.jpg" as="image">'
        '<link rel="icon" href="data:image/png;base64,iVBORw0KGgo=">'
        '<link rel="stylesheet" href="">'
        "<script>var inline = 1;</script>"
        '<script type="application/ld+json">{"@type": "Thing"}</script>'
        '<script type="text/template" src="/tpl.html"></script>'
        '<script src="javascript:void(0)"></script>'
    )
    assert _resources(head, '<img src="/photo.png" alt="">') == []


def test_one_entry_per_url_and_a_base_href_resolves_them():
    head = (
        '<base href="https://static.example.org/v2/">'
        '<script src="app.js"></script><script src="app.js" defer></script>'
        '<link rel="preload" href="app.js" as="script">'
    )
    assert _resources(head) == [("script", "https://static.example.org/v2/app.js")]


def test_resources_are_bounded_per_page():
    head = "".join(f'<script src="/js/{n}.js"></script>' for n in range(limits.MAX_RESOURCE_URLS_PER_PAGE + 50))
    found = _resources(head)
    assert len(found) == limits.MAX_RESOURCE_URLS_PER_PAGE
    assert found[0] == ("script", "https://example.com/js/0.js")
