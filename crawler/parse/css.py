"""A stylesheet's text -> the web fonts its @font-face rules load (the resource pass reads them,
audits.pipeline.resources). Nothing else of the CSS is read: not @import, not background images."""

import codecs
import re

from crawler.urls import normalize

FONT_URLS_PER_STYLESHEET_MAX = 50  # distinct font URLs kept from one stylesheet

_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.DOTALL)
# The body of an @font-face rule: descriptors only, no nested blocks, so it ends at the first "}" (or the text's end:
# an unclosed rule matches to the end once, instead of each later "@font-face{" scanning to the end again).
_FONT_FACE = re.compile(r"@font-face\s*\{([^}]*)(?:\}|$)", re.IGNORECASE)
_SRC = re.compile(r"(?:^|[;{\s])src\s*:", re.IGNORECASE)
_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)""", re.IGNORECASE)
# A declaration's value: quoted strings and parenthesised groups (closed or not) and anything else but ";".
_VALUE = re.compile(r"""(?:"[^"]*"?|'[^']*'?|\([^)]*\)?|[^;"'(]+)*""")
_CHARSET_RULE = re.compile(rb'^@charset\s+"([^"]{1,40})";')


def stylesheet_text(body: bytes, charset: str | None) -> str:
    """The stylesheet decoded: its Content-Type charset, else its @charset rule, else UTF-8; never raises."""
    match = _CHARSET_RULE.match(body.removeprefix(codecs.BOM_UTF8))
    for name in (charset, match.group(1).decode("ascii", "replace") if match else None, "utf-8"):
        if not name:
            continue
        try:
            return body.decode(name, errors="replace").removeprefix("\ufeff")
        except LookupError:  # an unknown charset name
            continue
    return body.decode("utf-8", errors="replace")


def stylesheet_font_urls(css: str, stylesheet_url: str) -> list[str]:
    """Distinct font URLs of the `src` descriptors of the @font-face rules of `css`, resolved against the
    stylesheet's own URL (as browsers do), normalised, http(s) only (a data: font loads nothing), in order,
    at most FONT_URLS_PER_STYLESHEET_MAX."""
    found: dict[str, None] = {}
    for rule in _FONT_FACE.finditer(_COMMENT.sub(" ", css)):
        body = rule.group(1)
        pos = 0
        while (src := _SRC.search(body, pos)) is not None:
            # The src value runs to the next descriptor: a ";" outside quotes, or the rule's end. The search goes
            # on after it, so each character of the rule is scanned once (a hostile "src:src:src:…" stays linear).
            value = _declaration_value(body, src.end())
            pos = src.end() + len(value)
            for match in _URL.finditer(value):
                ref = (match.group(1) or match.group(2) or match.group(3) or "").strip()
                if not ref or ref[:5].lower() == "data:":
                    continue
                url = normalize(ref, stylesheet_url)
                if url is not None:
                    found.setdefault(url, None)
                if len(found) >= FONT_URLS_PER_STYLESHEET_MAX:
                    return list(found)
    return list(found)


def _declaration_value(body: str, start: int) -> str:
    """body[start:] up to the first ";" outside quotes and parentheses (a data: URI's ";" is inside its url())."""
    return _VALUE.match(body, start).group(0)
