"""`manage.py audit` as a person runs it: exit codes, JSON on stdout, one-line reasons on stderr."""

import io
import json
import os
import pty
import re
import socket
import subprocess
import sys

import pytest

from audits.events import event_sentence
from audits.limits import MAX_PAGES_CEILING
from audits.management.commands.audit import POLLED_FIELDS, _dashboard_link, _ProgressBar, bar_line
from audits.models import Audit, AuditEvent
from audits.selectors.audits import audit_events_notable, crawl_bar
from tests.factories import AuditFactory
from tests.support.canary import PASSWORD, USER, site_and_canary
from tests.support.workers import CLI_TIMEOUT_S, REPO_ROOT, run_cli, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # manage.py child processes

JSON_KEYS = {
    "id",
    "status",
    "current_phase",
    "pages_crawled",
    "issues_by_type",
    "health_score",
    "error_code",
    "urls_skipped",
}


def test_good_site_exits_0_with_json(small_site):
    base, manifest = small_site
    done = run_cli("audit", base + "/", "--max-pages", "1000", "--json", "--inline")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == JSON_KEYS
    assert result["status"] == "completed"
    assert result["pages_crawled"] == len(manifest.expected_urls(base))
    assert result["error_code"] is None
    assert isinstance(result["issues_by_type"], dict)
    assert "pages" in done.stderr  # the progress bar


def test_unreachable_site_exits_1():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run_cli("audit", f"http://127.0.0.1:{port}/", "--json", "--inline")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] == "failed"
    assert result["error_code"] == "start_url_unreachable"


@pytest.mark.parametrize(
    "url, code",
    [
        ("ht!tp://bad url", "invalid_url"),
        ("ftp://example.com/", "unsupported_scheme"),
        ("javascript:alert(1)", "unsupported_scheme"),
        ("http://", "invalid_url"),
    ],
)
def test_malformed_url_exits_2_with_one_line(url, code):
    done = run_cli("audit", url, "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and code in lines[0]


def test_bad_max_pages_exits_2():
    done = run_cli("audit", "http://127.0.0.1:1/", "--max-pages", "0")
    assert done.returncode == 2
    assert "max-pages" in done.stderr


def one_line_error(done, code: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and code in lines[0], done.stderr
    return lines[0]


@pytest.mark.parametrize("url", ["http://127.0.0.1:65536/", "http://127.0.0.1:0/", "127.0.0.1:99999999"])
def test_port_out_of_range_exits_2_with_one_line(url):
    one_line_error(run_cli("audit", url, "--json"), "invalid_port")


def test_overlong_project_name_exits_2_and_stores_nothing(django_user_model):
    from accounts.models import Account
    from audits.models import Audit, Project

    line = one_line_error(run_cli("audit", "http://127.0.0.1:1/", "--project", "p" * 500, "--json"), "invalid_name")
    assert "p" * 50 not in line  # the message does not echo the input
    assert (Project.objects.count(), Audit.objects.count(), Account.objects.count()) == (0, 0, 0)
    assert not django_user_model.objects.filter(username="cli").exists()


def test_refused_start_rolls_back_the_new_project(django_user_model):
    from audits.models import Project

    refused = run_cli("audit", "http://127.0.0.1:1/", "--max-pages", str(MAX_PAGES_CEILING + 1))
    one_line_error(refused, "invalid_max_pages")
    assert Project.objects.count() == 0 and not django_user_model.objects.filter(username="cli").exists()


def test_last_line_gives_the_health_score_issues_by_severity_and_the_dashboard_link(small_site):
    base, _ = small_site
    done = run_cli("audit", base + "/", "--max-pages", "1000", "--json", "--inline")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"audit {result['id']} completed: {result['pages_crawled']} pages, health ")
    assert re.search(rf"health {result['health_score']}/100 \([\d.]+ % of pages without errors\), ", last), last
    assert re.search(r"issues \d+ critical, \d+ warning, \d+ info", last), last
    assert last.endswith(f"http://127.0.0.1:8000/audits/{result['id']}/")


def test_the_bar_line_shows_crawled_of_found_and_the_budget_and_is_never_full_while_crawling():
    width = 30
    # the counters the issue measured ("94/1 pages" with a full bar): the total never below the pages crawled
    stale = bar_line(crawl_bar(crawled=94, found=1, budget=500, crawl_state="running"), width)
    assert stale.endswith("] 94 crawled of 94 found so far (budget 500)") and "#" * width not in stale
    growing = bar_line(crawl_bar(crawled=94, found=310, budget=500, crawl_state="running"), width)
    assert growing == f"[{'#' * 9}{'.' * 21}] 94 crawled of 310 found so far (budget 500)"
    capped = bar_line(crawl_bar(crawled=500, found=900, budget=500, crawl_state="running"), width)
    assert capped.endswith("] 500 crawled of 500 (the page budget; 900 found)") and "#" * width not in capped
    done = bar_line(crawl_bar(crawled=500, found=900, budget=500, crawl_state="done"), width)
    assert done == f"[{'#' * width}] 500 pages crawled"


def test_a_poll_reads_all_the_progress_bar_draws(django_assert_num_queries):
    """The watch loop reads POLLED_FIELDS of the audit ten times a second: drawing the bar reads nothing more."""
    audit = AuditFactory(pages_crawled=40, pages_total=90, config={"max_pages": 60}, current_phase="crawling")
    stream = io.StringIO()
    with django_assert_num_queries(1):
        polled = Audit.objects.only(*POLLED_FIELDS).get(id=audit.id)
        _ProgressBar(stream).draw(polled)
        assert not polled.is_finished
    assert "] 40 crawled of 60 (the page budget; 90 found)  crawling" in stream.getvalue()


def test_the_dashboard_link_is_the_address_in_dashboard_base_url(settings):
    settings.DASHBOARD_BASE_URL = "http://127.0.0.1:9000/"  # what `make run PORT=9000` exports
    audit = AuditFactory()
    assert _dashboard_link(audit) == f"http://127.0.0.1:9000/audits/{audit.id}/"


def test_a_second_run_reuses_the_project_on_that_base_url(small_site, django_user_model):
    from audits.models import Audit, Project
    from audits.projects import project_create
    from tests.factories import account_of

    base, _ = small_site
    owner = django_user_model.objects.create_superuser("owner", password="x")  # the CLI audits as this user
    made_in_dashboard = project_create(account=account_of(owner), owner=owner, name="Our site", base_url=base + "/")
    for _ in range(2):
        assert run_cli("audit", base + "/", "--max-pages", "5", "--inline").returncode == 0
    assert list(Project.objects.all()) == [made_in_dashboard]
    assert Audit.objects.filter(project=made_in_dashboard).count() == 2


def test_an_off_site_start_url_for_a_project_exits_2_and_the_canary_hears_nothing(django_user_model):
    from audits.models import Audit
    from audits.projects import project_create
    from tests.factories import account_of

    owner = django_user_model.objects.create_superuser("owner", password="x")  # the CLI audits as this user
    with site_and_canary() as (site, canary):
        project_create(
            account=account_of(owner), owner=owner, name="Staging", base_url=site.url + "/",
            auth_username=USER, auth_password=PASSWORD,
        )  # fmt: skip
        line = one_line_error(
            run_cli("audit", canary.url + "/", "--project", "Staging", "--json"), "start_url_off_site"
        )
    assert site.url in line
    assert canary.seen == [] and site.seen == [] and Audit.objects.count() == 0


def test_without_a_project_another_port_of_the_same_host_gets_its_own_project(django_user_model):
    from audits.models import Audit, Project
    from audits.projects import project_create
    from tests.factories import account_of

    owner = django_user_model.objects.create_superuser("owner", password="x")
    with site_and_canary() as (site, canary):
        canary.page("/")
        staging = project_create(
            account=account_of(owner), owner=owner, name="127.0.0.1", base_url=site.url + "/",
            auth_username=USER, auth_password=PASSWORD,
        )  # fmt: skip
        done = run_cli("audit", canary.url + "/", "--max-pages", "5", "--json", "--inline")
    assert done.returncode == 0, done.stderr
    audit = Audit.objects.get()
    assert audit.project != staging and audit.project.name == canary.url.removeprefix("http://")
    assert Project.objects.count() == 2
    assert canary.credentials_received() == [] and site.seen == []


def _rendered_lines(raw: str) -> list[str]:
    """What a terminal shows: each line from its last carriage return on, erase-line codes removed."""
    return [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in raw.replace("\r\n", "\n").split("\n")]


def test_on_a_terminal_log_lines_do_not_run_into_the_progress_bar(small_site):
    base, _ = small_site
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "audit", base + "/", "--max-pages", "1000", "--inline"],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=child,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=CLI_TIMEOUT_S) == 0
    lines = _rendered_lines(b"".join(chunks).decode(errors="replace"))
    logged = [line for line in lines if '"event": "audit_finished"' in line]
    assert logged, lines[-5:]
    assert all(" pages  " not in line and not line.startswith("[") for line in logged), logged
    assert lines[-1] == "" and " completed: " in lines[-2]  # the bar ended before the last line


