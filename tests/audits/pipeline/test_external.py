"""The external link pass, a stage of finalize (audits.pipeline.external): every distinct external target of the
crawled pages asked once (HEAD, GET where HEAD is refused or unreliable, redirects followed by hand) on other
sites served on other loopback origins, whose requests are counted; the answers stored in ExternalLink rows and
judged by the external link checks. A real crawl of a real site, real HTTP, real PostgreSQL."""

import time
from collections import Counter

import pytest

from audits.limits import FINALIZE_AFTER_EXTERNAL_RESERVE_S
from audits.models import Audit, ExternalLink, Issue
from audits.pipeline import external
from audits.pipeline.external import external_links_judge
from audits.pipeline.inline import pipeline_crawl_inline, pipeline_run_inline
from audits.pipeline.start import audit_start
from tests.factories import ProjectFactory
from tests.support.sites import serve_routes
from tests.support.sites.external import (
    answer,
    audited_site_routes,
    bot_wall,
    head_refused,
    redirect_to,
    serve_other_site,
    slow_answer,
)

pytestmark = pytest.mark.django_db(transaction=True)

Outcome = ExternalLink.Outcome
TEST_REQUEST_TIMEOUT_S = 2.0  # the slow target answers after 10 s: a loaded machine still answers the others in time
UNRESOLVABLE = "http://no-such-host.invalid/"
EXTERNAL_TYPES = external.EXTERNAL_SITE_TYPES


@pytest.fixture(autouse=True)
def short_timeout(monkeypatch):
    monkeypatch.setattr(external, "EXTERNAL_REQUEST_TIMEOUT_S", TEST_REQUEST_TIMEOUT_S)


@pytest.fixture
def others():
    """Three other sites: 127.0.0.1 on another port (every kind of answer), 127.0.0.2 and `localhost`."""
    with (
        serve_other_site({"/ok": answer(200), "/gone": answer(404)}, bind="127.0.0.2") as b,
        serve_other_site({"/ok": answer(200)}, host="localhost") as c,
    ):
        a_routes = {
            "/ok": answer(200),
            "/gone": answer(404),
            "/error": answer(500),
            "/moved": redirect_to(b.url + "/gone"),  # a redirect to a 404 on another host
            "/loop-1": redirect_to("/loop-2"),
            "/loop-2": redirect_to("/loop-1"),
            "/slow": slow_answer(),
            "/head-refused": head_refused(),
            "/bot": bot_wall(),
            "/plain-403": answer(403),
            "/busy": answer(429),
            "/chain-1": redirect_to("/chain-2"),
            "/chain-2": redirect_to("/chain-3"),
            "/chain-3": redirect_to("/ok"),
            "/old": redirect_to("/ok"),
        }
        with serve_other_site(a_routes) as a:
            yield a, b, c


def _links(a, b, c) -> list[tuple[str, str]]:
    return [
        (a.url + "/ok", "Working"),
        (a.url + "/gone", "Gone page"),
        (a.url + "/error", "Failing server"),
        (a.url + "/moved", "Moved to a 404"),
        (a.url + "/loop-1", "Loop"),
        (a.url + "/slow", "Slow site"),
        (a.url + "/head-refused", "No HEAD here"),
        (a.url + "/bot", "Behind a bot wall"),
        (a.url + "/plain-403", "Refuses robots"),
        (a.url + "/busy", "Rate limited"),
        (a.url + "/chain-1", "Long chain"),
        (a.url + "/old", "Old address"),
        (b.url + "/gone", "Gone elsewhere"),
        (c.url + "/ok", "Named host"),
        (UNRESOLVABLE, "Nowhere"),
    ]


def _crawl(site, **project_options):
    options = {"check_external_links": True, "external_links_budget_s": 60, **project_options}
    project = ProjectFactory(base_url=site.url + "/", **options)
    audit = audit_start(project=project, start_url=site.url + "/", max_pages=10, dispatch=False)
    assert pipeline_crawl_inline(audit.id)
    audit.refresh_from_db()
    return audit


@pytest.fixture
def crawled(others):
    """A crawl (finalize not run) of a site whose /links page links to every kind of target and whose /twin page
    links to two of them again and to a working one; yields (site, audit, (a, b, c))."""
    a, b, c = others
    twin = [(a.url + "/gone", "Gone again"), (b.url + "/gone", "Gone elsewhere again"), (b.url + "/ok", "Fine")]
    with serve_routes(audited_site_routes(_links(a, b, c), twin)) as site:
        audit = _crawl(site)
        yield site, audit, others


