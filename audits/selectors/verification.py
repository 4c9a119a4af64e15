"""Reads of fix verifications (issue 28, audits.verification): the URLs an issue type's re-check fetches, a
verification audit's verdict per URL with its counts, and the line an issue type shows once it was verified
("verified fixed on 4 Dec 2026", "3 of 5 fixed on 4 Dec 2026") on the issue screen, the issue lists and the API.

A verification's verdict is worked out from its rows on each read (a few queries, bounded by its list of at
most MAX_LIST_URLS URLs); the issue lists read only the newest verification of each type."""

from dataclasses import dataclass, field
from datetime import datetime

from django.utils.formats import date_format

from audits.checks.registry import CHECKS_BY_TYPE
from audits.models import Audit, Issue, Page
from audits.verification import LINK_TARGET_KEYS, OUTCOME_LABELS, Outcome, Recheck, Rule, judge, verifiability

SQL_IN_BATCH = 900  # URLs per IN (...) list: under SQLite's variable limit


@dataclass(frozen=True)
class UrlOutcome:
    url: str
    outcome: str  # an audits.verification.Outcome value
    label: str
    note: str
    page_id: object = None  # the verification audit's page for the URL, when it crawled it


@dataclass
class FixVerification:
    """A verification audit read against the audit it verifies."""

    audit: Audit  # the verification (a list-mode audit)
    original_id: object
    issue_type: str
    title: str
    status: str  # the verification audit's status: while it runs there is no verdict yet
    rows: list[UrlOutcome] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # every Outcome value, zeros included
    note: str = ""  # what the re-check could not cover (a capped original list)
    checked_at: datetime | None = None

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def fixed(self) -> int:
        return self.counts.get(Outcome.FIXED, 0)

    @property
    def label(self) -> str:
        return verification_label(self)


@dataclass(frozen=True)
class Targets:
    """The URLs a re-check of one issue type fetches: the pages carrying it, then the link targets they name."""

    pages: list[str]
    targets: list[str]
    note: str = ""

    @property
    def urls(self) -> list[str]:
        seen = dict.fromkeys(self.pages)
        seen.update(dict.fromkeys(self.targets))
        return list(seen)


def verification_targets(*, audit: Audit, issue_type: str) -> Targets:
    """The pages of `audit` carrying the issue type (site-wide findings and a capped list's marker name none) and,
    for a link type, the targets their findings point at, each once, in URL order."""
    rule = verifiability(issue_type).rule
    rows = (
        Issue.objects.filter(audit_id=audit.id, type=issue_type).order_by("page_url").values_list("page_url", "details")
    )
    pages: dict[str, None] = {}
    targets: dict[str, None] = {}
    note = ""
    key = LINK_TARGET_KEYS.get(issue_type)
    for page_url, details in rows.iterator(chunk_size=2000):
        details = details or {}
        if details.get("capped"):
            note = (
                f"The original audit listed {details.get('reported')} of {details.get('total')} findings; "
                f"the {details.get('left_out')} it left out were not re-checked."
            )
            continue
        if not page_url:
            continue
        pages[page_url] = None
        if rule == Rule.LINK and key and details.get(key):
            targets[details[key]] = None
    return Targets(pages=list(pages), targets=sorted(t for t in targets if t not in pages), note=note)