def test_events_that_changed_the_audit_s_course_are_said_before_the_last_line():
    audit = AuditFactory(status="completed", pages_crawled=2)
    fallback = {"https_url": "https://a.test/", "http_url": "http://a.test/", "https_error": "SSL error"}
    AuditEvent.objects.create(audit=audit, kind="phase", message="Phase crawling", data={"phase": "crawling"})
    AuditEvent.objects.create(audit=audit, kind="http_fallback", message="Crawled over http", data=fallback)
    notes = [event_sentence(e) for e in audit_events_notable(audit=audit)]
    stream = io.StringIO()
    _ProgressBar(stream).close(audit, {"critical": 0}, [], link="http://x/", notes=notes)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "note: Fell back to http:// because https:// failed: SSL error. Crawled http://a.test/."
    assert len(lines) == 2 and lines[1].startswith(f"audit {audit.id} completed: 2 pages")  # no note for the phase


def test_a_url_typed_without_a_scheme_falls_back_to_http_and_says_so(small_site):
    from audits.models import Audit, Project

    base, _ = small_site  # http only: https to it fails
    typed = base.removeprefix("http://") + "/"
    done = run_cli("audit", typed, "--max-pages", "3", "--inline")
    assert done.returncode == 0, done.stderr
    project = Project.objects.get()
    assert project.http_fallback and project.base_url == "https://" + typed
    audit = Audit.objects.get(project=project)
    assert (audit.status, audit.site_url) == ("completed", base + "/")
    assert "note: Fell back to http:// because https:// failed" in done.stderr


def test_no_external_links_leaves_the_outbound_links_unasked_for_that_audit_only(small_site):
    from audits.models import Audit, ExternalLink

    base, _ = small_site
    assert run_cli("audit", base + "/", "--max-pages", "5", "--inline", "--no-external-links").returncode == 0
    audit = Audit.objects.get()
    assert audit.config["check_external_links"] is False
    assert not ExternalLink.objects.filter(audit=audit).exists()
    assert audit.project.check_external_links is True  # the project's own switch is left as it was
