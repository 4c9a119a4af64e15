"""HTML -> PageData: everything the checks and the frontier need from one page, as plain Python."""

import codecs
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html
from lxml import etree
from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom

from crawler import limits
from crawler.urls import normalize
from crawler.words import first_words, words_of


@dataclass(slots=True)
class Link:
    """One distinct target of a page's links: every <a href>/<area href> to the same URL folds into it."""

    url: str  # absolute, normalised (crawler.urls.normalize); links that do not normalise are dropped
    anchor: str  # the first non-empty visible text (or img alt) of the links to url, collapsed, <= 200 chars
    # Every link to url is nofollow (rel, or the page is meta nofollow): one followed link is enough for a
    # search engine to follow the URL, so a target is nofollow only when all its links are.
    nofollow: bool
    tag: str = "a"  # a | area, of the first link
    count: int = 1  # links on the page to url
    internal: bool = True  # by the is_internal given to parse_html (default: same host as the page)


@dataclass(slots=True)
class AnchorUse:
    """One distinct link text of a page, for the link-text check (same-page #fragment links included)."""

    count: int
    href: str  # the first link with this text: absolute, fragment kept


@dataclass
class PageData:
    titles: list[str] = field(default_factory=list)
    meta_description: str | None = None  # None when absent; "" when present but empty
    meta_descriptions_count: int = 0
    meta_robots: str = ""  # content of all <meta name=robots|googlebot>, lower-cased, joined by ", "
    canonicals: list[str] = field(default_factory=list)  # href values as written (not resolved)
    canonical_url: str | None = None  # first canonical, resolved and normalised
    meta_refresh_url: str | None = None  # resolved URL of <meta http-equiv=refresh content="N; url=...">
    html_lang: str | None = None
    has_viewport: bool = False
    og: dict[str, str] = field(default_factory=dict)  # og:title, og:description, og:image, og:url, og:type
    headings: list[tuple[int, str]] = field(default_factory=list)  # (level 1-6, text) in document order
    word_count: int = 0  # words of visible text (script/style/noscript/template excluded)
    text_hash: str = ""  # sha1 hex of the normalised visible text ("" when no text)
    images_total: int = 0
    images_missing_alt: int = 0  # <img> without an alt attribute (alt="" is fine)
    images_missing_alt_srcs: list[str] = field(default_factory=list)  # up to 20
    # Distinct targets in the order first linked, <= MAX_LINK_TARGETS_PER_PAGE; links_total and the internal and
    # external totals count every crawlable <a href>/<area href> (http(s), not "#…"), capped or not.
    links: list[Link] = field(default_factory=list)
    links_total: int = 0
    internal_links_total: int = 0
    external_links_total: int = 0
    links_not_stored: int = 0  # links to targets past MAX_LINK_TARGETS_PER_PAGE (counted, not kept)
    anchor_texts: dict[str, AnchorUse] = field(default_factory=dict)  # <= MAX_ANCHOR_TEXTS_PER_PAGE
    hreflang: list[tuple[str, str]] = field(default_factory=list)  # (hreflang value, absolute href)
    jsonld_blocks: int = 0
    jsonld_invalid: int = 0
    structured_data_types: list[str] = field(default_factory=list)  # @type values from JSON-LD, microdata
    insecure_resources: list[str] = field(default_factory=list)  # http:// script/css/img/iframe src (up to 20)
    scripts_total: int = 0  # executable <script> elements (not JSON-LD, not templates)
    app_root: bool = False  # an empty app root element like <div id="root|app|__next|__nuxt">
    encoding: str = ""  # the encoding the text was decoded with
    base_url: str = ""  # <base href> if any, else the page URL
    # Main text: <main>/[role=main] when the page has one, else the visible text minus nav, header, footer and
    # aside, so two pages sharing a template are not duplicates of each other (content checks).
    main_text_hash: str = ""  # sha1 hex of the main text's words, lower-cased, joined by one space
    main_word_count: int = 0
    # The first MAX_MAIN_WORDS_KEPT words, lower-cased, joined by one space: one string, not a list of words (the
    # near-duplicate signature hashes it in bulk, audits/checks/content.text_signature).
    main_text: str = ""
    lorem_ipsum: bool = False  # "lorem ipsum" placeholder text in the main text, outside code samples
    lorem_excerpt: str = ""  # that wording with a little text around it, as written ("" when none)
    # The main text outside code samples (<pre>, <code>, <kbd>, <samp>: where wording is the subject, not the
    # page's voice), as written and collapsed, when the main text has at most SHORT_MAIN_TEXT_WORDS_MAX words.
    short_main_prose: str = ""
    # Security signals, examples up to MAX_LISTED_RESOURCES_PER_PAGE each, resolved against the base URL.
    form_http_actions: list[str] = field(default_factory=list)  # <form> whose action resolves to http://
    protocol_relative_resources: list[str] = field(default_factory=list)  # src/href written "//host/…"
    blank_without_noopener: list[str] = field(default_factory=list)  # target=_blank to another origin, no noopener
    blank_without_noopener_total: int = 0
    # Structured data: one entry per top-level entity, {"syntax": json-ld|microdata|rdfa, "type": short name,
    # "properties": sorted non-empty property names}, <= MAX_STRUCTURED_ITEMS_PER_PAGE (audits/checks/structured_data)
    structured_items: list[dict] = field(default_factory=list)
    # Images (audits/checks/images.py): distinct absolute http(s) srcs, <= MAX_IMAGE_URLS_PER_PAGE, and examples
    # (<= MAX_LISTED_RESOURCES_PER_PAGE) of <img> without both width and height, and with too long an alt.
    image_urls: list[str] = field(default_factory=list)
    images_missing_size: int = 0
    images_missing_size_srcs: list[str] = field(default_factory=list)
    image_alts: list[tuple[str, int]] = field(default_factory=list)  # (src, alt length) of the longest alts
    # <link rel=next/prev> (pagination checks), resolved and normalised; None when absent.
    rel_next: str | None = None
    rel_prev: str | None = None

    @property
    def main_words(self) -> list[str]:
        """The main text's first MAX_MAIN_WORDS_KEPT words, lower-cased."""
        return self.main_text.split(" ") if self.main_text else []


