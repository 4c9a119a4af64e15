"""audits.fencing, finalize's fence: only the latest run of an audit's finalize writes. On PostgreSQL, with real
concurrent connections (threads) and crawled sites served on 127.0.0.1.

The case it exists for (the fleet test's cut-off host, seen in CI): a run of finalize that stopped answering in its
image pass, whose task the broker handed to another worker, wrote "broken image" for every image once its link came
back, into the audit the other run had completed."""

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from audits.checks.site import run_site_checks
from audits.events import event_sentence
from audits.fencing import FinalizeSuperseded, finalize_atomic, finalize_hold, finalize_session_name
from audits.limits import FINALIZE_HEARTBEAT_EVERY_S
from audits.models import AgentFetch, Audit, AuditEvent, ExternalLink, Issue, Page, PageChange, PageCounts
from audits.pipeline.bots import bots_judge
from audits.pipeline.changes import changes_store
from audits.pipeline.depth import page_depths_store
from audits.pipeline.external import external_links_judge
from audits.pipeline.finalize import audit_finalize
from audits.pipeline.images import images_judge
from audits.pipeline.inline import pipeline_crawl_inline
from audits.pipeline.lifecycle import audit_cancel, audit_complete, finalize_claim
from audits.pipeline.page_totals import page_counts_store
from audits.pipeline.reconcile import reconcile_running_audit
from audits.pipeline.resources import resources_judge
from audits.pipeline.start import audit_start
from tests.factories import IssueFactory, ProjectFactory
from tests.support.sites import serve_routes
from tests.support.sites.crawled import HOME_LINKS, IMAGES_PAGE, IMAGES_TWIN, image_routes, site_check_routes
from tests.support.sites.pages import html_route, page
from tests.support.waits import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

THREAD_TIMEOUT_S = 120


def _running_audit() -> Audit:
    return audit_start(
        project=ProjectFactory(base_url="http://127.0.0.1:9/"), start_url="http://127.0.0.1:9/", dispatch=False
    )


def _crawled(site, routes: dict) -> Audit:
    """`routes` crawled on `site` (finalize not run): a running audit in its crawling phase."""
    project = ProjectFactory(base_url=site.url + "/")
    audit = audit_start(project=project, start_url=site.url + "/", max_pages=200, dispatch=False)
    assert pipeline_crawl_inline(audit.id)
    return Audit.objects.get(id=audit.id)


def _rows(audit) -> dict:
    """Everything finalize writes for an audit, comparable."""
    return {
        "issues": sorted(
            (str(i.id), i.type, i.page_url, json.dumps(i.details, sort_keys=True))
            for i in Issue.objects.filter(audit=audit)
        ),
        "depths": sorted(Page.objects.filter(audit=audit).values_list("url", "depth")),
        "counts": sorted(PageCounts.objects.filter(audit=audit).values_list("url", "inlinks", "issues")),
        "changes": PageChange.objects.filter(audit=audit).count(),
        "agent_fetches": AgentFetch.objects.filter(audit=audit).count(),
        "external": sorted(ExternalLink.objects.filter(audit=audit).values_list("url", "checked_at")),
        "audit": Audit.objects.filter(id=audit.id).values("status", "bot_access", "health_score").get(),
    }


def _in_thread(work) -> tuple[threading.Thread, dict]:
    """Run `work()` on a thread of its own (its own database connection); its result or exception lands in the
    returned dict."""
    out: dict = {}

    def target():
        try:
            out["result"] = work()
        except BaseException as exc:  # handed to the test
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


# --- the claim and the check ------------------------------------------------------------------------------


def test_each_claim_takes_the_next_generation_names_its_session_and_a_second_run_is_said():
    audit = _running_audit()
    first = finalize_claim(audit_id=audit.id)
    assert first.generation == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('application_name')")
        assert cursor.fetchone()[0] == finalize_session_name(first) == f"sitewarden-finalize {audit.id} g1"
    second = finalize_claim(audit_id=audit.id)
    assert second.generation == 2
    stored = Audit.objects.get(id=audit.id)
    assert (stored.current_phase, stored.finalize_generation) == (Audit.Phase.FINALIZING, 2)
    events = list(AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.PHASE).order_by("id"))
    assert [e.data.get("run") for e in events if e.data.get("phase") == Audit.Phase.FINALIZING] == [1, 2]
    assert event_sentence(events[-1]).startswith("The analysis started again (run 2)")
    assert audit_cancel(audit=stored)
    assert finalize_claim(audit_id=audit.id) is None  # an ended audit is not finalized


