"""HTML -> PageData: everything the checks and the frontier need from one page, as plain Python. The body is
decoded and parsed by crawler.parse.document.parse_document; the steps here read the tree."""

import json
import re
from collections.abc import Callable, Iterable
from functools import partial
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html
from lxml import etree

from crawler import limits
from crawler.parse.data import AnchorUse, Link, PageData
from crawler.parse.document import parse_document
from crawler.parse.markers import TreeMarkers, tree_markers
from crawler.parse.text import collapse, page_text
from crawler.speedups import native
from crawler.urls import normalize

_REFRESH = re.compile(r"^\s*([\d.]*)\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.IGNORECASE | re.DOTALL)
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_JS_TYPES = frozenset(
    ("", "module", "text/javascript", "application/javascript", "application/x-javascript",
     "text/ecmascript", "application/ecmascript", "text/jscript", "text/livescript")
)  # fmt: skip

# Each `//` step of an XPath walks the whole tree, a union of n steps n times (the six-heading union ~55 us on a
# 40 KB page). Where tag names select, root.iter(tag, ...) walks it once in C and yields the same elements in the
# same document order (~25 us); attributes are then tested in Python on the few elements it yields.
_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Elements whose reference makes a load, with the attribute that holds it.
_REF_ATTRIBUTE = {"script": "src", "img": "src", "iframe": "src", "video": "src", "audio": "src",
                  "source": "src", "embed": "src", "link": "href"}  # fmt: skip
_RESOURCE_TAGS = tuple(_REF_ATTRIBUTE)  # mixed content: all of them
_SUBRESOURCE_TAGS = ("script", "img", "iframe", "link", "source", "embed")  # protocol-relative references

# XPath source, evaluated with root.xpath(): compiled XPath objects are not shared across threads. The costlier
# microdata query (~95 us) runs only on the pages that carry an itemscope (crawler.parse.markers), and once.
_X_MICRODATA = "//*[@itemscope][@itemtype][not(ancestor::*[@itemscope])]/@itemtype"


def _rel_tokens(el) -> set[str]:
    return set((el.get("rel") or "").lower().split())


def _text_content(el) -> str:
    """el.text_content() (the text of el and its descendants, not el's tail) without its XPath call; on an element
    without children, just its text."""
    if len(el) == 0:
        return el.text or ""
    return "".join(el.itertext())


def parse_html(
    body: bytes,
    url: str,
    *,
    content_type_charset: str | None = None,
    is_internal: Callable[[str], bool] | None = None,
) -> PageData:
    """Parse an HTML body fetched from `url`. Never raises on bad markup: worst case an empty PageData.

    `is_internal(normalised url)` sorts links into internal and external (default: same host as `url`)."""
    document = parse_document(body, content_type_charset)
    page = PageData(base_url=url, encoding=document.encoding)
    root = document.tree
    if root is None:
        return page
    if is_internal is None:
        host = urlsplit(url).hostname

        def is_internal(target: str) -> bool:
            return urlsplit(target).hostname == host

    try:
        markers = tree_markers(root)  # what three steps start from, found in one walk
    except _STEP_ERRORS:
        markers = None  # each of those steps asks again, and fails alone
    steps = (
        _head, partial(_links, is_internal=is_internal), _images_and_resources, _scripts,
        partial(_microdata_and_rdfa, markers=markers), partial(_headings_and_roots, markers=markers),
        _security_signals, partial(page_text, markers=markers),
    )  # fmt: skip
    for step in steps:
        try:
            step(root, page, url)
        except _STEP_ERRORS:
            # One broken part of a hostile page must not cost the others.
            continue
    return page


_STEP_ERRORS = (ValueError, TypeError, LookupError, etree.LxmlError)


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

    # //title[not(ancestor::svg)]: an SVG <title> is a tooltip, not the page's.
    page.titles = [collapse(_text_content(t)) for t in root.iter("title") if next(t.iterancestors("svg"), None) is None]

    robots, descriptions = [], []
    for meta in root.iter("meta"):
        name = (meta.get("name") or "").strip().lower()
        content = meta.get("content")
        if name == "description":
            descriptions.append(collapse(content))
        elif name in ("robots", "googlebot"):
            if content and content.strip():
                robots.append(collapse(content).lower())
        elif name == "viewport":
            page.has_viewport = True
        prop = (meta.get("property") or "").strip().lower() or (name if name.startswith("og:") else "")
        if prop.startswith("og:") and content is not None and prop not in page.og:
            page.og[prop] = content.strip()
        if (meta.get("http-equiv") or "").strip().lower() == "refresh" and page.meta_refresh_url is None:
            delay, target = _REFRESH.match(content or "").groups()
            target = target.strip().strip("'\"").strip()
            if target:
                page.meta_refresh_url = normalize(target, page.base_url)
                page.meta_refresh_delay_s = _refresh_delay(delay)
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


def _refresh_delay(digits: str) -> float | None:
    """A meta refresh's delay in seconds as browsers read it (leading digits and dots), None when it has none."""
    try:
        return float(digits.rstrip(".") or "x") if digits.strip(".") else None
    except ValueError:
        return None


def _page_nofollow(meta_robots: str) -> bool:
    directives = {d.strip() for d in meta_robots.replace(";", ",").split(",")}
    return "nofollow" in directives or "none" in directives


def _anchor_text(el) -> str:
    """A link's visible text, collapsed, else the alt of its first <img> that has one; an <area>'s alt."""
    anchor = collapse(el.get("alt") if el.tag == "area" else _text_content(el))
    if not anchor and len(el):
        for img in el.iter("img"):
            anchor = collapse(img.get("alt"))
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


def _link_elements(root) -> Iterable[tuple[str, str | None, str | None, str]]:
    """(tag, href, rel, anchor text) of every <a> and <area> in document order: read by crawler.speedups where it
    was built, else through lxml (the anchor text then only for links with an href)."""
    if native is not None:
        try:
            return native.links(root, limits.MAX_ANCHOR_TEXT_CHARS)
        except NotImplementedError:
            pass  # a node the C reader does not model: read the page through lxml
    return (
        (el.tag, href, el.get("rel"), _anchor_text(el) if href and href.strip() else "")
        for el in root.iter("a", "area")
        for href in (el.get("href"),)
    )


def _links(root, page: PageData, url: str, is_internal: Callable[[str], bool]) -> None:
    """Every link, counted and folded by target while walking (memory grows with distinct targets, capped,
    never with links); same-page "#…" links only feed the link-text check."""
    page_nofollow = _page_nofollow(page.meta_robots)
    base = page.base_url
    here = urldefrag(url)[0]
    targets: dict[str, Link] = {}
    for tag, href, rel, anchor in _link_elements(root):
        href = href.strip() if href is not None else ""
        if not href:
            continue
        if href.startswith("#"):
            _note_anchor(page, anchor, here + href)
            continue
        target = normalize(href, base)
        if target is None:
            continue
        page.links_total += 1
        nofollow = page_nofollow or (rel is not None and "nofollow" in rel.lower().split())
        link = targets.get(target)
        if link is not None:
            link.count += 1
            link.nofollow = link.nofollow and nofollow
            link.anchor = link.anchor or anchor
            internal = link.internal
        else:
            internal = bool(is_internal(target))
            if len(targets) < limits.MAX_LINK_TARGETS_PER_PAGE:
                targets[target] = Link(target, anchor, nofollow, tag, 1, internal)
            else:
                page.links_not_stored += 1
        page.internal_links_total += internal
        page.external_links_total += not internal
        _note_anchor(page, anchor, target)
    page.links = list(targets.values())


def _images_and_resources(root, page: PageData, url: str) -> None:
    _resource_urls(root, page)
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
        alt = collapse(img.get("alt"))
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
    for el in root.iter(*_RESOURCE_TAGS):
        if el.get(_REF_ATTRIBUTE[el.tag]) is None:
            continue
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


# <link rel> tokens of what a browser loads besides images ("shortcut icon" carries "icon").
_ICON_RELS = frozenset(("icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"))
_PRELOAD_AS = {"script": "script", "style": "stylesheet", "font": "font"}


def _resource_kind(el) -> tuple[str | None, str]:
    """(kind, reference as written) of a <script> or <link> that loads something, else (None, "")."""
    if el.tag == "script":
        script_type = (el.get("type") or "").strip().lower().split(";")[0].strip()
        return ("script" if script_type in _JS_TYPES else None), (el.get("src") or "").strip()
    rel = _rel_tokens(el)
    if "stylesheet" in rel:
        kind = "stylesheet"
    elif rel & _ICON_RELS:
        kind = "icon"
    elif "modulepreload" in rel:
        kind = "script"
    elif "preload" in rel:
        kind = _PRELOAD_AS.get((el.get("as") or "").strip().lower())
    else:
        kind = None
    return kind, (el.get("href") or "").strip()


def _resource_urls(root, page: PageData) -> None:
    """Distinct scripts, stylesheets, icons and preloaded fonts the page loads, resolved and normalised, http(s)
    only (a data: URI loads nothing), in document order, bounded."""
    found: dict[str, str] = {}
    for el in root.iter("script", "link"):
        if len(found) >= limits.MAX_RESOURCE_URLS_PER_PAGE:
            break
        kind, ref = _resource_kind(el)
        if kind is None or not ref or ref[:5].lower() == "data:":
            continue
        resolved = normalize(ref, page.base_url)
        if resolved is not None and resolved not in found:
            found[resolved] = kind
    page.resource_urls = [(kind, resolved) for resolved, kind in found.items()]


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


def _microdata_and_rdfa(root, page: PageData, url: str, markers: TreeMarkers | None = None) -> None:
    """Microdata types and entities, RDFa entities through extruct (the JSON-LD ones come from _scripts' own
    parse)."""
    markers = markers or tree_markers(root)
    itemtypes = root.xpath(_X_MICRODATA) if markers.itemscope else []
    if itemtypes:
        types = list(page.structured_data_types)  # JSON-LD's, from _scripts: they come first
        for itemtype in itemtypes:
            for t in itemtype.split():
                # "https://schema.org/Product" -> "Product", to compare with JSON-LD's short names.
                types.append(t.rstrip("/").rsplit("/", 1)[-1])
        page.structured_data_types = list(dict.fromkeys(types))
        # why: extruct loads mf2py, bs4, html5lib and rdflib (~17 MiB a worker); only pages with microdata pay for it
        from extruct.w3cmicrodata import MicrodataExtractor

        for item in MicrodataExtractor().extract_items(root, page.base_url):
            props = [k for k, v in (item.get("properties") or {}).items() if _filled(v)]
            _note_item(page, "microdata", item.get("type") or [], props)
    if markers.typeof:
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
    # Microdata's types are added by _microdata_and_rdfa, which queries the itemtypes anyway.
    page.structured_data_types = list(dict.fromkeys(types))


def _headings_and_roots(root, page: PageData, url: str, markers: TreeMarkers | None = None) -> None:
    for h in root.iter(*_HEADING_TAGS):
        if len(page.headings) >= limits.MAX_HEADINGS_PER_PAGE:
            break
        page.headings.append((int(h.tag[1]), collapse(_text_content(h))))
    page.app_root = any(not _text_content(el).strip() for el in (markers or tree_markers(root)).app_roots)


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
    for el in root.iter(*_SUBRESOURCE_TAGS):
        if el.get(_REF_ATTRIBUTE[el.tag]) is None:
            continue
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
