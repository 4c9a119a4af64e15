"""The external link checks (audits.checks.external) on constructed rows (Page, external LinkEdge and the
ExternalLink answers the external link pass stores) on PostgreSQL: each type on a planted page, none on its clean
twin, one issue per (source page, target), the evidence the issue screens show, the per-type cap, the site-wide
note of what was left unchecked. No network: the pass that asks is tested in tests/audits/pipeline/test_external.py.
"""

import pytest
from django.db import connection

from audits.checks import external as checks
from audits.checks.external import EXTERNAL_SITE_TYPES, external_link_issues
from audits.checks.registry import CHECKS_BY_TYPE, CheckSettings
from audits.evidence import evidence_columns, evidence_rows, evidence_targets
from audits.models import ExternalLink, Issue, Page, external_link_id_for, page_id_for
from scratchpad.models import LinkEdge
from tests.factories import AuditFactory, ProjectFactory

pytestmark = pytest.mark.django_db

B = "https://site.test"
X = "https://other.test"
Outcome = ExternalLink.Outcome


@pytest.fixture
def audit():
    assert connection.vendor == "postgresql"
    return AuditFactory(project=ProjectFactory(base_url=B + "/"), site_url=B + "/", start_url=B + "/")


def mkpage(audit, path, base=B, **fields) -> Page:
    url = base + path
    values = {"fetch_class": Page.FetchClass.OK, "content_type": "text/html", "is_indexable": True, "depth": 1}
    values.update(fields)
    return Page.objects.create(id=page_id_for(audit.id, url), audit=audit, url=url, status_code=200, **values)


def target(audit, url, outcome, status=None, *, hops=0, final_url="", error="", method="HEAD"):
    ExternalLink.objects.create(
        id=external_link_id_for(audit.id, url), audit=audit, url=url, host=url.split("/")[2], outcome=outcome,
        status_code=status, redirect_hops=hops, final_url=final_url, error=error, method=method,
    )  # fmt: skip


def link(audit, source: Page, url: str, anchor="a link", count=1):
    LinkEdge.objects.create(
        audit=audit, source_page=source, target_url=url, anchor_text=anchor, internal=False, link_count=count
    )


def judge(audit, unchecked=None, settings=None) -> list[Issue]:
    found = external_link_issues(audit.id, settings or CheckSettings.for_audit(audit), unchecked=unchecked)
    Issue.objects.bulk_create(found)
    return found


def found_set(issues) -> set:
    return {(i.type, i.page_url.removeprefix(B), i.details.get("target_url", "")) for i in issues}


# Each type's planted target and a clean twin of it (a similar target that must not get the type).
PLANTED = {
    "external-link-broken": ((X + "/gone", Outcome.CLIENT_ERROR, 404, {}), (X + "/here", Outcome.OK, 200, {})),
    "external-link-server-error": ((X + "/error", Outcome.SERVER_ERROR, 503, {}), (X + "/up", Outcome.OK, 200, {})),
    "external-link-unreachable": (
        ("https://dead.test/", Outcome.DNS_ERROR, None, {"error": "dns: Name or service not known"}),
        ("https://alive.test/", Outcome.OK, 204, {}),
    ),
    "external-link-redirect-loop": (
        (X + "/loop", Outcome.REDIRECT_LOOP, 301, {"hops": 2, "final_url": X + "/loop"}),
        (X + "/one-hop", Outcome.REDIRECTED, 200, {"hops": 1, "final_url": X + "/end"}),
    ),
    "external-link-redirect-broken": (
        (X + "/moved", Outcome.REDIRECT_BROKEN, 404, {"hops": 1, "final_url": X + "/lost"}),
        (X + "/moved-well", Outcome.REDIRECTED, 200, {"hops": 1, "final_url": X + "/found"}),
    ),
    "external-link-redirect-chain": (
        (X + "/chain", Outcome.REDIRECTED, 200, {"hops": 3, "final_url": X + "/end"}),
        (X + "/short-chain", Outcome.REDIRECTED, 200, {"hops": 2, "final_url": X + "/end"}),
    ),
    "external-link-redirected": (
        (X + "/old", Outcome.REDIRECTED, 200, {"hops": 1, "final_url": X + "/new"}),
        (X + "/new", Outcome.OK, 200, {}),
    ),
    "external-link-insecure": (
        ("http://plain.test/", Outcome.OK, 200, {}),
        ("https://plain.test/", Outcome.OK, 200, {}),
    ),
    "external-link-unverified": (
        (X + "/walled", Outcome.UNVERIFIED, 403, {"error": "403: a bot-protection challenge (cf-mitigated)"}),
        (X + "/open", Outcome.OK, 200, {}),
    ),
}  # fmt: skip


