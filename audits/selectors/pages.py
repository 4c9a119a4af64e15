"""Reads of an audit's pages: the pages grid (its views, filters, sorts and keyset columns), the rows an export
streams, and one page with its issues and its crawl path. The dashboard's grid and page detail, the MCP server's
pages tool and the exports read through here.

The grid is a crawler's main table: views (all pages, titles, meta descriptions, H1, canonicals, directives),
each with its own filters (missing, duplicate, over/under N characters, non-indexable, …) and default columns,
and the inlinks count computed in the database. The filtered queryset is the one the on-screen table pages
through and the one the exports stream, so an export has exactly the rows on screen.
"""

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.db.models import Count, Exists, F, FilteredRelation, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Length
from django.http import Http404

from audits.checks.registry import CHECKS_BY_TYPE, SEVERITIES, CheckSpec
from audits.comparison import check_spec
from audits.evidence import count_label, evidence_columns, evidence_count_unit, evidence_records
from audits.models import Audit, Issue, Page, PageCounts
from audits.segments import SegmentChoice
from audits.selectors.links import inlink_pages_subquery, page_inlinks_count
from audits.selectors.pagination import KeysetColumn
from audits.stats import NO_STATUS, issue_type_counts, status_span

HTML_TYPES = ("text/html", "application/xhtml+xml")
# The pages the text views list (only 2xx HTML pages have a title, a description, an H1, a canonical): PageCounts.html
# is this, stored by finalize (audits.pipeline.page_totals).
HTML_PAGE_Q = Q(status_code__gte=200, status_code__lt=300, content_type__in=HTML_TYPES)


ISSUE_ROWS_PER_TYPE = 20  # evidence rows shown per issue type on a page; the issue's own screen has them all


def _threshold(issue_type: str, key: str, default: int) -> int:
    spec = CHECKS_BY_TYPE.get(issue_type)
    return int(spec.thresholds.get(key, default)) if spec else default


@dataclass(frozen=True)
class PageColumn:
    key: str
    label: str
    sort: str = ""  # key in PAGE_SORTS; "" when the column is not sortable
    num: bool = False
    help: str = ""
    extractor: str = ""  # a custom extractor's name: the column shows Page.extracted[extractor]


COLUMNS = {
    c.key: c
    for c in (
        PageColumn("url", "URL", "url"),
        PageColumn("status", "Status", "status", True),
        PageColumn("fetch", "Fetch"),
        PageColumn("indexable", "Indexable"),
        PageColumn("depth", "Depth", "depth", True, "Clicks from the start page"),
        PageColumn("inlinks", "Inlinks", "inlinks", True, "Links to this URL from crawled pages, and their pages"),
        PageColumn("title", "Title", "title"),
        PageColumn("title_len", "Title chars", "title_len", True),
        PageColumn("description", "Meta description"),
        PageColumn("description_len", "Description chars", "description_len", True),
        PageColumn("h1", "First H1", "h1"),
        PageColumn("h1_len", "H1 chars", "h1_len", True),
        PageColumn("h1_count", "H1s", "h1_count", True),
        PageColumn("canonical", "Canonical"),
        PageColumn("meta_robots", "Meta robots"),
        PageColumn("x_robots", "X-Robots-Tag"),
        PageColumn("time", "Response", "time", True),
        PageColumn("size", "Size", "size", True),
        PageColumn("words", "Words", "words", True),
        PageColumn("sitemap", "In sitemap"),
        PageColumn("issues", "Issues", "issues", True),
    )
}


PAGE_SORTS = {
    "url": ("url",),
    "status": ("status_code", "url"),
    "depth": ("depth", "url"),
    "inlinks": ("inlinks", "url"),
    "title": ("title", "url"),
    "title_len": ("title_len", "url"),
    "description_len": ("description_len", "url"),
    "h1": ("h1", "url"),
    "h1_len": ("h1_len", "url"),
    "h1_count": ("h1_count", "url"),
    "time": ("response_time_ms", "url"),
    "size": ("bytes", "url"),
    "words": ("word_count", "url"),
    "issues": ("issues_total", "url"),
}


