"""What an audit may crawl: its site (and subdomains if asked), robots.txt, include/exclude rules, and
the guards against endless URL spaces (max depth, the trap rules of crawler/traps.py, the optional URLs-per-shape
cap, query-string policy), and the one site the project's basic auth is sent to.

Include/exclude rules are user-supplied regular expressions run against every link, so they run on RE2
(linear time): a pattern like (a+)+$ cannot stall a worker on a long URL the way Python's re would.
"""

import logging
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from audits.checks import CheckSettings
from audits.extraction import compile_extractors
from audits.limits import EXTRACTOR_STOPS_BEFORE_SKIP, SCOPE_VERDICTS_KEPT
from audits.models import Audit, Project
from audits.patterns import compile_pattern
from audits.pipeline.traps import pattern_cap, trap_limits_for
from crawler import limits as crawl_limits
from crawler.auth import SiteBasicAuth, site_basic_auth
from crawler.discovery import Robots
from crawler.traps import TrapLimits
from crawler.urls import SiteMatcher

QueryPolicy = Project.QueryPolicy
logger = logging.getLogger(__name__)


def _compile_stored(patterns, kind: str, audit_id) -> tuple[list, list[str]]:
    """Compile the patterns of an audit's config snapshot; a pattern saved before RE2 was required (or
    otherwise uncompilable) is skipped, logged and returned as a note, never crashing a running audit."""
    compiled, skipped = [], []
    for pattern in patterns or []:
        try:
            compiled.append(compile_pattern(pattern))
        except ValueError as exc:
            skipped.append(f"{kind} pattern skipped: {exc}")
            logger.warning("audit %s: %s pattern %r skipped: %s", audit_id, kind, pattern, exc)
    return compiled, skipped


def _extractors(stored) -> list:
    return compile_extractors(stored)


@dataclass
class CrawlScope:
    start_url: str
    site_url: str
    robots: Robots
    include: list = field(default_factory=list)  # compiled by compile_pattern (RE2)
    exclude: list = field(default_factory=list)
    follow_nofollow: bool = False
    include_subdomains: bool = False
    max_depth: int | None = None
    max_urls_per_pattern: int | None = None  # the optional per-shape cap; None: off (the default)
    traps: TrapLimits = field(default_factory=TrapLimits)
    query_policy: str = QueryPolicy.KEEP
    query_keep_keys: frozenset = frozenset()
    checks: CheckSettings = field(default_factory=CheckSettings)
    skipped_patterns: list[str] = field(default_factory=list)  # stored patterns RE2 refused, one note each
    extractors: list = field(default_factory=list)  # the project's custom extractors, compiled (audits/extraction.py)
    follow_links: bool = True  # False in list mode: links are recorded as edges, never queued
    # What allows() decided per URL, depth aside: a site's pages repeat the same navigation and footer links, and
    # robots.txt and the patterns were matched again for each (~0.2 ms a page). Plain dict operations, safe
    # across the chunk's fetch threads; emptied when full.
    _verdicts: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # Pages each custom extractor was stopped on over the time budget, in this chunk (audits/extraction.py).
    _extraction_stops: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def for_audit(cls, audit: Audit) -> "CrawlScope":
        config = audit.config or {}
        include, skipped_include = _compile_stored(config.get("include_patterns"), "include", audit.id)
        exclude, skipped_exclude = _compile_stored(config.get("exclude_patterns"), "exclude", audit.id)
        return cls(
            start_url=audit.start_url,
            site_url=audit.site_url or audit.start_url,
            robots=Robots(audit.robots_txt, user_agent=config.get("user_agent") or crawl_limits.USER_AGENT_PRODUCT),
            include=include,
            exclude=exclude,
            follow_nofollow=bool(config.get("follow_nofollow", False)),
            include_subdomains=bool(config.get("crawl_subdomains", False)),
            max_depth=config.get("max_depth"),
            max_urls_per_pattern=pattern_cap(config.get("max_urls_per_pattern")),
            traps=trap_limits_for(config),
            query_policy=config.get("query_policy", QueryPolicy.KEEP),
            query_keep_keys=frozenset(config.get("query_keep_keys", [])),
            checks=CheckSettings.for_audit(audit),
            skipped_patterns=skipped_include + skipped_exclude,
            extractors=_extractors(config.get("extractors")),
            follow_links=config.get("mode", "crawl") == "crawl",
        )

    def __post_init__(self):
        self._site = SiteMatcher(self.site_url, self.start_url, include_subdomains=self.include_subdomains)

    def extraction_stopped(self, name: str) -> None:
        self._extraction_stops[name] = self._extraction_stops.get(name, 0) + 1

    def extractors_skipped(self) -> frozenset[str]:
        """Extractors stopped on EXTRACTOR_STOPS_BEFORE_SKIP pages of this chunk: not run on its other pages."""
        return frozenset(name for name, n in self._extraction_stops.items() if n >= EXTRACTOR_STOPS_BEFORE_SKIP)

    def is_internal(self, url: str) -> bool:
        """`url` normalised: the site's host (www. or not, http or https), its start host, subdomains if asked."""
        return self._site.matches(url)

    def rewrite(self, url: str) -> str:
        """Apply the query-string policy to a normalised internal URL."""
        if self.query_policy == QueryPolicy.KEEP or "?" not in url:
            return url
        parts = urlsplit(url)
        if self.query_policy == QueryPolicy.STRIP:
            query = ""
        else:
            pairs = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k in self.query_keep_keys]
            query = urlencode(pairs)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))

    def allows(self, url: str, depth: int | None = None) -> bool:
        """Internal, within max depth, allowed by robots.txt, matched by an include rule (if any) and by no
        exclude rule."""
        if self.max_depth is not None and depth is not None and depth > self.max_depth:
            return False
        verdict = self._verdicts.get(url)
        if verdict is None:
            verdict = self._url_allowed(url)
            if len(self._verdicts) >= SCOPE_VERDICTS_KEPT:
                self._verdicts.clear()
            self._verdicts[url] = verdict
        return verdict

    def _url_allowed(self, url: str) -> bool:
        if not self.is_internal(url):
            return False
        if not self.robots.allowed(url):
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)


def audit_site_auth(audit: Audit) -> SiteBasicAuth | None:
    """The project's basic auth, sent only to the project's own site: its base URL's origin (www. or not), and
    subdomains when the project crawls them (the rule of audits.projects.project_site).

    Not to the audit's start URL nor to audit.site_url: a start URL is a request's input and a redirect is a
    site's answer, and neither may choose where the credentials go. audit_start refuses a start URL off the
    project's site anyway; this holds whatever a start, a link, a redirect or a sitemap points at.
    """
    project = audit.project
    return site_basic_auth(
        project.auth_username,
        project.auth_password,
        project.base_url,
        include_subdomains=project.crawl_subdomains,
    )
