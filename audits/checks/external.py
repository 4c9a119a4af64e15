"""External link checks, judged in finalize: what the external link pass (audits.pipeline.external, the stage that
asks the other sites) stored in ExternalLink rows, joined with the audit's external LinkEdge rows. One issue per
(source page, target) and type, capped per type like the internal link checks; one site-wide issue when the cap
or the time budget left targets unchecked. No network here.
"""

from django.db import connection

from audits.checks.registry import CheckSettings, as_uuid, make_issue
from audits.models import ExternalLink, Issue, Page
from scratchpad.models import LinkEdge

Outcome = ExternalLink.Outcome

EXTERNAL_LINK_TYPES = (
    "external-link-broken",
    "external-link-server-error",
    "external-link-unreachable",
    "external-link-redirect-loop",
    "external-link-redirect-broken",
    "external-link-redirect-chain",
    "external-link-redirected",
    "external-link-insecure",
    "external-link-unverified",
)  # one row per (source page, target): the issue screens group them by target
EXTERNAL_SITE_TYPES = (*EXTERNAL_LINK_TYPES, "external-links-unchecked")

# The finding an outcome is (redirected: redirect-chain instead when it took the threshold's hops or more).
OUTCOME_TYPES = {
    Outcome.CLIENT_ERROR: "external-link-broken",
    Outcome.SERVER_ERROR: "external-link-server-error",
    Outcome.TIMEOUT: "external-link-unreachable",
    Outcome.DNS_ERROR: "external-link-unreachable",
    Outcome.TLS_ERROR: "external-link-unreachable",
    Outcome.CONNECTION_ERROR: "external-link-unreachable",
    Outcome.REDIRECT_LOOP: "external-link-redirect-loop",
    Outcome.TOO_MANY_REDIRECTS: "external-link-redirect-loop",
    Outcome.REDIRECT_BROKEN: "external-link-redirect-broken",
    Outcome.REDIRECTED: "external-link-redirected",
    Outcome.UNVERIFIED: "external-link-unverified",
    Outcome.REFUSED: "external-link-unverified",  # a private address the egress guard kept us from asking
}
OUTCOME_LABELS = dict(Outcome.choices)
EXTERNAL_ISSUES_MAX = 2000  # per type and audit; the rest is counted in a marker issue (as the internal link checks)
UNCHECKED_EXAMPLES_MAX = 5
STREAM_CHUNK_ROWS = 2000
NOT_JUDGED_FETCH_CLASSES = (Page.FetchClass.BLOCKED.value, Page.FetchClass.RATE_LIMITED.value)


def judged_external_edges_sql(*, with_targets: bool = False) -> str:
    """FROM/WHERE of the audit's external http(s) link edges from judged pages (not a refusal or a challenge page):
    one parameter, the audit id. `with_targets` joins each edge's ExternalLink row as `x`. Shared by the pass that
    gathers the targets and by the checks."""
    q = connection.ops.quote_name
    edge, page, issue = q(LinkEdge._meta.db_table), q(Page._meta.db_table), q(Issue._meta.db_table)
    targets = q(ExternalLink._meta.db_table)
    blocked = ", ".join(f"'{c}'" for c in NOT_JUDGED_FETCH_CLASSES)
    join = f"JOIN {targets} x ON x.audit_id = e.audit_id AND x.url = e.target_url" if with_targets else ""
    return f"""
        FROM {edge} e
        JOIN {page} s ON s.id = e.source_page_id
        {join}
        WHERE e.audit_id = %s AND e.internal = false
          AND (e.target_url LIKE 'http://%%' OR e.target_url LIKE 'https://%%')
          AND s.fetch_class NOT IN ({blocked})
          AND NOT EXISTS (SELECT 1 FROM {issue} b WHERE b.page_id = s.id AND b.type = 'blocked-page')
    """


def db_id(value):
    """An audit id as the database takes it in raw SQL (uuid on PostgreSQL, hex text on SQLite)."""
    return Page._meta.pk.get_db_prep_value(value, connection)


