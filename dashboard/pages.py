"""Reads of the pages grid, the page detail and the performance screen.

The grid is a crawler's main table: views (all pages, titles, meta descriptions, H1, canonicals, directives),
each with its own filters (missing, duplicate, over/under N characters, non-indexable, …) and default columns,
a column chooser, and the inlinks count computed in the database. The filtered queryset is the one the
on-screen table pages through and the one the exports stream, so an export has exactly the rows on screen.
"""

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Length
from django.http import Http404

from audits.checks.registry import CHECKS_BY_TYPE, SEVERITIES, CheckSpec
from audits.comparison import check_spec
from audits.evidence import count_label, evidence_columns, evidence_count_unit, evidence_records, flat
from audits.models import Audit, Issue, LighthouseResult, Page
from audits.segments import SegmentChoice
from audits.selectors import page_inlinks_count
from audits.stats import issue_type_counts
from dashboard.selectors import KeysetColumn
from scratchpad.models import LinkEdge

HTML_TYPES = ("text/html", "application/xhtml+xml")
LINKS_PER_PAGE = 50
ISSUE_ROWS_PER_TYPE = 20  # evidence rows shown per issue type on a page; the issue's own screen has them all
COLS_COOKIE_PREFIX = "sw_cols_"  # + view key: the chosen columns, remembered for the next visit
COLS_COOKIE_MAX_AGE_S = 365 * 24 * 3600
EXTRACTOR_COLUMN_PREFIX = "ex"  # + the extractor's position: the key of a custom extraction column


def _threshold(issue_type: str, key: str, default: int) -> int:
    spec = CHECKS_BY_TYPE.get(issue_type)
    return int(spec.thresholds.get(key, default)) if spec else default


# --- columns and views -----------------------------------------------------------------------------------


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
SORT_LABELS = {
    "url": "URL",
    "status": "Status code",
    "depth": "Depth",
    "inlinks": "Inlinks",
    "title": "Title",
    "title_len": "Title length",
    "description_len": "Description length",
    "h1": "H1",
    "h1_len": "H1 length",
    "h1_count": "H1 count",
    "time": "Response time",
    "size": "Size",
    "words": "Words",
    "issues": "Issues",
}

# How a sort reads in words: (ascending, descending) per kind of column.
SORT_DIRECTIONS = {"text": ("A to Z", "Z to A"), "count": ("fewest first", "most first"),
                   "value": ("lowest first", "highest first")}  # fmt: skip
SORT_KINDS = {
    "url": "text",
    "title": "text",
    "h1": "text",
    "status": "value",
    "depth": "value",
    "time": "value",
    "size": "value",
    "title_len": "value",
    "description_len": "value",
    "h1_len": "value",
}  # fmt: skip  (the others count things: inlinks, issues, words, H1s)


def sort_caption(sort: str) -> str:
    """The grid's sort in words: "inlinks, most first", "URL, A to Z"."""
    key = sort.removeprefix("-")
    if key not in SORT_LABELS:  # what _ordering does with an unknown sort
        key, sort = "url", "url"
    label = SORT_LABELS[key] if key == "url" else SORT_LABELS[key].lower()
    ascending, descending = SORT_DIRECTIONS[SORT_KINDS.get(key, "count")]
    return f"{label}, {descending if sort.startswith('-') else ascending}"


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


def extractor_columns(*, audit: Audit) -> list[PageColumn]:
    """One optional column per custom extractor the audit crawled with (its config snapshot), keyed
    `ex0`, `ex1`, … (an extractor's name may hold characters the column cookie cannot)."""
    extractors = (audit.config or {}).get("extractors") or []
    names = [e["name"] for e in extractors if isinstance(e, dict) and isinstance(e.get("name"), str)]
    return [
        PageColumn(f"{EXTRACTOR_COLUMN_PREFIX}{i}", name, help="Custom extraction", extractor=name)
        for i, name in enumerate(names)
    ]


def columns_for(view: PageView, chosen: list[str] | None, extra: list[PageColumn] = ()) -> list[PageColumn]:
    """The columns to show: the chosen ones (URL always first), else the view's defaults. `extra`: columns
    of this audit only (its custom extractors), choosable like the others."""
    known = {**COLUMNS, **{c.key: c for c in extra}}
    keys = [k for k in (chosen or []) if k in known and k != "url"] if chosen else list(view.columns[1:])
    return [COLUMNS["url"], *(known[k] for k in dict.fromkeys(keys))]


# --- the grid ---------------------------------------------------------------------------------------------


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


