"""robots.txt and sitemaps: what the site tells a crawler about itself."""

import io
import re
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lxml import etree
from protego import Protego

from crawler import limits
from crawler.decoding import decompress_capped
from crawler.fetch import FetchResult, fetch
from crawler.urls import normalize


@dataclass
class RobotsResult:
    url: str
    status_code: int | None  # None: no answer
    raw: str | None  # text when 2xx (capped at MAX_ROBOTS_BYTES), None otherwise (missing = allow all)
    error: str | None = None
    final_url: str | None = None  # where the robots.txt redirects ended (same as url without redirects)


class SitemapCap:
    """Why sitemap reading stopped before the last document (SitemapResult.capped_by)."""

    URLS = "urls"  # max_urls page URLs were read
    DOCUMENTS = "documents"  # MAX_SITEMAP_DOCUMENTS documents were fetched
    DEADLINE = "deadline"  # SITEMAP_DISCOVERY_DEADLINE_S of reading went by


@dataclass
class SitemapResult:
    # Normalised page URLs in document order, deduplicated, when fetch_sitemaps collects them (no `on_urls`).
    urls: list[str] = field(default_factory=list)
    urls_read: int = 0  # page URLs read (with `on_urls`: distinct within a document, not across documents)
    documents_fetched: int = 0
    # Every sitemap document URL seen: declared in robots.txt, listed in an index, or /sitemap.xml when it
    # answered 2xx. Empty means the site has no sitemap (sitemap-missing).
    sitemaps_found: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "url: reason" per failed document
    capped_by: str = ""  # a SitemapCap when a cap stopped the reading: more URLs may exist
    stopped: bool = False  # the `on_urls` consumer asked for no more (its budget is full): not a cap

    @property
    def capped(self) -> bool:
        return bool(self.capped_by)


# --- robots.txt -------------------------------------------------------------------------------------------

ROBOTS_FIELDS = frozenset(
    ("user-agent", "allow", "disallow", "sitemap", "crawl-delay", "host", "request-rate", "visit-time", "clean-param")
)
_ROBOTS_LINE = re.compile(r"^\s*([A-Za-z-]+)\s*:")


def product_token(user_agent: str) -> str:
    """The name robots.txt groups are matched against: "Sitewarden" in "Sitewarden/0.1.0 (+https://…)".

    Matching the whole header would let a group for "github" apply because of the contact URL.
    """
    if limits.USER_AGENT_PRODUCT.lower() in (user_agent or "").lower():
        return limits.USER_AGENT_PRODUCT
    match = re.match(r"\s*([A-Za-z0-9_-]+)", user_agent or "")
    return match.group(1) if match else limits.USER_AGENT_PRODUCT


class Robots:
    """Parsed robots.txt (protego) with Google semantics; missing/failed robots allows everything."""

    def __init__(self, raw: str | None, user_agent: str):
        self.raw = raw
        self.token = product_token(user_agent)
        self._parser = None
        if raw:
            try:
                self._parser = Protego.parse(raw)
            except Exception:  # noqa: BLE001 - an unparsable robots.txt is treated like a missing one
                self._parser = None

    def allowed(self, url: str) -> bool:
        if self._parser is None:
            return True
        try:
            return self._parser.can_fetch(url, self.token)
        except Exception:  # noqa: BLE001 - a rule protego cannot evaluate must not stop the crawl
            return True

    def crawl_delay_s(self) -> float | None:
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(self.token)
        return float(delay) if delay is not None else None

    def sitemaps(self) -> list[str]:
        if self._parser is None:
            return []
        return list(dict.fromkeys(s.strip() for s in self._parser.sitemaps if s and s.strip()))


def invalid_lines(raw: str | None) -> list[str]:
    """Lines of a robots.txt that are neither blank, comments nor `field: value` with a known field."""
    bad: list[str] = []
    for line in (raw or "").lstrip("\ufeff").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ROBOTS_LINE.match(stripped)
        if match is None or match.group(1).lower() not in ROBOTS_FIELDS:
            bad.append(stripped[:200])
            if len(bad) >= limits.MAX_ROBOTS_INVALID_LINES:
                break
    return bad


def _origin(site_url: str) -> str:
    parts = urlsplit(normalize(site_url) or site_url)
    return f"{parts.scheme}://{parts.netloc}"


