"""External link pass benchmark (issue 27): `audits.pipeline.external.external_links_judge` on thousands of
distinct external targets served by local hosts, timed against its budget, with the politeness the servers saw.

python -m bench.external [--targets 5000] [--hosts 40] [--pages 2000] [--budget-s 60] [--slow-share 0.02] [--seed 0]

The targets live on loopback hosts 127.0.0.2 ... 127.0.0.(hosts + 1), one threaded HTTP server bound to each
address, all on the same port (in this process). Most targets answer 200; 5 % answer 404, 5 % 301 to another
target of the same host (so that URL is reached twice, and must be asked once), 3 % refuse HEAD with 405 (then
GET is asked), and `--slow-share` never answer within the pass's request timeout (held past it). The servers count
requests per (host, method, path) and the requests in flight per host and in all (from the request's arrival to
the first byte of its answer: never more than the client really had in flight).

A child process with Django (database `sitewarden_bench_external`, dropped and recreated; ALLOW_PRIVATE_TARGETS on,
as bench.run sets it) writes an audit whose `--pages` judged pages link about 5 targets each (every target at
least once), and a second child times `external_links_judge(audit, finalize_deadline=...)`: wall time, process CPU,
peak RSS. It prints a block and one `EXTERNAL_JSON {...}` line; exit 1 when a target was asked twice with one
method, a host saw more than 2 requests in flight (8 in all), or the pass overran its budget by more than
BUDGET_GRACE_S.
"""

# Why one module of over 600 lines: it is one script, read in the order it runs (the targets and their servers, the
# audit written and measured in child processes, the figures, the orchestration) and re-entered by its own child
# processes (`python -m bench.external --child generate|measure`); the servers count what the measurement then
# judges, so the plan, the servers and the checks stay side by side. `make bench` runs it; only its test imports it.

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import resource
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

EXTERNAL_DB_NAME = "sitewarden_bench_external"
DEFAULT_TARGETS = 5000
DEFAULT_HOSTS = 40
DEFAULT_PAGES = 2000
DEFAULT_BUDGET_S = 60
DEFAULT_SLOW_SHARE = 0.02
HOSTS_MAX = 253  # 127.0.0.2 ... 127.0.0.254
LINKS_PER_PAGE = 5  # external targets a page links, at least (more when targets outnumber pages x 5)
MISSING_SHARE = 0.05  # 404
REDIRECT_SHARE = 0.05  # 301 to an answering target of the same host
HEAD_REFUSED_SHARE = 0.03  # 405 to HEAD, 200 to GET
# How long past the pass's request timeout a slow target holds its answer (seconds). The server lets go as soon as
# the client closes the connection (the pass cuts it at its deadline), so this only bounds a stuck client.
SLOW_PAST_TIMEOUT_S = 5.0
# Wall time the pass may take beyond its budget before the bench fails (seconds): the pass waits up to
# EXTERNAL_ABANDON_GRACE_S (5 s) for requests still in flight after the budget, and gathers the targets before asking
# and writes the issues after it, both outside the budget (under a second each at 5,000 targets).
BUDGET_GRACE_S = 10.0
# The pass's own limits, mirrored because this process has no Django (tests/bench/test_external_bench.py checks
# they agree with audits.pipeline.external): one request's timeout (seconds), requests in flight per host and in all.
PASS_REQUEST_TIMEOUT_S = 10.0  # EXTERNAL_REQUEST_TIMEOUT_S
HOST_IN_FLIGHT_MAX = 2  # EXTERNAL_HOST_CONCURRENCY: the servers must never see more
ALL_IN_FLIGHT_MAX = 8  # EXTERNAL_THREADS_MAX
BIND_ATTEMPTS = 20  # ports tried until one is free on every address
WRITE_BATCH = 2000
CHILD_TIMEOUT_S = 1800
MIB = 1024 * 1024
CHILD_JSON_PREFIX = "EXTERNAL_CHILD_JSON "
JSON_PREFIX = "EXTERNAL_JSON "
BENCH_PLAN_NAME = "bench-external"
SITE_URL = "https://www.bench-links.example/"

# What each kind of target must come out as once asked (ExternalLink.Outcome values).
EXPECTED_OUTCOMES = {
    "ok": "ok",
    "missing": "client_error",
    "redirect": "redirected",
    "head_refused": "ok",
    "slow": "timeout",
}


