"""crawler.auth: which requests may carry the project's basic-auth credentials."""

import base64

import pytest

from crawler.auth import SiteBasicAuth, site_basic_auth
from crawler.fetch import build_session

EXPECTED = "Basic " + base64.b64encode(b"crawler:s3cret").decode()


def _header(auth: SiteBasicAuth, url: str) -> str | None:
    """What a crawl session sends as Authorization with a request for `url`."""
    session = build_session()
    session.auth = auth
    return session.headers_for(url).get("Authorization")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "https://example.com/deep/page?q=1",
        "https://www.example.com/",  # www. or not is one site, as for the crawl's scope
        "https://EXAMPLE.com:443/robots.txt",
    ],
)
def test_sent_to_the_site_itself(url):
    auth = site_basic_auth("crawler", "s3cret", "https://example.com/")
    assert _header(auth, url) == EXPECTED


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.test/",
        "https://example.com.evil.test/",
        "https://evil.test/?next=https://example.com/",
        "https://example.com:8443/",  # another port is another origin
        "https://shop.example.com/",  # subdomains only when the project crawls them
        "http://example.com/",  # https site: never in cleartext
        "ftp://example.com/",
    ],
)
def test_not_sent_anywhere_else(url):
    auth = site_basic_auth("crawler", "s3cret", "https://example.com/")
    assert _header(auth, url) is None


def test_not_sent_to_what_is_not_a_url():
    auth = site_basic_auth("crawler", "s3cret", "https://example.com/")
    assert not auth.sends_to("not a url")
    assert not auth.sends_to("https://" + "a" * 5000 + ".example.com/")


def test_subdomains_when_the_project_crawls_them():
    auth = site_basic_auth("crawler", "s3cret", "https://example.com/", include_subdomains=True)
    assert _header(auth, "https://shop.example.com/") == EXPECTED
    assert _header(auth, "https://shopexample.com/") is None


def test_a_plain_http_site_gets_them_over_http_and_https():
    auth = site_basic_auth("crawler", "s3cret", "http://127.0.0.1:8000/")
    assert _header(auth, "http://127.0.0.1:8000/a") == EXPECTED
    assert _header(auth, "https://127.0.0.1:8000/a") == EXPECTED
    assert _header(auth, "http://127.0.0.1:8001/a") is None


def test_an_authorization_header_from_elsewhere_is_dropped_for_another_origin():
    session = build_session()
    session.headers["authorization"] = "Basic leak"
    session.auth = site_basic_auth("crawler", "s3cret", "https://example.com/")
    assert "authorization" not in {name.lower() for name in session.headers_for("https://evil.test/")}
    assert session.headers_for("https://example.com/") == {**build_session().headers, "Authorization": EXPECTED}


def test_a_password_latin_1_cannot_write_goes_as_utf_8():
    assert _header(site_basic_auth("crawler", "sécret", "https://example.com/"), "https://example.com/") == (
        "Basic " + base64.b64encode("crawler:sécret".encode("latin-1")).decode()
    )
    assert _header(site_basic_auth("crawler", "密码", "https://example.com/"), "https://example.com/") == (
        "Basic " + base64.b64encode("crawler:密码".encode()).decode()
    )


def test_no_user_name_means_no_auth_and_the_password_is_never_shown():
    assert site_basic_auth("", "s3cret", "https://example.com/") is None
    auth = site_basic_auth("crawler", "s3cret", "https://example.com/")
    assert "s3cret" not in repr(auth)
    # Hashable and comparable: chunks pool one session per set of fetch options.
    assert auth == site_basic_auth("crawler", "s3cret", "https://example.com/")
    assert len({auth, site_basic_auth("crawler", "s3cret", "https://example.com/")}) == 1
