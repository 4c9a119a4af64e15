"""How wide a title or description is in Google's desktop results, in pixels, from a font-metrics table.

Google shows titles in Arial 20 px (cut at ~580 px) and descriptions in Arial 14 px (~920 px over two lines).
Characters count badly for that: "WWW" is three times as wide as "iii". The table is Arial's advance widths
(metric-compatible with Helvetica's AFM), in thousandths of an em, for printable ASCII; other characters take
DEFAULT_ADVANCE_EM1000, and East Asian wide/full-width ones a whole em.
"""

import unicodedata

TITLE_FONT_PX = 20
DESCRIPTION_FONT_PX = 14
DEFAULT_ADVANCE_EM1000 = 556  # an average lower-case letter: accented Latin, Greek, Cyrillic are near it
WIDE_ADVANCE_EM1000 = 1000  # CJK and other full-width characters

# Printable ASCII 32..126, in order.
_ASCII_ADVANCES_EM1000 = (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,  # space to /
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556,  # 0-9
    278, 278, 584, 584, 584, 556, 1015,  # : ; < = > ? @
    667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833,  # A-M
    722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611,  # N-Z
    278, 278, 278, 469, 556, 333,  # [ \ ] ^ _ `
    556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833,  # a-m
    556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500,  # n-z
    334, 260, 334, 584,  # { | } ~
)  # fmt: skip
ADVANCES_EM1000: dict[str, int] = {chr(32 + i): width for i, width in enumerate(_ASCII_ADVANCES_EM1000)}


def _advance(char: str) -> int:
    width = ADVANCES_EM1000.get(char)
    if width is not None:
        return width
    if unicodedata.combining(char) or char in "\u200b\u200c\u200d\ufeff":
        return 0  # combining accents and zero-width characters take no room of their own
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return WIDE_ADVANCE_EM1000
    if char.isspace():
        return ADVANCES_EM1000[" "]
    return DEFAULT_ADVANCE_EM1000


# _advance of each ASCII code point, by index: an ASCII text's width is summed in C (map over its bytes), not by a
# Python call per character (most titles and descriptions).
_ASCII_ADVANCES = tuple(_advance(chr(code)) for code in range(128))


def text_width_px(text: str, font_px: int) -> int:
    """Rendered width of `text` (whitespace collapsed as a browser does) at `font_px`, rounded to a pixel."""
    collapsed = " ".join((text or "").split())
    if collapsed.isascii():
        advance = sum(map(_ASCII_ADVANCES.__getitem__, collapsed.encode("ascii")))
    else:
        advance = sum(map(_advance, collapsed))
    return round(advance * font_px / 1000)


def pixel_checks(data, add, limit) -> None:
    """title-too-wide and meta-description-too-wide: the snippet Google would cut, measured in pixels."""
    title = data.titles[0].strip() if data.titles else ""
    if title:
        width = text_width_px(title, TITLE_FONT_PX)
        if width > limit("title-too-wide", "max_px"):
            add("title-too-wide", width_px=width, max_px=limit("title-too-wide", "max_px"), title=title[:300])
    description = (data.meta_description or "").strip()
    if description:
        width = text_width_px(description, DESCRIPTION_FONT_PX)
        if width > limit("meta-description-too-wide", "max_px"):
            add(
                "meta-description-too-wide",
                width_px=width,
                max_px=limit("meta-description-too-wide", "max_px"),
                description=description[:400],
            )
