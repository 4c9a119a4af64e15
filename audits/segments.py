"""Segments: named parts of a project's site (/blog/, /docs/, the product pages) that every report can be read
for — overview, issues, evidence, pages grid, exports, comparison, shared report and API.

A stored segment (audits.models.Segment) is a URL path prefix, a regular expression on the URL path, or a value of
one of the project's custom extractors (Page.extracted). A project without segments of its own gets one per
top-level folder of each audit (the DEFAULT_FOLDERS_MAX largest by pages, then "Other"); stored segments replace
those defaults. A page belongs to every segment it matches. Matching is a Q, evaluated in SQL on PostgreSQL and
SQLite alike (the URL path cut out of the URL with SUBSTR/STRPOS, `LIKE`, the database's regular expressions, a
JSON lookup): nothing loops over pages in Python. Site-wide findings (no page) belong to no segment.

This module only reads and checks. Selectors: segment_list, segment_choices, resolve_segment (the `?segment=`
parameter; an unknown value is UnknownSegment, never ignored), segment_table (the overview's per-segment figures),
segment_preview_count. Checks: segment_validate, whose refusals are SegmentInvalid (an AuditRefused with the field
it is about). The writes (segment_create, segment_update, segment_delete) are audits.segment_writes, which the
dashboard form, the API and the admin call through audits.services.
"""

import hashlib
import re
from dataclasses import dataclass

from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.db.models import BooleanField, Count, Exists, F, Func, OuterRef, Q, QuerySet, Sum, Value
from django.db.models.functions import StrIndex, Substr
from django.db.models.lookups import Regex, StartsWith

from audits.checks.score import score_breakdown
from audits.errors import AuditRefused
from audits.models import Audit, Issue, Page, Project, Segment
from audits.patterns import compile_pattern
from audits.selectors.links import page_counts_stored

SEGMENT_PARAM = "segment"  # the query parameter every screen, export and API list reads
MAX_SEGMENTS_PER_PROJECT = 50
SEGMENT_NAME_MAX_CHARS = 80
SEGMENT_VALUE_MAX_CHARS = 500  # a prefix or an extracted value
SEGMENT_REGEX_MAX_CHARS = 300  # runs on every page of an audit, in the database
SEGMENT_PARAM_MAX_CHARS = 600  # a `?segment=` value longer than any key is refused before any query
DEFAULT_FOLDERS_MAX = 12  # top-level folders offered as segments when a project has none of its own
DEFAULT_FOLDERS_CACHE_S = 60 * 60  # a completed audit's pages no longer change: its folders are counted once
OTHER_KEY = "other"  # the default segment of the pages in no listed folder
ERROR_SEVERITY = Issue.Severity.CRITICAL  # "pages with errors": pages with at least one critical finding
# The URL path starts after "scheme://host": the first "/" from the 9th character on (after "https://" and within
# the host of an "http://" URL; every stored page URL is normalised with a path, crawler.urls.normalize).
_SCHEME_AND_FIRST_HOST_CHARS = 8

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class SegmentInvalid(AuditRefused):
    """A refused segment: `field` names the input (name, kind, value, extractor, position)."""


class UnknownSegment(AuditRefused):
    """A `?segment=` value that names no segment of the audit's project (code unknown_segment, field segment)."""


# --- matching, in SQL ----------------------------------------------------------------------------------------


def url_path(url_field: str = "url") -> Func:
    """The URL after its origin (path and query), as a database expression over `url_field`."""
    url = F(url_field)
    start = StrIndex(Substr(url, _SCHEME_AND_FIRST_HOST_CHARS + 1), Value("/")) + _SCHEME_AND_FIRST_HOST_CHARS
    return Substr(url, start)