# Filters of the text views; `over`/`under` compare with N characters (the view's default N is the check's).
TEXT_FILTERS = (
    ("missing", "Missing"),
    ("duplicate", "Duplicate"),
    ("over", "Over N characters"),
    ("under", "Under N characters"),
    ("non_indexable", "Non-indexable"),
)


@dataclass(frozen=True)
class PageView:
    key: str
    label: str
    columns: tuple[str, ...]  # shown by default, in order
    filters: tuple[tuple[str, str], ...] = ()
    text_field: str = ""  # the Page field the missing/duplicate/length filters look at
    over_chars: int = 0
    under_chars: int = 0
    html_only: bool = False  # only 2xx HTML pages have a title, a description, an H1, a canonical


VIEWS = {
    v.key: v
    for v in (
        PageView(
            "all",
            "All pages",
            ("url", "status", "indexable", "depth", "inlinks", "title", "time", "words", "issues"),
            (("non_indexable", "Non-indexable"),),
        ),
        PageView(
            "titles",
            "Titles",
            ("url", "title", "title_len", "indexable", "inlinks"),
            TEXT_FILTERS,
            "title",
            _threshold("title-too-long", "max_chars", 60),
            _threshold("title-too-short", "min_chars", 10),
            True,
        ),
        PageView(
            "descriptions",
            "Meta descriptions",
            ("url", "description", "description_len", "indexable"),
            TEXT_FILTERS,
            "meta_description",
            _threshold("meta-description-too-long", "max_chars", 160),
            _threshold("meta-description-too-short", "min_chars", 70),
            True,
        ),
        PageView(
            "h1",
            "H1",
            ("url", "h1", "h1_len", "h1_count", "indexable"),
            (*TEXT_FILTERS[:2], ("multiple", "More than one H1"), *TEXT_FILTERS[2:]),
            "h1",
            70,
            5,
            True,
        ),
        PageView(
            "canonicals",
            "Canonicals",
            ("url", "canonical", "status", "indexable"),
            (
                ("missing", "Missing"),
                ("self", "Self-referencing"),
                ("other", "Canonicalised to another URL"),
                ("non_indexable", "Non-indexable"),
            ),
            html_only=True,
        ),
        PageView(
            "directives",
            "Directives",
            ("url", "meta_robots", "x_robots", "status", "indexable"),
            (
                ("any", "Any robots directive"),
                ("noindex", "noindex"),
                ("nofollow", "nofollow"),
                ("non_indexable", "Non-indexable"),
            ),
        ),
    )
}


DEFAULT_VIEW = "all"


def view_for(key: str) -> PageView:
    return VIEWS.get(key) or VIEWS[DEFAULT_VIEW]


@dataclass(frozen=True)
class IssueTypeChoice:
    """One issue type the grid can filter by: every type of the audit whose findings name a page."""

    type: str
    title: str
    pages: int  # distinct pages the type's issues name: IssueSummary.pages, the issues table's "pages affected"

    @property
    def label(self) -> str:
        return f"{self.title} ({count_label(self.pages, 'pages')})"


def page_issue_types(*, audit: Audit) -> tuple[list[IssueTypeChoice], list[str]]:
    """(the types the "Has issue" filter offers, titles of the site-wide types it cannot offer).

    Every type whose issues name a page is a choice: page checks, link checks (the page holding the link),
    redirect chains and loops (the first URL of the chain), duplicate and near-duplicate groups (every page of
    a group has its own row), orphans. Filtering by one lists the pages its issues name (Issue.page), so the
    grid's count is the issues table's "pages affected" (audits.priority.IssueSummary.pages, the same
    distinct count). Site-wide findings (no sitemap, a missing security header across the site) name no
    page: they are left out and said so. Read from the stored counts of a completed audit (audits.stats)."""
    pages: dict[str, int] = {}
    site: set[str] = set()
    for row in issue_type_counts(audit=audit):
        pages[row["type"]] = pages.get(row["type"], 0) + row["pages"]
        if row["site"]:
            site.add(row["type"])
    choices = [IssueTypeChoice(t, check_spec(t).title, n) for t, n in pages.items() if n]
    choices.sort(key=lambda c: (c.title.lower(), c.type))
    site_wide = sorted(check_spec(t).title for t in site if not pages.get(t))
    return choices, site_wide