def _batches(items: list, size: int = SQL_IN_BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _pages_by_url(audit_id, urls: list[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for batch in _batches(urls):
        rows = Page.objects.filter(audit_id=audit_id, url__in=batch).values(
            "id", "url", "status_code", "fetch_class", "fetch_error", "redirect_url"
        )
        found.update({row["url"]: row for row in rows})
    return found


def fix_verification(*, audit: Audit) -> FixVerification | None:
    """A verification audit's verdict on each URL that carried its issue type in the original (fixed, still
    present, no longer reachable, with why), and the counts; None for an audit that verifies nothing. While the
    verification runs, or when it failed or was cancelled, there are no rows."""
    if audit.verifies_id is None:
        return None
    issue_type = (audit.config or {}).get("verify_issue_type", "")
    spec = CHECKS_BY_TYPE.get(issue_type)
    result = FixVerification(
        audit=audit,
        original_id=audit.verifies_id,
        issue_type=issue_type,
        title=spec.title if spec else issue_type,
        status=audit.status,
        counts={outcome.value: 0 for outcome in Outcome},
        checked_at=audit.completed_at,
    )
    if audit.status != Audit.Status.COMPLETED:
        return result
    original = Audit(id=audit.verifies_id, project_id=audit.project_id)
    targets = verification_targets(audit=original, issue_type=issue_type)
    result.note = targets.note
    pages = _pages_by_url(audit.id, targets.urls)
    carrying = _carrying(audit.id, issue_type, targets.pages)
    link_targets = _link_targets(original.id, issue_type)
    for url in targets.pages:
        page = pages.get(url)
        missing = tuple(t for t in link_targets.get(url, ()) if t not in pages)
        recheck = (
            Recheck(crawled=False)
            if page is None
            else Recheck(
                crawled=True,
                status_code=page["status_code"],
                fetch_class=page["fetch_class"],
                fetch_error=page["fetch_error"],
                redirect_url=page["redirect_url"],
                still_carries=url in carrying,
                targets_missing=missing,
            )
        )
        outcome, note = judge(recheck)
        result.rows.append(
            UrlOutcome(
                url=url,
                outcome=outcome.value,
                label=OUTCOME_LABELS[outcome],
                note=note,
                page_id=page["id"] if page else None,
            )
        )
        result.counts[outcome.value] += 1
    return result


def _carrying(audit_id, issue_type: str, urls: list[str]) -> set[str]:
    """Which of the URLs the verification audit still reports the issue type on."""
    found: set[str] = set()
    for batch in _batches(urls):
        rows = Issue.objects.filter(audit_id=audit_id, type=issue_type, page_url__in=batch).values_list("page_url")
        found.update(url for (url,) in rows)
    return found


def _link_targets(original_id, issue_type: str) -> dict[str, list[str]]:
    """For a link type, each original page's targets (its findings' target URLs)."""
    key = LINK_TARGET_KEYS.get(issue_type)
    if key is None:
        return {}
    out: dict[str, list[str]] = {}
    rows = Issue.objects.filter(audit_id=original_id, type=issue_type).exclude(page_url="")
    for page_url, details in rows.values_list("page_url", "details").iterator(chunk_size=2000):
        target = (details or {}).get(key)
        if target:
            out.setdefault(page_url, []).append(target)
    return out


def verification_label(result: FixVerification) -> str:
    """The line an issue type shows: "verified fixed on 4 Dec 2026" when every URL re-checked was fixed, "3 of 5
    fixed on 4 Dec 2026" otherwise, "verification running" while it runs."""
    if result.status == Audit.Status.RUNNING:
        return "verification running"
    if result.status != Audit.Status.COMPLETED or not result.checked_at:
        return f"verification {result.status}"
    day = date_format(result.checked_at, "j M Y")
    if result.total and result.fixed == result.total:
        return f"verified fixed on {day}"
    return f"{result.fixed} of {result.total} fixed on {day}"


def verifications_by_type(*, audit: Audit) -> dict[str, FixVerification]:
    """The newest verification of each issue type of `audit` (a running one included), read: what the issue
    screen, the issue lists and the API's issue type rows show beside each type."""
    newest: dict[str, Audit] = {}
    rows = Audit.objects.filter(verifies_id=audit.id)
    for verification in rows.order_by("-created_at"):
        issue_type = (verification.config or {}).get("verify_issue_type")
        if issue_type and issue_type not in newest:
            newest[issue_type] = verification
    return {issue_type: fix_verification(audit=v) for issue_type, v in newest.items()}


def verification_list_for(*, audit: Audit, issue_type: str) -> list[Audit]:
    """The verifications of one issue type of `audit`, newest first (the issue screen links the last few)."""
    return list(
        Audit.objects.filter(verifies_id=audit.id, config__verify_issue_type=issue_type).order_by("-created_at")
    )
