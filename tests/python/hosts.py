"""Hosts for tests of a cluster across machines: Linux network namespaces
joined by a bridge, processes started inside a host, routes between hosts
cut (``ip route add blackhole``) and healed, a host's processes killed or
stopped.

The network (made by :meth:`Network.make` for a list of host names)::

    switch namespace ll-<tag>-sw      a bridge, br0, with a port per host
    the test's own namespace          10.213.<n>.1/24 (``root_address``), its
                                      veth's other end a port of br0
    host <name> (ll-<tag>-<name>)     10.213.<n>.<10+i>/24 on its veth0, the
                                      other end a port of br0

``<n>`` is a third octet no address or route of the machine uses. The bridge
is in a namespace of its own, so that the machine's firewall (whose FORWARD
chain may drop bridged packets) never sees the hosts' traffic. Each host's
processes also get a hostname of their own (a UTS namespace, ``unshare
--uts``), so the stats show which host a worker runs on.

Without ``ip`` or namespaces (or with LIMELIGHT_MULTIHOST=loopback), a
network that allows it is made of loopback addresses instead: 127.0.0.2 the
test's own, 127.0.0.3 and on the hosts; workers bind their connections to
their host's address with ZeroMQ's ``tcp://SOURCE:0;DEST:PORT`` syntax. Such
a network cannot cut routes. Under CI the namespaces are required unless
LIMELIGHT_MULTIHOST=loopback asks for loopback.

Everything made is removed by :meth:`Network.close` (namespaces, veths, the
blackhole routes of the test's own namespace), whatever happens.
"""

import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from typing import NamedTuple, Optional

import pytest

from harness import under_ci

STOP_TIMEOUT = 5


class Host(NamedTuple):
    """A "host": its name, its address, its network namespace (None in
    loopback mode) and the hostname its processes report."""
    name: str
    address: str
    netns: Optional[str]
    hostname: str


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)


def _ip_output(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10).stdout


class Network:
    """The hosts, and the test's own address on their network."""

    def __init__(self, names):
        self.names = list(names)
        self.mode = None
        self.why = ""
        self.root_address = None
        self.hosts = {}
        self._namespaces = []
        self._links = []
        #: (namespace or None for the test's own, address) of every blackhole route added.
        self._blackholes = []

    @classmethod
    def make(cls, names, loopback_allowed=True):
        """Namespaces when possible. Otherwise loopback addresses if
        ``loopback_allowed``, else the test is skipped (failed under CI)."""
        network = cls(names)
        forced = os.environ.get("LIMELIGHT_MULTIHOST", "")
        if forced == "loopback":
            network._unavailable("LIMELIGHT_MULTIHOST=loopback", loopback_allowed, forced=True)
        elif shutil.which("ip") is None:
            network._unavailable("no `ip` command (iproute2)", loopback_allowed)
        else:
            try:
                network._namespaces_and_bridge()
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
                detail = getattr(e, "stderr", None) or str(e)
                network.close()
                network._unavailable(f"network namespaces unavailable: {detail.strip()}", loopback_allowed)
        return network

    def _unavailable(self, why, loopback_allowed, forced=False):
        """Loopback hosts in place of namespaces that could not be made: fine
        on a developer's machine, a failure under CI (the namespaces are what
        the test is for) unless LIMELIGHT_MULTIHOST=loopback asked for it."""
        if not loopback_allowed:
            message = f"{why}: this test cuts routes between hosts, which needs network namespaces (run as root)"
            if under_ci():
                pytest.fail(message)
            pytest.skip(message)
        if under_ci() and not forced:
            pytest.fail(f"{why}; set LIMELIGHT_MULTIHOST=loopback to test with loopback addresses instead")
        self.mode = "loopback"
        self.why = why
        self.root_address = "127.0.0.2"
        me = socket.gethostname()
        self.hosts = {name: Host(name, f"127.0.0.{3 + i}", None, me) for i, name in enumerate(self.names)}

    def _namespaces_and_bridge(self):
        tag = secrets.token_hex(3)
        octet = self._free_octet()
        prefix = f"10.213.{octet}"
        switch = f"ll-{tag}-sw"
        _ip("netns", "add", switch)
        self._namespaces.append(switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "up")

        def port(link, peer_namespace, address):
            """A veth from ``peer_namespace`` (None: the test's own) to a port of the bridge."""
            if peer_namespace is None:
                _ip("link", "add", link, "type", "veth", "peer", "name", f"p{link}")
                self._links.append(link)
                _ip("link", "set", f"p{link}", "netns", switch)
                _ip("addr", "add", f"{address}/24", "dev", link)
                _ip("link", "set", link, "up")
            else:
                _ip("link", "add", link, "type", "veth", "peer", "name", "veth0", "netns", peer_namespace)
                self._links.append(link)
                _ip("link", "set", link, "netns", switch)
                _ip("-n", peer_namespace, "link", "set", "lo", "up")
                _ip("-n", peer_namespace, "addr", "add", f"{address}/24", "dev", "veth0")
                _ip("-n", peer_namespace, "link", "set", "veth0", "up")
            bridged = f"p{link}" if peer_namespace is None else link
            _ip("-n", switch, "link", "set", bridged, "master", "br0")
            _ip("-n", switch, "link", "set", bridged, "up")

        port(f"ll{tag}r", None, f"{prefix}.1")
        self.root_address = f"{prefix}.1"
        for i, name in enumerate(self.names):
            ns = f"ll-{tag}-{name}"
            _ip("netns", "add", ns)
            self._namespaces.append(ns)
            port(f"ll{tag}{i}", ns, f"{prefix}.{10 + i}")
            self.hosts[name] = Host(name, f"{prefix}.{10 + i}", ns, ns)
        self.mode = "netns"
        self.why = f"namespaces {', '.join(self._namespaces)}; bridge br0 in {switch}; {prefix}.0/24"

    @staticmethod
    def _free_octet():
        """A third octet n such that nothing on the machine uses 10.213.n.0/24."""
        used = _ip_output("-4", "-o", "addr", "show") + _ip_output("-4", "route", "show", "table", "all")
        for _ in range(50):
            octet = random.randint(1, 254)
            if f"10.213.{octet}." not in used:
                return octet
        raise OSError("no free 10.213.n.0/24")

    def describe(self):
        return (f"hosts: {self.mode} ({self.why}); the test at {self.root_address}; "
                + ", ".join(f"{h.name} {h.address}" for h in self.hosts.values()))

    # -- processes on a host --------------------------------------------------

    def command(self, host, argv):
        """``argv`` run on ``host`` (a Host or its name)."""
        host = self.hosts[host] if isinstance(host, str) else host
        if host.netns is None:
            return argv
        # ip netns exec, unshare and sh all exec: the process keeps the pid Popen returns.
        return ["ip", "netns", "exec", host.netns, "unshare", "--uts",
                "sh", "-c", 'hostname "$0" && exec "$@"', host.hostname, *argv]

    def root_endpoint(self, host, port):
        """How a process on ``host`` names a port the test's own namespace listens on."""
        if host.netns is None:
            return f"tcp://{host.address}:0;{self.root_address}:{port}"
        return f"tcp://{self.root_address}:{port}"

    # -- cutting routes ----------------------------------------------------------

    def _blackhole(self, namespace, address):
        where = ["-n", namespace] if namespace else []
        _ip(*where, "route", "add", "blackhole", f"{address}/32")
        self._blackholes.append((namespace, address))

    def isolate(self, name, keep=()):
        """Cuts host ``name`` off from every other host but those named in
        ``keep``, and from the test's own namespace, both ways: on its host a
        blackhole route to each other address, and on every other host (and
        the test's) one to its address. Connections stay open and fall
        silent, as with a cable pulled."""
        if self.mode != "netns":
            raise AssertionError("routes can be cut only between network namespaces")
        cut = self.hosts[name]
        for other in self.hosts.values():
            if other.name != name and other.name not in keep:
                self._blackhole(cut.netns, other.address)
                self._blackhole(other.netns, cut.address)
        self._blackhole(cut.netns, self.root_address)
        self._blackhole(None, cut.address)

    def heal(self):
        """Removes every blackhole route added."""
        for namespace, address in self._blackholes:
            where = ["-n", namespace] if namespace else []
            subprocess.run(["ip", *where, "route", "del", "blackhole", f"{address}/32"],
                           capture_output=True, timeout=10)
        self._blackholes = []

    def close(self):
        """Removes the blackhole routes, the namespaces and the veths."""
        self.heal()
        for link in self._links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=10)
        for ns in self._namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
        left = [ns for ns in self._namespaces if ns in _ip_output("netns", "list").split()]
        self._links, self._namespaces = [], []
        assert not left, f"network namespaces left behind: {left}"