def issues_count_subquery():
    """An annotation for a Page queryset: the page's issue rows, counted now (finalize stores it as
    PageCounts.issues; this is for an audit that has not completed)."""
    return Coalesce(
        Subquery(
            Issue.objects.filter(page_id=OuterRef("pk"))
            .order_by()
            .values("page_id")
            .annotate(n=Count("id"))
            .values("n")[:1],
            output_field=IntegerField(),
        ),
        Value(0),
    )


def _text_filter(pages: QuerySet, base: QuerySet, view: PageView, show: str, chars: int | None) -> QuerySet:
    name = view.text_field
    present = ~Q(**{name: ""}) & Q(**{f"{name}__isnull": False})
    if show == "missing":
        return pages.filter(~present)
    if show == "duplicate":
        # One GROUP BY over the audit's pages, joined as a set: linear, where a per-row EXISTS is quadratic.
        repeated = base.filter(present).order_by().values(name).annotate(n=Count("id")).filter(n__gt=1).values(name)
        return pages.filter(present, **{f"{name}__in": repeated})
    if show == "multiple":
        return pages.filter(h1_count__gt=1)
    length = Length(name)
    if show == "over":
        return pages.alias(text_len=length).filter(text_len__gt=chars if chars is not None else view.over_chars)
    if show == "under":
        limit = chars if chars is not None else view.under_chars
        return pages.filter(present).alias(text_len=length).filter(text_len__lt=limit)
    return pages


def page_filter(
    *,
    audit: Audit,
    view: str = DEFAULT_VIEW,
    show: str = "",
    chars: int | None = None,
    status: str = "",
    fetch_class: str = "",
    indexable: str = "",
    issue_type: str = "",
    url_contains: str = "",
    folder: str = "",
    segment: SegmentChoice | None = None,
) -> QuerySet:
    """The audit's pages that pass the filters of one view. `show` is one of the view's filters;
    `chars` is N of the over/under filters (the view's default when None); status is "404", "4xx" or
    "none" (no HTTP answer); indexable is "yes" | "no"; issue_type any issue type (the pages its issues
    name: page_issue_types); folder a path prefix ("/docs/", on the audit's site) or a whole URL prefix
    ("https://blog.example.com/2024/", for another host of the audit: folder_prefix); `segment`: its pages
    only (audits.segments)."""
    spec = view_for(view)
    pages = Page.objects.filter(audit=audit)
    if spec.html_only:
        pages = pages.filter(HTML_PAGE_Q)
    elif spec.key == "directives":
        pages = pages.filter(status_code__isnull=False)
    base = pages
    if show == "non_indexable":
        pages = pages.filter(is_indexable=False)
    elif spec.text_field and show in dict(spec.filters):
        pages = _text_filter(pages, base, spec, show, chars)
    elif spec.key == "canonicals":
        if show == "missing":
            pages = pages.filter(canonical_url="", canonical_header="")
        elif show == "self":
            pages = pages.filter(Q(canonical_url=F("url")) | Q(canonical_url="", canonical_header=F("url")))
        elif show == "other":
            pages = (
                pages.exclude(canonical_url="", canonical_header="")
                .exclude(canonical_url=F("url"))
                .exclude(canonical_url="", canonical_header=F("url"))
            )
    elif spec.key == "directives":
        if show == "any":
            pages = pages.exclude(meta_robots="", x_robots_tag="")
        elif show in ("noindex", "nofollow"):
            pages = pages.filter(Q(meta_robots__icontains=show) | Q(x_robots_tag__icontains=show))

    if status == NO_STATUS:
        pages = pages.filter(status_code__isnull=True)
    elif (span := status_span(status)) is not None:
        pages = pages.filter(status_code__gte=span.start, status_code__lt=span.stop)
    if fetch_class:
        pages = pages.filter(fetch_class=fetch_class)
    if indexable in ("yes", "no"):
        pages = pages.filter(is_indexable=indexable == "yes")
    if issue_type:
        pages = pages.filter(Exists(Issue.objects.filter(page_id=OuterRef("pk"), type=issue_type)))
    if url_contains:
        pages = pages.filter(url__icontains=url_contains)
    if folder:
        pages = pages.filter(url__startswith=folder_prefix(audit=audit, folder=folder))
    if segment is not None:
        pages = pages.filter(segment.pages_q)
    return pages


