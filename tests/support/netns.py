"""Worker hosts as network namespaces: a bridge in the root namespace holding the services' address, and per host a
namespace joined to it by a veth pair, with an address of its own from 198.18.0.0/15 (RFC 2544's benchmarking
range, never routed). A host is "cut off" by taking its end of the link down: its processes keep running and their
sockets stay open, but nothing reaches them or comes back from them, as in a network partition.

Everything is created by `host_network` and removed when it ends, whatever happened; names carry a per-run suffix
so a crashed run's leftovers never collide with the next (`sweep_leftovers` removes them too)."""

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

SUBNET_PREFIX = "198.18.0"  # /24 inside 198.18.0.0/15
SUBNET_BITS = 24
BRIDGE_HOST = 1  # 198.18.0.1: the root namespace, where the database, the broker and the site listen
FIRST_HOST = 11  # 198.18.0.11, .12, ...: the worker hosts
NAME_PREFIX = "swf"  # interface and namespace names: swf<run><kind><n>, within the kernel's 15 characters
IP_TIMEOUT_S = 10


def unavailable_reason() -> str | None:
    """Why this machine cannot make namespaces, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    probe = f"{NAME_PREFIX}probe{secrets.token_hex(2)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, netns: str | None = None) -> None:
    cmd = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")


@dataclass(frozen=True)
class Host:
    """One worker host: its namespace, its address and the root namespace's end of its link."""

    netns: str
    address: str
    link: str

    def command(self, cmd: list[str]) -> list[str]:
        """`cmd` run inside this host's namespace (same files, processes and users; its own network)."""
        return ["ip", "netns", "exec", self.netns, *cmd]


@dataclass
class HostNetwork:
    bridge: str
    address: str  # the root namespace's address on the bridge
    hosts: list[Host]

    @property
    def cidr(self) -> str:
        return f"{SUBNET_PREFIX}.0/{SUBNET_BITS}"

    def cut(self, host: Host) -> None:
        """Partition `host`: its link goes down, packets to and from it are dropped, its sockets stay open."""
        _ip("link", "set", host.link, "down")

    def restore(self, host: Host) -> None:
        _ip("link", "set", host.link, "up")


@contextmanager
def host_network(hosts: int) -> Iterator[HostNetwork]:
    run = secrets.token_hex(2)
    bridge = f"{NAME_PREFIX}{run}br"
    network = HostNetwork(bridge=bridge, address=f"{SUBNET_PREFIX}.{BRIDGE_HOST}", hosts=[])
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{network.address}/{SUBNET_BITS}", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for n in range(hosts):
            name = f"{NAME_PREFIX}{run}"
            host = Host(netns=f"{name}h{n}", address=f"{SUBNET_PREFIX}.{FIRST_HOST + n}", link=f"{name}v{n}")
            inside = f"{NAME_PREFIX}{run}i{n}"
            _ip("netns", "add", host.netns)
            network.hosts.append(host)
            _ip("link", "add", host.link, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", host.netns)
            _ip("link", "set", host.link, "master", bridge)
            _ip("link", "set", host.link, "up")
            _ip("addr", "add", f"{host.address}/{SUBNET_BITS}", "dev", inside, netns=host.netns)
            _ip("link", "set", inside, "up", netns=host.netns)
            _ip("link", "set", "lo", "up", netns=host.netns)
        yield network
    finally:
        for host in network.hosts:
            with suppress(Exception):
                _ip("netns", "del", host.netns)  # takes the inside end, and so the pair, with it
            with suppress(Exception):
                _ip("link", "del", host.link)
        with suppress(Exception):
            _ip("link", "del", bridge)


def sweep_leftovers() -> None:
    """Remove namespaces and links a killed run left behind (names with this module's prefix)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for name in listed:
        if name.startswith(NAME_PREFIX):
            with suppress(Exception):
                _ip("netns", "del", name)
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.splitlines()
    for line in links:
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name.startswith(NAME_PREFIX):
            with suppress(Exception):
                _ip("link", "del", name)