_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# C0 controls other than tab/newline/carriage return: binary junk that libxml2 chokes on.
# A regex, not str.translate: translate looks every character up (~1 ms for 40 KB of non-ASCII text), the regex
# scans in C and finds nothing on almost every page.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_REFRESH = re.compile(r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.IGNORECASE | re.DOTALL)
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_JS_TYPES = frozenset(
    ("", "module", "text/javascript", "application/javascript", "application/x-javascript",
     "text/ecmascript", "application/ecmascript", "text/jscript", "text/livescript")
)  # fmt: skip
_APP_ROOT_IDS = ("root", "app", "__next", "__nuxt", "___gatsby")
_INVISIBLE = ("script", "style", "noscript", "template", "svg", "head")
# Elements that separate words when rendered: "<p>a</p><p>b</p>" is two words, "a<b>b</b>" is one.
_BLOCK_TAGS = frozenset(
    "address article aside blockquote br dd details dialog div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section summary table tbody td tfoot "
    "th thead tr ul img input button select textarea label caption iframe video audio canvas".split()
)

# XPath sources, evaluated with root.xpath(): compiled XPath objects are not shared across threads.
_X_TITLES = "//title[not(ancestor::svg)]"
_X_HEADINGS = "//h1 | //h2 | //h3 | //h4 | //h5 | //h6"
_X_RESOURCES = (
    "//script[@src] | //img[@src] | //iframe[@src] | //video[@src] | //audio[@src] | //source[@src]"
    " | //embed[@src] | //link[@href]"
)
# Elements that may be an app root; their ids are compared in Python: five @id comparisons per element in the
# XPath cost twice the scan.
_X_APP_ROOT_CANDIDATES = "//*[@id or @data-reactroot or @ng-app]"
_X_MICRODATA = "//*[@itemscope][@itemtype][not(ancestor::*[@itemscope])]/@itemtype"


def _collapse(text: str | None) -> str:
    # str.split() and the regex \s agree on what whitespace is (every code point); split is the faster of the two.
    return " ".join(text.split()) if text else ""


def _rel_tokens(el) -> set[str]:
    return set((el.get("rel") or "").lower().split())


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
    parser = lxml.html.HTMLParser(
        recover=True, encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
    )
    fed = False
    for text in _decoded_steps(body, encoding, start):
        if not fed:
            text = _XML_DECLARATION.sub("", text, count=1)
            if not text.strip():
                continue  # leading whitespace; a body of nothing else has no tree
        parser.feed(_CONTROL_CHARS.sub("", text).encode("utf-8", "surrogatepass"))
        fed = True
    return parser.close() if fed else None