def page_issue_type_choices(*, audit: Audit) -> list[tuple[str, str]]:
    """The "Has issue" filter's choices: (type, "Title (N pages)") for page_issue_types' types."""
    return [(c.type, c.label) for c in page_issue_types(audit=audit)[0]]


def issues_count_subquery():
    """An annotation for a Page queryset: the page's issue rows, counted now (finalize stores it as
    Page.issues_count; this is for an audit that has not completed)."""
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
        pages = pages.filter(status_code__gte=200, status_code__lt=300, content_type__in=HTML_TYPES)
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

    if status == "none":
        pages = pages.filter(status_code__isnull=True)
    elif len(status) == 3 and status.endswith("xx") and status[0].isdigit():
        low = int(status[0]) * 100
        pages = pages.filter(status_code__gte=low, status_code__lt=low + 100)
    elif status.isdigit():
        pages = pages.filter(status_code=int(status))
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


def _ordering(sort: str) -> list:
    key = sort.removeprefix("-")
    fields = PAGE_SORTS.get(key) or PAGE_SORTS["url"]
    descending = sort.startswith("-") and key in PAGE_SORTS
    # NULLS LAST only where a NULL can be: on the URL it would stop PostgreSQL from reading the (audit, url)
    # index backwards (a 100,000-row sort instead of 51 index entries).
    nulls = {"nulls_last": True} if fields[0] != "url" else {}
    first = F(fields[0]).desc(**nulls) if descending else F(fields[0]).asc(**nulls)
    return [first, *(F(name).asc() for name in fields[1:]), F("id").asc()]


# Sorted columns that can be NULL (the others are NOT NULL fields or never-NULL annotations; the stored counts
# are NULL only until finalize, when `counted` is False and the grid counts in a COALESCE).
_NULLABLE_SORT_FIELDS = frozenset({"status_code", "depth", "response_time_ms"})


def page_keyset_columns(sort: str) -> list[KeysetColumn]:
    """The grid's ordering (`_ordering`) as keyset columns: the sorted column, NULLs last, then the URL. The
    URL is unique within an audit, so it ends the key (the id after it in ORDER BY never decides)."""
    key = sort.removeprefix("-")
    fields = PAGE_SORTS.get(key) or PAGE_SORTS["url"]
    descending = sort.startswith("-") and key in PAGE_SORTS
    first = KeysetColumn(fields[0], descending=descending, nullable=fields[0] in _NULLABLE_SORT_FIELDS)
    return [first, *(KeysetColumn(name) for name in fields[1:])]


def grid_cursor_tag(audit_id, sort: str) -> str:
    """What a pages-grid cursor is bound to (dashboard.selectors.keyset_paginate's `tag`): the audit and the
    sort, so a cursor from another audit or sort is refused instead of read as a position in this one."""
    return f"pages:{audit_id}:{sort}"


def links_cursor_tag(page_id, param: str) -> str:
    """What a cursor of a page's inlinks (`in`) or outlinks (`out`) is bound to: that page and that list."""
    return f"links-{param}:{page_id}"


def page_filters_narrow(filters: dict) -> bool:
    """Whether the grid's filters (PageFilterForm.filters) leave out any page: without one, the audit's own
    counter is the list's size and no COUNT(*) runs."""
    return any(value not in ("", None, "all") for name, value in filters.items() if name != "view")


def page_counts_stored(*, audit: Audit) -> bool:
    """Whether finalize stored every page's inlinks and issues (Page.inlinks_count, issues_count): a completed
    audit with its page figures (audits.stats). The grid then sorts on the columns themselves, which
    the (audit, count DESC NULLS LAST, url) indexes serve; an audit still running, or completed before the
    counts were stored, is counted in the query."""
    return audit.status == Audit.Status.COMPLETED and bool(audit.stats)


def inlink_pages_subquery():
    """An annotation for a Page queryset: the crawled pages linking to the page (one edge per source page and
    target: an index-only count on (audit, target_url)); evaluated for the rows on screen only."""
    return Coalesce(
        Subquery(
            LinkEdge.objects.filter(audit_id=OuterRef("audit_id"), target_url=OuterRef("url"))
            .order_by()
            .values("target_url")
            .annotate(n=Count("id"))
            .values("n")[:1],
            output_field=IntegerField(),
        ),
        Value(0),
    )


def _annotations(counted: bool) -> dict:
    return {
        "inlinks": (lambda: F("inlinks_count")) if counted else page_inlinks_count,
        "inlink_pages": inlink_pages_subquery,
        "issues_total": (lambda: F("issues_count")) if counted else issues_count_subquery,
        "title_len": lambda: Length("title"),
        "description_len": lambda: Coalesce(Length("meta_description"), Value(0)),
        "h1_len": lambda: Length("h1"),
    }


