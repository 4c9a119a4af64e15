import hashlib
import random

import pytest

from crawler import limits
from crawler.parse import PageData, parse_html, parse_link_header

URL = "https://example.com/dir/page"


def page(body_html: str, head: str = "", url: str = URL, **kwargs) -> PageData:
    html = f"<!doctype html><html><head>{head}</head><body>{body_html}</body></html>"
    return parse_html(html.encode("utf-8"), url, **kwargs)


XHTML = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="de" lang="de">
<head><title>Caf\xc3\xa9 XHTML</title><link rel="canonical" href="https://example.com/x"/></head>
<body><h1>Hallo</h1><p><a href="/one">One</a><br/><a href="two.html">Two</a></p></body>
</html>"""


def test_xhtml_with_xml_declaration_and_namespace():
    p = parse_html(XHTML, URL)
    assert p.titles == ["Café XHTML"]
    assert [link.url for link in p.links] == ["https://example.com/one", "https://example.com/dir/two.html"]
    assert p.headings == [(1, "Hallo")]
    assert p.html_lang == "de"
    assert p.canonical_url == "https://example.com/x"
    assert p.encoding == "utf-8"


def test_xml_declaration_naming_another_encoding():
    body = XHTML.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"').replace(b"Caf\xc3\xa9", b"Caf\xe9")
    p = parse_html(body, URL)
    assert p.titles == ["Café XHTML"]
    assert len(p.links) == 2


def test_charset_from_meta_when_header_has_none():
    body = '<html><head><meta charset="windows-1251"><title>Привет мир</title></head><body>тест</body></html>'
    p = parse_html(body.encode("cp1251"), URL)
    assert p.titles == ["Привет мир"]
    assert p.encoding == "cp1251"


def test_charset_from_http_equiv_meta():
    body = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        "<title>Caf\u00e9</title></head></html>"
    )
    assert parse_html(body.encode("latin-1"), URL).titles == ["Café"]


def test_header_charset_wins_over_meta():
    body = '<html><head><meta charset="utf-8"><title>Caf\u00e9</title></head></html>'
    p = parse_html(body.encode("latin-1"), URL, content_type_charset="iso-8859-1")
    assert p.titles == ["Café"]


def test_bom_wins_over_a_wrong_header():
    body = "\ufeff<html><head><title>Caf\u00e9</title></head></html>".encode()
    p = parse_html(body, URL, content_type_charset="iso-8859-1")
    assert p.titles == ["Café"]
    assert p.encoding == "utf-8"


def test_lying_header_is_tolerated():
    # Served as UTF-8, written in windows-1251: garbled text, but links and structure still come through.
    body = '<html><head><title>Привет</title></head><body><a href="/x">ссылка</a></body></html>'
    p = parse_html(body.encode("cp1251"), URL, content_type_charset="utf-8")
    assert p.encoding == "utf-8"
    assert "\ufffd" in p.titles[0]
    assert [link.url for link in p.links] == ["https://example.com/x"]


def test_unknown_header_charset_falls_back_to_meta():
    body = '<html><head><meta charset="windows-1251"><title>Привет</title></head></html>'
    assert parse_html(body.encode("cp1251"), URL, content_type_charset="no-such-charset").titles == ["Привет"]


def test_malformed_markup():
    body = b"""<html><head><title>Broken</title><body><div><p>text <b>bold <i>both</b> after</i>
    <a href=/unquoted>unquoted</a><a href='/single' class=x>single</div></div></div>
    <table><tr><td><a href="/in-table">cell</td></table><p>unclosed <a href="/last">last"""
    p = parse_html(body, URL)
    assert p.titles == ["Broken"]
    urls = [link.url for link in p.links]
    assert urls[:2] == ["https://example.com/unquoted", "https://example.com/single"]
    assert "https://example.com/in-table" in urls and "https://example.com/last" in urls


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   \n  ",
        b"\x00\x00\x00",
        bytes(random.Random(42).getrandbits(8) for _ in range(50_000)),
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 100,
        b"<" * 10_000,
        b"<html>" + b"<div>" * 5000 + b"deep",  # deep nesting
        b'<?xml version="1.0" encoding="UTF-8"?>',
    ],
    ids=["empty", "blank", "nul", "random", "png", "angles", "deep", "only-xml-decl"],
)
def test_junk_never_raises(body):
    p = parse_html(body, URL)
    assert isinstance(p, PageData)
    assert p.links == [] and p.titles == []


def test_binary_junk_with_a_link_inside_still_parses():
    junk = bytes(random.Random(7).getrandbits(8) for _ in range(2000)).replace(b"<", b"").replace(b">", b"")
    p = parse_html(junk + b'<a href="/found">x</a>' + junk, URL)
    assert [link.url for link in p.links] == ["https://example.com/found"]


def test_titles_ignore_svg_title_and_count_duplicates():
    p = page("<svg><title>icon</title></svg><p>x</p>", head="<title>  First \n title </title><title>Second</title>")
    assert p.titles == ["First title", "Second"]
    assert page("<p>no title</p>").titles == []
    assert page("", head="<title></title>").titles == [""]


def test_base_href_resolves_links():
    p = page('<a href="x">x</a><a href="/root">r</a>', head='<base href="https://cdn.example.com/sub/">')
    assert p.base_url == "https://cdn.example.com/sub/"
    assert [link.url for link in p.links] == ["https://cdn.example.com/sub/x", "https://cdn.example.com/root"]


def test_links_skip_non_crawlable_and_fold_duplicates_into_one_target():
    p = page(
        '<a href="#top">t</a><a href="">e</a><a href="javascript:void(0)">j</a><a href="mailto:a@b.c">m</a>'
        '<a href="tel:123">t</a><a>no href</a><a href="/a#frag">A</a><a href="/a">A again</a>'
        '<map><area href="/area" alt="Area"></map><a href="HTTP://EXAMPLE.com:80/b?z=1&amp;a=2">B</a>'
    )
    assert [(link.url, link.tag, link.count, link.anchor) for link in p.links] == [
        ("https://example.com/a", "a", 2, "A"),
        ("https://example.com/area", "area", 1, "Area"),
        ("http://example.com/b?a=2&z=1", "a", 1, "B"),
    ]
    assert p.links_total == 4
    # http://example.com is another origin than https://example.com, but the same host: internal by default.
    assert (p.internal_links_total, p.external_links_total) == (4, 0)


def test_link_counts_follow_is_internal_and_a_target_is_nofollow_only_when_all_its_links_are():
    p = page(
        '<a href="/x" rel="nofollow">x1</a><a href="/x">x2</a><a href="/y" rel="nofollow">y</a>'
        '<a href="/y" rel="nofollow ugc">y</a><a href="/z"></a><a href="/z">Zed</a><a href="https://other.test/">o</a>',
        is_internal=lambda url: url.startswith("https://example.com/"),
    )
    by_url = {link.url: link for link in p.links}
    assert not by_url["https://example.com/x"].nofollow and by_url["https://example.com/y"].nofollow
    assert by_url["https://example.com/z"].anchor == "Zed"  # the first non-empty text
    assert not by_url["https://other.test/"].internal
    assert (p.links_total, p.internal_links_total, p.external_links_total) == (7, 6, 1)


def test_same_page_fragment_links_feed_the_link_texts_only():
    p = page('<a href="#usage">click here</a><a href="/a">click here</a><a href="#">Top</a>')
    assert [link.url for link in p.links] == ["https://example.com/a"] and p.links_total == 1
    assert p.anchor_texts["click here"].count == 2
    assert p.anchor_texts["click here"].href == URL + "#usage"
    assert p.anchor_texts["Top"].href == URL + "#"


def test_anchor_text():
    long_text = "word " * 100
    p = page(
        '<a href="/1">  Click\n <b>here</b>  </a><a href="/2"><img src="i.png" alt=" Logo  alt "></a>'
        f'<a href="/3"><img src="i.png"></a><a href="/4">{long_text}</a>'
    )
    anchors = [link.anchor for link in p.links]
    assert anchors[:3] == ["Click here", "Logo alt", ""]
    assert len(anchors[3]) == limits.MAX_ANCHOR_TEXT_CHARS


def test_nofollow_from_rel_and_from_meta_robots():
    p = page('<a href="/a" rel="external NoFollow">a</a><a href="/b" rel="noopener">b</a>')
    assert [link.nofollow for link in p.links] == [True, False]
    meta = page('<a href="/a">a</a>', head='<meta name="robots" content="index, NOFOLLOW">')
    assert meta.links[0].nofollow
    none = page('<a href="/a">a</a>', head='<meta name="robots" content="none">')
    assert none.links[0].nofollow


def test_every_link_counts_whatever_its_position():
    # 4,000 links to 10 targets and one more target at position 3,000: nothing depends on where a link sits.
    links = [f'<a href="/p{i % 10}">p{i % 10}</a>' for i in range(4_000)]
    links[3_000] = '<a href="/broken">late</a>'
    p = page("".join(links) + '<a href="mailto:x@y.z">m</a><a href="#x">f</a>')
    assert p.links_total == 4_000 and p.internal_links_total == 4_000 and p.links_not_stored == 0
    counts = {link.url.rsplit("/", 1)[1]: link.count for link in p.links}
    assert counts["broken"] == 1 and sum(counts.values()) == 4_000 and len(counts) == 11


def test_distinct_targets_are_capped_and_the_rest_still_counted(monkeypatch):
    monkeypatch.setattr(limits, "MAX_LINK_TARGETS_PER_PAGE", 1_000)
    links = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(10_000)) + '<a href="/p5">again</a>'
    p = page(links + '<a href="https://other.test/">o</a><a href="mailto:x@y.z">m</a>')
    assert len(p.links) == 1_000 and p.links[-1].url == "https://example.com/p999"
    assert p.links[5].count == 2  # a stored target keeps counting after the cap
    assert p.links_total == 10_002 and p.links_not_stored == 9_001
    assert (p.internal_links_total, p.external_links_total) == (10_001, 1)


def test_a_page_of_100000_links_keeps_memory_bounded():
    import tracemalloc  # why: local, only this test traces allocations

    body = "".join(f'<a href="/p{i % 200}">p{i % 200}</a>' for i in range(100_000)).encode()
    html = b"<!doctype html><html><body>" + body + b"</body></html>"
    tracemalloc.start()
    try:
        p = parse_html(html, URL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert p.links_total == 100_000 and len(p.links) == 200
    # Python objects only (libxml2's tree is not traced): 200 targets and their counts, not 100,000 links.
    assert peak < 10 * len(html)


def test_a_big_page_is_parsed_whole_in_steps():
    filler = "<p>" + "word " * 220_000 + "</p>"  # 1.1 MB of text: four feed steps in all
    html = f"<html><head><title>Big</title></head><body>{filler * 3}<a href='/last'>Last</a></body></html>"
    p = parse_html(html.encode(), URL)
    assert len(html) > 3 * limits.PARSE_FEED_BYTES
    assert p.titles == ["Big"] and [link.url for link in p.links] == ["https://example.com/last"]
    assert p.word_count == 660_001
    expected = hashlib.sha1(" ".join(["word"] * 660_000 + ["last"]).encode()).hexdigest()  # noqa: S324
    assert p.text_hash == expected


def test_multibyte_characters_split_across_feed_steps_decode_whole(monkeypatch):
    monkeypatch.setattr(limits, "PARSE_FEED_BYTES", 7)  # every few bytes: splits the 2- and 3-byte characters
    p = parse_html("<title>Café – naïve</title><p>Grüße aus Köln</p>".encode(), URL)
    assert p.titles == ["Café – naïve"] and p.word_count == 3
    latin = parse_html("<title>Caf\xe9</title>".encode("latin-1"), URL, content_type_charset="iso-8859-1")
    assert latin.titles == ["Café"]


def test_meta_tags():
    p = page(
        "",
        head=(
            '<meta name="Description" content="  A  description  ">'
            '<meta name="description" content="second">'
            '<meta name="ROBOTS" content="NoIndex"><meta name="googlebot" content="nosnippet">'
            '<meta name="viewport" content="width=device-width">'
            '<meta property="og:title" content="OG title"><meta property="og:image" content="/i.png">'
            '<meta http-equiv="Refresh" content="5; URL=\'/next?b=1&amp;a=2\'">'
        ),
    )
    assert p.meta_description == "A description"
    assert p.meta_descriptions_count == 2
    assert p.meta_robots == "noindex, nosnippet"
    assert p.has_viewport
    assert p.og == {"og:title": "OG title", "og:image": "/i.png"}
    assert p.meta_refresh_url == "https://example.com/next?a=2&b=1"


def test_meta_absent_and_empty():
    p = page("<p>x</p>")
    assert p.meta_description is None and p.meta_descriptions_count == 0
    assert p.meta_robots == "" and not p.has_viewport and p.meta_refresh_url is None
    assert p.html_lang is None
    empty = page("", head='<meta name="description" content=""><meta http-equiv="refresh" content="30">')
    assert empty.meta_description == ""
    assert empty.meta_refresh_url is None  # a plain reload is not a redirect


def test_canonicals():
    p = page(
        "",
        head='<link rel="Canonical" href="../other?b=1&amp;a=1"><link rel="alternate canonical" href="/second">'
        '<link rel="stylesheet" href="/s.css">',
    )
    assert p.canonicals == ["../other?b=1&a=1", "/second"]
    assert p.canonical_url == "https://example.com/other?a=1&b=1"
    assert page("").canonical_url is None


def test_hreflang():
    p = page(
        "",
        head='<link rel="alternate" hreflang="de-AT" href="/at/"><link rel="alternate" hreflang="x-default" '
        'href="https://example.com/"><link rel="alternate" href="/feed" type="application/rss+xml">',
    )
    assert p.hreflang == [("de-AT", "https://example.com/at/"), ("x-default", "https://example.com/")]


def test_headings_text_and_hash():
    body = (
        "<h1>Title <small>sub</small></h1><h2>Part</h2><h4>Deep</h4>"
        "<p>One two<b>three</b></p><p>four</p><script>var hidden = 1;</script><style>p{}</style>"
        "<noscript>enable js</noscript><template><p>tpl</p></template><svg><text>svg</text></svg>"
    )
    p = page(body, head="<title>not body text</title>")
    assert p.headings == [(1, "Title sub"), (2, "Part"), (4, "Deep")]
    words = "Title sub Part Deep One twothree four"
    assert p.word_count == len(words.split())
    assert p.text_hash == hashlib.sha1(words.lower().encode()).hexdigest()
    # Same visible text in other markup and case: same hash (duplicate-content).
    other = page("<div>TITLE   sub</div><span>Part</span> <em>deep</em>\n one <i>two</i><i>three</i> FOUR")
    assert other.text_hash == p.text_hash
    assert page("").text_hash == "" and page("").word_count == 0


def test_images():
    p = page('<img src="/a.png" alt="A"><img src="b.png" alt=""><img src="/c.png"><img>')
    assert p.images_total == 4
    assert p.images_missing_alt == 2
    assert p.images_missing_alt_srcs == ["https://example.com/c.png", ""]


def test_images_capped():
    p = page('<img src="/x.png">' * (limits.MAX_IMAGES_PER_PAGE + 50))
    assert p.images_total == limits.MAX_IMAGES_PER_PAGE + 50
    assert p.images_missing_alt == limits.MAX_IMAGES_PER_PAGE
    assert len(p.images_missing_alt_srcs) == limits.MAX_LISTED_RESOURCES_PER_PAGE


def test_jsonld_and_microdata():
    head = (
        '<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Organization"}</script>'
        '<script type="application/ld+json">[{"@type": ["WebPage", "Thing"]}, {"@type": "Organization"}]</script>'
        '<script type="application/ld+json">{"@graph": [{"@type": "BreadcrumbList"}, {"@type": "Article"}]}</script>'
        '<script type="application/ld+json">{"@type": "Product", "name": "trailing comma",}</script>'
        '<script type="application/ld+json"></script>'
    )
    p = page('<div itemscope itemtype="https://schema.org/Recipe"><span itemscope itemtype="x/Inner"></span></div>',
             head=head)  # fmt: skip
    assert p.jsonld_blocks == 5
    assert p.jsonld_invalid == 2
    assert p.structured_data_types == ["Organization", "WebPage", "Thing", "BreadcrumbList", "Article", "Recipe"]


def test_scripts_total_counts_executable_scripts_only():
    p = page(
        '<script>1</script><script type="text/javascript">2</script><script type="module" src="/m.js"></script>'
        '<script type="application/ld+json">{}</script><script type="text/template"><p></p></script>'
        '<script type="text/x-handlebars-template"></script>'
    )
    assert p.scripts_total == 3


def test_insecure_resources_on_https_pages():
    body = (
        '<script src="http://cdn.test/a.js"></script><script src="https://cdn.test/ok.js"></script>'
        '<img src="http://img.test/i.png"><iframe src="http://frame.test/"></iframe>'
        '<video><source src="http://media.test/v.mp4"></video><a href="http://plain.test/">link is fine</a>'
    )
    head = '<link rel="stylesheet" href="http://cdn.test/s.css"><link rel="icon" href="http://cdn.test/f.ico">'
    p = page(body, head=head)
    assert p.insecure_resources == [
        "http://cdn.test/s.css",
        "http://cdn.test/a.js",
        "http://img.test/i.png",
        "http://frame.test/",
        "http://media.test/v.mp4",
    ]
    assert page(body, head=head, url="http://example.com/").insecure_resources == []


def test_app_root():
    assert page('<div id="root"></div><script src="/app.js"></script>').app_root
    assert page('<div id="__next"><div class="spinner"></div></div>').app_root
    assert page('<div data-reactroot=""></div>').app_root
    assert not page('<div id="root"><h1>Server rendered</h1></div>').app_root
    assert not page("<div id='main'></div>").app_root
    assert page('<div ng-app="shop">  </div>').app_root
    assert not page('<div id=" root"></div><div id="ROOT"></div>').app_root  # the id exactly, as written


def test_html_lang():
    assert parse_html(b'<html lang=" en-GB "><body>x</body></html>', URL).html_lang == "en-GB"
    assert parse_html(b'<html lang=""><body>x</body></html>', URL).html_lang == ""


def test_parse_link_header():
    assert parse_link_header(
        ['<https://x.test/a>; rel="canonical", <https://x.test/b>; rel="alternate"; hreflang=de', "</c>; REL=Canonical"]
    ) == [("https://x.test/a", "canonical"), ("https://x.test/b", "alternate"), ("/c", "canonical")]
    assert parse_link_header(['<https://x.test/p>; rel="preload next"']) == [
        ("https://x.test/p", "preload"),
        ("https://x.test/p", "next"),
    ]
    assert parse_link_header(["garbage", ""]) == []
    assert parse_link_header(['<https://x.test/a,b>; title="a, b"; rel=canonical']) == [
        ("https://x.test/a,b", "canonical")
    ]


def test_relative_resources_under_an_http_base_are_insecure():
    p = page('<img src="/x.png"><script src="//cdn.test/a.js"></script>', head='<base href="http://example.com/">')
    assert p.insecure_resources == ["http://example.com/x.png", "http://cdn.test/a.js"]


# --- issue 14b: main text, placeholder text, security signals -----------------------------------------


def test_main_text_leaves_out_navigation_header_footer_and_aside():
    p = page(
        "<header>Site name</header><nav>Home About</nav><h1>Title</h1><p>Body <b>text</b> here</p>"
        '<aside>Related</aside><div role="navigation">Menu</div><footer>Copyright</footer>'
    )
    assert p.main_words == ["title", "body", "text", "here"] and p.main_word_count == 4
    assert p.main_text_hash == hashlib.sha1(b"title body text here").hexdigest()
    assert p.word_count > p.main_word_count  # the visible text still counts everything
    # With a <main>, only its text counts (a header inside an article stays).
    m = page("<nav>Menu</nav><main><article><header>Article head</header>Words</article></main><p>Outside</p>")
    assert m.main_words == ["article", "head", "words"]
    # The same main text under another template: the same fingerprint.
    other = page("<nav>Other menu entirely</nav><h1>Title</h1><p>Body text here</p><footer>Else</footer>")
    assert other.main_text_hash == p.main_text_hash


def test_main_words_kept_are_capped_and_lorem_ipsum_is_noticed():
    many = page("<p>" + " ".join(f"w{i}" for i in range(limits.MAX_MAIN_WORDS_KEPT + 10)) + "</p>")
    assert len(many.main_words) == limits.MAX_MAIN_WORDS_KEPT
    assert many.main_word_count == limits.MAX_MAIN_WORDS_KEPT + 10
    assert page("<p>Text. <span>Lorem</span>   Ipsum dolor sit amet</p>").lorem_ipsum
    assert not page("<p>We live on Lorem Street; ipsum is Latin.</p>").lorem_ipsum


def test_lorem_ipsum_and_short_prose_leave_code_samples_out():
    shown = page("<p>Intro.</p><pre><code>lorem ipsum</code></pre><p>Then <b>Lorem</b>  Ipsum here.</p>")
    assert shown.lorem_ipsum and shown.lorem_excerpt == "Intro. Then Lorem Ipsum here."
    documented = page("<p>The tag prints <code>lorem ipsum</code>.</p><pre>{% lorem %}</pre>")
    assert not documented.lorem_ipsum and documented.lorem_excerpt == ""
    assert documented.short_main_prose == "The tag prints ."
    assert documented.main_words == ["the", "tag", "prints", "lorem", "ipsum.", "{%", "lorem", "%}"]
    # Inside <main>, and the boilerplate left out when there is none.
    assert page("<nav>Not found</nav><main><p>Hi <kbd>x</kbd> there</p></main>").short_main_prose == "Hi there"
    assert page("<nav>Menu</nav><p>Body <samp>out</samp> text</p><footer>F</footer>").short_main_prose == "Body text"
    long = page("<p>" + " ".join(["w"] * (limits.SHORT_MAIN_TEXT_WORDS_MAX + 1)) + "</p>")
    assert long.short_main_prose == ""


def test_security_signals():
    body = (
        '<form action="http://other.test/login"></form><form action="/search"></form><form></form>'
        '<img src="//cdn.test/a.png"><script src="//cdn.test/a.js"></script>'
        '<link rel="stylesheet" href="//cdn.test/a.css">'
        '<link rel="alternate" href="//cdn.test/feed">'
        '<a target="_blank" href="https://other.test/x">x</a><a target="_blank" rel="noopener" href="https://other.test/">y</a>'
        '<a target="_BLANK" rel="noreferrer" href="https://other.test/z">z</a><a target="_blank" href="/same">same</a>'
    )
    https = page(body, url="https://site.test/p")
    assert https.form_http_actions == ["http://other.test/login"]
    assert https.protocol_relative_resources == ["//cdn.test/a.png", "//cdn.test/a.js", "//cdn.test/a.css"]
    assert https.blank_without_noopener == ["https://other.test/x"] and https.blank_without_noopener_total == 1
    # On an http page every form posts to http: the check decides when that matters (https page or site).
    http = page(body, url="http://site.test/p")
    assert http.form_http_actions == ["http://other.test/login", "http://site.test/search", "http://site.test/p"]


# --- issue 15: one walk for the visible and main text, words split a step at a time, cheaper anchor text -------


def test_first_non_empty_anchor_of_a_target_from_nested_markup_image_alt_or_area():
    p = page(
        '<a href="/a"><img src="i.png"></a><a href="/a"> <span>First <b>real</b></span>\n text </a>'
        '<a href="/a">Later text</a>'
        '<a href="/b"><span><img src="x.png" alt=""><img src="y.png" alt=" Second  alt "></span></a>'
        '<a href="/c">  </a><a href="/c"><em>Only</em>&nbsp;&nbsp;then</a>'
        '<map><area href="/d" alt=" Map  area "></map>'
    )
    anchors = {link.url.rsplit("/", 1)[1]: link.anchor for link in p.links}
    assert anchors == {"a": "First real text", "b": "Second alt", "c": "Only then", "d": "Map area"}
    # Every link's text still counts for the link-text check, the empty ones excepted.
    assert {text: use.count for text, use in p.anchor_texts.items()} == {
        "First real text": 1, "Later text": 1, "Second alt": 1, "Only then": 1, "Map area": 1,
    }  # fmt: skip


def test_invisible_elements_are_skipped_but_their_tails_join_the_words_around_them():
    p = page("<p>in<script>var x;</script>side <style>p{}</style>out</p><template><p>tpl</p></template>")
    assert p.word_count == 2  # "inside out": a script between two halves of a word leaves one word
    assert p.text_hash == hashlib.sha1(b"inside out").hexdigest()
    assert p.main_words == ["inside", "out"]


def test_main_text_of_several_main_elements_and_of_rare_markup():
    two = page("<main>One <b>two</b></main>between<main>three</main><footer>foot</footer>")
    assert two.main_words == ["one", "two", "three"]
    assert two.word_count == 5
    # A <main> inside a [role=main]: both are main elements and both are walked, as they always were.
    nested = page('<div role="main">r1 <main>m1</main> r2</div>out')
    assert nested.main_words == ["r1", "m1", "r2", "m1"]
    # A <main> inside a <template> is not visible text, but it is the page's main text.
    hidden = page("<template><main>kept words</main></template><p>shown</p>")
    assert hidden.main_words == ["kept", "words"] and hidden.word_count == 1
    # No main element and the page itself marked as navigation: no main text at all.
    all_nav = parse_html(b'<html role="navigation"><body><p>menu only</p></body></html>', URL)
    assert all_nav.main_word_count == 0 and all_nav.word_count == 2


@pytest.mark.parametrize("step_chars", [1, 7, 64, limits.TEXT_STEP_CHARS])
def test_words_split_a_step_at_a_time_are_the_words_of_the_whole_text(monkeypatch, step_chars):
    monkeypatch.setattr(limits, "TEXT_STEP_CHARS", step_chars)
    rng = random.Random(5)
    vocabulary = ["Alpha", "beta", "ΟΔΟΣ", "İstanbul", "x", "lorem", "ipsum", "naïve"]
    words = [rng.choice(vocabulary) for _ in range(3000)]
    # Words cut into pieces by inline markup, blocks between others: the stream must see the same words.
    body = "".join(f"<p>{w}</p>" if i % 3 == 0 else f"<b>{w[:1]}</b><i>{w[1:]}</i> " for i, w in enumerate(words))
    p = page(body + "<p>lorem</p><p>ipsum</p>")
    expected = [w.lower() for w in words] + ["lorem", "ipsum"]
    assert p.word_count == p.main_word_count == len(expected)
    assert p.text_hash == p.main_text_hash == hashlib.sha1(" ".join(expected).encode()).hexdigest()
    assert p.main_words == expected
    assert p.lorem_ipsum


def test_a_word_longer_than_a_step_stays_one_word(monkeypatch):
    monkeypatch.setattr(limits, "TEXT_STEP_CHARS", 16)
    long_word = "".join(f"<span>{'x' * 10}</span>" for _ in range(2000))  # 20,000 characters, no whitespace
    p = page(f"<p>before {long_word} after</p>")
    assert p.word_count == 3
    assert p.main_words == ["before", "x" * 20_000, "after"]


def test_a_page_of_many_main_elements_walked_twice_gives_the_same_words(monkeypatch):
    body = "".join(f"<main>m{i} <b>x</b>y</main>t{i} <nav>n</nav>" for i in range(5))
    one_walk = page(body)
    monkeypatch.setattr(limits, "MAIN_ELEMENTS_ONE_WALK_MAX", 1)
    two_walks = page(body)
    assert one_walk.main_words == two_walks.main_words == [w for i in range(5) for w in (f"m{i}", "xy")]
    assert (one_walk.main_text_hash, one_walk.text_hash) == (two_walks.main_text_hash, two_walks.text_hash)


def test_lorem_ipsum_past_the_prose_scanned_is_not_reported(monkeypatch):
    monkeypatch.setattr(limits, "PROSE_SCAN_CHARS_MAX", 1000)
    assert page("<p>" + "word " * 100 + "lorem ipsum</p>").lorem_excerpt  # within the first 1,000 characters
    assert not page("<p>word word</p>" * 300 + "<p>lorem ipsum</p>").lorem_ipsum


# --- issue 27: word counts for text written without spaces ------------------------------------------------


@pytest.mark.parametrize(
    "body, unit, count",
    [
        ("<p>" + "東京の天気は晴れです。" * 50 + "</p><p>Tokyo</p>", "characters", 501),
        ("<p>" + "我们的网站很快。" * 30 + "</p>", "characters", 210),
        ("<p>" + "한국어는 띄어쓰기를 합니다. " * 20 + "</p>", "", 60),  # Korean: words, as split() finds them
        ("<p>日本 Tokyo Osaka Kyoto Nara</p>", "", 5),  # a few CJK characters in English text: still words
    ],
)
def test_text_without_spaces_is_counted_in_characters(body, unit, count):
    data = parse_html(f"<html><body>{body}</body></html>".encode(), "http://x.test/")
    assert (data.word_unit, data.word_count, data.main_word_count) == (unit, count, count)