def parse_html(
    body: bytes,
    url: str,
    *,
    content_type_charset: str | None = None,
    is_internal: Callable[[str], bool] | None = None,
) -> PageData:
    """Parse an HTML body fetched from `url`. Never raises on bad markup: worst case an empty PageData.

    `is_internal(normalised url)` sorts links into internal and external (default: same host as `url`)."""
    page = PageData(base_url=url)
    body = body or b""
    try:
        page.encoding, start = _encoding(body, content_type_charset)
        root = _build_tree(body, page.encoding, start)
    except (ValueError, LookupError, etree.LxmlError):
        return page
    if root is None:
        return page
    if is_internal is None:
        host = urlsplit(url).hostname

        def is_internal(target: str) -> bool:
            return urlsplit(target).hostname == host

    steps = (
        _head, _links, _images_and_resources, _scripts, _microdata_and_rdfa, _headings_and_roots,
        _security_signals, _text,
    )  # fmt: skip
    for step in steps:
        try:
            step(root, page, url, is_internal) if step is _links else step(root, page, url)
        except (ValueError, TypeError, LookupError, etree.LxmlError):
            # One broken part of a hostile page must not cost the others.
            continue
    return page


def _head(root, page: PageData, url: str) -> None:
    if root.tag == "html":
        lang = root.get("lang") if root.get("lang") is not None else root.get("xml:lang")
        page.html_lang = lang.strip() if lang is not None else None

    for base in root.iter("base"):
        href = (base.get("href") or "").strip()
        if href:
            resolved = urljoin(url, href)
            if resolved.lower().startswith(("http://", "https://")):
                page.base_url = resolved
            break

    page.titles = [_collapse(t.text_content()) for t in root.xpath(_X_TITLES)]

    robots, descriptions = [], []
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        content = meta.get("content")
        if name == "description":
            descriptions.append(_collapse(content))
        elif name in ("robots", "googlebot"):
            if content and content.strip():
                robots.append(_collapse(content).lower())
        elif name == "viewport":
            page.has_viewport = True
        prop = (meta.get("property") or "").strip().lower() or (name if name.startswith("og:") else "")
        if prop.startswith("og:") and content is not None and prop not in page.og:
            page.og[prop] = content.strip()
        if (meta.get("http-equiv") or "").strip().lower() == "refresh" and page.meta_refresh_url is None:
            target = _REFRESH.match(content or "").group(1).strip().strip("'\"").strip()
            if target:
                page.meta_refresh_url = normalize(target, page.base_url)
    page.meta_descriptions_count = len(descriptions)
    page.meta_description = descriptions[0] if descriptions else None
    page.meta_robots = ", ".join(robots)

    for link in root.iter("link"):
        href = link.get("href")
        if href is None:
            continue
        rel = _rel_tokens(link)
        if "canonical" in rel:
            page.canonicals.append(href.strip())
        if "next" in rel and page.rel_next is None:
            page.rel_next = normalize(href, page.base_url) or ""
        if "prev" in rel or "previous" in rel:
            if page.rel_prev is None:
                page.rel_prev = normalize(href, page.base_url) or ""
        if "alternate" in rel and link.get("hreflang") is not None:
            if len(page.hreflang) < limits.MAX_HREFLANG_PER_PAGE:
                target = normalize(href, page.base_url)
                if target:
                    page.hreflang.append((link.get("hreflang").strip(), target))
    if page.canonicals:
        page.canonical_url = normalize(page.canonicals[0], page.base_url)


def _page_nofollow(meta_robots: str) -> bool:
    directives = {d.strip() for d in meta_robots.replace(";", ",").split(",")}
    return "nofollow" in directives or "none" in directives


def _anchor_text(el) -> str:
    """A link's visible text, collapsed, else the alt of its first <img> that has one; an <area>'s alt."""
    if el.tag == "area":
        anchor = _collapse(el.get("alt"))
    elif len(el) == 0:
        anchor = _collapse(el.text)  # the common link, text only: no subtree to walk
    else:
        anchor = _collapse("".join(el.itertext()))  # what text_content() gives, without an XPath call per link
    if not anchor and len(el):
        for img in el.iter("img"):
            anchor = _collapse(img.get("alt"))
            if anchor:
                break
    return anchor[: limits.MAX_ANCHOR_TEXT_CHARS]


def _note_anchor(page: PageData, anchor: str, href: str) -> None:
    if not anchor:
        return
    use = page.anchor_texts.get(anchor)
    if use is not None:
        use.count += 1
    elif len(page.anchor_texts) < limits.MAX_ANCHOR_TEXTS_PER_PAGE:
        page.anchor_texts[anchor] = AnchorUse(1, href)


