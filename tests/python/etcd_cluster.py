"""A real 3-member etcd cluster on loopback ports in a temporary folder, for
the control-plane and failover tests, or with each member on a host of its
own (tests/python/hosts.py) for the tests across hosts. etcd comes from
Debian's etcd-server (scripts/install-deps --tests); a missing etcd fails
the test (it is not skipped)."""

import json
import shutil
import subprocess
import time
import urllib.request

from harness import free_port

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class EtcdCluster:
    """``size`` members on loopback ports; or, given ``network`` (a
    hosts.Network) and ``hosts`` (names of its hosts), a member on each host,
    at the host's address on etcd's usual ports."""

    def __init__(self, folder, size=3, network=None, hosts=None):
        etcd = shutil.which("etcd") or "/usr/bin/etcd"
        assert shutil.which(etcd), "etcd is not installed: run scripts/install-deps --tests (Debian's etcd-server)"
        self.folder = folder
        if hosts:
            self.members = [(f"m{i}", 2379, 2380) for i in range(len(hosts))]
            self.addresses = [network.hosts[h].address for h in hosts]
        else:
            self.members = [(f"m{i}", free_port(), free_port()) for i in range(size)]
            self.addresses = ["127.0.0.1"] * size
        initial = ",".join(f"{n}=http://{a}:{peer}" for (n, _, peer), a in zip(self.members, self.addresses))
        self.processes = {}
        for i, ((name, client, peer), a) in enumerate(zip(self.members, self.addresses)):
            log = open(folder / f"etcd-{name}.log", "w")
            argv = [etcd, "--name", name, "--data-dir", str(folder / f"etcd-{name}"),
                    "--listen-client-urls", f"http://{a}:{client}", "--advertise-client-urls", f"http://{a}:{client}",
                    "--listen-peer-urls", f"http://{a}:{peer}", "--initial-advertise-peer-urls", f"http://{a}:{peer}",
                    "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", folder.name,
                    "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "error"]
            self.processes[i] = subprocess.Popen(network.command(hosts[i], argv) if hosts else argv,
                                                 stdout=log, stderr=log)
            log.close()
        try:
            self.wait_for_leader()
        except BaseException:
            self.stop()  # the caller gets no cluster to stop
            raise

    def _client(self, i):
        return f"{self.addresses[i]}:{self.members[i][1]}"

    @property
    def endpoint(self):
        """The ``--control-plane`` spelling: etcd://HOST:PORT,…"""
        return "etcd://" + ",".join(self._client(i) for i in range(len(self.members)))

    def endpoint_first(self, i):
        """The endpoint with member i listed first: the member clients talk to until it fails."""
        order = [i] + [j for j in range(len(self.members)) if j != i]
        return "etcd://" + ",".join(self._client(j) for j in order)

    def status(self, i):
        request = urllib.request.Request(f"http://{self._client(i)}/v3/maintenance/status", data=b"{}", method="POST")
        with _NO_PROXY.open(request, timeout=1) as r:
            return json.load(r)

    def leader(self):
        """The index of the member every live member names as leader, or None."""
        ids, leaders = {}, set()
        for i in self.processes:
            try:
                s = self.status(i)
            except OSError:
                return None
            ids[s["header"]["member_id"]] = i
            leaders.add(s.get("leader", "0"))
        if len(leaders) != 1 or "0" in leaders:
            return None
        return ids.get(leaders.pop())

    def wait_for_leader(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leader = self.leader()
            if leader is not None:
                return leader
            time.sleep(0.1)
        raise AssertionError(f"etcd elected no leader in {timeout} s; logs in {self.folder}")

    def kill(self, i):
        p = self.processes.pop(i)
        p.kill()
        p.wait()

    def stop(self):
        for i in list(self.processes):
            self.kill(i)
