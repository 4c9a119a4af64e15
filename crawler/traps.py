"""Signs of an endless URL space, read from one URL alone: ever-deeper or repeating paths, calendar dates
far from today. Pure functions; the trap policy that applies them, and the counting rules (dated URLs per shape,
query variants per path, the optional per-shape cap, a shape whose pages keep coming back with the same main text)
that need the frontier, is audits.pipeline.traps'. Query keys in another order need no rule:
crawler.urls.normalize sorts them, so a permutation is the same URL.

A rule names a trap by its signs, never by how many URLs share a template: a shop's /product/{id} is
crawled whole, a calendar's /events/2087-03 is not.
"""

import re
from dataclasses import dataclass
from datetime import date
from urllib.parse import parse_qsl, urlsplit

from crawler import limits

# Rule names: stable, they are stored, shown and named in issues.
RULE_PATH_TOO_DEEP = "path-too-deep"
RULE_REPEATING_PATH = "repeating-path"
RULE_CALENDAR = "calendar"
# (The counting rules, dated URLs per shape, query variants per path, identical pages per shape and the optional
# per-shape cap, are scratchpad.SkippedURL's: they need the frontier or the crawled pages.)

# A year (1900..2199) with a month and maybe a day, in one segment (2024-05, 2024_05_03) or in
# consecutive path segments (/2024/05/03): only the year decides, month and day just make it date-like.
_YEAR = r"(?:19|20|21)\d\d"
# The separator is required: an 8-digit product id (20301215) is not a date.
_DATE_IN_SEGMENT = re.compile(rf"(?<!\d)({_YEAR})[-_.](?:0[1-9]|1[0-2])(?:[-_.](?:0[1-9]|[12]\d|3[01]))?(?!\d)")
_YEAR_ONLY = re.compile(rf"^({_YEAR})$")
_MONTH = re.compile(r"^(?:0?[1-9]|1[0-2])$")
_DATE_KEYS = frozenset({"date", "day", "month", "year", "y", "m", "d", "start", "end", "from", "to", "week"})
_YEAR_VALUE = re.compile(rf"^({_YEAR})$")


@dataclass(frozen=True)
class TrapLimits:
    """One audit's trap settings (its project's, snapshotted at start)."""

    max_path_segments: int = limits.TRAP_MAX_PATH_SEGMENTS
    calendar_years_ahead: int = limits.TRAP_CALENDAR_YEARS_AHEAD
    max_query_variants_per_path: int = limits.TRAP_MAX_QUERY_VARIANTS_PER_PATH
    max_dated_urls_per_pattern: int = limits.TRAP_MAX_DATED_URLS_PER_PATTERN
    max_identical_pages_per_pattern: int = limits.TRAP_MAX_IDENTICAL_PAGES_PER_PATTERN
    today: date | None = None  # None: the real today (tests pin it)


@dataclass(frozen=True)
class TrapSigns:
    rule: str  # the rule the URL's own shape breaks, or ""
    dated: bool  # it carries a date (path or a date-like query parameter): counted per shape


def trap_signs(url: str, trap_limits: TrapLimits = TrapLimits()) -> TrapSigns:
    """What one URL says of itself, read once (the persister asks for every new link-found URL)."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    years = _years(segments, parts.query)
    if len(segments) > trap_limits.max_path_segments:
        rule = RULE_PATH_TOO_DEEP
    elif repeats(segments):
        rule = RULE_REPEATING_PATH
    elif _out_of_window(years, trap_limits):
        rule = RULE_CALENDAR
    else:
        rule = ""
    return TrapSigns(rule, bool(years))


def trap_rule(url: str, trap_limits: TrapLimits = TrapLimits()) -> str:
    """The rule a URL's own shape breaks, or "" when it looks like an ordinary page."""
    return trap_signs(url, trap_limits).rule


def repeats(segments: list[str]) -> bool:
    """A segment TRAP_REPEATED_SEGMENT_RUNS times in a row, or a block of 2..N segments twice in a row:
    what a relative link resolved against its own page produces (/a/b/ linking b/ gives /a/b/b/...)."""
    run = 1
    for previous, current in zip(segments, segments[1:], strict=False):
        run = run + 1 if current == previous and not current.isdigit() else 1
        if run >= limits.TRAP_REPEATED_SEGMENT_RUNS:
            return True
    shapes = ["{n}" if s.isdigit() else s for s in segments]
    for size in range(2, limits.TRAP_REPEATED_BLOCK_MAX_SEGMENTS + 1):
        for start in range(len(shapes) - 2 * size + 1):
            block = shapes[start : start + size]
            if block == shapes[start + size : start + 2 * size] and any(s != "{n}" for s in block):
                return True
    return False


def _out_of_window(years: list[int], trap_limits: TrapLimits) -> bool:
    """A year before the web or more than N years after today."""
    if not years:
        return False
    this_year = (trap_limits.today or date.today()).year
    latest = this_year + trap_limits.calendar_years_ahead
    return any(y < limits.TRAP_CALENDAR_EARLIEST_YEAR or y > latest for y in years)


def _years(segments: list[str], query: str) -> list[int]:
    years = []
    for i, segment in enumerate(segments):
        stem = segment.rsplit(".", 1)[0] if "." in segment else segment
        match = _DATE_IN_SEGMENT.search(stem)
        if match:
            years.append(int(match.group(1)))
            continue
        # /2024/05: a year segment followed by a month segment (a lone year is as often a product code)
        year = _YEAR_ONLY.match(stem)
        if year and i + 1 < len(segments) and _MONTH.match(segments[i + 1].rsplit(".", 1)[0]):
            years.append(int(year.group(1)))
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key.lower() in _DATE_KEYS:
            match = _YEAR_VALUE.match(value) or _DATE_IN_SEGMENT.search(value)
            if match:
                years.append(int(match.group(1)))
    return years


def has_date(url: str) -> bool:
    """The URL carries a date (in the path, or a date-like query parameter): counted per shape."""
    return trap_signs(url).dated