def _links(root, page: PageData, url: str, is_internal: Callable[[str], bool]) -> None:
    """Every link, counted and folded by target while walking (memory grows with distinct targets, capped,
    never with links); same-page "#…" links only feed the link-text check."""
    page_nofollow = _page_nofollow(page.meta_robots)
    base = page.base_url
    here = urldefrag(url)[0]
    targets: dict[str, Link] = {}
    for el in root.iter("a", "area"):
        href = el.get("href")
        href = href.strip() if href is not None else ""
        if not href:
            continue
        if href.startswith("#"):
            _note_anchor(page, _anchor_text(el), here + href)
            continue
        target = normalize(href, base)
        if target is None:
            continue
        page.links_total += 1
        anchor = _anchor_text(el)
        nofollow = page_nofollow or "nofollow" in _rel_tokens(el)
        link = targets.get(target)
        if link is not None:
            link.count += 1
            link.nofollow = link.nofollow and nofollow
            link.anchor = link.anchor or anchor
            internal = link.internal
        else:
            internal = bool(is_internal(target))
            if len(targets) < limits.MAX_LINK_TARGETS_PER_PAGE:
                targets[target] = Link(target, anchor, nofollow, el.tag, 1, internal)
            else:
                page.links_not_stored += 1
        page.internal_links_total += internal
        page.external_links_total += not internal
        _note_anchor(page, anchor, target)
    page.links = list(targets.values())


def _images_and_resources(root, page: PageData, url: str) -> None:
    for img in root.iter("img"):
        page.images_total += 1
        if page.images_total > limits.MAX_IMAGES_PER_PAGE:
            continue  # counted, not inspected
        src = (img.get("src") or "").strip()
        absolute = normalize(src, page.base_url) if src and not src.startswith("data:") else None
        if absolute and len(page.image_urls) < limits.MAX_IMAGE_URLS_PER_PAGE and absolute not in page.image_urls:
            page.image_urls.append(absolute)
        if not (img.get("width") or "").strip() or not (img.get("height") or "").strip():
            page.images_missing_size += 1
            if len(page.images_missing_size_srcs) < limits.MAX_LISTED_RESOURCES_PER_PAGE:
                page.images_missing_size_srcs.append(absolute or src)
        alt = _collapse(img.get("alt"))
        if alt and len(page.image_alts) < limits.MAX_LISTED_RESOURCES_PER_PAGE:
            page.image_alts.append((absolute or src, len(alt)))
        elif alt and len(alt) > min(n for _, n in page.image_alts):
            shortest = min(range(len(page.image_alts)), key=lambda i: page.image_alts[i][1])
            page.image_alts[shortest] = (absolute or src, len(alt))
        if img.get("alt") is None:
            page.images_missing_alt += 1
            if len(page.images_missing_alt_srcs) < limits.MAX_LISTED_RESOURCES_PER_PAGE:
                src = (img.get("src") or "").strip()
                page.images_missing_alt_srcs.append((normalize(src, page.base_url) or src) if src else "")

    if not url.lower().startswith("https://"):
        return  # mixed content only exists on https pages
    # A reference is insecure when written as http://, or relative under an http <base>: only those
    # are resolved, the rest are skipped cheaply.
    base_is_http = page.base_url.lower().startswith("http://")
    seen = set()
    for el in root.xpath(_X_RESOURCES):
        if len(page.insecure_resources) >= limits.MAX_LISTED_RESOURCES_PER_PAGE:
            break
        if el.tag == "link":
            if "stylesheet" not in _rel_tokens(el):
                continue
            ref = (el.get("href") or "").strip()
        else:
            ref = (el.get("src") or "").strip()
        if not (ref[:7].lower() == "http://" or (base_is_http and ref and not _SCHEME.match(ref))):
            continue
        resolved = urljoin(page.base_url, ref)
        if resolved not in seen:
            seen.add(resolved)
            page.insecure_resources.append(resolved)


def _jsonld_types(data, out: list[str]) -> None:
    """@type of top-level entities: the block itself, items of a top-level list, items of @graph."""
    items = data if isinstance(data, list) else [data]
    for item in items:
        if not isinstance(item, dict):
            continue
        types = item.get("@type")
        for t in types if isinstance(types, list) else [types]:
            if isinstance(t, str) and t.strip():
                out.append(t.strip())
        graph = item.get("@graph")
        if isinstance(graph, (list, dict)):
            _jsonld_types(graph, out)


