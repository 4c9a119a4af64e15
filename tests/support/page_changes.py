"""An audit with changes against its baseline of every kind the faces show (a title, a description, a page
noindexed, a canonical moved, words up, a URL added and one removed, a robots.txt line, a sitemap that now fails),
for the tests of the selectors, dashboard, exports, API and MCP: rows made directly, as audits.pipeline.changes
leaves them at finalize (PageChange rows, Audit.baseline, Audit.stats["changes"])."""

from collections import Counter

from audits.models import Audit, PageChange
from tests.factories import PageChangeFactory, PageFactory

Field = PageChange.Field
Direction = PageChange.Direction

LONG_TITLE = "A much longer title for the first blog post, " + "with words that go on and on " * 4 + "until it ends"

# name: (path, field, direction, before, after)
CHANGES = {
    "title": ("/blog/a", Field.TITLE, Direction.CHANGED, "First post", LONG_TITLE),
    "description": ("/blog/a", Field.DESCRIPTION, Direction.ADDED, "", "What the first post says"),
    "noindex": ("/blog/b", Field.INDEXABILITY, Direction.DOWN, "indexable", "non-indexable: noindex"),
    "canonical": (
        "/docs/x",
        Field.CANONICAL,
        Direction.CHANGED,
        "https://site.test/docs/x",
        "https://site.test/docs/y",
    ),
    "words": ("/docs/x", Field.WORDS, Direction.UP, "300", "900"),
    "added": ("/new", Field.ADDED, Direction.ADDED, "", "200"),
    "removed": ("/blog/gone", Field.REMOVED, Direction.REMOVED, "200", ""),
    "robots": ("/robots.txt", Field.ROBOTS_TXT, Direction.ADDED, "", "Disallow: /private/"),
    "sitemap": ("/sitemap-blog.xml", Field.SITEMAP, Direction.CHANGED, "read", "error: HTTP 404"),
}
AUDIT_PATHS = ("/blog/a", "/blog/b", "/docs/x", "/new")
BASELINE_PATHS = ("/blog/a", "/blog/b", "/docs/x", "/blog/gone")


def changes_world(audit: Audit, baseline: Audit, *, store_counts: bool = True):
    """`audit` measured against `baseline` (an earlier completed audit of its project): their pages, the CHANGES
    rows and the counts finalize stores. Returns ({name: PageChange}, {path: the audit's Page}, {path: the
    baseline's Page})."""
    base = audit.start_url.rstrip("/")
    pages = {path: PageFactory(audit=audit, url=base + path) for path in AUDIT_PATHS}
    old = {path: PageFactory(audit=baseline, url=base + path) for path in BASELINE_PATHS}
    rows = {
        name: PageChangeFactory(
            audit=audit, baseline=baseline, url=base + path, field=field, direction=direction, before=b, after=a
        )
        for name, (path, field, direction, b, a) in CHANGES.items()
    }
    audit.baseline = baseline
    if store_counts:
        counts = Counter(row.field for row in rows.values())
        audit.stats = {**(audit.stats or {}), "changes": {**counts, "baseline": str(baseline.id)}}
    audit.save(update_fields=["baseline", "stats"])
    return rows, pages, old
