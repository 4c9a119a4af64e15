"""Fix verification (issue 28): an issue type's URLs re-checked as a list-mode audit linked to the original, each URL
judged fixed, still present or no longer reachable, and the types a list re-check cannot judge refused.

The site (tests/support/sites/fixes.py) is crawled in its first version, then changed in place: some planted issues
fixed, one page removed, one now disallowed by robots.txt, and the verifications run against the second version.
"""

import pytest

from audits.errors import AuditRefused
from audits.models import Audit, Issue
from audits.pipeline.inline import pipeline_run_inline
from audits.pipeline.start import audit_start
from audits.selectors.verification import fix_verification, verification_targets, verifications_by_type
from audits.services import issue_fix_verify
from audits.verification import Outcome, Recheck, Rule, judge, verifiability
from tests.factories import AuditFactory, IssueFactory, PageFactory, ProjectFactory
from tests.support.sites.fixes import EXPECTED_H1, EXPECTED_LINKS, fix_site_after, fix_site_before
from tests.support.sites.pages import serve


def _run(audit: Audit) -> Audit:
    pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    return audit


def _outcomes(verification: Audit, base: str) -> dict[str, str]:
    result = fix_verification(audit=verification)
    return {row.url.removeprefix(base): row.outcome for row in result.rows}


@pytest.mark.django_db(transaction=True)
def test_a_fix_is_verified_url_by_url_on_the_second_version_of_the_site():
    routes = fix_site_before()
    with serve(routes) as base:
        project = ProjectFactory(base_url=base + "/")
        user = project.owner
        original = _run(audit_start(project=project, dispatch=False))
        found = set(Issue.objects.filter(audit=original, type="missing-h1").values_list("page_url", flat=True))
        assert {u.removeprefix(base) for u in found} == set(EXPECTED_H1)
        fix_site_after(routes)

        h1 = _run(issue_fix_verify(audit=original, issue_type="missing-h1", user=user))
        links = _run(issue_fix_verify(audit=original, issue_type="broken-internal-link", user=user))
        title = _run(issue_fix_verify(audit=original, issue_type="title-too-long", user=user))

    # A list-mode audit linked to the original, of exactly the URLs that carried the type.
    assert h1.verifies_id == original.id and h1.config["verify_issue_type"] == "missing-h1"
    assert h1.config["mode"] == "list"
    assert sorted(u.removeprefix(base) for u in h1.config["list_urls"]) == sorted(EXPECTED_H1)
    assert h1.config["checks"] == original.config["checks"]
    assert h1.config["verify_requested_by"] == user.pk

    assert _outcomes(h1, base) == EXPECTED_H1
    result = fix_verification(audit=h1)
    assert result.counts == {"fixed": 2, "still_present": 1, "unreachable": 2}
    notes = {row.url.removeprefix(base): row.note for row in result.rows}
    assert "404" in notes["/h1-gone"]
    assert "robots.txt" in notes["/h1-private"]
    assert result.label.startswith("2 of 5 fixed on ")

    # Link type: the pages carrying it and their targets were fetched again; only the pages are judged.
    listed = {u.removeprefix(base) for u in links.config["list_urls"]}
    assert listed == {*EXPECTED_LINKS, "/gone-revived", "/gone-edited", "/gone-kept"}
    assert _outcomes(links, base) == EXPECTED_LINKS
    assert fix_verification(audit=links).label.startswith("2 of 3 fixed on ")

    assert fix_verification(audit=title).label.startswith("verified fixed on ")

    # What the issue lists show beside each type: the newest verification of each.
    shown = {t: v.label for t, v in verifications_by_type(audit=original).items()}
    assert set(shown) == {"missing-h1", "broken-internal-link", "title-too-long"}
    assert shown["title-too-long"].startswith("verified fixed on ")