_NEEDS = {"inlinks": "inlinks", "issues": "issues_total", "title_len": "title_len"}
_NEEDS.update(description_len="description_len", h1_len="h1_len")


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
    return (
        pages.defer("open_graph", "structured_data", "hreflang", "headings", "response_headers")
        .annotate(**annotations)
        .order_by(*_ordering(sort))
    )


def page_export_queryset(*, pages: QuerySet, sort: str = "url", counted: bool = False) -> QuerySet:
    """What audits.exports streams for the on-screen filters: same rows, same order, with inlinks."""
    sort_key = sort.removeprefix("-")
    made = _annotations(counted)
    annotations = {"inlinks": made["inlinks"]()}
    if sort_key in _NEEDS and _NEEDS[sort_key] != "inlinks":
        annotations[_NEEDS[sort_key]] = made[_NEEDS[sort_key]]()
    return pages.annotate(**annotations).order_by(*_ordering(sort))


# --- one page ------------------------------------------------------------------------------------------


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


def page_inlinks(*, page: Page) -> QuerySet:
    """Links from crawled pages of the same audit to this page's URL."""
    # The source page's audit is the edge's, but saying so lets PostgreSQL walk the (audit, url) index in order
    # and stop after a screen of rows: 280 ms -> 7 ms for a page every one of 100,000 pages links to.
    return (
        LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url, source_page__audit_id=page.audit_id)
        .order_by("source_page__url", "id")
        .values("id", "source_page_id", "source_page__url", "anchor_text", "nofollow", "link_count")
    )


@dataclass(frozen=True)
class Inlinks:
    """Links to a page and the pages they are on: "24 links from 7 pages" (a page may link a URL many times)."""

    links: int
    pages: int


def page_inlinks_summary(*, page: Page) -> Inlinks:
    """The page's inlinks as the grid counts them: links (stored at finalize, else summed now) and linking pages."""
    pages = page_inlinks_total(page=page)
    links = page.inlinks_count
    if links is None:
        edges = LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url)
        links = edges.aggregate(n=Coalesce(Sum("link_count"), Value(0)))["n"]
    return Inlinks(links=links, pages=pages)


def page_inlinks_total(*, page: Page) -> int:
    """How many crawled pages link to the page: an index-only count on (audit, target_url), without the join
    `page_inlinks` needs for its order (with it, 1 s for a page 100,000 pages link to)."""
    return LinkEdge.objects.filter(audit_id=page.audit_id, target_url=page.url).count()


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


# Keyset columns of the two link lists (dashboard.selectors.keyset_paginate): a page links to a target once
# (one edge per source page and target URL), so the source URL is unique among a page's inlinks.
INLINK_KEYSET = (KeysetColumn("source_page__url"),)
OUTLINK_KEYSET = (KeysetColumn("id"),)


def page_outlinks(*, page: Page) -> QuerySet:
    """Links on this page, each with the crawled page it leads to and that page's status (unique index on
    (audit, url): one index lookup per row on screen)."""
    target = Page.objects.filter(audit_id=page.audit_id, url=OuterRef("target_url"))
    return (
        LinkEdge.objects.filter(source_page=page)
        .order_by("id")
        .annotate(
            target_page_id=Subquery(target.values("id")[:1]),
            target_status=Subquery(target.values("status_code")[:1]),
            target_fetch=Subquery(target.values("fetch_class")[:1]),
        )
        .values(
            "id",
            "target_url",
            "link_count",
            "anchor_text",
            "nofollow",
            "internal",
            "target_page_id",
            "target_status",
            "target_fetch",
        )
    )


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    skipped: bool  # deeper than the previous heading by more than one level (h2 -> h4)


def heading_outline(page: Page) -> list[Heading]:
    outline, previous = [], 0
    for entry in page.headings or []:
        if not (isinstance(entry, list) and len(entry) == 2):
            continue
        level, text = int(entry[0]), str(entry[1])
        outline.append(Heading(level, text, previous > 0 and level > previous + 1))
        previous = level
    return outline


# Google cuts a title at about 600 px and a description at about 920 px on desktop; by characters, which is
# what can be computed without a font, that is some 60 and 158.
SERP_TITLE_MAX_CHARS = 60
SERP_DESCRIPTION_MAX_CHARS = 158
SERP_ELLIPSIS = " ..."