class ExternalBenchError(Exception):
    """The external link benchmark cannot produce a meaningful figure; the message says why."""


# --- the targets and their servers (no Django) -------------------------------------------------------------


@dataclass
class Target:
    host: str  # the loopback address serving it
    path: str
    kind: str  # a key of EXPECTED_OUTCOMES
    location: str = ""  # a redirect's target path (same host)


@dataclass
class TargetPlan:
    targets: list[Target]
    hosts: list[str]
    seed: int

    def url(self, target: Target, port: int) -> str:
        return f"http://{target.host}:{port}{target.path}"

    def routes(self) -> dict[tuple[str, str], Target]:
        return {(t.host, t.path): t for t in self.targets}


def host_addresses(hosts: int) -> list[str]:
    if not 1 <= hosts <= HOSTS_MAX:
        raise ExternalBenchError(f"--hosts must be 1 to {HOSTS_MAX}, not {hosts}")
    return [f"127.0.0.{2 + k}" for k in range(hosts)]


def targets_plan(targets: int, hosts: int, *, slow_share: float = DEFAULT_SLOW_SHARE, seed: int = 0) -> TargetPlan:
    """`targets` distinct URLs spread evenly over the hosts, each of a kind drawn with the shares above."""
    rnd = random.Random(seed)
    addresses = host_addresses(hosts)
    shares = [
        ("missing", MISSING_SHARE),
        ("redirect", REDIRECT_SHARE),
        ("head_refused", HEAD_REFUSED_SHARE),
        ("slow", slow_share),
    ]
    planned = []
    for n in range(targets):
        draw, kind = rnd.random(), "ok"
        for name, share in shares:
            if draw < share:
                kind = name
                break
            draw -= share
        planned.append(Target(addresses[n % hosts], f"/t/{n}", kind))
    answering: dict[str, list[Target]] = {}
    for t in planned:
        if t.kind == "ok":
            answering.setdefault(t.host, []).append(t)
    for t in planned:
        if t.kind == "redirect":
            pool = answering.get(t.host)
            if pool:
                t.location = rnd.choice(pool).path
            else:
                t.kind = "ok"  # a host without an answering target (tiny plans): nothing to redirect to
    return TargetPlan(planned, addresses, seed)


@dataclass
class ServerStats:
    """What the servers saw: requests per (host, method, path), requests in flight per host and in all."""

    requests: Counter = field(default_factory=Counter)
    in_flight: Counter = field(default_factory=Counter)
    peak_by_host: Counter = field(default_factory=Counter)
    in_flight_all: int = 0
    peak_all: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, host: str, method: str, path: str) -> None:
        with self.lock:
            self.requests[(host, method, path)] += 1
            self.in_flight[host] += 1
            self.in_flight_all += 1
            self.peak_by_host[host] = max(self.peak_by_host[host], self.in_flight[host])
            self.peak_all = max(self.peak_all, self.in_flight_all)

    def leave(self, host: str) -> None:
        with self.lock:
            self.in_flight[host] -= 1
            self.in_flight_all -= 1

    def snapshot(self) -> dict:
        with self.lock:
            return {
                "requests": [[h, m, p, n] for (h, m, p), n in sorted(self.requests.items())],
                "peak_by_host": dict(self.peak_by_host),
                "peak_all": self.peak_all,
            }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the pass's pooled sessions use it
    server_version = "bench-external"
    sys_version = ""

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self._answer("HEAD")

    def do_GET(self) -> None:  # noqa: N802
        self._answer("GET")

    def _answer(self, method: str) -> None:
        server = self.server
        host = server.server_address[0]
        path = urlsplit(self.path).path
        stats: ServerStats = server.stats
        stats.enter(host, method, path)
        inside = True
        try:
            target = server.routes.get((host, path))
            kind = target.kind if target else "missing"
            if kind == "slow":
                self._hold(server.slow_s)
                self.close_connection = True
            status, location = 200, ""
            if kind == "missing":
                status = 404
            elif kind == "redirect":
                status, location = 301, f"http://{host}:{server.server_address[1]}{target.location}"
            elif kind == "head_refused" and method == "HEAD":
                status = 405
            body = f"<!doctype html><title>{status}</title><p>{path}</p>\n".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            if location:
                self.send_header("Location", location)
            if status == 405:
                self.send_header("Allow", "GET")
            # Out of flight before the first byte goes out: the client cannot start its next request before.
            stats.leave(host)
            inside = False
            with contextlib.suppress(OSError):
                self.end_headers()
                if method == "GET":
                    self.wfile.write(body)
        finally:
            if inside:
                stats.leave(host)

    def _hold(self, seconds: float) -> None:
        """Answer nothing for `seconds`, or until the client closes the connection (the pass's deadline)."""
        conn = self.connection
        previous = conn.gettimeout()
        conn.settimeout(seconds)
        with contextlib.suppress(OSError):
            conn.recv(1, socket.MSG_PEEK)  # b"" at once when the client closes or shuts the socket down
        with contextlib.suppress(OSError):
            conn.settimeout(previous)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = False  # another process's port on one address must make the bind fail

    def handle_error(self, request, client_address) -> None:
        pass  # a client gone mid-answer (the pass's deadline cut it) is expected here


