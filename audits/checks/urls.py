"""URL checks: how a crawled page's own URL is written, and internal links carrying session or tracking
parameters. Pure string work on normalised URLs (crawler.urls.normalize), no database."""

import re
from urllib.parse import parse_qsl, unquote, urlsplit

EXAMPLES_MAX = 5
# Query keys that make one page many URLs: analytics campaign tags and session ids. utm_* is matched by prefix.
TRACKING_PARAMETERS = frozenset(
    """gclid dclid gbraid wbraid fbclid msclkid yclid twclid ttclid li_fat_id mc_cid mc_eid _ga _gl igshid
    sessionid session_id jsessionid phpsessid aspsessionid sid sessid cfid cftoken zanpid""".split()
)
TRACKING_PREFIXES = ("utm_",)
_PATH_SESSION = re.compile(r";(jsessionid|phpsessid|sessionid|sid)=", re.IGNORECASE)
_ENCODED_NON_ASCII = re.compile(r"%[89a-f][0-9a-f]", re.IGNORECASE)  # a UTF-8 byte of a non-ASCII character
_NUMBER = re.compile(r"^\d+$")


def tracking_keys(url: str) -> list[str]:
    """The session/tracking parameter names in `url` (query keys, or ;jsessionid= in the path), lower-cased."""
    if "?" not in url and ";" not in url:
        return []  # most links: called for every internal link of every page, and parsing each cost ~5 µs
    parts = urlsplit(url)
    keys = [
        key.lower()
        for key, _ in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() in TRACKING_PARAMETERS or key.lower().startswith(TRACKING_PREFIXES)
    ]
    keys += [match.group(1).lower() for match in _PATH_SESSION.finditer(parts.path)]
    return list(dict.fromkeys(keys))


def repeated_segments(path: str) -> list[str]:
    """Path segments that occur more than once (/shop/shop/, /a/b/a/b/); numbers (dates, pages) do not count."""
    segments = [unquote(s).lower() for s in path.split("/") if s and not _NUMBER.match(s)]
    seen: set[str] = set()
    repeated: list[str] = []
    for segment in segments:
        if segment in seen and segment not in repeated:
            repeated.append(segment)
        seen.add(segment)
    return repeated


def url_checks(page, data, add, limit) -> None:
    """URL issues of one 2xx page: its own URL's form, and its internal links with tracking parameters."""
    url = page.url
    parts = urlsplit(url)
    path = parts.path
    if any(c.isupper() for c in path):
        add("url-uppercase", path=path)
    if "_" in path:
        add("url-underscores", path=path)
    if "//" in path:
        add("url-multiple-slashes", path=path)
    # The host is left out: an internationalised domain is the site's name, not a page's mistake.
    if _ENCODED_NON_ASCII.search(path + "?" + parts.query):
        add("url-non-ascii", decoded=unquote(url)[:500])
    if "%20" in url or " " in url:
        add("url-spaces", path=path)
    params = parse_qsl(parts.query, keep_blank_values=True)
    max_params = limit("url-too-many-parameters", "max_params")
    if len(params) > max_params:
        add("url-too-many-parameters", params=len(params), max_params=max_params, query=parts.query[:500])
    repeated = repeated_segments(path)
    if repeated:
        add("url-repetitive-path", path=path, repeated=repeated[:EXAMPLES_MAX])
    if data is None:
        return
    tagged = []
    for link in data.links:
        if not getattr(link, "internal", True):
            continue
        keys = tracking_keys(link.url)
        if keys:
            tagged.append({"href": link.url, "parameters": keys})
    if tagged:
        add("url-tracking-parameters", links_count=len(tagged), links=tagged[:EXAMPLES_MAX])