def serp_truncate(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut as Google does: at the last whole word within `limit` characters, then " ..."."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    if " " in cut and not text[limit].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-–—") + SERP_ELLIPSIS, True


def serp_breadcrumb(url: str) -> str:
    """`https://example.com › blog › post`: Google's way of showing a result's URL."""
    parts = urlsplit(url)
    segments = [unquote(s) for s in parts.path.split("/") if s]
    return " › ".join([f"{parts.scheme}://{parts.hostname or ''}", *segments])


def serp_preview(page: Page) -> dict:
    title, title_cut = serp_truncate(page.title or "", SERP_TITLE_MAX_CHARS)
    description, description_cut = serp_truncate(page.meta_description or "", SERP_DESCRIPTION_MAX_CHARS)
    return {
        "title": title,
        "title_cut": title_cut,
        "title_chars": len(page.title or ""),
        "breadcrumb": serp_breadcrumb(page.url),
        "description": description,
        "description_cut": description_cut,
        "description_chars": len(page.meta_description or ""),
        "title_max": SERP_TITLE_MAX_CHARS,
        "description_max": SERP_DESCRIPTION_MAX_CHARS,
    }


def response_headers(page: Page) -> list[tuple[str, str]]:
    headers = page.response_headers if isinstance(page.response_headers, dict) else {}
    return sorted((str(k), str(v)) for k, v in headers.items())


@dataclass(frozen=True)
class FieldRow:
    name: str
    label: str
    value: object
    kind: str  # url | pairs | items | bool | datetime | text


URL_FIELDS = {"url", "redirect_url", "canonical_url", "canonical_header"}
SHOWN_ELSEWHERE = {"id", "audit", "headings", "heading_order", "response_headers", "issues_count"}
SHOWN_ELSEWHERE |= {"found_from", "found_via"}  # the "How the crawl found it" section
FIELD_LABELS = {
    "url": "URL",
    "redirect_url": "Redirects to",
    "canonical_url": "Canonical URL",
    "canonical_header": "Canonical (Link header)",
    "response_time_ms": "Response time (ms)",
    "bytes": "Size (bytes)",
    "meta_robots": "Meta robots",
    "x_robots_tag": "X-Robots-Tag",
    "open_graph": "Open Graph",
    "h1_count": "H1 count",
    "heading_counts": "Headings per level",
    "html_lang": "HTML lang",
    "hreflang": "hreflang",
    "structured_data": "Structured data",
    "is_indexable": "Indexable",
    "fetched_at": "Fetched at (UTC)",
}


def page_fields(page: Page) -> list[FieldRow]:
    """Every other extracted field of a page in model order (a field added to Page shows up here too);
    structured values as key/value pairs or items, never as a JSON blob."""
    rows = []
    for model_field in Page._meta.concrete_fields:
        if model_field.name in SHOWN_ELSEWHERE:
            continue
        value = getattr(page, model_field.attname)
        internal = model_field.get_internal_type()
        if model_field.name in URL_FIELDS:
            kind = "url"
        elif internal == "JSONField" and isinstance(value, dict):
            kind, value = "pairs", [(str(k), flat(v)) for k, v in value.items()]
        elif internal == "JSONField":
            kind, value = (
                "items",
                [flat(v) if not isinstance(v, list) else " → ".join(map(str, v)) for v in value or []],
            )
        elif internal == "BooleanField":
            kind = "bool"
        elif internal == "DateTimeField":
            kind = "datetime"
        else:
            kind = "text"
        label = FIELD_LABELS.get(model_field.name) or str(model_field.verbose_name)
        rows.append(FieldRow(model_field.name, label[:1].upper() + label[1:], value, kind))
    return rows


# --- Lighthouse ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vital:
    field: str
    label: str
    name: str
    good_max: float  # Google's thresholds: good up to good_max, poor above poor_min
    poor_min: float
    unit: str  # "ms" or "" (CLS)


VITALS = (
    Vital("lcp_ms", "LCP", "Largest Contentful Paint", 2500, 4000, "ms"),
    Vital("cls", "CLS", "Cumulative Layout Shift", 0.1, 0.25, ""),
    Vital("inp_ms", "INP", "Interaction to Next Paint", 200, 500, "ms"),
    Vital("tbt_ms", "TBT", "Total Blocking Time, the lab stand-in for INP", 200, 600, "ms"),
    Vital("fcp_ms", "FCP", "First Contentful Paint", 1800, 3000, "ms"),
    Vital("ttfb_ms", "TTFB", "Time to First Byte", 800, 1800, "ms"),
)
VERDICT_LABELS = {"good": "Good", "needs-improvement": "Needs improvement", "poor": "Poor"}
SCORE_GOOD_MIN = 90  # Lighthouse's colours: 90-100 good, 50-89 needs improvement, 0-49 poor
SCORE_POOR_BELOW = 50
SCORE_CATEGORIES = (
    ("performance", "Performance"),
    ("accessibility", "Accessibility"),
    ("best_practices", "Best practices"),
    ("seo", "SEO"),
)


