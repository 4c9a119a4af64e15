"""Workers on many hosts (issue 29, goal 3), the proof of docs/DEPLOY.md: each worker host is its own network
namespace joined to a bridge, reaching PostgreSQL and RabbitMQ (private instances on the bridge's address) in the
root namespace, where beat, the CLI and the crawled site run too.

- An audit spread over three worker hosts stores the same pages (URL, status, depth), issues and link edges as the
  same audit on one host, and every host fetched part of it.
- One host cut off (its link down for CUT_S) while it crawls: the audit loses and duplicates nothing, completes
  within one lease of the link coming back, and when the cut-off host wakes up to its old work, its writes are
  fenced: no row of the finished audit changes.

Needs root, iproute2, PostgreSQL's server binaries and rabbitmq-server; skipped with the reason elsewhere."""

import time

import pytest

from tests.support.fleet import WORKER_CONCURRENCY, Crawl, Deployment, deployment, fleet_unavailable_reason
from tests.support.netns import sweep_leftovers
from tests.support.waits import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOSTS = 3
PAGES = 240  # the generated site's pages (plus its feature pages)
ANSWER_DELAY_S = 0.05  # the site answers this slowly, so the crawl lasts long enough to cut a host mid-way
LEASE_S = 20  # shorter than the default 60 s so the test takes minutes, not ten
LEASE_RENEW_EVERY_S = 5
# docs/DEPLOY.md: chunks a round = about twice the fleet's crawl processes, so every host has chunks in a round
CHUNKS_PER_ROUND = 2 * HOSTS * WORKER_CONCURRENCY
SETTINGS = {
    "CRAWL_LEASE_DURATION_S": str(LEASE_S),
    "CRAWL_LEASE_RENEW_EVERY_S": str(LEASE_RENEW_EVERY_S),
    "CRAWL_CHUNKS_PER_ROUND": str(CHUNKS_PER_ROUND),
}
CUT_S = 60  # the issue's partition
CUT_AT_SHARE = 0.25  # of the expected pages crawled
AUDIT_TIMEOUT_S = 240
SETTLE_S = 2 * LEASE_RENEW_EVERY_S + 5  # after the link is back: time for the woken host's writes to land, or not
FETCHING_WINDOW_S = 3  # the host to cut is one the site heard from within this long


@pytest.fixture(scope="module")
def world():
    reason = fleet_unavailable_reason()
    if reason:
        pytest.skip(f"the fleet test needs network namespaces and private services: {reason}")
    sweep_leftovers()
    with deployment(hosts=HOSTS, pages=PAGES, answer_delay_s=ANSWER_DELAY_S, settings=SETTINGS) as world:
        yield world


def _finish(world: Deployment, cli, project: str, audit_id: str, timeout_s: float = AUDIT_TIMEOUT_S) -> float:
    """Wait for the audit to end and the CLI to exit 0; returns when it ended."""
    wait_until(lambda: world.state(audit_id)[0] != "running", timeout_s, f"audit {audit_id} finished", every_s=0.5)
    ended = time.monotonic()
    code = cli.wait(timeout=60)
    assert code == 0, f"the CLI exited {code}: {world.log(f'cli-{project}').read_text()[-2000:]}"
    return ended


def _run(world: Deployment, project: str, hosts) -> Crawl:
    world.stop_processes()
    for host in hosts:
        world.start_worker(host)
    world.start_beat()
    cli, audit_id = world.audit_start(project)
    _finish(world, cli, project, audit_id)
    return world.crawl(audit_id)


def _same_crawl(crawl: Crawl, baseline: Crawl) -> None:
    assert crawl.status == baseline.status == "completed"
    extra, missing = sorted(map(str, crawl.pages - baseline.pages)), sorted(map(str, baseline.pages - crawl.pages))
    assert crawl.pages == baseline.pages, f"pages differ: extra {extra[:5]}, missing {missing[:5]}"
    assert crawl.issues == baseline.issues
    assert crawl.edges == baseline.edges
    # nothing duplicated: one row per URL, the counter equal to the rows, no frontier row left behind
    assert crawl.page_rows == len(crawl.pages) == crawl.pages_crawled
    assert crawl.frontier_left == 0


@pytest.fixture(scope="module")
def one_host(world) -> Crawl:
    crawl = _run(world, "one-host", world.network.hosts[:1])
    assert crawl.status == "completed"
    assert crawl.page_rows >= world.expected_urls * 0.9, "the one-host crawl itself is short"
    return crawl


def test_three_hosts_store_what_one_host_stores(world, one_host):
    world.served_to.clear()
    crawl = _run(world, "three-hosts", world.network.hosts)
    _same_crawl(crawl, one_host)
    fetched_by = {host.address: world.served_to[host.address] for host in world.network.hosts}
    assert all(fetched_by.values()), f"every host crawls part of the audit: {fetched_by}"
    assert sum(fetched_by.values()) >= crawl.page_rows


def test_a_host_cut_off_mid_crawl_loses_nothing_and_its_late_writes_are_fenced(world, one_host):
    world.stop_processes()
    for host in world.network.hosts:
        world.start_worker(host)
    world.start_beat()
    cli, audit_id = world.audit_start("cut-off")
    wait_until(
        lambda: world.state(audit_id)[1] >= world.expected_urls * CUT_AT_SHARE or world.state(audit_id)[0] != "running",
        AUDIT_TIMEOUT_S,
        "a quarter of the pages crawled",
        every_s=0.2,
    )
    assert world.state(audit_id)[0] == "running", "the crawl ended before a host could be cut off"
    victim = _a_fetching_host(world)

    world.network.cut(victim)
    try:
        heard_at_cut = world.served_to[victim.address]
        time.sleep(CUT_S)
        assert world.served_to[victim.address] - heard_at_cut <= 1, "the cut-off host still reached the site"
    finally:
        world.network.restore(victim)
    restored = time.monotonic()

    ended = _finish(world, cli, "cut-off", audit_id)
    assert ended - restored <= LEASE_S, f"completed {ended - restored:.0f} s after the link came back"
    finished = world.crawl(audit_id)
    _same_crawl(finished, one_host)

    # The cut-off host is back on the network with whatever it held; whatever it writes now is fenced.
    time.sleep(SETTLE_S)
    assert world.crawl(audit_id) == finished
    assert world.workers[victim.netns].poll() is None, "the cut-off host's worker survived the partition"


def _a_fetching_host(world: Deployment):
    """A worker host the site heard from within the last few seconds: one that holds leased work right now."""
    before = {host.address: world.served_to[host.address] for host in world.network.hosts}
    time.sleep(FETCHING_WINDOW_S)
    busy = [host for host in world.network.hosts if world.served_to[host.address] > before[host.address]]
    assert busy, "no host was fetching"
    return busy[-1]