class TargetServers:
    """One threaded server per host address, all on one port, serving a TargetPlan. `with TargetServers(plan) as
    servers:` then `servers.port` and `servers.stats`."""

    def __init__(self, plan: TargetPlan, *, slow_s: float = PASS_REQUEST_TIMEOUT_S + SLOW_PAST_TIMEOUT_S):
        self.plan = plan
        self.slow_s = slow_s
        self.stats = ServerStats()
        self.port = 0
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []

    def _bind_all(self) -> None:
        for _ in range(BIND_ATTEMPTS):
            servers: list[_Server] = []
            try:
                first = _Server((self.plan.hosts[0], 0), _Handler)
                servers.append(first)
                port = first.server_address[1]
                for host in self.plan.hosts[1:]:
                    servers.append(_Server((host, port), _Handler))
            except OSError:
                for s in servers:
                    s.server_close()
                continue
            self._servers, self.port = servers, port
            return
        raise ExternalBenchError(f"no port free on all of {len(self.plan.hosts)} loopback addresses")

    def __enter__(self) -> TargetServers:
        self._bind_all()
        routes = self.plan.routes()
        for server in self._servers:
            server.stats, server.routes, server.slow_s = self.stats, routes, self.slow_s
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(5)


# --- the audit and the measurement (Django) ----------------------------------------------------------------


