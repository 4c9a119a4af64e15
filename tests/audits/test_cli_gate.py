"""`manage.py audit … --fail-on RULES` as a CI pipeline runs it: the two-version site (tests.support.sites.versions)
audited as it is released, exit 3 with the reason on the last line and a JUnit report a CI reads, 0 on an unchanged
rerun; refusals before anything starts; a gate on an audit that failed."""

import json
import socket
from xml.etree import ElementTree

import pytest
from lxml import etree

from audits.models import Audit, Project
from tests.support.sites.versions import ADDED, NOINDEXED, REDIRECTED, REMOVED, serve_versions
from tests.support.workers import run_cli

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # manage.py child processes

RULES = "new-critical,became-noindex,new-broken,score-drop=50"


def audit_cli(site, junit, *extra):
    return run_cli(
        "audit", site.url + "/", "--max-pages", "100", "--inline", "--json", "--fail-on", RULES, "--junit", str(junit),
        *extra,
    )  # fmt: skip


def last_line(done) -> str:
    return done.stderr.strip().splitlines()[-1]


def junit_cases(path) -> tuple[ElementTree.Element, dict[str, ElementTree.Element]]:
    """The report parsed as a CI parses it (libxml2, strict, and Python's parser): one testsuite, its testcases by
    name."""
    assert etree.parse(str(path), etree.XMLParser(recover=False)).getroot().tag == "testsuites"
    root = ElementTree.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    return suite, {case.get("name"): case for case in suite.findall("testcase")}


def test_the_gate_fails_the_release_that_adds_a_critical_issue_and_passes_an_unchanged_rerun(tmp_path):
    junit = tmp_path / "gate.xml"
    with serve_versions() as site:
        first = audit_cli(site, junit)
        assert first.returncode == 0, first.stderr
        assert last_line(first) == "gate passed: 4 rules (4 not judged: no baseline)"
        suite, cases = junit_cases(junit)
        assert suite.get("skipped") == "4" and suite.get("failures") == "0"
        assert cases["new-critical"].find("skipped").get("message") == "no baseline"

        site.version = 2  # the release: a page removed (a 404 still linked: critical), one noindexed, one added
        second = audit_cli(site, junit, "--baseline", "previous")
        assert second.returncode == 3, second.stderr
        result = json.loads(second.stdout)
        assert result["status"] == "completed" and result["gate"]["passed"] is False
        assert result["gate"]["baseline"] == json.loads(first.stdout)["id"]
        # noindexed, and no longer indexable by answering 404 or redirecting: PageChanges of indexability, down
        noindexed = sorted(site.url_of(path) for path in (NOINDEXED, REMOVED, REDIRECTED))
        assert last_line(second) == (
            "gate failed: new-critical: 2 new critical issues: broken-internal-link on 1 URL, broken-page on 1 URL; "
            "became-noindex: 3 URLs became non-indexable (noindex: 1, non-2xx status: 1, redirect: 1); "
            "new-broken: 1 URL newly broken (4xx/5xx or no answer)"
        )
        assert (
            "gate: FAIL became-noindex: 3 URLs became non-indexable (noindex: 1, non-2xx status: 1, redirect: 1)"
            f" — {', '.join(noindexed)}\n"
        ) in second.stderr
        assert "gate: PASS score-drop=50: health score " in second.stderr
        suite, cases = junit_cases(junit)
        assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "3", "0")
        props = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert props["audit"] == result["id"] and props["baseline"] == result["gate"]["baseline"]
        critical = cases["new-critical"].find("failure")
        assert critical.get("message") == result["gate"]["rules"][0]["reason"]
        assert site.url_of(REMOVED) in critical.text.splitlines()
        assert site.url_of(ADDED) not in critical.text  # the added page is fine
        assert cases["new-broken"].find("failure").text.splitlines()[1:] == [site.url_of(REMOVED)]
        assert cases["became-noindex"].find("failure").text.splitlines()[1:] == noindexed
        assert cases["score-drop=50"].find("failure") is None

        rerun = audit_cli(site, junit)  # the same release again: measured against the second audit
        assert rerun.returncode == 0, rerun.stderr
        assert last_line(rerun) == "gate passed: 4 rules"
        assert json.loads(rerun.stdout)["gate"]["baseline"] == result["id"]
        suite, _cases = junit_cases(junit)
        assert (suite.get("failures"), suite.get("skipped")) == ("0", "0")

        against_first = audit_cli(site, junit, "--baseline", json.loads(first.stdout)["id"])
        assert against_first.returncode == 3, against_first.stderr
        assert json.loads(against_first.stdout)["gate"]["baseline"] == json.loads(first.stdout)["id"]
    assert Project.objects.count() == 1 and Audit.objects.count() == 4


def one_line_error(done, *words):
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--fail-on", "new-critical,new-broke"], ["'new-broke'", "invalid_gate_rule", "new-critical, new-issue=TYPE"]),
        (["--fail-on", "score-drop=0"], ["'score-drop=0'", "1 to 100"]),
        (["--fail-on", ""], ["at least one gate rule"]),
        (["--junit", "gate.xml"], ["--fail-on", "invalid_junit_file"]),
        (["--fail-on", "new-critical", "--junit", "/no/such/folder/gate.xml"], ["/no/such/folder/gate.xml"]),
        (["--baseline", "not-an-audit"], ["baseline_invalid"]),
    ],
)
def test_bad_gate_arguments_exit_2_with_one_line_and_start_nothing(args, words):
    one_line_error(run_cli("audit", "http://127.0.0.1:1/", *args), *words)
    assert Audit.objects.count() == 0


def test_a_gate_on_an_audit_that_failed_keeps_exit_1_and_reports_every_rule_as_an_error(tmp_path, unused_port):
    junit = tmp_path / "gate.xml"
    done = run_cli(
        "audit", f"http://127.0.0.1:{unused_port}/", "--inline", "--json", "--fail-on", "new-critical,score-drop=5",
        "--junit", str(junit),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert last_line(done).startswith("audit failed: start_url_unreachable")
    assert json.loads(done.stdout)["gate"]["passed"] is False
    suite, cases = junit_cases(junit)
    assert (suite.get("errors"), suite.get("failures")) == ("2", "0")
    assert cases["score-drop=5"].find("error").get("message") == "not judged: the audit failed (start_url_unreachable)"


def test_the_help_documents_exit_3():
    done = run_cli("audit", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "2 on bad arguments, 3 when a --fail-on rule fired" in text
    assert "--fail-on RULES" in text and "--junit FILE" in text and "--baseline previous|AUDIT_ID" in text


@pytest.fixture
def unused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
