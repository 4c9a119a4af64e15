"""The fonts a stylesheet's @font-face rules load (crawler.parse.css), for the resource pass."""

from crawler.parse.css import FONT_URLS_PER_STYLESHEET_MAX, stylesheet_font_urls, stylesheet_text

CSS_URL = "https://cdn.example.net/theme/css/site.css"


def test_font_face_sources_resolve_against_the_stylesheet():
    css = """
    /* @font-face { src: url(commented-out.woff2); } */
    @font-face {
      font-family: "Lato";
      src: url("../fonts/lato.woff2") format("woff2"), url('../fonts/lato.woff') format('woff'),
           url(/abs/lato.ttf) format("truetype");
      font-display: swap;
    }
    @FONT-FACE{font-family:Icons;src:url(data:font/woff2;base64,d09GMgAB) format("woff2"),url(icons.woff)}
    @font-face { font-family: Same; src: url(../fonts/lato.woff2#iefix); }
    """
    assert stylesheet_font_urls(css, CSS_URL) == [
        "https://cdn.example.net/theme/fonts/lato.woff2",
        "https://cdn.example.net/theme/fonts/lato.woff",
        "https://cdn.example.net/abs/lato.ttf",
        "https://cdn.example.net/theme/css/icons.woff",  # after a data: font whose ";" is inside the url()
    ]


def test_other_urls_of_a_stylesheet_are_not_fonts():
    """The clean twin: backgrounds, @import and images are not read; nor is a font-face without src."""
    css = """
    @import url("other.css");
    body { background: url(/img/bg.png); font-family: Lato, sans-serif; }
    .logo::before { content: url(logo.svg); }
    @font-face { font-family: Local; src: local("Lato"); }
    @font-face { font-family: Nothing; }
    """
    assert stylesheet_font_urls(css, CSS_URL) == []


def test_fonts_are_bounded_per_stylesheet():
    css = "".join(f"@font-face{{src:url(f{n}.woff2)}}" for n in range(FONT_URLS_PER_STYLESHEET_MAX + 10))
    assert len(stylesheet_font_urls(css, CSS_URL)) == FONT_URLS_PER_STYLESHEET_MAX


def test_stylesheet_text_takes_the_header_charset_then_the_charset_rule():
    latin = '@charset "iso-8859-1";\n/* caf\xe9 */'.encode("latin-1")
    assert "café" in stylesheet_text(latin, None)
    assert "café" in stylesheet_text("/* café */".encode(), "utf-8")
    assert stylesheet_text(b"\xef\xbb\xbfa{}", "no-such-charset") == "a{}"


def test_a_hostile_rule_is_read_in_one_pass():
    """Many src descriptors without a ";" between them: each character is scanned once, not once per src."""
    css = "@font-face{" + "src:" * 200_000 + "url(last.woff2)}"
    assert stylesheet_font_urls(css, CSS_URL) == ["https://cdn.example.net/theme/css/last.woff2"]


def test_unclosed_rules_are_read_in_one_pass():
    css = "@font-face{src:url(a.woff2)" + "@font-face{" * 200_000
    assert stylesheet_font_urls(css, CSS_URL) == ["https://cdn.example.net/theme/css/a.woff2"]