def _short_name(value: str) -> str:
    """ "https://schema.org/Product" / "schema:Product" -> "Product", to compare with JSON-LD's short names."""
    return value.strip().rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def _filled(value) -> bool:
    return value not in (None, "", [], {}) and not (isinstance(value, str) and not value.strip())


def _note_item(page: PageData, syntax: str, types, properties) -> None:
    if len(page.structured_items) >= limits.MAX_STRUCTURED_ITEMS_PER_PAGE:
        return
    names = sorted({_short_name(name) for name in properties})[: limits.MAX_STRUCTURED_PROPERTIES_PER_ITEM]
    for t in types if isinstance(types, list) else [types]:
        if isinstance(t, str) and t.strip():
            page.structured_items.append({"syntax": syntax, "type": _short_name(t), "properties": names})


def _jsonld_items(page: PageData, data) -> None:
    for item in data if isinstance(data, list) else [data]:
        if not isinstance(item, dict):
            continue
        graph = item.get("@graph")
        if isinstance(graph, (list, dict)):
            _jsonld_items(page, graph)
        if "@type" in item:
            props = [k for k, v in item.items() if not k.startswith("@") and _filled(v)]
            _note_item(page, "json-ld", item["@type"], props)


_X_RDFA = "//*[@typeof]"


def _microdata_and_rdfa(root, page: PageData, url: str) -> None:
    """Microdata and RDFa entities through extruct (the JSON-LD ones come from _scripts' own parse)."""
    if root.xpath(_X_MICRODATA):
        # why: extruct loads mf2py, bs4, html5lib and rdflib (~17 MiB a worker); only pages with microdata pay for it
        from extruct.w3cmicrodata import MicrodataExtractor

        for item in MicrodataExtractor().extract_items(root, page.base_url):
            props = [k for k, v in (item.get("properties") or {}).items() if _filled(v)]
            _note_item(page, "microdata", item.get("type") or [], props)
    if root.xpath(_X_RDFA):
        # why: extruct's RDFa pulls in rdflib (~0.6 s to import); only pages with RDFa pay for it
        from extruct.rdfa import RDFaExtractor

        # pyRdfa wants its own DOM: the tree is serialised once, only on the rare pages that carry RDFa.
        document = lxml.html.tostring(root, encoding="utf-8")
        try:
            items = RDFaExtractor().extract(document, base_url=page.base_url)
        except Exception:  # noqa: BLE001 - pyRdfa/rdflib raise their own types on hostile markup; RDFa is optional
            items = []
        for item in items:
            types = [_short_name(t) for t in item.get("@type") or []]
            props = [k for k, v in item.items() if not k.startswith("@") and _filled(v)]
            if types and any("schema.org" in t for t in item.get("@type") or []):
                _note_item(page, "rdfa", types, props)


def _scripts(root, page: PageData, url: str) -> None:
    types: list[str] = []
    for script in root.iter("script"):
        kind = (script.get("type") or "").strip().lower().split(";")[0].strip()
        if kind == "application/ld+json":
            page.jsonld_blocks += 1
            try:
                data = json.loads(script.text or "")
            except (ValueError, RecursionError):
                page.jsonld_invalid += 1
                continue
            _jsonld_types(data, types)
            _jsonld_items(page, data)
        elif kind in _JS_TYPES:
            page.scripts_total += 1
    for itemtype in root.xpath(_X_MICRODATA):
        for t in itemtype.split():
            # "https://schema.org/Product" -> "Product", to compare with JSON-LD's short names.
            types.append(t.rstrip("/").rsplit("/", 1)[-1])
    page.structured_data_types = list(dict.fromkeys(types))


def _headings_and_roots(root, page: PageData, url: str) -> None:
    for h in root.xpath(_X_HEADINGS):
        if len(page.headings) >= limits.MAX_HEADINGS_PER_PAGE:
            break
        page.headings.append((int(h.tag[1]), _collapse(h.text_content())))
    page.app_root = any(
        not el.text_content().strip()
        for el in root.xpath(_X_APP_ROOT_CANDIDATES)
        if el.get("id") in _APP_ROOT_IDS or el.get("data-reactroot") is not None or el.get("ng-app") is not None
    )


