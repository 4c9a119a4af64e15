"""HTML -> PageData: everything the checks and the frontier need from one page, as plain Python."""

import hashlib
import json
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.html
from lxml import etree
from w3lib.encoding import html_to_unicode

from crawler import limits
from crawler.urls import normalize


@dataclass
class Link:
    url: str  # absolute, normalised (crawler.urls.normalize); links that do not normalise are dropped
    anchor: str  # visible text (or img alt), whitespace-collapsed, <= 200 chars
    nofollow: bool  # rel contains nofollow (or the page is meta nofollow)
    tag: str = "a"  # a | area


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
    links: list[Link] = field(default_factory=list)  # <= MAX_LINKS_PER_PAGE, document order, duplicates kept
    # Crawlable <a href>/<area href> (http(s), not "#…"), before the cap. Past the cap they are counted
    # with a cheap scheme test instead of full normalisation.
    links_total: int = 0
    hreflang: list[tuple[str, str]] = field(default_factory=list)  # (hreflang value, absolute href)
    jsonld_blocks: int = 0
    jsonld_invalid: int = 0
    structured_data_types: list[str] = field(default_factory=list)  # @type values from JSON-LD, microdata
    insecure_resources: list[str] = field(default_factory=list)  # http:// script/css/img/iframe src (up to 20)
    scripts_total: int = 0  # executable <script> elements (not JSON-LD, not templates)
    app_root: bool = False  # an empty app root element like <div id="root|app|__next|__nuxt">
    encoding: str = ""  # the encoding the text was decoded with
    base_url: str = ""  # <base href> if any, else the page URL


_WS = re.compile(r"\s+")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# C0 controls other than tab/newline/carriage return: binary junk that libxml2 chokes on.
_CONTROL_CHARS = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32)])
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
_X_LINKS = "//a[@href] | //area[@href]"
_X_TITLES = "//title[not(ancestor::svg)]"
_X_HEADINGS = "//h1 | //h2 | //h3 | //h4 | //h5 | //h6"
_X_RESOURCES = (
    "//script[@src] | //img[@src] | //iframe[@src] | //video[@src] | //audio[@src] | //source[@src]"
    " | //embed[@src] | //link[@href]"
)
_X_APP_ROOTS = (
    "//*[@id='root' or @id='app' or @id='__next' or @id='__nuxt' or @id='___gatsby' or @data-reactroot or @ng-app]"
)
_X_MICRODATA = "//*[@itemscope][@itemtype][not(ancestor::*[@itemscope])]/@itemtype"


def _collapse(text: str | None) -> str:
    return _WS.sub(" ", text or "").strip()


def _rel_tokens(el) -> set[str]:
    return set((el.get("rel") or "").lower().split())


def _decode(body: bytes, content_type_charset: str | None) -> tuple[str, str]:
    header = f"text/html; charset={content_type_charset}" if content_type_charset else None
    # BOM, then the header, then <meta charset>/http-equiv, then utf-8 with replacement characters.
    encoding, text = html_to_unicode(header, body)
    return encoding, text


def _build_tree(text: str):
    text = _XML_DECLARATION.sub("", text, count=1).translate(_CONTROL_CHARS)
    if not text.strip():
        return None
    # Parse UTF-8 bytes with the encoding forced: no second guessing of the charset by libxml2, and
    # no "unicode strings with encoding declaration" refusal for XHTML.
    parser = lxml.html.HTMLParser(
        recover=True, encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
    )
    return etree.fromstring(text.encode("utf-8", "surrogatepass"), parser)


def parse_html(body: bytes, url: str, *, content_type_charset: str | None = None) -> PageData:
    """Parse an HTML body fetched from `url`. Never raises on bad markup: worst case an empty PageData."""
    page = PageData(base_url=url)
    try:
        page.encoding, text = _decode(body or b"", content_type_charset)
        root = _build_tree(text)
    except (ValueError, LookupError, etree.LxmlError):
        return page
    if root is None:
        return page
    for step in (_head, _links, _images_and_resources, _scripts, _headings_and_roots, _visible_text):
        try:
            step(root, page, url)
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


def _looks_crawlable(href: str) -> bool:
    scheme = _SCHEME.match(href)
    return scheme is None or scheme.group(1).lower() in ("http", "https")


def _links(root, page: PageData, url: str) -> None:
    page_nofollow = _page_nofollow(page.meta_robots)
    base = page.base_url
    for el in root.xpath(_X_LINKS):
        href = el.get("href").strip()
        if not href or href.startswith("#"):
            continue
        if len(page.links) >= limits.MAX_LINKS_PER_PAGE:
            page.links_total += _looks_crawlable(href)
            continue
        target = normalize(href, base)
        if target is None:
            continue
        page.links_total += 1
        anchor = _collapse(el.text_content())
        if not anchor:
            for img in el.iter("img"):
                anchor = _collapse(img.get("alt"))
                if anchor:
                    break
        page.links.append(
            Link(
                url=target,
                anchor=anchor[: limits.MAX_ANCHOR_TEXT_CHARS],
                nofollow=page_nofollow or "nofollow" in _rel_tokens(el),
                tag=el.tag,
            )
        )


def _images_and_resources(root, page: PageData, url: str) -> None:
    for img in root.iter("img"):
        page.images_total += 1
        if page.images_total > limits.MAX_IMAGES_PER_PAGE:
            continue  # counted, not inspected
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


def _scripts(root, page: PageData, url: str) -> None:
    types: list[str] = []
    for script in root.iter("script"):
        kind = (script.get("type") or "").strip().lower().split(";")[0].strip()
        if kind == "application/ld+json":
            page.jsonld_blocks += 1
            try:
                _jsonld_types(json.loads(script.text or ""), types)
            except (ValueError, RecursionError):
                page.jsonld_invalid += 1
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
    page.app_root = any(not el.text_content().strip() for el in root.xpath(_X_APP_ROOTS))


def _visible_text(root, page: PageData, url: str) -> None:
    # Last step: it strips invisible subtrees from the tree in place.
    etree.strip_elements(root, *_INVISIBLE, with_tail=False)
    parts: list[str] = []
    for event, el in etree.iterwalk(root, events=("start", "end")):
        if event == "start":
            if el.tag in _BLOCK_TAGS:
                parts.append(" ")
            if el.text:
                parts.append(el.text)
        else:
            if el.tag in _BLOCK_TAGS:
                parts.append(" ")
            if el.tail and el is not root:
                parts.append(el.tail)
    words = "".join(parts).split()
    page.word_count = len(words)
    if words:
        page.text_hash = hashlib.sha1(" ".join(words).lower().encode("utf-8")).hexdigest()  # noqa: S324


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
