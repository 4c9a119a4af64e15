import ipaddress
import socket

import pytest

from crawler import limits
from crawler.urls import (
    AddressRefused,
    InvalidURL,
    is_public_address,
    normalize,
    remove_dot_segments,
    resolve_public,
    same_site,
    set_allowed_networks,
    validate_start_url,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com", "http://example.com/"),
        ("  HTTP://Example.COM/Path  ", "http://example.com/Path"),  # path case kept
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
        ("http://example.com/?b=2&a=&b=1&c", "http://example.com/?a=&b=2&b=1&c"),  # blanks kept, stable
        ("http://example.com/?", "http://example.com/"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/%7euser/%2f", "http://example.com/~user/%2F"),  # RFC 3986 escape rules
        ("http://bücher.de/straße", "http://xn--bcher-kva.de/stra%C3%9Fe"),
        ("http://EXAMPLE.com./", "http://example.com/"),
        ("http://[0:0::1]:8080/", "http://[::1]:8080/"),
        ("http://example.com/a\tb\n", "http://example.com/ab"),
    ],
)
def test_normalize_table(url, expected):
    assert normalize(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "mailto:someone@example.com",
        "javascript:void(0)",
        "tel:+123",
        "data:text/html,hi",
        "ftp://example.com/",
        "http:///nohost",
        "http://exa mple.com/",
        "http://example.com:99999/",
        "http://example.com:port/",
        "",
        None,
        "http://example.com/" + "a" * limits.MAX_URL_LENGTH,
        "http://[::1/",
    ],
)
def test_normalize_rejects(url):
    assert normalize(url) is None


def test_normalize_resolves_against_base():
    base = "https://example.com/dir/page?x=1"
    assert normalize("../other", base) == "https://example.com/other"
    assert normalize("?q=2", base) == "https://example.com/dir/page?q=2"
    assert normalize("//cdn.example.com/x", base) == "https://cdn.example.com/x"
    assert normalize("#top", base) == "https://example.com/dir/page?x=1"
    assert normalize("mailto:a@b.c", base) is None


def test_normalize_is_idempotent():
    for url in ["http://bücher.de/ä?b=1&a=%7e", "https://x.com/a/../b/?z&y=1#f"]:
        once = normalize(url)
        assert normalize(once) == once


def test_remove_dot_segments():
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("/a/.") == "/a/"
    assert remove_dot_segments("/..") == "/"


def test_same_site():
    site = "https://example.com/"
    assert same_site("https://example.com/a", site)
    assert same_site("http://example.com/a", site)  # scheme does not matter
    assert same_site("https://www.example.com/a", site)
    assert same_site("https://example.com/a", "http://www.example.com/")
    assert not same_site("https://blog.example.com/", site)
    assert not same_site("https://example.org/", site)
    assert not same_site("https://notexample.com/", site)
    assert not same_site("mailto:x@example.com", site)
    assert not same_site("http://127.0.0.1:9000/", "http://127.0.0.1:8000/")  # other port, other site
    assert same_site("http://127.0.0.1:8000/x", "http://127.0.0.1:8000/")


def test_same_site_with_subdomains():
    site = "https://www.example.com/"
    assert same_site("https://blog.example.com/", site, include_subdomains=True)
    assert same_site("https://a.b.example.com/", site, include_subdomains=True)
    assert same_site("https://example.com/", site, include_subdomains=True)
    assert not same_site("https://badexample.com/", site, include_subdomains=True)
    assert not same_site("https://example.com.evil.net/", site, include_subdomains=True)


@pytest.mark.parametrize(
    ("ip", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("127.0.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("240.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped loopback
        ("not-an-ip", False),
    ],
)
def test_is_public_address(ip, public):
    assert is_public_address(ip) is public


def _code(url, allow_private=False):
    with pytest.raises(InvalidURL) as info:
        validate_start_url(url, allow_private=allow_private)
    return info.value.code


def test_validate_start_url_codes():
    assert _code("") == "invalid_url"
    assert _code("   ") == "invalid_url"
    assert _code("http://") == "invalid_url"
    assert _code("http://exa mple.com/") == "invalid_url"
    assert _code("http://-bad-.com/") == "invalid_url"
    assert _code("https://exa$mple.com/") == "invalid_url"
    assert _code("ftp://example.com/") == "unsupported_scheme"
    assert _code("file:///etc/passwd") == "unsupported_scheme"
    assert _code("javascript:alert(1)") == "unsupported_scheme"
    assert _code("mailto:a@example.com") == "unsupported_scheme"
    assert _code("JavaScript://x") == "unsupported_scheme"
    assert _code("https://example.com/" + "a" * limits.MAX_URL_LENGTH) == "url_too_long"


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:8000/",
        "http://localhost/",
        "https://[::1]/",
        "http://0.0.0.0/",
        "http://2130706433/",  # 127.0.0.1 written as one decimal number
    ],
)
def test_validate_start_url_refuses_private_addresses(url):
    assert _code(url) == "private_address"


def test_validate_start_url_allows_private_when_asked():
    assert validate_start_url("http://127.0.0.1:8000", allow_private=True) == "http://127.0.0.1:8000/"
    assert validate_start_url("localhost:8000/x", allow_private=True) == "https://localhost:8000/x"