def folder_prefix(*, audit: Audit, folder: str) -> str:
    """The URL prefix of a folder filter: a path ("/docs/") is on the audit's own site (scheme and host of
    its site URL); a whole URL names its host. A folder always ends with "/", so /doc never matches /docs/."""
    folder = folder.strip()
    if not folder.endswith("/"):
        folder += "/"
    if folder.startswith("/"):
        site = urlsplit(audit.site_url or audit.start_url)
        return f"{site.scheme}://{site.netloc}{folder}"
    return folder


def _sort_fields(key: str, counted: bool) -> tuple[str, ...]:
    if counted and key in _COUNTED_SORTS:
        return _COUNTED_SORTS[key]
    return PAGE_SORTS.get(key) or PAGE_SORTS["url"]


def _ordering(sort: str, counted: bool = False, tie: str = "id") -> list:
    key = sort.removeprefix("-")
    fields = _sort_fields(key, counted)
    descending = sort.startswith("-") and key in PAGE_SORTS
    # NULLS LAST only where a NULL can be: on the URL it would stop PostgreSQL from reading the (audit, url)
    # index backwards (a 100,000-row sort instead of 51 index entries).
    nulls = {"nulls_last": True} if fields[0] != "url" else {}
    first = F(fields[0]).desc(**nulls) if descending else F(fields[0]).asc(**nulls)
    return [first, *(F(name).asc() for name in fields[1:]), F(tie).asc()]


# Sorted columns that can be NULL (the others are NOT NULL fields or never-NULL annotations; the stored counts
# are NULL only until finalize, when `counted` is False and the grid counts in a COALESCE).
_NULLABLE_SORT_FIELDS = frozenset({"status_code", "depth", "response_time_ms"})


def page_keyset_columns(sort: str, counted: bool = False) -> list[KeysetColumn]:
    """The grid's ordering (`_ordering`) as keyset columns: the sorted column, NULLs last, then the URL (for a
    stored count, its rank: PageCounts.url_rank). The URL is unique within an audit, so it ends the key (the id
    after it in ORDER BY never decides)."""
    key = sort.removeprefix("-")
    fields = _sort_fields(key, counted)
    descending = sort.startswith("-") and key in PAGE_SORTS
    first = KeysetColumn(fields[0], descending=descending, nullable=fields[0] in _NULLABLE_SORT_FIELDS)
    return [first, *(KeysetColumn(name) for name in fields[1:])]


def grid_cursor_tag(audit_id, sort: str) -> str:
    """What a pages-grid cursor is bound to (audits.selectors.pagination.keyset_paginate's `tag`): the audit and the
    sort, so a cursor from another audit or sort is refused instead of read as a position in this one."""
    return f"pages:{audit_id}:{sort}"


# The stored counts joined to the page (an inner join: every page of a counted audit has its row), on its id and
# its audit, so PostgreSQL knows the PageCounts rows' audit too. Sorted by a stored count, the grid breaks ties by
# the URL's rank among the audit's (`counted_rank`, PageCounts.url_rank: the URL order in 4 bytes): its ORDER BY
# (count DESC NULLS LAST, rank) and keyset seek are then a range of one PageCounts index, however deep the page.
# (Joined on the URLs as well, PostgreSQL multiplies the two equalities' selectivities, expects one row and
# hash-joins the whole audit: 270 ms on 200,000 pages.)
_COUNTS = "stored"
_COUNTED_RANK = "counted_rank"
_COUNTED_SORTS = {"inlinks": ("inlinks", _COUNTED_RANK), "issues": ("issues_total", _COUNTED_RANK)}


def _with_counts(pages: QuerySet) -> QuerySet:
    joined = pages.alias(**{_COUNTS: FilteredRelation("counts", condition=Q(counts__audit_id=F("audit_id")))})
    return joined.filter(**{f"{_COUNTS}__isnull": False}).annotate(**{_COUNTED_RANK: F(f"{_COUNTS}__url_rank")})