class ExtractedHas(Func):
    """True where the custom extraction `extracted` (a JSON object of lists) holds `value` among `name`'s values:
    jsonb containment on PostgreSQL, json_each on SQLite (which has no JSON containment)."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, extracted, name: str, value: str):
        super().__init__(extracted, Value(name), Value(value))

    def as_sql(self, compiler, connection, **extra):  # SQLite (and any other backend with JSON1)
        column, params = compiler.compile(self.source_expressions[0])
        name, value = self.source_expressions[1].value, self.source_expressions[2].value
        path = '$."' + name.replace('"', "") + '"'  # names are letters, digits, " _.-" (extractors_validate)
        sql = (
            f"EXISTS (SELECT 1 FROM json_each({column}, %s) AS segment_values "
            "WHERE segment_values.type = 'text' AND segment_values.value = %s)"
        )
        return sql, (*params, path, value)

    def as_postgresql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        name, value = self.source_expressions[1].value, self.source_expressions[2].value
        return f"COALESCE(({column} -> %s) @> jsonb_build_array(%s::text), false)", (*params, name, value)


def _match(kind: str, value: str, extractor: str, *, via: str) -> Q:
    """The Q of a segment rule on Page (`via` "") or on Issue through its page (`via` "page__")."""
    if kind == Segment.Kind.PREFIX:
        return Q(StartsWith(url_path(f"{via}url"), Value(value)))
    if kind == Segment.Kind.REGEX:
        return Q(Regex(url_path(f"{via}url"), Value(value)))
    if kind == Segment.Kind.EXTRACTION:
        return Q(ExtractedHas(F(f"{via}extracted"), extractor, value))
    raise ValueError(f"unknown segment kind {kind!r}")


def _issues(match_on_page) -> Q:
    """An issue belongs to a segment through its page; a site-wide finding (no page) to none."""
    return Q(page__isnull=False) & match_on_page


@dataclass
class SegmentChoice:
    """One segment an audit can be read for: `key` is its `?segment=` value (a stored segment's id, or a default
    folder such as "/blog/", or "other"), `pages_q` selects its pages (a Q on Page), `issues_q` its findings (a
    Q on Issue, through the page)."""

    key: str
    name: str
    description: str
    pages_q: Q
    issues_q: Q
    default: bool = False  # a top-level folder (or "Other") standing in for a project without segments
    segment_id: int | None = None
    pages: int | None = None  # pages of the audit in it, when counted


def _stored_choice(segment: Segment) -> SegmentChoice:
    return SegmentChoice(
        key=str(segment.id),
        name=segment.name,
        description=segment_description(kind=segment.kind, value=segment.value, extractor=segment.extractor),
        pages_q=_match(segment.kind, segment.value, segment.extractor, via=""),
        issues_q=_issues(_match(segment.kind, segment.value, segment.extractor, via="page__")),
        segment_id=segment.id,
    )


def segment_description(*, kind: str, value: str, extractor: str = "") -> str:
    """What a segment matches, in words."""
    if kind == Segment.Kind.PREFIX:
        return f"URL path starts with {value}"
    if kind == Segment.Kind.REGEX:
        return f"URL path matches {value}"
    return f"{extractor} is “{value}”"


# --- defaults: top-level folders -------------------------------------------------------------------------------


def audit_top_folders(*, audit: Audit) -> list[tuple[str, int]]:
    """The audit's top-level folders ("/blog/") by pages, most first, with the pages in no folder of the list
    (pages at the root, in smaller folders) under OTHER_KEY last when there are any: one grouped query, kept for a
    completed audit."""
    key = f"sitewarden:segment-folders:{audit.id}"
    completed = audit.status == Audit.Status.COMPLETED
    if completed and (kept := cache.get(key)) is not None:
        return kept
    path = url_path("url")
    pages = Page.objects.filter(audit=audit)
    rows = (
        pages.annotate(slash=StrIndex(Substr(path, 2), Value("/")))
        .filter(slash__gt=0)
        .annotate(folder=Substr(path, 1, F("slash") + 1, output_field=Page._meta.get_field("url")))
        .exclude(folder__contains="?")
        .order_by()
        .values("folder")
        .annotate(n=Count("id"))
        .order_by("-n", "folder")
    )
    folders = [(r["folder"], r["n"]) for r in rows[:DEFAULT_FOLDERS_MAX]]
    total = audit.pages_crawled if completed else pages.count()
    rest = total - sum(n for _folder, n in folders)
    out = [*folders, *([(OTHER_KEY, rest)] if rest > 0 else [])]
    if completed:
        cache.set(key, out, DEFAULT_FOLDERS_CACHE_S)
    return out


def _default_choices(audit: Audit) -> list[SegmentChoice]:
    folders = audit_top_folders(audit=audit)
    listed = [folder for folder, _n in folders if folder != OTHER_KEY]
    choices = []
    for folder, n in folders:
        if folder == OTHER_KEY:
            on_page, on_issue = Q(), Q()
            for f in listed:
                on_page |= _match(Segment.Kind.PREFIX, f, "", via="")
                on_issue |= _match(Segment.Kind.PREFIX, f, "", via="page__")
            choices.append(
                SegmentChoice(
                    key=OTHER_KEY,
                    name="Other",
                    description="Pages in no folder listed above (the root, smaller folders)",
                    pages_q=~on_page if listed else Q(),
                    issues_q=_issues(~on_issue if listed else Q()),
                    default=True,
                    pages=n,
                )
            )
        else:
            choices.append(
                SegmentChoice(
                    key=folder,
                    name=folder,
                    description=f"URL path starts with {folder}",
                    pages_q=_match(Segment.Kind.PREFIX, folder, "", via=""),
                    issues_q=_issues(_match(Segment.Kind.PREFIX, folder, "", via="page__")),
                    default=True,
                    pages=n,
                )
            )
    return choices


# --- selectors -------------------------------------------------------------------------------------------------


def segment_list(*, project: Project):
    """The project's own segments, in their order."""
    return Segment.objects.filter(project=project).order_by("position", "name", "id")