def _outcomes(audit) -> dict:
    return {
        x.url: (x.outcome, x.status_code, x.redirect_hops, x.method) for x in ExternalLink.objects.filter(audit=audit)
    }


def _issues(audit, base: str) -> set:
    return {
        (i.type, i.page_url.removeprefix(base), i.details.get("target_url"))
        for i in Issue.objects.filter(audit=audit, type__in=EXTERNAL_TYPES)
    }


def test_each_target_is_asked_once_and_reported_as_it_is(crawled):
    site, audit, (a, b, c) = crawled
    assert ExternalLink.objects.filter(audit=audit).count() == 0  # the crawl asks no other site
    assert a.asked() == b.asked() == c.asked() == []
    external_links_judge(audit)

    # No host is asked for one target more than once: /ok is reached by /old and /chain-3 too, b's /gone is linked
    # from two pages and reached through /moved; a GET follows a HEAD only where HEAD was refused or unreliable.
    for other in (a, b, c):
        assert all(n == 1 for n in Counter(other.requests).values()), other.requests
    assert a.asked() == sorted(
        [("HEAD", p) for p in ("/ok", "/gone", "/error", "/moved", "/loop-1", "/loop-2", "/slow", "/head-refused",
                               "/bot", "/plain-403", "/busy", "/chain-1", "/chain-2", "/chain-3", "/old")]
        + [("GET", "/error"), ("GET", "/head-refused"), ("GET", "/plain-403")]
    )  # fmt: skip
    assert b.asked() == [("HEAD", "/gone"), ("HEAD", "/ok")]
    assert c.asked() == [("HEAD", "/ok")]

    assert _outcomes(audit) == {
        a.url + "/ok": (Outcome.OK, 200, 0, "HEAD"),
        a.url + "/gone": (Outcome.CLIENT_ERROR, 404, 0, "HEAD"),
        a.url + "/error": (Outcome.SERVER_ERROR, 500, 0, "GET"),
        a.url + "/moved": (Outcome.REDIRECT_BROKEN, 404, 1, "HEAD"),
        a.url + "/loop-1": (Outcome.REDIRECT_LOOP, 301, 2, "HEAD"),
        a.url + "/slow": (Outcome.TIMEOUT, None, 0, "HEAD"),
        a.url + "/head-refused": (Outcome.OK, 200, 0, "GET"),
        a.url + "/bot": (Outcome.UNVERIFIED, 403, 0, "HEAD"),
        a.url + "/plain-403": (Outcome.UNVERIFIED, 403, 0, "GET"),
        a.url + "/busy": (Outcome.UNVERIFIED, 429, 0, "HEAD"),  # a rate limit is not asked twice
        a.url + "/chain-1": (Outcome.REDIRECTED, 200, 3, "HEAD"),
        a.url + "/old": (Outcome.REDIRECTED, 200, 1, "HEAD"),
        b.url + "/gone": (Outcome.CLIENT_ERROR, 404, 0, "HEAD"),
        b.url + "/ok": (Outcome.OK, 200, 0, "HEAD"),
        c.url + "/ok": (Outcome.OK, 200, 0, "HEAD"),
        UNRESOLVABLE: (Outcome.DNS_ERROR, None, 0, "HEAD"),
    }
    rows = {x.url: x for x in ExternalLink.objects.filter(audit=audit)}
    assert rows[a.url + "/moved"].final_url == b.url + "/gone"
    assert rows[a.url + "/chain-1"].final_url == a.url + "/ok"
    assert (rows[a.url + "/gone"].linking_pages, rows[a.url + "/ok"].linking_pages) == (2, 1)
    assert "cf-mitigated" in rows[a.url + "/bot"].error
    assert all(x.checked_at is not None for x in rows.values())

    found = _issues(audit, site.url)
    assert found == {
        ("external-link-broken", "/links", a.url + "/gone"),
        ("external-link-broken", "/twin", a.url + "/gone"),
        ("external-link-broken", "/links", b.url + "/gone"),
        ("external-link-broken", "/twin", b.url + "/gone"),
        ("external-link-server-error", "/links", a.url + "/error"),
        ("external-link-redirect-broken", "/links", a.url + "/moved"),
        ("external-link-redirect-loop", "/links", a.url + "/loop-1"),
        ("external-link-unreachable", "/links", a.url + "/slow"),
        ("external-link-unreachable", "/links", UNRESOLVABLE),
        ("external-link-unverified", "/links", a.url + "/bot"),
        ("external-link-unverified", "/links", a.url + "/plain-403"),
        ("external-link-unverified", "/links", a.url + "/busy"),
        ("external-link-redirect-chain", "/links", a.url + "/chain-1"),
        ("external-link-redirected", "/links", a.url + "/old"),
    }  # the working targets, the HEAD-refused one and the bot-protected ones are not broken
    broken = Issue.objects.get(audit=audit, type="external-link-broken", page_url=site.url + "/links",
                               details__target_url=a.url + "/gone")  # fmt: skip
    assert broken.details["anchor_text"] == "Gone page" and broken.details["status_code"] == 404
    unreachable = {
        i.details["target_url"]: (i.details["outcome"], i.details["fetch_error"].split(":")[0])
        for i in Issue.objects.filter(audit=audit, type="external-link-unreachable")
    }
    assert unreachable == {a.url + "/slow": ("timeout", "timeout"), UNRESOLVABLE: ("dns_error", "dns")}