class _WordStream:
    """Words of text arriving in pieces ("a<b>b</b>" is one word), counted and hashed as they come. Pieces are
    gathered up to TEXT_STEP_CHARS and split in one go (a word costs no Python call of its own), and a big page's
    text is never held whole. The hash is sha1 of the words joined by one space, lower-cased.

    The text walk appends to `pieces` itself (a method call per piece cost a fifth of the walk) and calls `spill`
    now and then; `add` does both for the rarer callers."""

    def __init__(self):
        self.count = 0
        self._hash = hashlib.sha1()  # noqa: S324 - a fingerprint for duplicate detection, not security
        self.pieces: list[str] = []  # changed in place only: the walk holds its append
        self._counted = 0  # pieces whose length _size holds
        self._size = 0
        self._step_chars = limits.TEXT_STEP_CHARS

    def add(self, text: str | None) -> None:
        if text:
            self.pieces.append(text)
            self.spill()

    def spill(self) -> None:
        """Split what was gathered once it reaches a step."""
        pieces = self.pieces
        self._size += sum(map(len, pieces[self._counted :]))
        self._counted = len(pieces)
        if self._size >= self._step_chars:
            self._step(final=False)

    def _step(self, *, final: bool) -> None:
        words = words_of("".join(self.pieces), partial=not final)  # a last word may go on in the next piece
        self.pieces.clear()
        self._counted = self._size = 0
        if words.rest:
            self.pieces.append(words.rest)
            self._counted, self._size = 1, len(words.rest)
            # A word longer than a step (no whitespace for megabytes) waits for twice its length, not one step
            # more: joined again at every step it would cost the square of its length.
            self._step_chars = max(limits.TEXT_STEP_CHARS, 2 * len(words.rest))
        if words.count:
            self._emit(words.joined, words.count)

    def _emit(self, lowered: str, count: int) -> None:
        """`count` words, lower-cased and joined by one space (lower-casing them one by one gives the same)."""
        self._hash.update(((" " if self.count else "") + lowered).encode("utf-8"))
        self.count += count

    def close(self) -> str:
        self._step(final=True)
        return self._hash.hexdigest() if self.count else ""


class _MainWords(_WordStream):
    """The main text's words: counted and hashed like the visible text, the first ones kept, lorem ipsum noticed."""

    def __init__(self):
        super().__init__()
        self._kept: list[str] = []  # steps' lower-cased text, the last one cut at the word limit
        self._kept_words = 0
        self.lorem = False
        self._last = ""

    @property
    def kept(self) -> str:
        """The first MAX_MAIN_WORDS_KEPT words, joined by one space."""
        return " ".join(self._kept)

    def _emit(self, lowered: str, count: int) -> None:
        room = limits.MAX_MAIN_WORDS_KEPT - self._kept_words
        if room >= count:
            self._kept.append(lowered)  # kept whole: no word is split out on its own
            self._kept_words += count
        elif room > 0:
            self._kept.append(first_words(lowered, room))
            self._kept_words += room
        if not self.lorem:
            # The substring test first: the regex over every step's text cost more than the rest of _emit.
            if "lorem" in lowered or "lorem" in self._last:
                self.lorem = _LOREM.search(self._last + " " + lowered) is not None
            self._last = lowered.rpartition(" ")[2]
        super()._emit(lowered, count)


_LOREM = re.compile(r"\blorem\s+ipsum\b")
_LOREM_AS_WRITTEN = re.compile(r"\blorem\s+ipsum\b", re.IGNORECASE)
_CODE_TAGS = frozenset(("pre", "code", "kbd", "samp"))  # code samples: their wording is the subject, not the page's
# The walk asks a stream to measure what it gathered once it holds this many pieces (a piece is an element's text
# or tail, or a space): a step is TEXT_STEP_CHARS, measured in bulk rather than piece by piece.
_SPILL_PIECES = 512
_BOILERPLATE_TAGS = frozenset(("nav", "header", "footer", "aside"))
_BOILERPLATE_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary"))
_X_MAIN = "//main[not(ancestor::main)] | //*[@role='main'][not(ancestor::main)][not(ancestor::*[@role='main'])]"


