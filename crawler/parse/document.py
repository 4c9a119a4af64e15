"""An HTML body decoded and parsed into a tree, once: the one public entry (parse_document) that the page parse
(crawler.parse.page.parse_html) and custom extraction (audits.extraction_eval) both read from."""

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass

import lxml.html
from lxml import etree
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

from crawler import limits

_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# C0 controls other than tab/newline/carriage return: binary junk that libxml2 chokes on.
# A regex, not str.translate: translate looks every character up (~1 ms for 40 KB of non-ASCII text). The regex
# still costs ~230 us on 40 KB (a character class tested at every position), so it only runs on text that holds
# one of them: 29 `in` tests (a fast C search each) take ~20 us and find none on almost every page.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_CONTROL_CHAR_LIST = tuple(chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)))

# The element classes lxml.html.HTMLParser gives (HtmlElement; FormElement, InputElement... by tag), chosen in C.
# lxml.html's own HtmlElementClassLookup is a Python method, called each time a walk first touches an element from
# Python (~300 calls, ~0.1 ms a page). It picks by name.lower(): libxml2's HTML parser lower-cases tag names, so a
# lookup by the exact name picks the same class. Shared: a lookup is read-only once filled.
_HTML_CLASSES = etree.ElementNamespaceClassLookup(
    etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity,
    )
)  # fmt: skip
_HTML_CLASSES.get_namespace(None).update(lxml.html.HtmlElementClassLookup._default_element_classes)

# What decoding or building the tree may raise on a hostile body: the document is then unreadable, never an error.
PARSE_ERRORS = (ValueError, LookupError, etree.LxmlError)


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """One HTML body, decoded and parsed. `tree` is the lxml root (None when the body holds no markup, when no tree
    was asked for, or when it could not be read); the walks over it never change it, so it is shared."""

    body: bytes
    encoding: str  # "" when the encoding could not be decided
    start: int  # bytes of byte-order mark before the document
    tree: object | None
    readable: bool  # False when decoding or parsing raised: nothing is to be read from it

    def text(self) -> str | None:
        """The body decoded as a whole (a regex extractor reads the source), None when it is not readable."""
        if not self.readable:
            return None
        try:
            return self.body[self.start :].decode(self.encoding, "replace")
        except PARSE_ERRORS:
            return None


def parse_document(body: bytes, content_type_charset: str | None = None, *, tree: bool = True) -> ParsedDocument:
    """Decode `body` as w3lib's html_to_unicode decides (BOM, header charset, <meta charset>, utf-8) and, unless
    `tree` is False, build its lxml tree. Never raises on a hostile body: worst case an unreadable document."""
    body = body or b""
    encoding, start = "", 0
    try:
        encoding, start = _encoding(body, content_type_charset)
        root = _build_tree(body, encoding, start) if tree else None
    except PARSE_ERRORS:
        return ParsedDocument(body, encoding, start, None, readable=False)
    return ParsedDocument(body, encoding, start, root, readable=True)


def _encoding(body: bytes, content_type_charset: str | None) -> tuple[str, int]:
    """(encoding, bytes of BOM to skip), as w3lib's html_to_unicode decides it: BOM, then the header, then
    <meta charset>/http-equiv, then utf-8 (undecodable bytes become replacement characters)."""
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None:
        return bom_encoding, len(bom)
    header = f"text/html; charset={content_type_charset}" if content_type_charset else None
    encoding = http_content_type_encoding(header) or html_body_declared_encoding(body)
    if encoding in ("utf-16", "utf-32"):
        encoding += "-be"
    return encoding or "utf8", 0


def _decoded_steps(body: bytes, encoding: str, start: int) -> Iterator[str]:
    """The body decoded PARSE_FEED_BYTES at a time: a 15 MiB page is never held as one decoded string."""
    errors = "replace"
    if "18030" in encoding and codecs.lookup(encoding).name == "gb18030":
        errors = "w3lib_gb18030_replace"  # registered by w3lib.encoding: a lead 0x80 is the euro sign
    decoder = codecs.getincrementaldecoder(encoding)(errors)
    step = limits.PARSE_FEED_BYTES
    for offset in range(start, len(body), step):
        yield decoder.decode(body[offset : offset + step])
    yield decoder.decode(b"", final=True)


def _build_tree(body: bytes, encoding: str, start: int):
    # Fed to libxml2 as UTF-8 with the encoding forced: no second guessing of the charset by libxml2, and no
    # "unicode strings with encoding declaration" refusal for XHTML.
    parser = etree.HTMLParser(recover=True, encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True)
    parser.set_element_class_lookup(_HTML_CLASSES)
    fed = False
    for text in _decoded_steps(body, encoding, start):
        if not fed:
            text = _XML_DECLARATION.sub("", text, count=1)
            if not text.strip():
                continue  # leading whitespace; a body of nothing else has no tree
        if any(c in text for c in _CONTROL_CHAR_LIST):
            text = _CONTROL_CHARS.sub("", text)
        parser.feed(text.encode("utf-8", "surrogatepass"))
        fed = True
    return parser.close() if fed else None