# -- processes -----------------------------------------------------------------


class Processes:
    """Started processes by name, each logging to ``<name>.out`` and
    ``<name>.log`` in ``folder``; killed, stopped and continued by name;
    all stopped at the end with SIGTERM (SIGCONT first), then SIGKILL."""

    def __init__(self, folder):
        self.folder = folder
        self.running = {}

    def start(self, name, argv):
        out = open(self.folder / f"{name}.out", "a")
        err = open(self.folder / f"{name}.log", "a")
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        finally:
            out.close()
            err.close()
        self.running[name] = process
        return process

    def kill(self, name):
        """SIGKILL, as a crash would."""
        process = self.running[name]
        process.kill()
        process.wait(STOP_TIMEOUT)

    def signal(self, name, sig):
        """Sends ``sig`` (SIGSTOP, SIGCONT, ...) to a process that has not ended."""
        process = self.running[name]
        if process.poll() is None:
            process.send_signal(sig)

    def stop_all(self):
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in self.running.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def wait_for_line(self, name, prefix, timeout=30):
        """The first line of ``<name>.out`` that starts with ``prefix``."""
        path = self.folder / f"{name}.out"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists():
                for line in path.read_text().splitlines():
                    if line.startswith(prefix):
                        return line
            if self.running[name].poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no '{prefix}' line in {path.name}\n{self.logs()}")

    def logs(self, lines=12):
        """The tails of every log, for failure messages."""
        out = []
        for name in self.running:
            for suffix in ("out", "log"):
                path = self.folder / f"{name}.{suffix}"
                tail = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
                if tail:
                    out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def tear_down(processes, etcd, network):
    """Stops the processes, then etcd (if any), then removes the hosts:
    each step even when one before it failed."""
    try:
        processes.stop_all()
    finally:
        try:
            if etcd:
                etcd.stop()
        finally:
            network.close()


def http_json(url, data=None, timeout=10):
    """(status, decoded body) of a GET, or of a POST of ``data`` (bytes)."""
    with _NO_PROXY.open(url, data=data, timeout=timeout) as response:
        return response.status, json.loads(response.read())