def _fetch_following(
    session, url: str, *, max_bytes: int, allow_private: bool, pace: Callable[[], None] | None = None
) -> tuple[FetchResult, str, str | None]:
    """fetch() that follows up to MAX_SITEMAP_REDIRECT_HOPS redirects: (last result, its URL, error).

    `pace`, when given, is called before every request (the caller's politeness: it may sleep)."""
    seen = {url}
    for _ in range(limits.MAX_SITEMAP_REDIRECT_HOPS + 1):
        if pace is not None:
            pace()
        result = fetch(session, url, read_body="always", max_bytes=max_bytes, allow_private=allow_private)
        if result.error_kind:
            return result, url, f"{result.error_kind}: {result.error}"
        if not (300 <= (result.status_code or 0) < 400 and result.redirect_url):
            return result, url, None
        target = normalize(result.redirect_url)
        if target is None:
            return result, url, f"redirect to an unusable URL {result.redirect_url[:200]}"
        if target in seen:
            return result, url, "redirect loop"
        seen.add(target)
        url = target
    return result, url, f"more than {limits.MAX_SITEMAP_REDIRECT_HOPS} redirects"


def fetch_robots(
    session, site_url: str, *, allow_private: bool = True, pace: Callable[[], None] | None = None
) -> RobotsResult:
    """GET /robots.txt of the site's origin (redirects followed). raw is None unless it answered 2xx."""
    url = _origin(site_url) + "/robots.txt"
    result, final_url, error = _fetch_following(
        session, url, max_bytes=limits.MAX_ROBOTS_BYTES, allow_private=allow_private, pace=pace
    )
    robots = RobotsResult(url=url, status_code=result.status_code, raw=None, error=error, final_url=final_url)
    if error is None and 200 <= (result.status_code or 0) < 300:
        # robots.txt is UTF-8 by definition (RFC 9309); a stray byte must not lose the whole file.
        robots.raw = result.body.decode("utf-8", errors="replace").lstrip("\ufeff")
    elif error is None and result.status_code is not None and result.status_code >= 400:
        robots.error = f"HTTP {result.status_code}"
    return robots


# --- sitemaps ---------------------------------------------------------------------------------------------


class _Sitemap:
    """What one sitemap document holds: page URLs (urlset, text) or child sitemaps (sitemapindex)."""

    def __init__(self):
        self.kind = ""  # urlset | sitemapindex | text
        self.locs: list[str] = []


def _local_name(tag) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _parse_sitemap(data: bytes, limit: int) -> _Sitemap:
    """Parse sitemap XML or plain text, stopping after `limit` locations. ValueError when it is neither."""
    doc = _Sitemap()
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"<"):
        doc.kind = "text"
        for line in data.decode("utf-8", errors="replace").splitlines():
            line = line.strip()
            if line.lower().startswith(("http://", "https://")):
                doc.locs.append(line)
                if len(doc.locs) >= limit:
                    break
        if not doc.locs and data.strip():
            raise ValueError("neither a sitemap XML document nor a list of URLs")
        return doc
    # Streamed, with the tree pruned as we go: a 10 MiB sitemap never exists as a whole tree.
    # No entities, no DTD, no network: a sitemap is data, not a program.
    events = etree.iterparse(
        io.BytesIO(data),
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        recover=True,
        remove_comments=True,
        remove_pis=True,
    )
    try:
        for event, el in events:
            name = _local_name(el.tag)
            if event == "start":
                if not doc.kind:
                    doc.kind = name
                continue
            if name == "loc" and _local_name(getattr(el.getparent(), "tag", "")) in ("url", "sitemap"):
                loc = (el.text or "").strip()
                if loc:
                    doc.locs.append(loc)
                    if len(doc.locs) >= limit:
                        break
            elif name in ("url", "sitemap"):
                el.clear()
                parent = el.getparent()
                while parent is not None and el.getprevious() is not None:
                    del parent[0]
    except etree.XMLSyntaxError as exc:
        if not doc.kind:
            raise ValueError(f"not XML: {str(exc)[:200]}") from None
    if doc.kind not in ("urlset", "sitemapindex"):
        raise ValueError(f"not a sitemap (root element {doc.kind or 'missing'})")
    return doc


def _document_bytes(result: FetchResult, url: str) -> tuple[bytes, bool]:
    """The body as XML/text: gunzipped when it is gzip (by magic bytes or a .gz name). (data, truncated)."""
    data = result.body
    if data[:2] == b"\x1f\x8b" or (urlsplit(url).path.lower().endswith(".gz") and data[:64].lstrip()[:1] != b"<"):
        return decompress_capped(data, limits.MAX_SITEMAP_BYTES)
    return data, result.truncated