def _text(root, page: PageData, url: str) -> None:
    """Visible text (script/style/noscript/template/svg/head left out) and main text, in one walk of the tree.

    Main text: the <main>/[role=main] elements when the page has them, else the visible text minus nav, header,
    footer and aside (by tag or role). The walk skips invisible subtrees (their tails still count: "a<script>x
    </script>b" is the one word "ab"), so the tree is never changed."""
    mains = root.xpath(_X_MAIN)
    visible, main = _WordStream(), _MainWords()
    main_set = set(mains)
    if len(mains) > limits.MAIN_ELEMENTS_ONE_WALK_MAX or any(_hidden_or_nested(m, main_set) for m in mains):
        _main_text_alone(mains, main)  # rare markup the one walk does not model: the main text walked on its own
        _walk_text(root, visible, None, main_set)
    else:
        _walk_text(root, visible, main, main_set)
    page.text_hash = visible.close()
    page.word_count = visible.count
    page.main_text_hash = main.close()
    page.main_word_count = main.count
    page.main_text = main.kept
    short = main.count <= limits.SHORT_MAIN_TEXT_WORDS_MAX
    if main.lorem or (short and main.count):
        # A second walk only for the few pages that need the text outside code: lorem ipsum seen somewhere (rare)
        # or a short main text (cheap to walk). The one walk above stays free of code tracking.
        prose = _main_prose(root, mains)
        if short:
            page.short_main_prose = prose
        if main.lorem:
            page.lorem_excerpt = excerpt(prose, _LOREM_AS_WRITTEN)
            page.lorem_ipsum = bool(page.lorem_excerpt)


