"""A real 3-member etcd cluster on loopback ports in a temporary folder, for
the control-plane and failover tests. etcd comes from Debian's etcd-server
(scripts/install-deps --tests); a missing etcd fails the test (it is not skipped)."""

import json
import shutil
import subprocess
import time
import urllib.request

from harness import free_port


class EtcdCluster:
    def __init__(self, folder, size=3):
        etcd = shutil.which("etcd") or "/usr/bin/etcd"
        assert shutil.which(etcd), "etcd is not installed: run scripts/install-deps --tests (Debian's etcd-server)"
        self.folder = folder
        self.members = [(f"m{i}", free_port(), free_port()) for i in range(size)]
        initial = ",".join(f"{n}=http://127.0.0.1:{peer}" for n, _, peer in self.members)
        self.processes = {}
        for i, (name, client, peer) in enumerate(self.members):
            log = open(folder / f"etcd-{name}.log", "w")
            self.processes[i] = subprocess.Popen(
                [etcd, "--name", name, "--data-dir", str(folder / f"etcd-{name}"),
                 "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
                 "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                 "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", folder.name,
                 "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "error"],
                stdout=log, stderr=log)
            log.close()
        self.wait_for_leader()

    @property
    def endpoint(self):
        """The ``--control-plane`` spelling: etcd://HOST:PORT,…"""
        return "etcd://" + ",".join(f"127.0.0.1:{client}" for _, client, _ in self.members)

    def endpoint_first(self, i):
        """The endpoint with member i listed first: the member clients talk to until it fails."""
        order = [i] + [j for j in range(len(self.members)) if j != i]
        return "etcd://" + ",".join(f"127.0.0.1:{self.members[j][1]}" for j in order)

    def status(self, i):
        _, client, _ = self.members[i]
        request = urllib.request.Request(f"http://127.0.0.1:{client}/v3/maintenance/status", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=1) as r:
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