def _stored_inlink_pages():
    """Linking pages as finalize stored them; counted for an audit whose counts predate it (NULL)."""
    return Coalesce(F(f"{_COUNTS}__inlink_pages"), inlink_pages_subquery())


def _annotations(counted: bool) -> dict:
    return {
        "inlinks": (lambda: F(f"{_COUNTS}__inlinks")) if counted else page_inlinks_count,
        # Counted per row, a page every page links to (a nav target) took ~150 ms to count on 100,000 pages, and
        # the grid's first page, sorted by URL, held twenty of them: 3.4 s. Finalize stores the count.
        "inlink_pages": _stored_inlink_pages if counted else inlink_pages_subquery,
        "issues_total": (lambda: F(f"{_COUNTS}__issues")) if counted else issues_count_subquery,
        "title_len": lambda: Length("title"),
        "description_len": lambda: Coalesce(Length("meta_description"), Value(0)),
        "h1_len": lambda: Length("h1"),
    }


_NEEDS = {"inlinks": "inlinks", "issues": "issues_total", "title_len": "title_len"}
_NEEDS.update(description_len="description_len", h1_len="h1_len")
_STORED = frozenset({"inlinks", "inlink_pages", "issues_total"})  # annotations read from PageCounts when counted


def page_list(*, pages: QuerySet, columns: list[PageColumn], sort: str = "url", counted: bool = False) -> QuerySet:
    """The filtered pages with what the shown columns and the sort need, annotated in SQL (a subquery per
    row of the page on screen, the sort's column over the whole filtered set). `counted`: the audit's
    per-page counts are stored (page_counts_stored), so inlinks and issues are plain columns."""
    wanted = {_NEEDS[c.key] for c in columns if c.key in _NEEDS}
    if "inlinks" in wanted:
        wanted.add("inlink_pages")  # the cell says "24 links from 7 pages"
    if sort.removeprefix("-") in _NEEDS:
        wanted.add(_NEEDS[sort.removeprefix("-")])
    annotations = {name: make() for name, make in _annotations(counted).items() if name in wanted}
    if sort.removeprefix("-") == "issues" and not counted:
        # Sorting needs every page's count: one grouped join (~0.5 s on 100,000 pages under load) instead of a
        # subquery per page (~1.7 s). Shown only, the subquery runs for the 50 rows on screen.
        annotations["issues_total"] = Count("issues")
    if counted and wanted & _STORED:
        pages = _with_counts(pages)
    return (
        pages.defer("open_graph", "structured_data", "hreflang", "headings", "response_headers")
        .annotate(**annotations)
        .order_by(*_ordering(sort, counted))
    )


# Sorts the page rows have an index of their exact order for (Page.Meta.indexes and the unique (audit, url)): read
# from the page rows even when the grid could sort on the counts rows.
_PAGE_INDEXED_SORTS = frozenset({"url", "-url", "-status", "-words", "-title_len"})


def page_sort_keys(*, audit: Audit, view: str, sort: str) -> QuerySet | None:
    """The pages grid's keys, for a counted audit (page_counts_stored) listed by a view without a filter: its
    PageCounts rows of the view's pages, with the names of the grid's ordering (`page_keyset_columns`) and in its
    order; their primary key is the page's (pagination.keyset_paginate's `keys`). A page of the grid sorted by a
    column no index serves is then sorted and sought on the ~250-byte counts rows rather than the ~2.6 KB page
    rows: on a million pages, a sequential scan of the page heap (2.6 GB) was the whole ~1 s of such a sort.
    None for a sort one of the page rows' indexes serves in its order: read in order, that index gives the first
    rows of a view at once (the views' own filters pass most pages), where the counts rows are sorted whole."""
    if sort in _PAGE_INDEXED_SORTS:
        return None
    spec = view_for(view)
    rows = PageCounts.objects.filter(audit=audit)
    if spec.html_only:
        rows = rows.filter(html=True)
    elif spec.key == "directives":
        rows = rows.filter(status_code__isnull=False)
    names = {_COUNTED_RANK: F("url_rank"), "issues_total": F("issues")}
    return rows.annotate(**names).order_by(*_ordering(sort, counted=True, tie="page_id"))


