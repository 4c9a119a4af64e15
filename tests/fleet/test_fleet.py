"""Workers on many hosts (issue 29, goal 3), the proof of docs/DEPLOY.md: each worker host is its own network
namespace joined to a bridge, reaching PostgreSQL and RabbitMQ (private instances on the bridge's address) in the
root namespace, where beat, the CLI and the crawled site run too.

- An audit spread over three worker hosts stores the same pages (URL, status, depth), issues and link edges as the
  same audit on one host, and every host fetched part of it.
- One host cut off (its link down for CUT_S) while it crawls: the audit loses and duplicates nothing, completes
  within one lease of the link coming back, and when the cut-off host wakes up to its old work, its writes are
  fenced: no row of the finished audit changes.
- One host cut off while it runs the audit's finalize (in a network pass, asking the site): the broker hands the
  finalize to another host, which completes the audit while the first is still cut off; when the first wakes up
  to its old work (every image unanswered), it writes nothing (audits.fencing; seen in CI before the fence: it
  wrote "broken image" on every page of the completed audit).

Needs root, iproute2, PostgreSQL's server binaries and rabbitmq-server; skipped with the reason elsewhere."""

import time

import pytest

from audits.fencing import FinalizeRun, finalize_session_name
from scratchpad.services.chunks import chunk_session_name
from tests.support.fleet import WORKER_CONCURRENCY, Crawl, Deployment, deployment, fleet_unavailable_reason
from tests.support.netns import sweep_leftovers
from tests.support.waits import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HOSTS = 3
PAGES = 240  # the generated site's pages (plus its feature pages)
ANSWER_DELAY_S = 0.1  # the site answers this slowly, so the crawl lasts long enough to cut a host mid-way
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


def _start(world: Deployment, hosts, project: str):
    """Workers on `hosts` (and beat) only, then the audit of `project` from the CLI: (the CLI, the audit's id)."""
    world.stop_processes()
    for host in hosts:
        world.start_worker(host)
    world.start_beat()
    return world.audit_start(project)


def _run(world: Deployment, project: str, hosts) -> Crawl:
    cli, audit_id = _start(world, hosts, project)
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
    cli, audit_id = _start(world, world.network.hosts, "cut-off")
    wait_until(
        lambda: world.state(audit_id)[1] >= world.expected_urls * CUT_AT_SHARE or world.state(audit_id)[0] != "running",
        AUDIT_TIMEOUT_S,
        "a quarter of the pages crawled",
        every_s=0.2,
    )
    victim = wait_until(
        lambda: _a_crawling_host(world, audit_id), AUDIT_TIMEOUT_S, "a host running a chunk", every_s=0.05
    )

    world.network.cut(victim)
    try:
        heard_at_cut = world.served_to[victim.address]
        assert world.phase(audit_id) == "crawling", "the crawl ended before a host could be cut off"
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


def test_a_host_cut_off_mid_finalize_writes_nothing_once_another_host_took_it_over(world, one_host):
    cli, audit_id = _start(world, world.network.hosts, "cut-off-finalize")
    first_run = finalize_session_name(FinalizeRun(audit_id=audit_id, generation=1))
    heard: dict[str, int] = {}

    def finalize_asking_the_site():
        """The host of finalize's first run, once the site hears from it: the crawl is over, so it is asking for
        the audit's images (or robots.txt, or resources): a network pass, outside any transaction."""
        host = world.host_of_session(first_run)
        if host is None:
            return None
        heard.setdefault(host.address, world.served_to[host.address])
        return host if world.served_to[host.address] > heard[host.address] else None

    victim = wait_until(finalize_asking_the_site, AUDIT_TIMEOUT_S, "finalize asking the site", every_s=0.05)
    world.network.cut(victim)
    try:
        assert world.phase(audit_id) == "finalizing", "finalize ended before its host could be cut off"
        # The broker hands its message to another host once the first stops answering heartbeats.
        wait_until(lambda: world.state(audit_id)[0] != "running", CUT_S, "another host completed the audit")
        finished = world.crawl(audit_id)
    finally:
        world.network.restore(victim)
    _finish(world, cli, "cut-off-finalize", audit_id)
    _same_crawl(finished, one_host)
    runs = world.query(
        "SELECT data->>'run' FROM audits_auditevent WHERE audit_id = %s AND kind = 'phase' "
        "AND data->>'phase' = 'finalizing' ORDER BY id",
        (audit_id,),
    )
    assert [run for (run,) in runs] == ["1", "2"], "a second run took finalize over, and the event log says so"

    # The cut-off host is back, its first run holding every image unanswered; whatever it writes now is fenced.
    time.sleep(SETTLE_S)
    assert world.crawl(audit_id) == finished
    assert world.workers[victim.netns].poll() is None, "the cut-off host's worker survived the partition"


def _a_crawling_host(world: Deployment, audit_id: str):
    """A worker host running a chunk of the audit right now: its run's database session says where it is."""
    running = world.query(
        "SELECT lease_key, generation FROM scratchpad_crawlchunk WHERE audit_id = %s AND state = 'running'", (audit_id,)
    )
    hosts = (world.host_of_session(chunk_session_name(lease_key=key, generation=g)) for key, g in running)
    return next((host for host in hosts if host is not None), None)