def test_validate_start_url_without_scheme_means_https():
    assert validate_start_url("Example.com/Shop?b=1&a=2", allow_private=True) == "https://example.com/Shop?a=2&b=1"
    assert validate_start_url("//example.com", allow_private=True) == "https://example.com/"


def test_validate_start_url_dns_failure(monkeypatch):
    def no_dns(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    assert _code("https://no-such-host.example/") == "dns_failure"


def test_validate_start_url_checks_every_resolved_address(monkeypatch):
    # DNS that answers one public and one private address must not pass.
    def mixed(host, port, *args, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    assert _code("https://sneaky.example/") == "private_address"

    def public(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    monkeypatch.setattr(socket, "getaddrinfo", public)
    assert validate_start_url("https://fine.example/", allow_private=False) == "https://fine.example/"


def _teredo(server: str, client: str) -> str:
    # RFC 4380: prefix, server IPv4, flags, obfuscated port, obfuscated (inverted) client IPv4.
    value = (0x2001_0000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | (0xFFFF << 32)
    return str(ipaddress.IPv6Address(value | (int(ipaddress.IPv4Address(client)) ^ 0xFFFF_FFFF)))


# IPv6 spellings that lead to an IPv4 address: the address inside is the one that counts.
WRAPPED_NON_PUBLIC = [
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2002:a00:1::",  # 6to4 of 10.0.0.1
    _teredo("65.54.227.120", "127.0.0.1"),  # Teredo, loopback client
    _teredo("65.54.227.120", "169.254.169.254"),
    _teredo("127.0.0.1", "8.8.8.8"),  # Teredo, loopback server
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::7f00:1",  # local-use NAT64 prefix
    "::ffff:169.254.169.254",
]


@pytest.mark.parametrize("ip", WRAPPED_NON_PUBLIC)
def test_ipv6_wrappings_of_non_public_ipv4_are_not_public(ip):
    assert is_public_address(ip) is False


@pytest.mark.parametrize("ip", ["2002:808:808::1", "64:ff9b::808:808", _teredo("65.54.227.120", "8.8.4.4")])
def test_ipv6_wrappings_of_public_ipv4_are_public(ip):
    assert is_public_address(ip) is True


def test_allowed_networks_apply_to_the_wrapped_address():
    set_allowed_networks(["127.0.0.2/32"])
    try:
        assert is_public_address("2002:7f00:2::") and is_public_address("64:ff9b::7f00:2")
        assert not is_public_address("2002:7f00:1::")
    finally:
        set_allowed_networks([])


@pytest.mark.parametrize("ip", WRAPPED_NON_PUBLIC)
def test_validate_start_url_refuses_wrapped_non_public_addresses(monkeypatch, ip):
    def no_dns(*args, **kwargs):  # an address literal needs no lookup, let alone a connection
        raise AssertionError("a literal address must not be looked up")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(InvalidURL) as info:
        validate_start_url(f"http://[{ip}]/", allow_private=False)
    assert info.value.code == "private_address"
    assert "not a public address" in str(info.value)


def test_refusal_names_the_host_never_the_address_it_resolves_to(monkeypatch):
    def internal(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.9.8.7", port))]

    monkeypatch.setattr(socket, "getaddrinfo", internal)
    with pytest.raises(InvalidURL) as info:
        validate_start_url("https://intranet.example/", allow_private=False)
    assert "intranet.example is not a public address" in str(info.value)
    assert "10.9.8.7" not in str(info.value)
    with pytest.raises(AddressRefused) as refused:
        resolve_public("intranet.example", 443)
    assert "10.9.8.7" not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/a",
        "https://www.example.com/",
        "https://EXAMPLE.com:443/x?y=1",
        "http://other.org/",
        "http://example.com:8080/",
        "http://sub.example.com/",
        "http://user@example.com/",
        "http://[::1]:8000/",
        "http://127.0.0.1:8000/p",
        "http://127.0.0.1:9000/p",
    ],
)
def test_site_matcher_agrees_with_same_site(url):
    from crawler.urls import SiteMatcher, normalize, same_site

    sites = ("https://www.example.com/", "http://127.0.0.1:8000/", "http://[::1]:8000/")
    for subdomains in (False, True):
        matcher = SiteMatcher(*sites, include_subdomains=subdomains)
        expected = any(same_site(url, s, include_subdomains=subdomains) for s in sites)
        assert matcher.matches(normalize(url)) == expected


def test_site_matcher_judges_each_authority_once_and_stays_right_past_its_bound(monkeypatch):
    from crawler import limits
    from crawler.urls import SiteMatcher, normalize, same_site

    monkeypatch.setattr(limits, "SITE_MATCHER_AUTHORITIES_KEPT", 3)
    site = "https://www.example.com/"
    matcher = SiteMatcher(site)
    urls = [normalize(u) for u in ("https://example.com/a", "http://other.org/", "https://example.com/b",
                                   "http://sub.example.com/", "http://example.com:8080/", "https://www.example.com/c",
                                   "http://user@example.com/d", "http://other.org/e")]  # fmt: skip
    for _ in range(2):  # the second pass reads the kept answers, and judges afresh what was not kept
        assert [matcher.matches(u) for u in urls] == [same_site(u, site) for u in urls]
    assert len(matcher._by_authority) == 3