def segment_choices(*, audit: Audit) -> list[SegmentChoice]:
    """The segments the audit can be read for: the project's own, or else its top-level folders and "Other"."""
    stored = list(segment_list(project=audit.project))
    if stored:
        return [_stored_choice(s) for s in stored]
    return _default_choices(audit)


def resolve_segment(*, audit: Audit, param: str | None) -> SegmentChoice | None:
    """The segment a `?segment=` value names (None for no value). UnknownSegment, saying which values exist, for
    anything else: a screen says "Unknown segment …" rather than quietly showing the whole site."""
    if param is None or param == "":
        return None
    if len(param) <= SEGMENT_PARAM_MAX_CHARS:
        stored = segment_list(project=audit.project)
        if stored.exists():
            if param.isascii() and param.isdigit():
                segment = stored.filter(id=int(param)).first() if len(param) < 19 else None
                if segment is not None:
                    return _stored_choice(segment)
            choices = [_stored_choice(s) for s in stored]
        else:
            choices = _default_choices(audit)
            for choice in choices:
                if choice.key == param:
                    return choice
    else:
        choices = []
    shown = param if len(param) <= 80 else param[:77] + "..."
    names = ", ".join(f"{c.name} ({c.key})" if c.name != c.key else c.key for c in choices[:20])
    raise UnknownSegment(
        "unknown_segment",
        f"Unknown segment “{shown}”: "
        + (f"this audit's segments are {names}." if names else "this audit has no segments."),
        field=SEGMENT_PARAM,
    )


@dataclass
class SegmentRow:
    """One row of the overview's Segments table."""

    choice: SegmentChoice
    pages: int
    issues: int
    pages_with_errors: int
    score: int | None = None  # the score formula on the segment's pages (None without pages)

    @property
    def share_with_errors(self) -> float | None:
        return round(100 * self.pages_with_errors / self.pages, 1) if self.pages else None