@pytest.mark.django_db(transaction=True)
def test_types_a_list_recheck_cannot_judge_are_refused_with_a_code():
    routes = fix_site_before()
    with serve(routes) as base:
        project = ProjectFactory(base_url=base + "/")
        original = _run(audit_start(project=project, dispatch=False))

    def refusal(issue_type: str, audit: Audit = original) -> AuditRefused:
        with pytest.raises(AuditRefused) as caught:
            issue_fix_verify(audit=audit, issue_type=issue_type)
        return caught.value

    assert Issue.objects.filter(audit=original, type="duplicate-title").count() == 2
    duplicate = refusal("duplicate-title")
    assert duplicate.code == "issue_type_not_verifiable" and duplicate.status == 400
    assert "whole crawl" in duplicate.message
    for issue_type in ("orphan-page", "redirect-chain", "deep-page", "missing-hsts", "poor-lcp", "sitemap-missing"):
        assert refusal(issue_type).code == "issue_type_not_verifiable", issue_type
    assert refusal("no-such-type").code == "issue_type_not_found"
    assert refusal("multiple-h1").code == "issue_type_not_found"  # a verifiable type the audit did not find

    running = AuditFactory(project=project, status=Audit.Status.RUNNING)
    assert refusal("missing-h1", running).code == "audit_not_completed"
    running.delete()
    summarised = AuditFactory(project=project, status=Audit.Status.COMPLETED, summarised_at=original.completed_at)
    IssueFactory(audit=summarised, type="missing-h1", page_url=f"{base}/h1-kept")
    assert refusal("missing-h1", summarised).code == "audit_summarised"

    # One verification at a time, like any audit of the project; nothing is left behind by a refusal.
    first = issue_fix_verify(audit=original, issue_type="missing-h1")
    assert refusal("title-too-long").code == "audit_already_running"
    assert Audit.objects.filter(verifies=original).count() == 1
    assert fix_verification(audit=first).rows == []  # no verdict while it runs
    assert fix_verification(audit=first).label == "verification running"
    assert fix_verification(audit=original) is None  # the original verifies nothing


def test_the_rules_say_which_types_a_list_can_judge():
    assert verifiability("missing-h1").rule == Rule.PAGE
    assert verifiability("broken-image").rule == Rule.PAGE  # the image pass asks a listed page's images again
    assert verifiability("broken-internal-link").rule == Rule.LINK
    assert verifiability("canonical-target-not-ok").rule == Rule.LINK
    refused_types = ("orphan-page", "near-duplicate-content", "redirect-loop", "missing-hsts", "poor-lcp")
    for refused in refused_types:
        assert verifiability(refused).rule is None and verifiability(refused).reason


def test_a_url_answering_badly_again_is_the_fetch_issue_still_present():
    broken_again = Recheck(crawled=True, status_code=404, fetch_class="ok", still_carries=True)
    assert judge(broken_again)[0] == Outcome.STILL_PRESENT
    gone = Recheck(crawled=True, status_code=410, fetch_class="ok")
    assert judge(gone)[0] == Outcome.UNREACHABLE
    moved = Recheck(crawled=True, status_code=301, fetch_class="ok", redirect_url="http://x/new")
    assert judge(moved) == (Outcome.UNREACHABLE, "Now redirects (301) to http://x/new; the target was not checked")
    target_unfetched = Recheck(crawled=True, status_code=200, fetch_class="ok", targets_missing=("http://x/t",))
    assert judge(target_unfetched)[0] == Outcome.UNREACHABLE
    assert judge(Recheck(crawled=True, status_code=200, fetch_class="ok"))[0] == Outcome.FIXED


@pytest.mark.django_db
def test_the_urls_rechecked_skip_site_wide_findings_and_a_capped_lists_marker():
    audit = AuditFactory(status=Audit.Status.COMPLETED)
    site = audit.project.base_url.rstrip("/")
    for page, target in (("/a", "/x"), ("/a", "/y"), ("/b", "/a")):
        IssueFactory(
            audit=audit,
            page=PageFactory(audit=audit, url=site + page) if target == "/x" or page == "/b" else None,
            page_url=site + page,
            type="broken-internal-link",
            dedupe_key=site + target,
            details={"target_url": site + target},
        )
    marker = {"capped": True, "reported": 3, "left_out": 7, "total": 10}
    IssueFactory(audit=audit, page=None, type="broken-internal-link", dedupe_key="cap", details=marker)
    targets = verification_targets(audit=audit, issue_type="broken-internal-link")
    assert targets.pages == [f"{site}/a", f"{site}/b"]
    assert targets.targets == [f"{site}/x", f"{site}/y"]  # /a is a page already
    assert targets.urls == [f"{site}/a", f"{site}/b", f"{site}/x", f"{site}/y"]
    assert "7 it left out were not re-checked" in targets.note