def test_run_again_it_asks_nothing_and_writes_the_same_issues(crawled):
    site, audit, others = crawled
    external_links_judge(audit)
    first = sorted(Issue.objects.filter(audit=audit, type__in=EXTERNAL_TYPES).values_list("id", "type", "details"))
    answers = _outcomes(audit)
    for other in others:
        other.requests.clear()
    external_links_judge(audit)
    assert [other.asked() for other in others] == [[], [], []]
    assert _outcomes(audit) == answers
    assert sorted(Issue.objects.filter(audit=audit, type__in=EXTERNAL_TYPES).values_list("id", "type", "details")) == (
        first
    )


def test_the_cap_leaves_the_least_linked_unchecked_and_says_so_and_a_rerun_asks_only_those(crawled):
    site, audit, (a, b, c) = crawled
    audit.config = {**audit.config, "external_links_max": 2}
    audit.save(update_fields=["config"])
    external_links_judge(audit)
    # The two targets linked from both pages are asked; the 14 others are not.
    assert a.asked() == [("HEAD", "/gone")] and b.asked() == [("HEAD", "/gone")] and c.asked() == []
    checked = set(ExternalLink.objects.filter(audit=audit, checked_at__isnull=False).values_list("url", flat=True))
    assert checked == {a.url + "/gone", b.url + "/gone"}
    assert ExternalLink.objects.filter(audit=audit, outcome=Outcome.UNCHECKED).count() == 14
    (unchecked,) = Issue.objects.filter(audit=audit, type="external-links-unchecked")
    assert unchecked.page_id is None and unchecked.severity == "info"
    details = unchecked.details
    assert (details["unchecked"], details["beyond_cap"], details["checked"]) == (14, 14, 2)
    assert unchecked.details["setting"] == "external_links_max"

    # A later run (a finalize run again) with room asks the unchecked ones only.
    for other in (a, b, c):
        other.requests.clear()
    audit.config = {**audit.config, "external_links_max": 100}
    audit.save(update_fields=["config"])
    external_links_judge(audit)
    assert ("HEAD", "/gone") not in a.asked() and ("HEAD", "/gone") not in b.asked()
    assert ("HEAD", "/ok") in a.asked() and c.asked() == [("HEAD", "/ok")]
    assert not ExternalLink.objects.filter(audit=audit, outcome=Outcome.UNCHECKED).exists()
    assert not Issue.objects.filter(audit=audit, type="external-links-unchecked").exists()


def test_switched_off_no_other_site_is_asked(crawled):
    site, audit, others = crawled
    audit.config = {**audit.config, "check_external_links": False}
    audit.save(update_fields=["config"])
    external_links_judge(audit)
    assert [other.asked() for other in others] == [[], [], []]
    assert not ExternalLink.objects.filter(audit=audit).exists()
    assert not Issue.objects.filter(audit=audit, type__in=EXTERNAL_TYPES).exists()


def test_the_time_budget_ends_the_pass_and_what_it_left_is_said(monkeypatch):
    """Targets on one slow host: two at a time are asked, the budget cuts them, the rest are never started."""
    monkeypatch.setattr(external, "EXTERNAL_REQUEST_TIMEOUT_S", 30.0)
    paths = [f"/slow-{n}" for n in range(6)]
    with serve_other_site({p: slow_answer(5.0) for p in paths}) as slow_site:
        links = [(slow_site.url + p, f"Slow {p}") for p in paths]
        with serve_routes(audited_site_routes(links, [])) as site:
            audit = _crawl(site, external_links_budget_s=1)
            external_links_judge(audit)
            asked = slow_site.asked()
    # Per-host politeness: at most two in flight (both started at once, unless the machine is too slow to connect
    # within the budget), and nothing started after the budget.
    assert 0 < len(asked) <= external.EXTERNAL_HOST_CONCURRENCY
    assert ExternalLink.objects.filter(audit=audit, outcome=Outcome.UNCHECKED, checked_at=None).count() == 6
    (unchecked,) = Issue.objects.filter(audit=audit, type="external-links-unchecked")
    assert (unchecked.details["out_of_time"], unchecked.details["beyond_cap"]) == (6, 0)
    assert unchecked.details["setting"] == "external_links_budget_s"