@pytest.mark.parametrize("issue_type", sorted(PLANTED))
def test_each_type_on_its_planted_page_and_not_on_its_twin(audit, issue_type):
    (url, outcome, status, extra), (twin_url, twin_outcome, twin_status, twin_extra) = PLANTED[issue_type]
    planted, twin = mkpage(audit, "/planted"), mkpage(audit, "/twin")
    target(audit, url, outcome, status, hops=extra.get("hops", 0), final_url=extra.get("final_url", ""),
           error=extra.get("error", ""))  # fmt: skip
    target(audit, twin_url, twin_outcome, twin_status, hops=twin_extra.get("hops", 0),
           final_url=twin_extra.get("final_url", ""))  # fmt: skip
    link(audit, planted, url, anchor="Planted link")
    link(audit, twin, twin_url, anchor="Twin link")
    found = judge(audit)
    assert ("/planted", url) in {(p, t) for k, p, t in found_set(found) if k == issue_type}
    assert not [i for i in found if i.type == issue_type and i.page_url == B + "/twin"], issue_type
    issue = next(i for i in found if i.type == issue_type)
    assert issue.severity == CHECKS_BY_TYPE[issue_type].severity
    assert (issue.details["anchor_text"], issue.details["outcome"], issue.details["status_code"]) == (
        "Planted link",
        outcome,
        status,
    )


def test_one_issue_per_source_page_and_target_with_its_anchor_and_link_count(audit):
    home, about, docs = mkpage(audit, "/"), mkpage(audit, "/about"), mkpage(audit, "/docs")
    target(audit, X + "/gone", Outcome.CLIENT_ERROR, 404)
    target(audit, X + "/fine", Outcome.OK, 200)
    link(audit, home, X + "/gone", anchor="Old partner", count=3)
    link(audit, about, X + "/gone", anchor="Partner")
    link(audit, docs, X + "/fine", anchor="Docs elsewhere")
    found = judge(audit)
    assert found_set(found) == {
        ("external-link-broken", "/", X + "/gone"),
        ("external-link-broken", "/about", X + "/gone"),
    }
    rows = sorted(evidence_rows(audit=audit, issue_type="external-link-broken"), key=lambda r: r["page_url"])
    assert [(r["page_url"], r["anchor_text"], r["target_status_code"], r["links"]) for r in rows] == [
        (B + "/", "Old partner", 404, 3),
        (B + "/about", "Partner", 404, 1),
    ]
    (group,) = evidence_targets(audit=audit, issue_type="external-link-broken")
    assert (group["target_url"], group["pages"], group["links"], group["status_code"]) == (X + "/gone", 2, 4, 404)


def test_unreachable_says_which_failure_in_its_evidence(audit):
    page = mkpage(audit, "/")
    failures = {
        "https://slow.test/": (Outcome.TIMEOUT, "timeout: no complete answer within 10 s (total deadline)"),
        "https://dead.test/": (Outcome.DNS_ERROR, "dns: Name or service not known"),
        "https://badcert.test/": (Outcome.TLS_ERROR, "tls: certificate verify failed"),
        "https://closed.test/": (Outcome.CONNECTION_ERROR, "connect: Connection refused"),
    }
    for url, (outcome, error) in failures.items():
        target(audit, url, outcome, error=error)
        link(audit, page, url)
    judge(audit)
    assert [c for c, _ in evidence_columns("external-link-unreachable")][:5] == [
        "page_url", "target_url", "anchor_text", "outcome_label", "fetch_error"
    ]  # fmt: skip
    rows = {r["target_url"]: (r["outcome_label"], r["fetch_error"]) for r in evidence_rows(
        audit=audit, issue_type="external-link-unreachable")}  # fmt: skip
    assert rows == {
        "https://slow.test/": ("Timed out", failures["https://slow.test/"][1]),
        "https://dead.test/": ("Host not found", failures["https://dead.test/"][1]),
        "https://badcert.test/": ("TLS error", failures["https://badcert.test/"][1]),
        "https://closed.test/": ("Connection failed", failures["https://closed.test/"][1]),
    }


