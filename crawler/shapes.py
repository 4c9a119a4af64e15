"""The shape of a URL, in the three senses the audit needs; each has its own callers and pinned results, so they
stay three functions rather than one with switches:

- url_pattern(url): the crawl's shape of a URL (path segments that are numbers, dates or ids collapse; query keys
  kept, values dropped). Stored on every frontier row (scratchpad Frontier.pattern), named in skipped-URL
  reports, counted by the per-shape cap and the trap rules (dated URLs, identical pages per shape).
- url_template(url): a page template for sampling (Lighthouse runs one page per template): the host kept, dates
  spread over segments (/2024/01/31) and slugs become one placeholder, the query dropped. Coarser than
  url_pattern on purpose: two blog posts are one template, but not one crawl shape.
- path_key(url): the URL without its query, only for URLs that have one: query variants are counted per exact
  path (the trap rule for faceted search), so no segment is collapsed.
"""

import re
from datetime import date
from urllib.parse import parse_qsl, urlsplit

_NUMBER = re.compile(r"^\d+$")

# --- url_pattern -------------------------------------------------------------------------------------
_ID_LIKE = re.compile(r"^(?=.*\d)[0-9a-f-]{8,}$", re.IGNORECASE)  # hex ids, UUIDs, hashes
_DATE_LIKE = re.compile(r"^\d{4}[-_.]\d{1,2}(?:[-_.]\d{1,2})?$")  # 2024-05, 2024-05-03: a calendar's pages, one shape


def url_pattern(url: str) -> str:
    """The URL's shape, named in skipped-URL reports and counted by the optional per-shape cap: numeric,
    date-like and id-like path segments collapse, query values drop.
    /calendar/2024/05?view=month -> /calendar/{n}/{n}?view, /events/2031-01 -> /events/{date}"""
    parts = urlsplit(url)
    segments = []
    for segment in parts.path.split("/"):
        stem, dot, ext = segment.partition(".")
        if _NUMBER.match(stem):
            stem = "{n}"
        elif _DATE_LIKE.match(stem):
            stem = "{date}"
        elif _ID_LIKE.match(stem):
            stem = "{id}"
        segments.append(stem + dot + ext)
    keys = sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return "/".join(segments)[:180] + ("?" + "&".join(keys) if keys else "")[:60]


# --- url_template ------------------------------------------------------------------------------------
_UUID = re.compile(r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$", re.I)
_DATE_DASHED = re.compile(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2}))?$")
_DATE_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+$")
_EXTENSION = re.compile(r"^(.+)(\.[a-z0-9]{1,5})$", re.I)


def _is_date(year: str, month: str, day: str | None = None) -> bool:
    try:
        date(int(year), int(month), int(day or 1))
    except ValueError:
        return False
    return 1900 <= int(year) <= 2100


def _segment_template(segment: str) -> str:
    """The placeholder for one path segment, or the segment itself when it is a fixed word."""
    stem, ext = segment, ""
    if match := _EXTENSION.match(segment):  # /posts/123.html -> /posts/{id}.html
        stem, ext = match.groups()
    if _UUID.match(stem):
        return "{uuid}" + ext
    if (match := _DATE_DASHED.match(stem) or _DATE_COMPACT.match(stem)) and _is_date(*match.groups()):
        return "{date}" + ext
    if _NUMBER.match(stem):
        return "{id}" + ext
    if _SLUG.match(stem) and (stem.count("-") >= 2 or any(c.isdigit() for c in stem)):
        return "{slug}" + ext
    return segment


def url_template(url: str) -> str:
    """The page template of a URL: ids, UUIDs, dates and slugs in the path become placeholders; no query.

    `https://x.test/blog/2024/01/31/my-first-post?page=2` -> `https://x.test/blog/{date}/{slug}`.
    """
    parts = urlsplit(url)
    segments = parts.path.split("/")
    out: list[str] = []
    i = 0
    while i < len(segments):
        seg = segments[i]
        # year/month[/day] spread over segments is one date
        if re.fullmatch(r"\d{4}", seg) and i + 1 < len(segments) and re.fullmatch(r"\d{1,2}", segments[i + 1]):
            day = segments[i + 2] if i + 2 < len(segments) and re.fullmatch(r"\d{1,2}", segments[i + 2]) else None
            span = 3 if day and _is_date(seg, segments[i + 1], day) else 2 if _is_date(seg, segments[i + 1]) else 0
            if span:
                out.append("{date}")
                i += span
                continue
        out.append(_segment_template(seg) if seg else seg)
        i += 1
    path = "/".join(out) or "/"
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


# --- path_key ----------------------------------------------------------------------------------------


def path_key(url: str) -> str:
    """The URL without its query, for counting query variants per exact path; "" for a URL without a query."""
    head, sep, _ = url.partition("?")
    return head[:250] if sep else ""