def test_only_the_latest_run_writes():
    audit = _running_audit()
    stale, latest = finalize_claim(audit_id=audit.id), finalize_claim(audit_id=audit.id)
    with pytest.raises(FinalizeSuperseded), finalize_atomic(stale):
        IssueFactory(audit=audit, page=None, type="llms-txt-missing")
    assert not Issue.objects.filter(audit=audit).exists()  # rolled back
    with finalize_atomic(latest):
        IssueFactory(audit=audit, page=None, type="llms-txt-missing")
    assert Issue.objects.filter(audit=audit).count() == 1
    with pytest.raises(FinalizeSuperseded):
        finalize_hold(stale)  # between stages: the superseded run stops there
    finalize_hold(latest)
    finalize_hold(None)  # a stage called outside finalize is not fenced
    # the superseded run cannot complete the audit either
    assert not audit_complete(audit_id=audit.id, run=stale)
    assert Audit.objects.get(id=audit.id).status == Audit.Status.RUNNING


def test_no_run_writes_once_the_audit_ended():
    audit = _running_audit()
    run = finalize_claim(audit_id=audit.id)
    assert audit_complete(audit_id=audit.id, run=run)
    with pytest.raises(FinalizeSuperseded), finalize_atomic(run):
        IssueFactory(audit=audit, page=None, type="llms-txt-missing")
    assert not Issue.objects.filter(audit=audit).exists()


@pytest.mark.parametrize("beat_due", [False, True], ids=["check", "heartbeat"])
def test_a_claim_waits_for_the_commit_of_writes_that_passed_the_check(beat_due):
    """The check locks the audit row until its commit, so a new claim cannot slip between a run's check and its
    commit: the writes that passed land before the claim, and none after it. The same when the check is the run's
    heartbeat (an UPDATE of the row instead of SELECT … FOR NO KEY UPDATE)."""
    audit = _running_audit()
    run = finalize_claim(audit_id=audit.id)
    if beat_due:
        run.beat_at -= FINALIZE_HEARTBEAT_EVERY_S
    checked, release = threading.Event(), threading.Event()

    def writes_that_passed():
        from django.db import transaction

        with transaction.atomic():
            IssueFactory(audit=audit, page=None, type="llms-txt-missing")
            finalize_hold(run)  # what finalize_atomic does last
            checked.set()
            assert release.wait(THREAD_TIMEOUT_S)

    writer, wrote = _in_thread(writes_that_passed)
    assert checked.wait(THREAD_TIMEOUT_S)
    claimer_pid: dict = {}

    def claim():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            claimer_pid["pid"] = cursor.fetchone()[0]
        return finalize_claim(audit_id=audit.id)

    claimer, claimed = _in_thread(claim)
    wait_until(lambda: _waits_on_a_lock(claimer_pid.get("pid")), THREAD_TIMEOUT_S, "the claim waits for the writes")
    release.set()
    writer.join(THREAD_TIMEOUT_S)
    claimer.join(THREAD_TIMEOUT_S)
    assert "error" not in wrote and "error" not in claimed, (wrote, claimed)
    assert claimed["result"].generation == 2
    assert Issue.objects.filter(audit=audit).count() == 1  # committed before the claim
    with pytest.raises(FinalizeSuperseded), finalize_atomic(run):
        IssueFactory(audit=audit, page=None, type="http-page")
    assert Issue.objects.filter(audit=audit).count() == 1


def test_a_long_finalize_moves_its_heartbeat_so_the_reconciler_does_not_take_it_for_dead():
    """A finalize longer than RECONCILE_STALE_AFTER_S (a million-page audit's took 550 s; the page ceiling's may take
    an hour) moves its audit's heartbeat at its fenced checks, at most every FINALIZE_HEARTBEAT_EVERY_S; a superseded
    run's does not move it."""
    audit = _running_audit()
    run = finalize_claim(audit_id=audit.id)
    stale_after_s = 15 * 60
    long_ago = timezone.now() - timedelta(seconds=stale_after_s + 60)
    Audit.objects.filter(id=audit.id).update(started_at=long_ago, last_progress_at=long_ago)  # stages that ran long
    finalize_hold(run)  # its last beat (the claim) is recent: the check alone, no write
    assert Audit.objects.get(id=audit.id).last_progress_at == long_ago
    run.beat_at -= FINALIZE_HEARTBEAT_EVERY_S
    with finalize_atomic(run):  # a stage's fenced write, once a beat is due
        IssueFactory(audit=audit, page=None, type="llms-txt-missing")
    beat = Audit.objects.get(id=audit.id).last_progress_at
    assert timezone.now() - beat < timedelta(seconds=THREAD_TIMEOUT_S)
    verdict = reconcile_running_audit(Audit.objects.get(id=audit.id), stale_after_s=stale_after_s, grace_s=0)
    assert (verdict.action, verdict.reason) == ("alive", "recent heartbeat")
    assert not AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.REVIVED).exists()
    later = finalize_claim(audit_id=audit.id)
    Audit.objects.filter(id=audit.id).update(last_progress_at=long_ago)
    run.beat_at -= FINALIZE_HEARTBEAT_EVERY_S
    with pytest.raises(FinalizeSuperseded):
        finalize_hold(run)
    assert Audit.objects.get(id=audit.id).last_progress_at == long_ago  # the superseded run's beat wrote nothing
    later.beat_at -= FINALIZE_HEARTBEAT_EVERY_S
    finalize_hold(later)
    assert Audit.objects.get(id=audit.id).last_progress_at > beat