def fetch_sitemaps(
    session,
    site_url: str,
    robots: Robots,
    *,
    max_urls: int,
    allow_private: bool = True,
    pace: Callable[[], None] | None = None,
    only: list[str] | None = None,
    on_urls: Callable[[list[str]], bool] | None = None,
) -> SitemapResult:
    """Sitemap URLs from robots.txt and /sitemap.xml, indexes followed; every cap in limits applies.
    With `only` (list mode's sitemap), those sitemaps and the indexes they name, nothing else.

    Without `on_urls` the URLs are collected in the result, deduplicated. With it, they are handed on as they are
    read, in lists of at most SITEMAP_URLS_PER_HANDOFF (deduplicated within a document; the consumer dedupes
    across them), and none is kept: a sitemap of millions of URLs never exists as one list. `on_urls` returning
    False stops the reading (`stopped`). The time it takes does not count against the discovery deadline, which
    bounds the reading, not what the consumer does with it.

    URLs are normalised but not filtered by site: the caller decides what is internal.
    Never raises; failures are listed in errors (a 404 of the implicit /sitemap.xml is not a failure).
    """
    out = SitemapResult()
    declared = [u for u in (normalize(s, site_url) for s in (robots.sitemaps() if only is None else only)) if u]
    implicit = _origin(site_url) + "/sitemap.xml" if only is None else declared[0] if declared else ""
    queue: deque[tuple[str, int]] = deque((u, 0) for u in dict.fromkeys([*declared, implicit]) if u)
    queued = {u for u, _ in queue}
    out.sitemaps_found.extend(declared)
    deadline = time.monotonic() + limits.SITEMAP_DISCOVERY_DEADLINE_S
    seen: set[str] = set()  # collected: across documents; handed on: within the document being read

    def hand_on(urls: list[str]) -> bool:
        """Give `urls` to the consumer (or the result); False when it wants no more."""
        nonlocal deadline
        if on_urls is None:
            out.urls.extend(urls)
            return True
        started = time.monotonic()
        wanted = on_urls(urls) is not False
        deadline += time.monotonic() - started
        out.stopped = not wanted
        return wanted

    while queue:
        if out.urls_read >= max_urls:
            out.capped_by = SitemapCap.URLS
            break
        if out.documents_fetched >= limits.MAX_SITEMAP_DOCUMENTS:
            out.capped_by = SitemapCap.DOCUMENTS
            break
        if time.monotonic() > deadline:
            out.capped_by = SitemapCap.DEADLINE
            out.errors.append(f"{queue[0][0]}: sitemap discovery deadline of {limits.SITEMAP_DISCOVERY_DEADLINE_S} s")
            break
        url, depth = queue.popleft()
        out.documents_fetched += 1
        result, final_url, error = _fetch_following(
            session, url, max_bytes=limits.MAX_SITEMAP_BYTES, allow_private=allow_private, pace=pace
        )
        status = result.status_code or 0
        if error is None and not 200 <= status < 300:
            if url == implicit and url not in declared and status in (404, 410):
                continue  # no /sitemap.xml: normal, reported by sitemap-missing when nothing else exists
            error = f"HTTP {status}"
        if error is not None:
            out.errors.append(f"{url}: {error}")
            continue
        try:
            data, truncated = _document_bytes(result, final_url)
            truncated = truncated or result.truncated
            # Duplicates of URLs already kept may come first, so the limit is not the URLs still needed.
            doc = _parse_sitemap(data, limit=max_urls + 1)
        except (ValueError, zlib.error, etree.LxmlError) as exc:
            out.errors.append(f"{url}: {str(exc)[:300] or type(exc).__name__}")
            continue
        del result, data  # a 10 MiB document is not held while its URLs are handed on
        if url not in out.sitemaps_found:
            out.sitemaps_found.append(url)
        if truncated:
            out.errors.append(f"{url}: larger than {limits.MAX_SITEMAP_BYTES} bytes, read in part")

        if doc.kind == "sitemapindex":
            for loc in doc.locs:
                child = normalize(loc, final_url)
                if child is None or child in queued:
                    continue
                if depth + 1 > limits.MAX_SITEMAP_INDEX_DEPTH:
                    out.errors.append(f"{child}: sitemap index nested deeper than {limits.MAX_SITEMAP_INDEX_DEPTH}")
                    continue
                queued.add(child)
                out.sitemaps_found.append(child)
                queue.append((child, depth + 1))
            continue
        if on_urls is not None:
            seen = set()
        if not _urls_handed_on(doc.locs, final_url, out, seen, max_urls, hand_on):
            break
    return out


def _urls_handed_on(locs: list[str], base: str, out: SitemapResult, seen: set, max_urls: int, hand_on) -> bool:
    """Normalise one document's page URLs and hand them on in SITEMAP_URLS_PER_HANDOFF lists, up to `max_urls`
    read in all. False when reading stops here (the cap, or the consumer wants no more)."""
    batch: list[str] = []
    for loc in locs:
        page = normalize(loc, base)
        if page is None or page in seen:
            continue
        if out.urls_read >= max_urls:
            out.capped_by = SitemapCap.URLS
            break
        seen.add(page)
        batch.append(page)
        out.urls_read += 1
        if len(batch) >= limits.SITEMAP_URLS_PER_HANDOFF:
            if not hand_on(batch):
                return False
            batch = []
    if batch and not hand_on(batch):
        return False
    return not out.capped_by
