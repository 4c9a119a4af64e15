"""The external link benchmark's core on a tiny plan, against its real loopback servers: every target asked once a
method, the per-host and overall limits kept at the servers, the answers stored as served."""

import pytest

from audits.pipeline import external as external_pass
from bench import external as bench
from bench.external import (
    TargetServers,
    external_crawl_create,
    external_figures,
    external_measure,
    print_external,
    targets_plan,
)

TARGETS = 60
HOSTS = 3
BUDGET_S = 20
REQUEST_TIMEOUT_S = 1.0  # the pass's 10 s, shortened so a held target costs a second


def test_the_mirrored_limits_are_the_pass_own():
    assert bench.PASS_REQUEST_TIMEOUT_S == external_pass.EXTERNAL_REQUEST_TIMEOUT_S
    assert bench.HOST_IN_FLIGHT_MAX == external_pass.EXTERNAL_HOST_CONCURRENCY
    assert bench.ALL_IN_FLIGHT_MAX == external_pass.EXTERNAL_THREADS_MAX


def test_the_plan_spreads_every_kind_over_the_hosts():
    plan = targets_plan(TARGETS, HOSTS, slow_share=0.05, seed=1)
    assert len({(t.host, t.path) for t in plan.targets}) == TARGETS
    assert {t.host for t in plan.targets} == {"127.0.0.2", "127.0.0.3", "127.0.0.4"}
    routes = plan.routes()
    for t in plan.targets:
        if t.kind == "redirect":
            assert routes[(t.host, t.location)].kind == "ok"  # to an answering target of its own host
    assert targets_plan(TARGETS, HOSTS, slow_share=0.05, seed=1).targets == plan.targets


@pytest.mark.django_db(transaction=True)
def test_the_bench_core_keeps_its_invariants(monkeypatch, capsys):
    monkeypatch.setattr(external_pass, "EXTERNAL_REQUEST_TIMEOUT_S", REQUEST_TIMEOUT_S)
    plan = targets_plan(TARGETS, HOSTS, slow_share=0.05, seed=1)
    kinds = {t.kind for t in plan.targets}
    assert {"ok", "missing", "redirect", "head_refused", "slow"} <= kinds, "seed 1 must plant every kind"
    with TargetServers(plan, slow_s=REQUEST_TIMEOUT_S + 2) as servers:
        audit_id = external_crawl_create(plan, servers.port, pages=20, budget_s=BUDGET_S, seed=1)
        measured = external_measure(audit_id)
        result = external_figures(plan, servers.port, measured, servers.stats.snapshot())
    print_external(result)
    printed = capsys.readouterr().out

    assert result["failures"] == [], printed
    assert result["targets"] == TARGETS and result["distinct_hosts"] == HOSTS
    assert result["checked"] == TARGETS and result["unchecked"] == 0
    assert result["mismatched_count"] == 0, result["mismatched_answers"]
    assert 1 <= result["peak_in_flight_host"] <= 2
    assert result["peak_in_flight_all"] <= 8
    assert result["max_requests_head_answered"] == 1
    assert result["max_requests_head_then_get"] == 2
    assert result["asked_twice"] == [] and result["unplanned_requests"] == 0
    planned = result["kinds_planned"]
    assert result["outcomes"]["timeout"] == planned["slow"]
    assert result["outcomes"]["client_error"] == planned["missing"]
    assert result["methods"]["GET"] == planned["head_refused"]
    assert result["issues"]["external-link-broken"] >= planned["missing"]
    assert result["seconds"] <= result["budget_s"] + result["budget_grace_s"]
    assert "every target asked at most once a method" in printed