def vital_verdict(vital: Vital, value) -> str:
    if value is None:
        return ""
    if value <= vital.good_max:
        return "good"
    return "needs-improvement" if value <= vital.poor_min else "poor"


def _vital_display(vital: Vital, value) -> str:
    if value is None:
        return "–"
    if vital.unit == "":
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{int(value)} ms"


def score_verdict(score) -> str:
    if score is None:
        return ""
    return "good" if score >= SCORE_GOOD_MIN else "poor" if score < SCORE_POOR_BELOW else "needs-improvement"


def _run(result: LighthouseResult) -> dict:
    vitals = []
    for vital in VITALS:
        value = getattr(result, vital.field)
        if vital.field == "inp_ms" and value is None:
            continue  # a lab run has no interaction: TBT stands in
        verdict = vital_verdict(vital, value)
        vitals.append({"vital": vital, "value": _vital_display(vital, value), "verdict": verdict,
                       "verdict_label": VERDICT_LABELS.get(verdict, "Not measured")})  # fmt: skip
    scores = [
        {"label": label, "value": getattr(result, name), "verdict": score_verdict(getattr(result, name))}
        for name, label in SCORE_CATEGORIES
    ]
    summary = result.summary if isinstance(result.summary, dict) else {}
    opportunities = [
        {**o, "savings": _vital_display(VITALS[0], o["savings_ms"]) if o.get("savings_ms") else ""}
        for o in summary.get("opportunities") or []
    ]
    return {
        "result": result,
        "scores": scores,
        "vitals": vitals,
        "opportunities": opportunities,
        "diagnostics": summary.get("diagnostics") or [],
    }


def lighthouse_pages(*, audit: Audit) -> list[dict]:
    """The audit's Lighthouse runs, per sampled page (start page first, then by URL), mobile then desktop,
    each with its scores, vitals with Google's verdicts and the top opportunities and diagnostics (parsed
    when the run was stored: no report file is opened here)."""
    results = LighthouseResult.objects.filter(audit=audit).select_related(None).order_by("url", "-strategy")
    pages: dict[str, dict] = {}
    for result in results:
        entry = pages.setdefault(
            result.url, {"url": result.url, "page_id": result.page_id, "template": result.template, "runs": []}
        )
        entry["runs"].append(_run(result))
    start = audit.site_url or audit.start_url
    return sorted(pages.values(), key=lambda p: (p["url"] != start, p["url"]))


def lighthouse_comparison(sampled: list[dict]) -> dict:
    """The sampled pages' runs side by side (one row per page and device: category scores and vitals with their
    verdicts), from lighthouse_pages' entries; INP is a column only when a run measured it (lab runs do not)."""
    results = [run["result"] for p in sampled for run in p["runs"] if run["result"].status == "ok"]
    vitals = [v for v in VITALS if v.field != "inp_ms" or any(r.inp_ms is not None for r in results)]
    rows = []
    for p in sampled:
        for run in p["runs"]:
            result = run["result"]
            if result.status != "ok":
                continue
            cells = [
                {
                    "label": vital.label,
                    "value": _vital_display(vital, getattr(result, vital.field)),
                    "verdict": vital_verdict(vital, getattr(result, vital.field)),
                }  # fmt: skip
                for vital in vitals
            ]
            rows.append({"page": p, "result": result, "scores": run["scores"], "vitals": cells})
    return {"categories": [label for _, label in SCORE_CATEGORIES], "vitals": vitals, "rows": rows}


def lighthouse_report_path(*, audit: Audit, result_id) -> tuple[LighthouseResult, Path]:
    """The stored report file of one of the audit's Lighthouse runs; 404 unless it is inside the audit's
    report folder and exists."""
    result = LighthouseResult.objects.filter(audit=audit, id=result_id).first()
    if result is None or not result.report_path:
        raise Http404("No such report")
    folder = (Path(settings.MEDIA_ROOT) / "lighthouse" / str(audit.id)).resolve()
    path = (Path(settings.MEDIA_ROOT) / result.report_path).resolve()
    if not path.is_relative_to(folder) or not path.is_file():
        raise Http404("No such report")
    return result, path