def external_crawl_create(plan: TargetPlan, port: int, *, pages: int, budget_s: int, seed: int = 0) -> str:
    """An audit whose `pages` judged pages link the plan's targets (every one at least once, about LINKS_PER_PAGE a
    page), its project checking external links with a cap of every target and `budget_s`. Returns its id."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from accounts.models import Account, Plan
    from accounts.services import account_get_or_create_for_user
    from audits.limits import EXTERNAL_LINKS_MAX_CEILING
    from audits.models import Audit, Page, Project, page_id_for
    from audits.pipeline.start import audit_start
    from scratchpad.models import LinkEdge

    if len(plan.targets) > EXTERNAL_LINKS_MAX_CEILING:
        raise ExternalBenchError(f"at most {EXTERNAL_LINKS_MAX_CEILING:,} targets (the project cap's ceiling)")
    rnd = random.Random(seed + 1)
    plan_row, _ = Plan.objects.get_or_create(
        name=BENCH_PLAN_NAME, defaults={"pages_per_audit": 100_000, "running_audits": 10, "monthly_units": 10_000_000}
    )
    user, _ = get_user_model().objects.get_or_create(username="bench-external")
    account = account_get_or_create_for_user(user=user)
    Account.objects.filter(id=account.id).update(plan=plan_row)
    project = Project.objects.create(
        account=account,
        owner=user,
        name="external links",
        base_url=SITE_URL,
        max_pages=pages + 10,
        check_external_links=True,
        external_links_max=len(plan.targets),
        external_links_budget_s=budget_s,
    )
    audit = audit_start(project=project, start_url=SITE_URL, max_pages=pages + 10, dispatch=False)
    base = audit.start_url.rstrip("/")
    urls = [plan.url(t, port) for t in plan.targets]
    per_page = max(LINKS_PER_PAGE, math.ceil(len(urls) / pages))
    links: list[set[str]] = [set() for _ in range(pages)]
    shuffled = urls[:]
    rnd.shuffle(shuffled)
    for n, url in enumerate(shuffled):  # every target linked at least once
        links[n % pages].add(url)
    for chosen in links:
        while len(chosen) < min(per_page, len(urls)):
            chosen.add(urls[rnd.randrange(len(urls))])
    now = timezone.now()
    page_rows, edges = [], []
    for n, chosen in enumerate(links):
        url = f"{base}/articles/{n}"
        page_id = page_id_for(audit.id, url)
        page_rows.append(
            Page(
                id=page_id,
                audit_id=audit.id,
                url=url,
                status_code=200,
                fetch_class="ok",
                content_type="text/html",
                depth=1 + n % 4,
                title=f"Article {n}",
                titles_count=1,
                h1_count=1,
                word_count=600,
                external_links=len(chosen),
                is_indexable=True,
                fetched_at=now,
            )
        )
        edges += [
            LinkEdge(audit_id=audit.id, source_page_id=page_id, target_url=t, anchor_text="source", internal=False)
            for t in sorted(chosen)
        ]
    with transaction.atomic():
        Audit.objects.filter(id=audit.id).update(
            current_phase=Audit.Phase.CRAWLING, pages_crawled=pages, pages_total=pages, last_progress_at=now
        )
        Page.objects.bulk_create(page_rows, batch_size=WRITE_BATCH)
        LinkEdge.objects.bulk_create(edges, batch_size=WRITE_BATCH)
    with connection.cursor() as cursor:  # as after a crawl: autovacuum has analyzed the tables
        for model in (Page, LinkEdge):
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
    return str(audit.id)


def external_measure(audit_id: str) -> dict:
    """Run `external_links_judge` once on the audit: wall time, process CPU, peak RSS, what it stored."""
    import psutil
    from django.db import connection
    from django.db.models import Count

    from audits.checks.external import EXTERNAL_SITE_TYPES
    from audits.limits import STEP_TIME_LIMIT_S
    from audits.models import Audit, ExternalLink, Issue
    from audits.pipeline.external import external_links_judge, pass_settings

    audit = Audit.objects.select_related("project").get(id=audit_id)
    options = pass_settings(audit)
    connection.ensure_connection()
    rss_before = psutil.Process().memory_info().rss
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    # as in a finalize that has just begun, with the least time limit
    external_links_judge(audit, finalize_deadline=time.monotonic() + STEP_TIME_LIMIT_S)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    links = ExternalLink.objects.filter(audit_id=audit_id)
    outcomes = {r["outcome"]: r["n"] for r in links.values("outcome").annotate(n=Count("id")).order_by("outcome")}
    methods = {r["method"] or "-": r["n"] for r in links.values("method").annotate(n=Count("id")).order_by("method")}
    issues = Issue.objects.filter(audit_id=audit_id, type__in=EXTERNAL_SITE_TYPES)
    return {
        "audit_id": audit_id,
        "budget_s": options.budget_s,
        "seconds": seconds,
        "cpu_s": (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime),
        "rss_before_bytes": rss_before,
        "ru_maxrss_bytes": after.ru_maxrss * 1024,
        "targets": links.count(),
        "checked": links.filter(checked_at__isnull=False).count(),
        "outcomes": outcomes,
        "methods": methods,
        "answers": [
            [u, o, m] for u, o, m in links.filter(checked_at__isnull=False).values_list("url", "outcome", "method")
        ],
        "issues": {r["type"]: r["n"] for r in issues.values("type").annotate(n=Count("id")).order_by("type")},
    }


# --- the figures ---------------------------------------------------------------------------------------------


def external_figures(plan: TargetPlan, port: int, measured: dict, stats: dict) -> dict:
    """Measured pass + what the servers saw -> the printed figures and the failures (the invariants broken)."""
    by_url = {plan.url(t, port): t for t in plan.targets}
    per_method: Counter = Counter()
    per_target: Counter = Counter()
    unplanned = 0
    routes = plan.routes()
    for host, method, path, n in stats["requests"]:
        if (host, path) not in routes:
            unplanned += n
            continue
        per_method[(host, method, path)] = n
        per_target[(host, path)] += n
    mismatched = []
    head_answered_max = head_get_max = 0
    for url, outcome, method in measured["answers"]:
        target = by_url.get(url)
        if target is None or outcome != EXPECTED_OUTCOMES[target.kind]:
            mismatched.append([url, target.kind if target else None, outcome])
        if target is None:
            continue
        asked = per_target[(target.host, target.path)]
        if method == "GET":
            head_get_max = max(head_get_max, asked)
        else:
            head_answered_max = max(head_answered_max, asked)
    twice = sorted(f"{m} http://{h}:{port}{p} x{n}" for (h, m, p), n in per_method.items() if n > 1)
    peak_host = max(stats["peak_by_host"].values(), default=0)
    checked = measured["checked"]
    failures = []
    if twice:
        failures.append(f"{len(twice)} target(s) asked more than once with one method: {twice[:5]}")
    if peak_host > HOST_IN_FLIGHT_MAX:
        crowded = {h: n for h, n in stats["peak_by_host"].items() if n > HOST_IN_FLIGHT_MAX}
        failures.append(f"more than {HOST_IN_FLIGHT_MAX} requests in flight at a host: {crowded}")
    if stats["peak_all"] > ALL_IN_FLIGHT_MAX:
        failures.append(f"{stats['peak_all']} requests in flight in all (at most {ALL_IN_FLIGHT_MAX})")
    if measured["seconds"] > measured["budget_s"] + BUDGET_GRACE_S:
        failures.append(
            f"the pass took {measured['seconds']:.1f} s, over its {measured['budget_s']:.0f} s budget "
            f"+ {BUDGET_GRACE_S:.0f} s grace"
        )
    return {
        "targets_planned": len(plan.targets),
        "kinds_planned": dict(Counter(t.kind for t in plan.targets)),
        "hosts": len(plan.hosts),
        "targets": measured["targets"],
        "distinct_hosts": len({t.host for t in plan.targets}),
        "checked": checked,
        "unchecked": measured["targets"] - checked,
        "outcomes": measured["outcomes"],
        "methods": measured["methods"],
        "seconds": measured["seconds"],
        "budget_s": measured["budget_s"],
        "budget_grace_s": BUDGET_GRACE_S,
        "cpu_s": measured["cpu_s"],
        "cpu_ms_per_checked": measured["cpu_s"] * 1000 / checked if checked else None,
        "rss_before_mib": measured["rss_before_bytes"] / MIB,
        "rss_peak_mib": measured["ru_maxrss_bytes"] / MIB,
        "peak_in_flight_host": peak_host,
        "peak_in_flight_all": stats["peak_all"],
        "requests": sum(per_target.values()),
        "unplanned_requests": unplanned,
        "max_requests_head_answered": head_answered_max,
        "max_requests_head_then_get": head_get_max,
        "asked_twice": twice,
        "mismatched_answers": mismatched[:20],
        "mismatched_count": len(mismatched),
        "issues": measured["issues"],
        "failures": failures,
    }


def print_external(result: dict) -> None:
    print(
        f"\n== external link pass: {result['targets']:,} targets on {result['distinct_hosts']} hosts "
        f"(planned {result['targets_planned']:,}: {result['kinds_planned']}) =="
    )
    print(f"  checked {result['checked']:,}, unchecked {result['unchecked']:,}; outcomes {result['outcomes']}")
    print(f"  methods stored {result['methods']}")
    print(
        f"  wall {result['seconds']:.2f} s against a budget of {result['budget_s']:.0f} s "
        f"(+{result['budget_grace_s']:.0f} s grace)"
    )
    per = result["cpu_ms_per_checked"]
    per_text = f"{per:.2f} CPU ms a checked target" if per is not None else "nothing checked"
    print(f"  process CPU {result['cpu_s']:.2f} s ({per_text})")
    print(f"  peak RSS {result['rss_peak_mib']:.1f} MiB ({result['rss_before_mib']:.1f} MiB before the pass)")
    print(
        f"  in flight at the servers: at most {result['peak_in_flight_host']} at one host (limit "
        f"{HOST_IN_FLIGHT_MAX}), {result['peak_in_flight_all']} in all (limit {ALL_IN_FLIGHT_MAX})"
    )
    print(
        f"  requests {result['requests']:,} ({result['unplanned_requests']} to unplanned paths); most for one "
        f"target: {result['max_requests_head_answered']} where HEAD answered, "
        f"{result['max_requests_head_then_get']} where HEAD was refused (HEAD + GET)"
    )
    answered = result["checked"] - result["mismatched_count"]
    print(f"  answers as served: {answered:,} of {result['checked']:,} checked")
    for url, kind, outcome in result["mismatched_answers"]:
        print(f"    {url}: served as {kind}, stored {outcome}")
    print(f"  issues written: {sum(result['issues'].values()):,} {result['issues']}")
    for failure in result["failures"]:
        print(f"  FAILED: {failure}")
    if not result["failures"]:
        print("  every target asked at most once a method, politeness kept, within budget")
    print(JSON_PREFIX + json.dumps(result, sort_keys=True), flush=True)


# --- orchestration (no Django in this process) -------------------------------------------------------------


def _plan_args(args) -> list[str]:
    return [
        "--targets", str(args.targets), "--hosts", str(args.hosts), "--pages", str(args.pages),
        "--budget-s", str(args.budget_s), "--slow-share", str(args.slow_share), "--seed", str(args.seed),
    ]  # fmt: skip


def _run_child(args, *extra: str) -> dict:
    from bench.finalize import _child_env
    from bench.run import PYTHON, REPO

    done = subprocess.run(
        [str(PYTHON), "-m", "bench.external", *_plan_args(args), *extra],
        cwd=REPO,
        env=_child_env(EXTERNAL_DB_NAME),
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(CHILD_JSON_PREFIX) and done.returncode == 0:
            return json.loads(line[len(CHILD_JSON_PREFIX) :])
    raise ExternalBenchError(
        f"bench.external {' '.join(extra)} failed ({done.returncode}):\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    )


def run_external_bench(args) -> dict:
    from bench.finalize import FinalizeBenchError, database_reset

    plan = targets_plan(args.targets, args.hosts, slow_share=args.slow_share, seed=args.seed)
    try:
        database_reset(EXTERNAL_DB_NAME)
    except FinalizeBenchError as exc:
        raise ExternalBenchError(str(exc)) from exc
    with TargetServers(plan) as servers:
        port = str(servers.port)
        created = _run_child(args, "--child", "generate", "--port", port)
        measured = _run_child(args, "--child", "measure", "--port", port, "--audit-id", created["audit_id"])
        stats = servers.stats.snapshot()
    return external_figures(plan, servers.port, measured, stats)


def _child_main(args) -> int:
    import django

    django.setup()
    if args.child == "generate":
        plan = targets_plan(args.targets, args.hosts, slow_share=args.slow_share, seed=args.seed)
        audit_id = external_crawl_create(plan, args.port, pages=args.pages, budget_s=args.budget_s, seed=args.seed)
        print(CHILD_JSON_PREFIX + json.dumps({"audit_id": audit_id}), flush=True)
    else:
        print(CHILD_JSON_PREFIX + json.dumps(external_measure(args.audit_id)), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=DEFAULT_TARGETS, help="distinct external targets")
    parser.add_argument(
        "--hosts", type=int, default=DEFAULT_HOSTS, help=f"loopback hosts serving them (<= {HOSTS_MAX})"
    )
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="judged pages linking them")
    parser.add_argument("--budget-s", type=int, default=DEFAULT_BUDGET_S, help="the project's external_links_budget_s")
    parser.add_argument(
        "--slow-share", type=float, default=DEFAULT_SLOW_SHARE, help="share of targets held past the timeout"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", choices=("generate", "measure"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--audit-id", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.targets < 1 or args.pages < 1 or args.budget_s < 1:
        parser.error("--targets, --pages and --budget-s must be at least 1")
    if not 1 <= args.hosts <= HOSTS_MAX:
        parser.error(f"--hosts must be 1 to {HOSTS_MAX}")
    if not 0 <= args.slow_share <= 1 - MISSING_SHARE - REDIRECT_SHARE - HEAD_REFUSED_SHARE:
        parser.error("--slow-share is out of range")
    if args.child:
        return _child_main(args)
    try:
        result = run_external_bench(args)
    except ExternalBenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print_external(result)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