def external_link_issues(audit_id, settings: CheckSettings, *, unchecked: dict | None = None) -> list[Issue]:
    """The audit's external link issues from its ExternalLink rows: one per (source page, target) and type, the
    per-type cap's marker, and `external-links-unchecked` when `unchecked` ({"beyond_cap", "out_of_time",
    "targets", "checked", "external_links_max", "external_links_budget_s", "examples"}) counts any."""
    found: list[Issue] = []
    reported: dict[str, int] = {}
    left_out: dict[str, int] = {}
    min_hops = settings.threshold("external-link-redirect-chain", "min_hops")
    problems = [o.value for o in OUTCOME_TYPES]
    sql = f"""
        SELECT e.source_page_id, s.url, e.target_url, e.link_count, e.anchor_text,
               x.outcome, x.status_code, x.final_url, x.redirect_hops, x.error, x.method
        {judged_external_edges_sql(with_targets=True)}
        ORDER BY s.url, e.target_url
    """

    def add(issue_type: str, source_id, source_url: str, target: str, details: dict) -> None:
        if not settings.enabled(issue_type):
            return
        if reported.get(issue_type, 0) >= EXTERNAL_ISSUES_MAX:
            left_out[issue_type] = left_out.get(issue_type, 0) + 1
            return
        issue = make_issue(
            audit_id,
            issue_type,
            page_id=as_uuid(source_id),
            page_url=source_url,
            details=details,
            dedupe_key=target,
            settings=settings,
        )
        if issue is not None:
            found.append(issue)
            reported[issue_type] = reported.get(issue_type, 0) + 1

    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [db_id(audit_id)])
        while rows := cursor.fetchmany(STREAM_CHUNK_ROWS):
            for source_id, source_url, target, links, anchor, outcome, status, final_url, hops, error, method in rows:
                details = {
                    "target_url": target,
                    "anchor_text": anchor,
                    "links": links,
                    "outcome": outcome,
                    "outcome_label": OUTCOME_LABELS.get(outcome, outcome),
                    "status_code": status,
                    "final_url": final_url,
                    "redirect_hops": hops,
                    "fetch_error": error,
                    "method": method,
                }
                if target.startswith("http://") and source_url.startswith("https://"):
                    add("external-link-insecure", source_id, source_url, target, dict(details))
                issue_type = OUTCOME_TYPES.get(outcome)
                if outcome in problems and issue_type:
                    if outcome == Outcome.REDIRECTED and hops >= min_hops:
                        issue_type = "external-link-redirect-chain"
                    add(issue_type, source_id, source_url, target, details)
    for issue_type, count in sorted(left_out.items()):
        marker = make_issue(
            audit_id,
            issue_type,
            dedupe_key="cap",
            settings=settings,
            details={
                "capped": True,
                "reported": reported[issue_type],
                "left_out": count,
                "total": reported[issue_type] + count,
                "message": f"{count} more (page, link) pairs of this kind were found and not listed.",
            },
        )
        if marker is not None:
            marker.severity = Issue.Severity.INFO
            found.append(marker)
    if unchecked and (unchecked.get("beyond_cap") or unchecked.get("out_of_time")):
        issue = make_issue(
            audit_id, "external-links-unchecked", settings=settings, details=_unchecked_details(unchecked)
        )
        if issue is not None:
            found.append(issue)
    return found


def _unchecked_details(counts: dict) -> dict:
    beyond_cap, out_of_time = counts.get("beyond_cap", 0), counts.get("out_of_time", 0)
    reasons = []
    if beyond_cap:
        reasons.append(f"{beyond_cap} past the cap of {counts.get('external_links_max')} targets")
    if out_of_time:
        reasons.append(f"{out_of_time} left when the {counts.get('external_links_budget_s')} s time budget ran out")
    return {
        "unchecked": beyond_cap + out_of_time,
        "beyond_cap": beyond_cap,
        "out_of_time": out_of_time,
        "targets": counts.get("targets", 0),
        "checked": counts.get("checked", 0),
        "external_links_max": counts.get("external_links_max"),
        "external_links_budget_s": counts.get("external_links_budget_s"),
        "reason": "; ".join(reasons),
        "examples": list(counts.get("examples") or [])[:UNCHECKED_EXAMPLES_MAX],
        "setting": "external_links_max" if beyond_cap else "external_links_budget_s",
    }
