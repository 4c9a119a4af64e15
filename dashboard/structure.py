"""Reads of the site structure screen: the audit's pages as a folder tree (by URL path segments), with pages,
issues, pages with errors and a score per folder; each folder is a filter of the pages grid (`?folder=`).

A folder holds every page whose URL starts with it (audits.selectors.pages.folder_prefix: the grid's own filter), so
a folder's page count is the row count of the grid filtered by it. The tree is built in one pass over the
audit's (url, id) rows plus one grouped query of issues per page, both streamed: memory is a few hundred
bytes per folder and a dict entry per page with issues, fine up to the 100,000-page budget; the score costs
one query per scored folder (folder_score), for at most STRUCTURE_SCORED_FOLDERS_MAX folders.
"""

from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from django.db.models import Count, Q, QuerySet

from audits.checks.score import score_breakdown
from audits.models import Audit, Issue, Page
from audits.selectors.pages import folder_prefix

STRUCTURE_LEVELS_MAX = 6  # folders deeper than this are counted in their 6th-level ancestor, not listed
STRUCTURE_OPEN_LEVELS = 1  # folders down to this level are shown open; deeper ones are collapsed <details>
STRUCTURE_CHILDREN_SHOWN = 50  # sub-folders listed per folder, the largest first; the rest are summed up
STRUCTURE_SCORED_FOLDERS_MAX = 30  # folders given a score (one query each), shallowest and largest first
STRUCTURE_FETCH_ROWS = 5000  # rows per fetch of the database cursor


def folder_score(*, audit: Audit, pages: QuerySet) -> int | None:
    """A folder's score, 0-100 (None without pages): the audit's score formula (audits.checks.score) restricted
    to `pages`, a Page queryset of the audit; site-wide findings belong to no folder. The one place the structure
    screen scores a folder."""
    return score_breakdown(audit=audit, pages=pages).score


@dataclass
class Folder:
    name: str  # the path segment ("ref"), or the site ("https://example.com") at the root
    filter: str  # the grid's ?folder= value: "/docs/ref/", or a whole URL prefix on another host
    level: int  # 0 for a site's root
    pages: int = 0  # pages whose URL starts with the folder (its sub-folders' pages included)
    issues: int = 0
    pages_with_errors: int = 0  # pages with at least one critical issue
    score: int | None = None
    scored: bool = False
    children: dict[str, "Folder"] = field(default_factory=dict)
    shown: list["Folder"] = field(default_factory=list)  # the largest children, STRUCTURE_CHILDREN_SHOWN at most
    more_folders: int = 0  # children not shown
    more_pages: int = 0  # pages under them

    @property
    def open(self) -> bool:
        return self.level < STRUCTURE_OPEN_LEVELS


@dataclass
class Structure:
    roots: list[Folder]
    pages: int
    scored: int  # folders with a score (at most STRUCTURE_SCORED_FOLDERS_MAX)
    folders: int  # folders in the tree


def _issue_counts(audit: Audit) -> dict:
    """{page id: (issues, has a critical issue)} for the pages with issues: one grouped query, streamed."""
    rows = (
        Issue.objects.filter(audit=audit, page_id__isnull=False)
        .order_by()
        .values("page_id")
        .annotate(n=Count("id"), critical=Count("id", filter=Q(severity=Issue.Severity.CRITICAL)))
        .values_list("page_id", "n", "critical")
    )
    return {page_id: (n, critical > 0) for page_id, n, critical in rows.iterator(chunk_size=STRUCTURE_FETCH_ROWS)}


def site_structure(*, audit: Audit) -> Structure:
    """The audit's folder tree: one root per site (scheme and host; the audit's own site first), folders by
    path segment up to STRUCTURE_LEVELS_MAX levels, each with its pages, issues, pages with errors and (for
    the first STRUCTURE_SCORED_FOLDERS_MAX, shallowest then largest) its score."""
    site = urlsplit(audit.site_url or audit.start_url)
    own_origin = f"{site.scheme}://{site.netloc}"
    issues = _issue_counts(audit)
    roots: dict[str, Folder] = {}
    total = 0
    for page_id, url in Page.objects.filter(audit=audit).values_list("id", "url").iterator(STRUCTURE_FETCH_ROWS):
        total += 1
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        root = roots.get(origin)
        if root is None:
            root = roots[origin] = Folder(origin, "/" if origin == own_origin else origin + "/", 0)
        n, critical = issues.get(page_id, (0, False))
        segments = parts.path.split("/")[1:-1][:STRUCTURE_LEVELS_MAX]  # the folders: up to the last "/"
        folder = root
        for level, segment in enumerate([None, *segments]):
            if segment is not None:
                child = folder.children.get(segment)
                if child is None:
                    child = folder.children[segment] = Folder(unquote(segment), f"{folder.filter}{segment}/", level)
                folder = child
            folder.pages += 1
            folder.issues += n
            folder.pages_with_errors += critical
    ordered = sorted(roots.values(), key=lambda r: (r.filter != "/", r.name))
    folders = _order(ordered)
    _score(audit, ordered)
    return Structure(ordered, total, sum(1 for f in _walk(ordered) if f.scored), folders)


def _order(folders: list[Folder]) -> int:
    """Keep the largest children of each folder (by pages, then name) and sum up the rest; returns folders."""
    count = 0
    for folder in folders:
        count += 1
        children = sorted(folder.children.values(), key=lambda c: (-c.pages, c.name))
        folder.shown = children[:STRUCTURE_CHILDREN_SHOWN]
        rest = children[STRUCTURE_CHILDREN_SHOWN:]
        folder.more_folders, folder.more_pages = len(rest), sum(c.pages for c in rest)
        count += len(rest)
        count += _order(folder.shown)
    return count


def _walk(folders: list[Folder]):
    for folder in folders:
        yield folder
        yield from _walk(folder.shown)


def _score(audit: Audit, roots: list[Folder]) -> None:
    """Score the shallowest folders first, the largest first within a level, up to the cap."""
    queue = sorted(_walk(roots), key=lambda f: (f.level, -f.pages, f.filter))[:STRUCTURE_SCORED_FOLDERS_MAX]
    for folder in queue:
        pages = Page.objects.filter(audit=audit, url__startswith=folder_prefix(audit=audit, folder=folder.filter))
        folder.score = folder_score(audit=audit, pages=pages)
        folder.scored = True