def segment_table(*, audit: Audit, choices: list[SegmentChoice] | None = None) -> list[SegmentRow]:
    """Per segment: pages, issues (rows on its pages) and pages with errors (a critical finding): one aggregate
    query for every segment together, whatever their number (two before finalize stored each page's issue count)."""
    choices = segment_choices(audit=audit) if choices is None else choices
    if not choices:
        return []
    # A completed audit's pages and issues no longer change: its figures are kept per set of segment rules (an edited
    # segment is another key), since every segment's rule runs on every page (~100,000 rows × segments).
    completed = audit.status == Audit.Status.COMPLETED
    rules = repr([(c.key, c.description) for c in choices]).encode()
    key = f"sitewarden:segment-table:{audit.id}:{hashlib.sha256(rules).hexdigest()}"
    if completed and (kept := cache.get(key)) is not None:
        return [SegmentRow(choice, *figures) for choice, figures in zip(choices, kept, strict=True)]
    rows = _segment_rows(audit, choices)
    for row in rows:  # the audit's score formula on the segment's pages (two grouped queries a segment)
        if row.pages:
            pages = segment_pages_queryset(audit=audit, choice=row.choice)
            row.score = score_breakdown(audit=audit, pages=pages).score
    if completed:
        cache.set(key, [(r.pages, r.issues, r.pages_with_errors, r.score) for r in rows], DEFAULT_FOLDERS_CACHE_S)
    return rows


def _segment_rows(audit: Audit, choices: list[SegmentChoice]) -> list[SegmentRow]:
    pages = Page.objects.filter(audit=audit).annotate(
        has_error=Exists(Issue.objects.filter(page_id=OuterRef("pk"), severity=ERROR_SEVERITY))
    )
    counted = page_counts_stored(audit=audit)  # PageCounts.issues is stored
    issue_sums = {f"i{i}": Sum("counts__issues", filter=c.pages_q) for i, c in enumerate(choices)} if counted else {}
    page_figures = pages.aggregate(
        **{f"p{i}": Count("id", filter=c.pages_q) for i, c in enumerate(choices)},
        **{f"e{i}": Count("id", filter=c.pages_q & Q(has_error=True)) for i, c in enumerate(choices)},
        **issue_sums,
    )
    if counted:
        issue_figures = {key: page_figures[key] or 0 for key in issue_sums}
    else:
        issue_figures = Issue.objects.filter(audit=audit).aggregate(
            **{f"i{i}": Count("id", filter=c.issues_q) for i, c in enumerate(choices)}
        )
    return [
        SegmentRow(
            choice=choice,
            pages=page_figures[f"p{i}"],
            issues=issue_figures[f"i{i}"],
            pages_with_errors=page_figures[f"e{i}"],
        )
        for i, choice in enumerate(choices)
    ]


def segment_pages_queryset(*, audit: Audit, choice: SegmentChoice) -> QuerySet:
    """The audit's pages in the segment: what a segment's score and counts read."""
    return Page.objects.filter(audit=audit).filter(choice.pages_q)


def segment_page_count(*, audit: Audit, choice: SegmentChoice) -> int:
    return segment_pages_queryset(audit=audit, choice=choice).count()


def last_completed_audit(*, project: Project) -> Audit | None:
    audits = Audit.objects.filter(project=project, status=Audit.Status.COMPLETED, verifies__isnull=True)
    return audits.order_by("-created_at").first()  # a fix verification re-checks a few URLs: not the site


def segment_preview_count(*, project: Project, kind: str, value: str, extractor: str = "") -> tuple[Audit | None, int]:
    """(the project's last completed audit, its pages a segment with these fields would hold); the fields are
    checked first (SegmentInvalid)."""
    fields = segment_validate(project=project, name="preview", kind=kind, value=value, extractor=extractor)
    audit = last_completed_audit(project=project)
    if audit is None:
        return None, 0
    q = _match(fields["kind"], fields["value"], fields["extractor"], via="")
    return audit, Page.objects.filter(audit=audit).filter(q).count()


# --- checks: what the writes (audits.segment_writes) and the preview judge a segment's fields by ---------------


def _regex_refusal(pattern: str) -> str | None:
    """Why the database cannot use `pattern`, or None. Checked by the database itself: PostgreSQL's regular
    expressions are not Python's (or RE2's), and a pattern only it refuses would fail every screen later."""
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"“{pattern[:80]}” is not a valid regular expression ({exc})."
    if connection.vendor != "postgresql":
        return None
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT '' ~ %s", [pattern])
    except DatabaseError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "refused by the database"
        return f"“{pattern[:80]}” is not a regular expression the database accepts ({reason})."
    return None