def page_export_queryset(*, pages: QuerySet, sort: str = "url", counted: bool = False) -> QuerySet:
    """What audits.exports streams for the on-screen filters: same rows, same order, with inlinks."""
    sort_key = sort.removeprefix("-")
    made = _annotations(counted)
    annotations = {"inlinks": made["inlinks"]()}
    if sort_key in _NEEDS and _NEEDS[sort_key] != "inlinks":
        annotations[_NEEDS[sort_key]] = made[_NEEDS[sort_key]]()
    if counted:
        pages = _with_counts(pages)
    return pages.annotate(**annotations).order_by(*_ordering(sort, counted))


def page_for_audit(*, audit: Audit, page_id) -> Page:
    page = Page.objects.filter(audit=audit, id=page_id).first()
    if page is None:
        raise Http404("No such page")
    return page


@dataclass
class IssueGroup:
    type: str
    severity: str
    spec: CheckSpec
    count: int
    count_label: str  # "3 links", "1 page"
    columns: list[tuple[str, str]]
    rows: list[dict] = field(default_factory=list)  # at most ISSUE_ROWS_PER_TYPE

    @property
    def more(self) -> int:
        return max(self.count - len(self.rows), 0)


def page_issue_groups(*, page: Page) -> list[IssueGroup]:
    """The page's issues, one group per type (critical first), each with its evidence in named columns.
    One query: a page's issues are bounded by its links (crawler.limits) plus one per page check."""
    by_type: dict[str, list[tuple]] = {}
    severities: dict[str, str] = {}
    issues = (
        Issue.objects.filter(page=page)
        .order_by("type", "id")
        .values_list("id", "page_id", "page_url", "details", "type", "severity")
    )
    for issue_id, page_id, page_url, details, issue_type, severity in issues:
        by_type.setdefault(issue_type, []).append((issue_id, page_id, page_url, details))
        severities[issue_type] = severity
    groups = []
    for issue_type, rows in by_type.items():
        columns = [(k, label) for k, label in evidence_columns(issue_type) if k != "page_url"]
        shown = [row for _page_id, row in evidence_records(issue_type, rows[:ISSUE_ROWS_PER_TYPE])]
        unit = evidence_count_unit(issue_type)
        n = len(rows)
        spec = check_spec(issue_type)
        groups.append(IssueGroup(issue_type, severities[issue_type], spec, n, count_label(n, unit), columns, shown))
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    groups.sort(key=lambda g: (rank.get(g.severity, len(rank)), -g.count, g.type))
    return groups


CRAWL_PATH_HOPS_MAX = 20  # pages of a crawl path followed back from a page (one indexed query each)


@dataclass(frozen=True)
class PathStep:
    url: str
    page_id: object  # None when the URL is not a crawled page of the audit


@dataclass(frozen=True)
class HowFound:
    via: str  # Page.FoundVia's label ("a link"), "" when the crawl did not record it (an older audit)
    found_from: PathStep | None  # the crawled page that led to this one
    path: list[PathStep]  # from the start page (or the first page without a source) to this page
    cut: bool  # the path is longer than CRAWL_PATH_HOPS_MAX pages: its start is left out


def page_how_found(*, page: Page) -> HowFound:
    """How the crawl found the page and its crawl path: the chain of found_from pages back to the start URL,
    at most CRAWL_PATH_HOPS_MAX pages (one query each on the (audit, url) index); a loop ends it."""
    path = [PathStep(page.url, page.id)]
    seen = {page.url}
    url, cut = page.found_from, False
    while url:
        if len(path) >= CRAWL_PATH_HOPS_MAX:
            cut = True
            break
        if url in seen:
            break
        seen.add(url)
        row = Page.objects.filter(audit_id=page.audit_id, url=url).values_list("id", "found_from").first()
        path.append(PathStep(url, row[0] if row else None))
        url = row[1] if row else ""
    path.reverse()
    via = Page.FoundVia(page.found_via).label if page.found_via in Page.FoundVia.values else ""
    return HowFound(via, path[-2] if len(path) > 1 else None, path, cut)