def test_an_http_target_is_insecure_only_from_an_https_page(audit):
    secure, plain = mkpage(audit, "/"), mkpage(audit, "/legacy", base="http://site.test")
    target(audit, "http://plain.test/", Outcome.OK, 200)
    link(audit, secure, "http://plain.test/")
    link(audit, plain, "http://plain.test/")
    found = judge(audit)
    assert [(i.type, i.page_url) for i in found] == [("external-link-insecure", B + "/")]


def test_unchecked_and_refused_targets_and_links_from_refused_pages_make_no_link_issue(audit):
    home = mkpage(audit, "/")
    walled = mkpage(audit, "/challenge", fetch_class=Page.FetchClass.BLOCKED)
    target(audit, X + "/later", Outcome.UNCHECKED)
    target(audit, "https://10.0.0.1/", Outcome.REFUSED, error="private_address: refused to connect")
    target(audit, X + "/gone", Outcome.CLIENT_ERROR, 404)
    link(audit, home, X + "/later")
    link(audit, home, "https://10.0.0.1/")
    link(audit, walled, X + "/gone")  # a challenge page's links say nothing of the site
    found = judge(audit)
    # A private address the egress guard did not ask could not be verified: said, never called broken.
    assert found_set(found) == {("external-link-unverified", "/", "https://10.0.0.1/")}


def test_the_unchecked_note_is_site_wide_and_says_why(audit):
    found = judge(audit, unchecked={"targets": 10, "checked": 4, "beyond_cap": 5, "out_of_time": 1,
                                    "external_links_max": 5, "external_links_budget_s": 60,
                                    "examples": [X + "/a", X + "/b"]})  # fmt: skip
    (note,) = found
    assert (note.type, note.page_id, note.page_url, note.severity) == ("external-links-unchecked", None, "", "info")
    assert note.details["unchecked"] == 6
    assert note.details["reason"] == "5 past the cap of 5 targets; 1 left when the 60 s time budget ran out"
    (row,) = evidence_rows(audit=audit, issue_type="external-links-unchecked")
    assert (row["unchecked"], row["examples"]) == (6, f"{X}/a | {X}/b")
    # Nothing left: no note (the clean twin).
    assert judge(audit, unchecked={"targets": 10, "checked": 10, "beyond_cap": 0, "out_of_time": 0}) == []


def test_each_type_is_capped_with_a_marker_counting_the_rest(audit, monkeypatch):
    monkeypatch.setattr(checks, "EXTERNAL_ISSUES_MAX", 2)
    target(audit, X + "/gone", Outcome.CLIENT_ERROR, 404)
    for n in range(5):
        link(audit, mkpage(audit, f"/p{n}"), X + "/gone")
    found = judge(audit)
    listed = [i for i in found if i.page_url]
    (marker,) = [i for i in found if not i.page_url]
    assert len(listed) == 2 and marker.details["left_out"] == 3 and marker.severity == "info"


def test_a_disabled_type_and_the_chain_threshold_follow_the_project_settings(audit):
    page = mkpage(audit, "/")
    target(audit, X + "/gone", Outcome.CLIENT_ERROR, 404)
    target(audit, X + "/two-hops", Outcome.REDIRECTED, 200, hops=2, final_url=X + "/end")
    link(audit, page, X + "/gone")
    link(audit, page, X + "/two-hops")
    settings = CheckSettings(
        disabled={"external-link-broken"}, thresholds={"external-link-redirect-chain": {"min_hops": 2}}
    )
    assert found_set(judge(audit, settings=settings)) == {("external-link-redirect-chain", "/", X + "/two-hops")}


def test_the_types_are_the_registrys_links_category():
    assert all(CHECKS_BY_TYPE[t].category == "links" and CHECKS_BY_TYPE[t].scope == "site" for t in EXTERNAL_SITE_TYPES)
    assert len(EXTERNAL_SITE_TYPES) == 10
