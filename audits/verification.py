"""Fix verification (issue 28): which issue types a list-mode re-check of their URLs can judge, which URLs it
fetches, and the verdict on one URL. A verification is an ordinary list-mode audit (`Audit.verifies` = the
original, `config["verify_issue_type"]`); the front door starts it (`audits.services.issue_fix_verify`) and
`audits.selectors.verification` reads its outcome. No Django query here: the rules are data and one function.

What a list re-check can honestly judge: a finding about one page that the page's own fetch decides (its status,
its HTML, what it loads: images, scripts, stylesheets, external link targets are asked again by finalize's passes
for every crawled page), and a link finding when the link's target is re-fetched beside the page (a broken
internal link, a link to a redirect, a canonical to a non-OK page: list mode records the links between listed
pages and judges them, it only never fetches an unlisted target). Refused: site-wide findings (robots.txt, sitemaps,
security headers, llms.txt, bots), what needs the whole crawl (duplicates, orphans, click depth, redirect chains —
list mode follows no redirect —, pagination series, hreflang return links, a sitemap's URLs, soft 404s that count
the same text across the site) and Lighthouse's sampled findings.
"""

from dataclasses import dataclass
from enum import StrEnum

from audits.checks.registry import CHECKS_BY_TYPE


class Rule(StrEnum):
    """How the URLs of one issue type are re-checked."""

    PAGE = "page"  # the pages carrying it, fetched again; their own fetch decides
    LINK = "link"  # the pages carrying it and the targets their findings name, both fetched again


class Outcome(StrEnum):
    """A re-checked URL's verdict."""

    FIXED = "fixed"  # fetched again and the issue type is gone from it
    STILL_PRESENT = "still_present"  # fetched again and the issue type is still on it
    UNREACHABLE = "unreachable"  # not fetched again (robots.txt, scope), or answered 4xx/5xx, or now redirects


OUTCOME_LABELS = {
    Outcome.FIXED: "Fixed",
    Outcome.STILL_PRESENT: "Still present",
    Outcome.UNREACHABLE: "No longer reachable",
}

# The evidence key naming the URL a link finding points at (audits/checks/site.py writes them).
LINK_TARGET_KEYS: dict[str, str] = {
    "broken-internal-link": "target_url",
    "internal-link-to-redirect": "target_url",
    "canonical-target-not-ok": "canonical_url",
}

# Site-scope types judged on one page and what it loads: finalize's passes ask them again for a list's pages.
_PAGE_LEVEL_SITE_TYPES = frozenset(
    {
        "broken-image",
        "image-too-large",
        "broken-script",
        "broken-stylesheet",
        "broken-font",
        "broken-icon",
        "external-link-broken",
        "external-link-server-error",
        "external-link-unreachable",
        "external-link-redirect-loop",
        "external-link-redirect-broken",
        "external-link-redirect-chain",
        "external-link-redirected",
        "external-link-insecure",
        "external-link-unverified",
    }
)
EXTERNAL_TYPES = frozenset(t for t in _PAGE_LEVEL_SITE_TYPES if t.startswith("external-link"))

_NEEDS_CRAWL = "it needs the whole crawl"
_WHY_NOT: dict[str, str] = {
    "deep-page": f"{_NEEDS_CRAWL}: click depth is measured from the start page over every link",
    "orphan-page": f"{_NEEDS_CRAWL}: a page is an orphan when no crawled page links to it",
    "duplicate-title": f"{_NEEDS_CRAWL}: a duplicate is judged against every page of the site",
    "duplicate-meta-description": f"{_NEEDS_CRAWL}: a duplicate is judged against every page of the site",
    "duplicate-content": f"{_NEEDS_CRAWL}: a duplicate is judged against every page of the site",
    "near-duplicate-content": f"{_NEEDS_CRAWL}: a near duplicate is judged against every page of the site",
    "soft-404": f"{_NEEDS_CRAWL}: a soft 404 also counts the same short text across the site",
    "redirect-chain": "a list re-check follows no redirect, so a chain cannot be walked",
    "redirect-loop": "a list re-check follows no redirect, so a loop cannot be walked",
    "hreflang-missing-return-link": f"{_NEEDS_CRAWL}: every alternate of the set must be crawled",
    "pagination-broken-sequence": f"{_NEEDS_CRAWL}: the whole paginated series must be crawled",
    "pagination-url-not-ok": f"{_NEEDS_CRAWL}: the whole paginated series must be crawled",
    "pagination-loop": f"{_NEEDS_CRAWL}: the whole paginated series must be crawled",
    "sitemap-url-not-indexable": "it is judged on the sitemaps' URLs, which a list re-check does not read",
}


@dataclass(frozen=True)
class Verifiability:
    """Whether an issue type can be verified by a list re-check: its rule, or why not (for people)."""

    rule: Rule | None
    reason: str = ""


def verifiability(issue_type: str) -> Verifiability:
    """The rule that re-checks an issue type, or the reason a list re-check cannot judge it."""
    spec = CHECKS_BY_TYPE.get(issue_type)
    if spec is None:
        return Verifiability(None, "it is not an issue type Sitewarden checks")
    if issue_type in _WHY_NOT:
        return Verifiability(None, _WHY_NOT[issue_type])
    if issue_type in LINK_TARGET_KEYS:
        return Verifiability(Rule.LINK)
    if spec.scope == "lighthouse":
        return Verifiability(None, "Lighthouse runs on a sample of pages, not on a list: start a full audit")
    if spec.scope == "page" or issue_type in _PAGE_LEVEL_SITE_TYPES:
        return Verifiability(Rule.PAGE)
    return Verifiability(None, "it is a site-wide finding, not one a page's own fetch decides: start a full audit")


@dataclass(frozen=True)
class Recheck:
    """What the verification audit found for one URL (None fields: it has no page row for the URL)."""

    crawled: bool
    status_code: int | None = None
    fetch_class: str = ""
    fetch_error: str = ""
    redirect_url: str = ""
    still_carries: bool = False  # the verification audit reports the issue type on this URL
    targets_missing: tuple[str, ...] = ()  # LINK: the finding's targets the verification did not fetch


def judge(recheck: Recheck) -> tuple[Outcome, str]:
    """One URL's verdict and a sentence saying why. The issue type still reported on the URL comes first: for a
    finding about the page's own answer (broken-page, server-error, blocked-page…) answering badly again is the issue
    still there, not a URL that became unreachable."""
    if not recheck.crawled:
        return Outcome.UNREACHABLE, "Not crawled again: robots.txt or the project's include/exclude rules refused it"
    if recheck.still_carries:
        return Outcome.STILL_PRESENT, _answer(recheck)
    status = recheck.status_code
    if recheck.fetch_class != "ok" or status is None or status >= 400:
        return Outcome.UNREACHABLE, _answer(recheck)
    if 300 <= status < 400 and recheck.redirect_url:
        return Outcome.UNREACHABLE, f"Now redirects ({status}) to {recheck.redirect_url}; the target was not checked"
    if recheck.targets_missing:
        return (
            Outcome.UNREACHABLE,
            f"Its link target {recheck.targets_missing[0]} could not be fetched again, so the link was not judged",
        )
    return Outcome.FIXED, f"Answered {status} and no longer has the issue"


def _answer(recheck: Recheck) -> str:
    if recheck.status_code is None:
        return f"No answer: {recheck.fetch_error or recheck.fetch_class or 'the fetch failed'}"
    if recheck.still_carries:
        return f"Answered {recheck.status_code} and still has the issue"
    return f"Answered {recheck.status_code}" + (f" ({recheck.fetch_class})" if recheck.fetch_class != "ok" else "")