def test_with_the_egress_guard_on_a_private_target_is_refused_unasked(crawled, settings):
    site, audit, (a, b, c) = crawled
    settings.ALLOW_PRIVATE_TARGETS = False
    external_links_judge(audit)
    assert [other.asked() for other in (a, b, c)] == [[], [], []]
    assert ExternalLink.objects.get(audit=audit, url=a.url + "/ok").outcome == Outcome.REFUSED
    assert ExternalLink.objects.get(audit=audit, url=UNRESOLVABLE).outcome == Outcome.DNS_ERROR


def test_finalize_runs_the_pass_after_the_image_pass(others):
    a, b, c = others
    with serve_routes(audited_site_routes([(a.url + "/gone", "Gone page")], [(b.url + "/ok", "Fine")])) as site:
        project = ProjectFactory(base_url=site.url + "/", check_external_links=True, external_links_budget_s=60)
        audit = audit_start(project=project, start_url=site.url + "/", max_pages=10, dispatch=False)
        pipeline_run_inline(audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.error_detail
    assert _issues(audit, site.url) == {("external-link-broken", "/links", a.url + "/gone")}
    assert {row["type"]: row["n"] for row in audit.stats["issue_types"]}["external-link-broken"] == 1
    assert (a.asked(), b.asked()) == ([("HEAD", "/gone")], [("HEAD", "/ok")])


def test_thousands_of_targets_stay_within_the_budget_and_the_rest_is_said(monkeypatch):
    """2,000 targets on one host answering in 20 ms, two at a time (20 s in all): a 2 s budget ends the pass."""
    targets = 2000
    routes = {f"/t/{n}": slow_answer(0.02) for n in range(targets)}
    with serve_other_site(routes, bind="127.0.0.2") as other:
        links = [(f"{other.url}/t/{n}", f"Target {n}") for n in range(targets)]
        with serve_routes(audited_site_routes(links, [])) as site:
            audit = _crawl(site, external_links_budget_s=2)
            external_links_judge(audit)
            asked = list(other.requests)
    assert ExternalLink.objects.filter(audit=audit).count() == targets
    checked = ExternalLink.objects.filter(audit=audit, checked_at__isnull=False).count()
    assert 0 < checked < targets and len(asked) == len(set(asked))  # each asked once, most never
    (unchecked,) = Issue.objects.filter(audit=audit, type="external-links-unchecked")
    assert unchecked.details["out_of_time"] == targets - checked and unchecked.details["beyond_cap"] == 0


def test_other_sites_get_the_audits_user_agent_and_never_the_projects_credentials(others):
    a, b, c = others
    with serve_routes(audited_site_routes([(a.url + "/old", "Old address")], [])) as site:
        audit = _crawl(site, user_agent="AuditBot/2.0 (+https://audit.test/bot)", auth_username="editor",
                       auth_password="s3cret-pass")  # fmt: skip
        assert any("Authorization" in headers for _, headers in site.requests)  # the project's own site gets them
        external_links_judge(audit)
    assert a.asked() == [("HEAD", "/ok"), ("HEAD", "/old")]  # the redirect's hop too
    assert [h.get("User-Agent") for h in a.headers] == ["AuditBot/2.0 (+https://audit.test/bot)"] * 2
    assert not [h for h in a.headers if "Authorization" in h or "authorization" in h]


def test_a_finalize_that_used_its_time_already_asks_nothing_and_says_so(crawled):
    """The budget is cut to what finalize's task time limit leaves: a finalize whose earlier stages took it all
    starts no request (its targets stay unchecked for a run with time)."""
    site, audit, others = crawled
    external_links_judge(audit, finalize_deadline=time.monotonic() + FINALIZE_AFTER_EXTERNAL_RESERVE_S)
    assert [other.asked() for other in others] == [[], [], []]
    (unchecked,) = Issue.objects.filter(audit=audit, type="external-links-unchecked")
    assert unchecked.details["out_of_time"] == ExternalLink.objects.filter(audit=audit).count() == 16
    assert unchecked.details["external_links_budget_s"] == 60  # the project's, as set