def segment_validate(
    *, project: Project, name, kind, value, extractor="", position=None, instance: Segment | None = None
) -> dict:
    """The segment's fields normalised, or SegmentInvalid naming the field and saying what is wrong."""
    if not isinstance(name, str) or not name.strip():
        raise SegmentInvalid("invalid_segment", "Give the segment a name.", field="name")
    name = " ".join(name.split())
    if len(name) > SEGMENT_NAME_MAX_CHARS or _CONTROL_CHARS.search(name):
        raise SegmentInvalid(
            "invalid_segment", f"A name is at most {SEGMENT_NAME_MAX_CHARS} printable characters.", field="name"
        )
    if kind not in Segment.Kind.values:
        kinds = ", ".join(Segment.Kind.values)
        raise SegmentInvalid("invalid_segment", f"The kind is one of {kinds}.", field="kind")
    value = value.strip() if isinstance(value, str) else ""
    extractor = extractor.strip() if isinstance(extractor, str) else ""
    if not value:
        what = {"prefix": "a path prefix, e.g. /blog/", "regex": "a regular expression", "extraction": "a value"}
        raise SegmentInvalid("invalid_segment", f"Enter {what[kind]}.", field="value")
    if _CONTROL_CHARS.search(value):
        raise SegmentInvalid("invalid_segment", "The value holds a control character.", field="value")
    if kind == Segment.Kind.PREFIX:
        if not value.startswith("/"):
            raise SegmentInvalid(
                "invalid_segment",
                "A path prefix starts with “/”, e.g. /blog/ (the part after the host).",
                field="value",
            )
        if len(value) > SEGMENT_VALUE_MAX_CHARS or any(c.isspace() for c in value):
            raise SegmentInvalid(
                "invalid_segment",
                f"A path prefix is at most {SEGMENT_VALUE_MAX_CHARS} characters, without spaces.",
                field="value",
            )
        extractor = ""
    elif kind == Segment.Kind.REGEX:
        if len(value) > SEGMENT_REGEX_MAX_CHARS:
            raise SegmentInvalid(
                "invalid_segment",
                f"A regular expression is at most {SEGMENT_REGEX_MAX_CHARS} characters (it runs on every page).",
                field="value",
            )
        try:
            compile_pattern(value)  # RE2's refusals (backreferences, lookarounds) say why in words
        except ValueError as exc:
            reason = str(exc).replace(  # the advice compile_pattern gives is about include and exclude rules
                "Use an include rule together with an exclude rule instead.",
                "Write it without one: a page may belong to several segments.",
            )
            raise SegmentInvalid("invalid_segment", reason, field="value") from None
        if (reason := _regex_refusal(value)) is not None:
            raise SegmentInvalid("invalid_segment", reason, field="value")
        extractor = ""
    else:
        names = [e.get("name") for e in project.extractors or [] if isinstance(e, dict)]
        if not names:
            raise SegmentInvalid(
                "invalid_segment",
                "This project has no custom extractors: add one in the project's settings first.",
                field="extractor",
            )
        if extractor not in names:
            raise SegmentInvalid(
                "invalid_segment",
                f"Choose one of the project's extractors: {', '.join(names)}.",
                field="extractor",
            )
        if len(value) > SEGMENT_VALUE_MAX_CHARS:
            raise SegmentInvalid(
                "invalid_segment", f"A value is at most {SEGMENT_VALUE_MAX_CHARS} characters.", field="value"
            )
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
        raise SegmentInvalid("invalid_segment", "The position is a whole number from 0.", field="position")
    taken = Segment.objects.filter(project=project, name__iexact=name)
    if instance is not None:
        taken = taken.exclude(id=instance.id)
    if taken.exists():
        raise SegmentInvalid("segment_name_taken", f"This project already has a segment named “{name}”.", field="name")
    return {"name": name, "kind": kind, "value": value, "extractor": extractor, "position": position}
