"""Is this answer the site's page, or a refusal standing in for it? The one decision: an HTTP 401/403, a
challenge header (Cloudflare's cf-mitigated), or a bot-challenge / WAF interstitial read from a tiny body.

`refusal_for(result, data)` is called once per page by audits.pipeline.page_record, which stores its answer on
the page record (the page's fetch class) and hands it to the page checks (the blocked-page issue)."""

import re
from dataclasses import dataclass

from crawler.fetch import FetchResult
from crawler.parse import PageData

BLOCKED_STATUS_CODES = frozenset({401, 403})
CHALLENGE_HEADERS = ("cf-mitigated",)
CHALLENGE_STATUSES = frozenset({200, 202, 503})
CHALLENGE_SCAN_BYTES = 64 * 1024  # challenge markers sit near the top of a challenge page
CHALLENGE_MAX_WORDS = 100  # a challenge interstitial is tiny; a real page mentioning "captcha" is not
# Lower-cased markers only bot challenges / WAF interstitials carry (Cloudflare, Imperva, DataDome,
# PerimeterX, DDoS-Guard). Cloudflare injects /cdn-cgi/challenge-platform/scripts/jsd/ into ordinary
# pages too, so that path does not count.
CHALLENGE_BODY_MARKERS = re.compile(
    r"cf-browser-verification|_cf_chl_opt|challenge-platform(?!/scripts/jsd)|_incapsula_resource"
    r"|captcha-delivery\.com|px-captcha|ddos-guard\.net/"
)
# Weaker signs, trusted only in the title of a tiny page: a login form with a CAPTCHA is not a challenge.
CHALLENGE_TITLE_MARKERS = re.compile(
    r"just a moment|attention required|checking your browser|captcha|verify you are (a )?human|are you a robot"
)


@dataclass(frozen=True)
class Refusal:
    reason: str  # why the answer counts as blocked, as the blocked-page issue shows it
    # Known from the status line or the headers alone. A challenge read from the body only makes a page's fetch
    # class "blocked" when the body was parsed as the page (2xx HTML); a 503 interstitial or a non-HTML answer
    # keeps the fetch class its status gives and is reported by the blocked-page issue.
    by_answer: bool


def refusal_for(result: FetchResult, data: PageData | None) -> Refusal | None:
    """Why this answer is a refusal rather than the page, or None. `data` is the parsed page (None when the body
    was not parsed). An answer that broke off, or no answer, is a failed fetch, not a refusal."""
    if result.status_code is None or result.error_kind:
        return None
    if result.status_code in BLOCKED_STATUS_CODES:
        return Refusal(f"HTTP {result.status_code}", by_answer=True)
    for header in CHALLENGE_HEADERS:
        if header in result.headers:
            return Refusal(f"{header}: {result.headers[header]}"[:200], by_answer=True)
    reason = _challenge_in_body(result, data)
    return Refusal(reason, by_answer=False) if reason else None


def _challenge_in_body(result: FetchResult, data: PageData | None) -> str | None:
    if result.status_code not in CHALLENGE_STATUSES or not result.body:
        return None
    tiny = data.word_count < CHALLENGE_MAX_WORDS if data is not None else len(result.body) <= CHALLENGE_SCAN_BYTES
    if not tiny:
        return None
    head = result.body[:CHALLENGE_SCAN_BYTES].decode("utf-8", "replace").lower()
    marker = CHALLENGE_BODY_MARKERS.search(head)
    if marker:
        return f"challenge marker {marker.group(0)!r} in a {result.status_code} answer"
    title = (data.titles[0] if data is not None and data.titles else _raw_title(head)).lower()
    marker = CHALLENGE_TITLE_MARKERS.search(title)
    if marker:
        return f"challenge title {title[:80]!r} in a {result.status_code} answer"
    return None


def _raw_title(html: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title", html, re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""