def _waits_on_a_lock(pid: int | None) -> bool:
    if pid is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "Lock"


# --- every stage ------------------------------------------------------------------------------------------

STAGES = {
    "depths": lambda audit, run: page_depths_store(audit_id=audit.id, run=run),
    "site_checks": lambda audit, run: run_site_checks(audit, run=run),
    "images": lambda audit, run: images_judge(audit, run=run),
    "bots": lambda audit, run: bots_judge(audit, run=run),
    "resources": lambda audit, run: resources_judge(audit, run=run),
    "external_links": lambda audit, run: external_links_judge(audit, run=run),
    "page_counts": lambda audit, run: page_counts_store(audit_id=audit.id, run=run),
    "changes": lambda audit, run: changes_store(audit, run=run),
}


def test_every_stage_of_finalize_writes_nothing_for_a_superseded_run():
    routes = {}
    with serve_routes(routes) as site:
        routes.update(site_check_routes(site.url))
        routes.update(image_routes())
        links = [(p, f"Go to {p}") for p in (*HOME_LINKS, IMAGES_PAGE, IMAGES_TWIN)]
        routes["/"] = html_route(page("home", links=links, words=100))
        audit = _crawled(site, routes)
        stale = finalize_claim(audit_id=audit.id)
        finalize_claim(audit_id=audit.id)
        before = _rows(audit)
        for name, stage in STAGES.items():
            with pytest.raises(FinalizeSuperseded):
                stage(audit, stale)
            assert _rows(audit) == before, f"the {name} stage wrote for a superseded run"
        # the run that holds the audit writes them all (a fresh claim, as a message handed out again makes)
        assert audit_finalize(audit_id=audit.id)
    after = _rows(audit)
    assert after["audit"]["status"] == Audit.Status.COMPLETED
    assert {row[1] for row in after["issues"]} >= {"broken-image", "orphan-page", "duplicate-title"}
    assert after["counts"] and after["agent_fetches"]


# --- the case it exists for -------------------------------------------------------------------------------


def test_a_run_held_up_in_its_image_pass_writes_nothing_after_the_run_that_took_over():
    held, release = threading.Event(), threading.Event()
    asked = []

    def small_png(handler):
        asked.append(1)
        if len(asked) == 1:  # the first run's request: held up, as a host cut off from the network is
            held.set()
            assert release.wait(THREAD_TIMEOUT_S)
            status, body = 503, b"no answer"
        else:
            status, body = 200, b"\x89PNG" + b"\0" * 1996
        handler.send_response(status)
        handler.send_header("Content-Type", "image/png")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    routes = image_routes() | {"/img/small.png": small_png}
    routes["/"] = html_route(page("home", links=[(IMAGES_PAGE, "Pictures"), (IMAGES_TWIN, "One picture")]))
    with serve_routes(routes) as site:
        audit = _crawled(site, routes)
        first, first_out = _in_thread(lambda: audit_finalize(audit_id=audit.id))
        assert held.wait(THREAD_TIMEOUT_S)
        assert audit_finalize(audit_id=audit.id)  # the run that took over completes the audit
        completed = _rows(audit)
        release.set()  # the first run gets its answer: "503" for small.png, a broken image on two pages
        first.join(THREAD_TIMEOUT_S)
    assert not first.is_alive()
    assert first_out == {"result": False}  # stopped by the fence, quietly
    assert _rows(audit) == completed
    broken = [row for row in completed["issues"] if row[1] == "broken-image"]
    assert [row[2] for row in broken] == [site.url + IMAGES_PAGE]  # missing.png only; small.png answered 200
    assert "small.png" not in broken[0][3]
    assert AuditEvent.objects.filter(audit=audit, kind=AuditEvent.Kind.COMPLETED).count() == 1
