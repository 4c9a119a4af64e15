"""URL rules: normalisation, same-site tests, validation of user-supplied start URLs."""

import functools
import ipaddress
import re
import socket
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import safe_url_string

from crawler import limits

CRAWLABLE_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

# An input this long cannot normalise to <= MAX_URL_LENGTH except through a huge fragment or
# dot-segments; refusing it early bounds the work spent on hostile hrefs.
_MAX_RAW_URL_CHARS = 8 * limits.MAX_URL_LENGTH

# WHATWG "forbidden host code points" that survive safe_url_string, plus controls.
_BAD_HOST_CHARS = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|\"`{}]")
# Stricter rule for a start URL a person typed: DNS names (labels of letters, digits, '-', '_').
_DNS_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# Printable ASCII without space or the characters safe_url_string would escape ("<>\"`{}|\\^").
_PLAIN_ASCII_URL = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")
_PERCENT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# "scheme:" at the start of what a person typed; "example.com:8080" is a host and port, not a scheme.
_TYPED_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):(?!\d+(?:[/?#]|$))")


_UNSUPPORTED = "Only http and https URLs can be audited (not {}:)."


class InvalidURL(ValueError):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        # invalid_url | unsupported_scheme | url_too_long | credentials_in_url | private_address | dns_failure
        self.code = code


def _normalize_escape(match: re.Match) -> str:
    # RFC 3986 6.2.2: upper-case hex, and unreserved characters need no escaping at all.
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4: resolve '.' and '..' segments of an absolute path."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def _sorted_query(query: str) -> str:
    # Sort by key only: sorted() is stable, so repeated keys keep their order; blank values stay.
    parts = [p for p in query.split("&") if p]
    parts.sort(key=lambda p: p.split("=", 1)[0])
    return "&".join(parts)


def normalize(url: str, base: str | None = None) -> str | None:
    """Absolute, canonical form of `url` (resolved against base), or None if it is not crawlable http(s).

    Lower-cased scheme and host, IDNA host, no default port, no fragment, sorted query keys, "/" for an
    empty path, dot-segments removed, escapes normalised. Path case and query values are kept. Never raises.
    """
    if not isinstance(url, str) or len(url) > _MAX_RAW_URL_CHARS:
        return None
    url = url.strip()
    if base:
        try:
            url = _join(base.strip(), url)
        except ValueError:
            return None
    return _normalize_absolute(url)


def _join(base: str, url: str) -> str:
    # Fast paths for the two shapes most hrefs have; urljoin (slow) for the rest.
    if url[:8].lower().startswith(("http://", "https://")):
        return url
    if url.startswith("/") and not url.startswith(("//", "/\\")):
        origin = _origin(base)
        if origin:
            return origin + url
    return urljoin(base, url)


@functools.lru_cache(maxsize=256)
def _origin(base: str) -> str | None:
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


# Pages of one site repeat the same links (navigation, footer): a per-process cache saves most of the work.
@functools.lru_cache(maxsize=limits.NORMALIZE_CACHE_ENTRIES)
def _normalize_absolute(url: str) -> str | None:
    try:
        if not _PLAIN_ASCII_URL.match(url):  # safe_url_string is the slow part; most URLs need nothing of it
            url = safe_url_string(url)
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in CRAWLABLE_SCHEMES:
            return None
        host = (parts.hostname or "").rstrip(".")
        if not host or (_BAD_HOST_CHARS.search(host) and ":" not in host):
            return None
        if ":" in host:  # IPv6 literal: canonical compressed form
            host = "[" + ipaddress.IPv6Address(host).compressed + "]"
        port = parts.port  # ValueError on junk or out-of-range ports
        netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
        if "@" in parts.netloc:
            netloc = parts.netloc.rsplit("@", 1)[0] + "@" + netloc
        path = remove_dot_segments(_PERCENT_ESCAPE.sub(_normalize_escape, parts.path) or "/")
        query = _sorted_query(_PERCENT_ESCAPE.sub(_normalize_escape, parts.query))
        result = urlunsplit((scheme, netloc, path, query, ""))
    except (ValueError, UnicodeError, TypeError):
        return None
    if len(result) > limits.MAX_URL_LENGTH:
        return None
    return result


def _host_and_port(url: str) -> tuple[str, int | None] | None:
    normalized = normalize(url)
    if normalized is None:
        return None
    parts = urlsplit(normalized)
    # normalize() dropped default ports, so an http and an https URL of the same site compare equal.
    return (parts.hostname or ""), parts.port


def same_site(url: str, site_url: str, *, include_subdomains: bool = False) -> bool:
    """Same host as site_url, or differing only by a leading 'www.'; http vs https does not matter.

    An explicit non-default port must match too (127.0.0.1:8000 and 127.0.0.1:9000 are two sites).
    With include_subdomains, any subdomain of the site's host (without 'www.') also counts.
    """
    a = _host_and_port(url)
    b = _host_and_port(site_url)
    if a is None or b is None or a[1] != b[1]:
        return False
    host, site_host = a[0], b[0]
    if host.startswith("www."):
        host = host[4:]
    if site_host.startswith("www."):
        site_host = site_host[4:]
    if host == site_host:
        return True
    return include_subdomains and host.endswith("." + site_host)


class SiteMatcher:
    """same_site() against one or more site URLs, fast on normalised URLs: the crawl asks it for every link."""

    def __init__(self, *site_urls: str, include_subdomains: bool = False):
        self.include_subdomains = include_subdomains
        self._by_authority: dict[str, bool] = {}  # bounded: SITE_MATCHER_AUTHORITIES_KEPT
        self.sites: set[tuple[str, int | None]] = set()
        for site_url in site_urls:
            hp = _host_and_port(site_url)
            if hp is not None:
                self.sites.add((hp[0].removeprefix("www."), hp[1]))

    def matches(self, url: str) -> bool:
        """`url` must already be normalised (as crawler.parse links and the frontier's URLs are)."""
        scheme_end = url.find("://")
        if scheme_end < 0:
            return False
        netloc_end = url.find("/", scheme_end + 3)
        authority = url[scheme_end + 3 : netloc_end if netloc_end >= 0 else None]
        # A page's ~30 link targets name a handful of hosts: each authority is judged once (the crawl asks for every
        # distinct target of every page).
        known = self._by_authority.get(authority)
        if known is None:
            known = self._authority_matches(authority)
            if len(self._by_authority) < limits.SITE_MATCHER_AUTHORITIES_KEPT:
                self._by_authority[authority] = known
        return known

    def _authority_matches(self, authority: str) -> bool:
        netloc = authority.rpartition("@")[2]
        host, port = netloc, None
        if netloc.startswith("["):  # IPv6 literal
            close = netloc.find("]")
            host, rest = netloc[1:close], netloc[close + 1 :]
            port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
        elif ":" in netloc:
            host, _, port_text = netloc.rpartition(":")
            port = int(port_text) if port_text.isdigit() else None
        host = host.removeprefix("www.")
        if (host, port) in self.sites:
            return True
        return self.include_subdomains and any(
            p == port and host.endswith("." + site_host) for site_host, p in self.sites
        )


_allowed_networks: tuple = ()

# Prefixes that carry an IPv4 address inside an IPv6 one: a packet to them ends up at the embedded IPv4
# address (through a translator or a tunnel), so that address is the one to vet.
_NAT64_PREFIXES = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_TEREDO_PREFIX = ipaddress.ip_network("2001::/32")


# A refusal caused by the SSRF policy names the settings that decide it (config/settings/base.py), so whoever reads
# it knows what an operator can change. Plain text: crawler imports nothing of Django.
PRIVATE_TARGETS_HINT = (
    "set ALLOW_PRIVATE_TARGETS=true to audit private addresses, or list the network in ALLOWED_PRIVATE_NETWORKS"
)


class AddressRefused(Exception):
    """The host resolves to an address the SSRF policy refuses. The message names the host, never the
    address: what an internal name resolves to is none of the requester's business."""

    def __init__(self, host: str):
        super().__init__(f"{host} is not a public address ({PRIVATE_TARGETS_HINT})")
        self.host = host


def set_allowed_networks(cidrs) -> None:
    """Networks an operator trusts although they are not public (e.g. an intranet to audit); the SSRF
    policy treats their addresses as public. Set once per process from settings."""
    global _allowed_networks
    _allowed_networks = tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses an IPv6 address stands for (mapped, 6to4, Teredo server and client, NAT64), or
    None when it is a plain IPv6 address."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip in _TEREDO_PREFIX:
        server, client = ip.teredo
        return [server, client]
    if any(ip in prefix for prefix in _NAT64_PREFIXES):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return None


def _is_public_ip(ip) -> bool:
    if any(ip in net for net in _allowed_networks):
        return True
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def is_public_address(ip_str: str) -> bool:
    """True when `ip_str` is a globally routable unicast address (not loopback, private, link-local, …)
    or lies in a network allowed by set_allowed_networks(). An IPv6 address that embeds IPv4 (mapped,
    6to4, Teredo, NAT64) is judged by the IPv4 addresses it carries: all of them must be public."""
    try:
        ip = ipaddress.ip_address(ip_str.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    if any(ip in net for net in _allowed_networks):
        return True
    embedded = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    if embedded is not None:
        return all(_is_public_ip(v4) for v4 in embedded)
    return _is_public_ip(ip)


def resolve_host(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the literal itself for an IP); socket.gaierror when it does not."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


def resolve_public(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, when all of them are public (is_public_address): the one vetting
    the crawler, webhooks and the egress proxy share. Connect only to an address returned here, never to
    the name, so a second lookup cannot swap the address (DNS rebinding).

    Raises AddressRefused when any address is not public, OSError (socket.gaierror) or UnicodeError when
    the name does not resolve.
    """
    addresses = resolve_host(host, port)
    if not addresses:
        raise socket.gaierror(socket.EAI_NONAME, "no address")
    if not all(is_public_address(a) for a in addresses):
        raise AddressRefused(host)
    return addresses


def scheme_typed(url: str) -> bool:
    """Whether a person typed a scheme ("https://example.com") rather than a bare host ("example.com",
    "//example.com"), which with_scheme takes as https."""
    url = url.strip()
    return not url.startswith("//") and with_scheme(url) == url


def with_scheme(url: str) -> str:
    """What a person typed, with https:// in front when it has no scheme ("example.com/shop", "//example.com");
    InvalidURL("unsupported_scheme") for any scheme but http and https ("javascript:alert(1)", "ftp://x").
    The first check of every typed URL, so a refused scheme is never answered with another rule's message."""
    url = url.strip()
    if url.startswith("//"):
        return "https:" + url
    scheme = _TYPED_SCHEME.match(url)
    if scheme is None or ("." in scheme.group(1) and "://" not in url):  # "example.com:80a": a host, a bad port
        return url if "://" in url else "https://" + url
    if scheme.group(1).lower() not in CRAWLABLE_SCHEMES:
        raise InvalidURL("unsupported_scheme", _UNSUPPORTED.format(scheme.group(1)))
    return url


def validate_start_url(url: str, *, allow_private: bool) -> str:
    """Normalised start URL or InvalidURL with a stable code and a sentence a person understands.

    A URL typed without a scheme ("example.com/shop") is taken as https. With allow_private=False every
    address the host resolves to must be public (codes private_address, dns_failure); with
    allow_private=True no DNS lookup is made.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidURL("invalid_url", "Enter the address of a website, e.g. https://example.com.")
    url = url.strip()
    if len(url) > limits.MAX_URL_LENGTH:
        raise InvalidURL("url_too_long", f"The address is longer than {limits.MAX_URL_LENGTH} characters.")
    url = with_scheme(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        raise InvalidURL("invalid_url", "This does not look like a web address.") from None
    if not parts.scheme:
        raise InvalidURL("invalid_url", "This does not look like a web address.")
    if parts.scheme.lower() not in CRAWLABLE_SCHEMES:
        raise InvalidURL("unsupported_scheme", _UNSUPPORTED.format(parts.scheme))
    raw_host = parts.netloc.rsplit("@", 1)[-1]
    if not parts.hostname or any(c.isspace() for c in raw_host):
        raise InvalidURL("invalid_url", "The address has no valid host name.")
    if "@" in parts.netloc:
        # Credentials in the URL would be stored, shown and sent wherever the URL goes; the basic-auth
        # fields keep them on the site's own origin. "https://example.com@evil.test" is refused too.
        raise InvalidURL(
            "credentials_in_url",
            "The address contains a user name or password (user:pass@); "
            "put the user name and password in the project's basic-auth fields instead.",
        )
    normalized = normalize(url)
    if normalized is None:
        if len(safe_url_string(url)) > limits.MAX_URL_LENGTH:
            raise InvalidURL("url_too_long", f"The address is longer than {limits.MAX_URL_LENGTH} characters.")
        raise InvalidURL("invalid_url", "This does not look like a web address.")
    norm_parts = urlsplit(normalized)
    host = norm_parts.hostname or ""
    is_ip = True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        is_ip = False
    if not is_ip and not all(_DNS_LABEL.match(label) for label in host.split(".")):
        raise InvalidURL("invalid_url", f"{host!r} is not a valid host name.")
    if not allow_private:
        port = norm_parts.port or DEFAULT_PORTS[norm_parts.scheme]
        try:
            resolve_public(host, port)
        except AddressRefused:
            raise InvalidURL(
                "private_address",
                f"{host} is not a public address: private and reserved networks cannot be audited "
                f"({PRIVATE_TARGETS_HINT}).",
            ) from None
        except (OSError, UnicodeError):
            raise InvalidURL("dns_failure", f"The host name {host} could not be resolved.") from None
    return normalized
