"""HTTP basic auth that stays on the project's own site: never sent to another origin, whatever links,
redirects or robots.txt point at."""

import base64
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from crawler.urls import SiteMatcher, normalize


@dataclass(frozen=True)
class SiteBasicAuth:
    """Basic-auth credentials that go only to requests for the site's own hosts (crawler.fetch.CrawlSession asks
    `header_for` before every request).

    The site is `site_urls` as crawler.urls.SiteMatcher sees it (host and port; "www." or not; subdomains
    when `include_subdomains`). The crawl follows redirects one hop at a time, so every hop, robots.txt
    and every sitemap is a new request judged here: a redirect or a sitemap on another origin gets no
    credentials. When every site URL is https, plain http gets none either (no downgrade to cleartext).
    Frozen and hashable, so it can be part of a key that pools sessions.
    """

    username: str
    password: str
    site_urls: tuple[str, ...]
    include_subdomains: bool = False
    _site: SiteMatcher = field(init=False, repr=False, compare=False)
    _http_allowed: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_site", SiteMatcher(*self.site_urls, include_subdomains=self.include_subdomains))
        schemes = {urlsplit(u).scheme.lower() for u in self.site_urls}
        object.__setattr__(self, "_http_allowed", "http" in schemes)

    def sends_to(self, url: str) -> bool:
        """True when a request for `url` may carry the credentials."""
        normalized = normalize(url)
        if normalized is None:
            return False
        if normalized.startswith("http://") and not self._http_allowed:
            return False
        return self._site.matches(normalized)

    def header_for(self, url: str) -> str | None:
        """The Authorization header's value for a request for `url`, or None when the credentials may not go there.
        "user:password" in base64: latin-1, as browsers and requests' HTTPBasicAuth write it, UTF-8 (RFC 7617's
        charset) when latin-1 cannot write it."""
        if not self.sends_to(url):
            return None
        credentials = f"{self.username}:{self.password}"
        try:
            raw = credentials.encode("latin-1")
        except UnicodeEncodeError:
            raw = credentials.encode("utf-8")
        return "Basic " + base64.b64encode(raw).decode("ascii")

    def __repr__(self) -> str:  # never print the password (task logs, tracebacks)
        return f"SiteBasicAuth(username={self.username!r}, site_urls={self.site_urls!r})"


def site_basic_auth(
    username: str | None, password: str | None, *site_urls: str, include_subdomains: bool = False
) -> SiteBasicAuth | None:
    """The auth for a project's credentials, or None when it has no user name (no auth at all)."""
    if not username:
        return None
    return SiteBasicAuth(username, password or "", tuple(site_urls), include_subdomains=include_subdomains)