def excerpt(text: str, pattern: re.Pattern, context_chars: int = limits.EVIDENCE_CONTEXT_CHARS) -> str:
    """The first match of `pattern` in `text` with up to `context_chars` around it, cut at whole words ("…" where
    cut); "" when it does not match."""
    match = pattern.search(text)
    if match is None:
        return ""
    start, end = max(0, match.start() - context_chars), min(len(text), match.end() + context_chars)
    if start > 0:
        space = text.find(" ", start, match.start())
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.rfind(" ", match.end(), end)
        end = space if space >= 0 else end
    return ("…" if start > 0 else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _main_prose(root, mains: list) -> str:
    """The main text (as _text defines it) outside invisible elements and code samples, as written, collapsed; its
    first PROSE_SCAN_CHARS_MAX characters or a little more (a 15 MiB page of lorem ipsum is not copied whole)."""
    pieces: list[str] = []
    add = pieces.append
    size = 0
    by_main_elements, main_set = bool(mains), set(mains)
    for scope in mains if by_main_elements else [root]:
        if by_main_elements and _hidden_or_nested(scope, main_set):
            continue
        walk = etree.iterwalk(scope, events=("start", "end"))
        for event, el in walk:
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag in _INVISIBLE or tag in _CODE_TAGS or (not by_main_elements and _boilerplate(el, tag)):
                    walk.skip_subtree()  # its "end" still comes, and adds its tail
                    continue
                if tag in _BLOCK_TAGS:
                    add(" ")
                if el.text:
                    add(el.text)
                    size += len(el.text)
            else:
                if tag in _BLOCK_TAGS:
                    add(" ")
                if el is not scope and el.tail:
                    add(el.tail)
                    size += len(el.tail)
            if size > limits.PROSE_SCAN_CHARS_MAX:
                return _collapse("".join(pieces))
        add(" ")
    return _collapse("".join(pieces))


def _hidden_or_nested(main_el, main_set: set) -> bool:
    """A main element inside an invisible one (<template><main>) or inside another main element."""
    if main_el.tag in _INVISIBLE:
        return True
    return any(a in main_set or a.tag in _INVISIBLE for a in main_el.iterancestors())


def _boilerplate(el, tag: str) -> bool:
    return tag in _BOILERPLATE_TAGS or (el.get("role") or "").strip().lower() in _BOILERPLATE_ROLES


def _walk_text(root, visible: _WordStream, main: _MainWords | None, main_set: set) -> None:
    """Feed the visible text to `visible` and, unless None, the main text to `main` (see _text)."""
    by_main_elements = bool(main_set)
    main_on = main is not None and not by_main_elements  # is the walk inside the main text now
    main_off_at = None  # the boilerplate element (no <main>) whose subtree the main text leaves out
    # The streams' own lists, appended to directly: this loop runs twice per element of every page.
    seen, kept = visible.pieces, (main.pieces if main is not None else [])
    see, keep = seen.append, kept.append
    walk = etree.iterwalk(root, events=("start", "end"))
    for event, el in walk:
        tag = el.tag if isinstance(el.tag, str) else ""
        block = tag in _BLOCK_TAGS
        if event == "start":
            if tag in _INVISIBLE:
                walk.skip_subtree()  # its "end" still comes, and adds its tail
                continue
            if block:
                see(" ")
            text = el.text
            if text:
                see(text)
            if main is None:
                continue
            if by_main_elements:
                main_on = main_on or el in main_set
            elif main_on and _boilerplate(el, tag):
                main_on, main_off_at = False, el
                continue
            if main_on:
                if block:
                    keep(" ")
                if text:
                    keep(text)
        else:
            if block:
                see(" ")
            tail = el.tail if el is not root else None
            if tail:
                see(tail)
            if len(seen) >= _SPILL_PIECES:
                visible.spill()
            if main is None:
                continue
            if el is main_off_at:
                main_on, main_off_at = True, None
            if not main_on:
                continue
            if block:
                keep(" ")
            if by_main_elements and el in main_set:
                keep(" ")  # the end of one main element: its tail is not main text
                main_on = False
            elif tail:
                keep(tail)
            if len(kept) >= _SPILL_PIECES:
                main.spill()
    if main is not None and not by_main_elements:
        keep(" ")
    visible.spill()
    if main is not None:
        main.spill()


def _main_text_alone(mains: list, words: _MainWords) -> None:
    """The main text of main elements the one walk cannot take (nested, or inside an invisible element): each
    walked as its own scope, invisible subtrees skipped."""
    for scope in mains:
        walk = etree.iterwalk(scope, events=("start", "end"))
        for event, el in walk:
            tag = el.tag if isinstance(el.tag, str) else ""
            if event == "start":
                if tag in _INVISIBLE:
                    walk.skip_subtree()
                    continue
                if tag in _BLOCK_TAGS:
                    words.add(" ")
                words.add(el.text)
            else:
                if tag in _BLOCK_TAGS:
                    words.add(" ")
                if el is not scope:
                    words.add(el.tail)
        words.add(" ")


_X_SUBRESOURCES = "//script[@src] | //img[@src] | //iframe[@src] | //link[@href] | //source[@src] | //embed[@src]"


def _security_signals(root, page: PageData, url: str) -> None:
    """Forms posting to http, protocol-relative subresources, target=_blank links to other origins without
    noopener: examples only, capped."""
    cap = limits.MAX_LISTED_RESOURCES_PER_PAGE
    base = page.base_url
    for form in root.iter("form"):
        if len(page.form_http_actions) >= cap:
            break
        action = (form.get("action") or "").strip()
        resolved = urljoin(base, action) if action else base
        if resolved.lower().startswith("http://") and resolved not in page.form_http_actions:
            page.form_http_actions.append(resolved)
    for el in root.xpath(_X_SUBRESOURCES):
        if len(page.protocol_relative_resources) >= cap:
            break
        if el.tag == "link" and not _rel_tokens(el) & {"stylesheet", "icon", "preload", "modulepreload"}:
            continue
        ref = ((el.get("href") if el.tag == "link" else el.get("src")) or "").strip()
        if ref.startswith("//") and ref not in page.protocol_relative_resources:
            page.protocol_relative_resources.append(ref)
    here = urlsplit(url)
    for a in root.iter("a", "area"):
        if (a.get("target") or "").strip().lower() != "_blank":
            continue
        href = (a.get("href") or "").strip()
        if not href or href.startswith("#") or _rel_tokens(a) & {"noopener", "noreferrer"}:
            continue
        target = urlsplit(urljoin(base, href))
        if target.scheme not in ("http", "https") or (target.scheme, target.netloc) == (here.scheme, here.netloc):
            continue
        page.blank_without_noopener_total += 1
        if len(page.blank_without_noopener) < cap:
            page.blank_without_noopener.append(target.geturl())


def parse_link_header(values: list[str]) -> list[tuple[str, str]]:
    """(url, rel) pairs from raw HTTP Link header values, one pair per rel token, rel lower-cased.

    `<https://x/a>; rel="canonical", <https://x/b>; rel="alternate"; hreflang=de` ->
    [("https://x/a", "canonical"), ("https://x/b", "alternate")]. URLs are returned as written.
    """
    pairs: list[tuple[str, str]] = []
    for value in values or []:
        for match in _LINK_VALUE.finditer(value or ""):
            target, params = match.group(1).strip(), match.group(2) or ""
            rel = _LINK_REL.search(params)
            if rel:
                for token in (rel.group(1) or rel.group(2) or "").lower().split():
                    pairs.append((target, token))
    return pairs


# <url> followed by ;-parameters up to the next "<" that starts another link (commas may sit in params).
_LINK_VALUE = re.compile(r"<([^>]*)>\s*((?:;[^<]*)?)")
_LINK_REL = re.compile(r"""(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""", re.IGNORECASE)
