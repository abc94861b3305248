"""A cluster across hosts: the coordinator on one, indexers and query workers
on others, a replica taking over from a query worker that dies.

Hosts (4 shards)::

    coordinator   limelight-coordinator, in the test's own network namespace
    host a        limelight-indexer + limelight-query, shards 0,1, data folder a/
    host b        limelight-indexer + limelight-query, shards 2,3, data folder b/
    host c        limelight-indexer + limelight-query, shards 0,1 (a replica of a), data folder c/

The hosts are made by hosts.Network (tests/python/hosts.py): network
namespaces joined by a bridge, the coordinator in the test's own namespace
at its address on that network, or, where namespaces cannot be made (or
with LIMELIGHT_MULTIHOST=loopback), loopback addresses, the workers binding
their connection to their host's address with ZeroMQ's
``tcp://SOURCE:0;DEST:PORT`` endpoint syntax in ``--coordinator``. The mode
is printed.

Either way the test checks, from /proc, that each worker's connection to the
coordinator leaves from its host's address. Every process is given the
cluster secret (docs/security-transport.md); a second test runs a small
cluster with CURVE on across the hosts, where only known keys get in. The namespaces, veths and
processes are removed by the fixture's finalizer, whatever happens.
"""

import os
import socket
import sqlite3
import struct
import subprocess
import time
from collections import defaultdict
from typing import NamedTuple

import pytest

import schemas
from harness import Client, Traffic, bin_dir, read_jsonl, require_binaries, wait_until
from hosts import Network, Processes, http_json
from limelight_client import LimelightTimeout

SHARDS = 4
#: Host name -> the shards its indexer and query worker keep.
LAYOUT = {"a": [0, 1], "b": [2, 3], "c": [0, 1]}
START_TIMEOUT = 30
#: The coordinator's liveness period (its default): a silent worker is dead after it.
LIVENESS_S = 3.0
EXECUTABLES = ("limelight-coordinator", "limelight-indexer", "limelight-query")


def fnv1a_shard(domain, shard_count=SHARDS):
    """The shard of a domain, as Sharding.shard(forDomain:shardCount:) computes it."""
    h = 0xCBF29CE484222325
    for b in domain.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h % shard_count


class HostsCluster(NamedTuple):
    """The running cluster: where clients connect, the coordinator's worker port,
    its stats URL and each host's data folder."""
    network: Network
    processes: Processes
    endpoint: str
    worker_port: int
    stats_url: str
    data: dict


def _require_binaries():
    require_binaries(*EXECUTABLES)


def _start(network, processes, folder):
    """The coordinator, then every host's indexer and query worker."""
    a = network.root_address
    # One secret for the cluster, as an operator copies it to every host
    # (docs/security-transport.md); the coordinator makes it.
    secret = folder / "cluster.secret"
    processes.start("coordinator", [
        str(bin_dir() / "limelight-coordinator"), "--listen", f"tcp://{a}:0", "--workers", f"tcp://{a}:0",
        "--stats-port", "0", "--stats-host", a, "--shards", str(SHARDS), "--cluster-secret-file", str(secret)])
    line = processes.wait_for_line("coordinator", "listening ", START_TIMEOUT)
    _, endpoint, workers_endpoint, stats_url = line.split()
    worker_port = int(workers_endpoint.rsplit(":", 1)[1])
    data = {}
    for name, shards in LAYOUT.items():
        host = network.hosts[name]
        data[name] = folder / f"data-{name}"
        data[name].mkdir()
        for role, exe in (("indexer", "limelight-indexer"), ("query", "limelight-query")):
            processes.start(f"{role}-{name}", network.command(host, [
                str(bin_dir() / exe), "--coordinator", network.root_endpoint(host, worker_port),
                "--data", str(data[name]), "--shards", ",".join(map(str, shards)), "--id", f"{role}-{name}",
                "--cluster-secret-file", str(secret)]))
    return HostsCluster(network, processes, endpoint, worker_port, stats_url, data)


@pytest.fixture(scope="module")
def cluster_across_hosts(tmp_path_factory):
    _require_binaries()
    folder = tmp_path_factory.mktemp("multihost")
    network = Network.make(LAYOUT)
    processes = Processes(folder)
    print(f"\nmultihost mode: {network.mode} ({network.why}); coordinator {network.root_address}; "
          + ", ".join(f"host {h.name} {h.address}" for h in network.hosts.values()))
    try:
        yield _start(network, processes, folder)
    finally:
        try:
            processes.stop_all()
        finally:
            network.close()


# -- looking at the cluster from outside --------------------------------------------


def stats_of(cluster):
    return http_json(cluster.stats_url)[1]


def connections(pid):
    """(local, remote) (address, port) pairs of the established TCP
    connections of process ``pid``, as /proc sees them in its namespace."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])

    def address(text):
        ip, port = text.split(":")
        return socket.inet_ntoa(struct.pack("<I", int(ip, 16))), int(port, 16)

    found = []
    with open(f"/proc/{pid}/net/tcp") as table:
        next(table)
        for row in table:
            cols = row.split()
            if cols[3] == "01" and cols[9] in inodes:  # ESTABLISHED
                found.append((address(cols[1]), address(cols[2])))
    return found


def stored_ids(data, shard):
    """The unique identifiers in one replica's shard file, read straight from SQLite."""
    db = sqlite3.connect(f"file:{data / f'shard-{shard}.sqlite'}?mode=ro", uri=True, timeout=5)
    try:
        return {row[0] for row in db.execute("SELECT uid FROM items")}
    finally:
        db.close()


def query_all(client):
    """Every item's identifier, and the completion."""
    found, completion = [], None
    for kind, value in client.query('title == "*"', fetch=[], batch_size=500):
        if kind == "batch":
            found += [i["uniqueIdentifier"] for i in value]
        else:
            completion = value
    return found, completion


def assert_complete(found, completion, expected):
    assert completion["failedShards"] == [] and completion["cancelled"] is False, completion
    assert len(found) == len(set(found)) == completion["count"], "duplicates or a wrong count"
    assert set(found) == expected, (f"missing {sorted(expected - set(found))[:5]}, "
                                    f"unexpected {sorted(set(found) - expected)[:5]}")


# -- the test ------------------------------------------------------------------------


def test_publish_query_failover_and_delete_across_hosts(cluster_across_hosts, record_property):
    cluster = cluster_across_hosts
    network, processes = cluster.network, cluster.processes
    record_property("multihost_mode", network.mode)
    timings = {}
    t0 = time.monotonic()

    # Every worker registers, from its own host, with its own hostname and pid.
    expected_workers = {f"{role}-{name}": (role, shards, network.hosts[name])
                        for name, shards in LAYOUT.items() for role in ("indexer", "query")}

    def registered():
        return {w["id"] for w in stats_of(cluster)["workers"]} == set(expected_workers)

    assert wait_until(registered, timeout=START_TIMEOUT, interval=0.2), (
        f"registered: {[w['id'] for w in stats_of(cluster)['workers']]}\n{processes.logs()}")
    timings["register"] = time.monotonic() - t0
    status, stats = http_json(cluster.stats_url)
    assert status == 200
    schemas.assert_valid(stats, "stats_reply.schema.json#/$defs/stats")
    assert stats["shardCount"] == SHARDS and stats["servedShards"] == list(range(SHARDS))
    for w in stats["workers"]:
        role, shards, host = expected_workers[w["id"]]
        assert (w["role"], w["shards"], w["host"], w["pid"]) == (
            role, shards, host.hostname, processes.running[w["id"]].pid), w
    by_shard = {s["shard"]: s for s in stats["shards"]}
    for shard in range(SHARDS):
        holders = sorted(n for n, s in LAYOUT.items() if shard in s)
        assert sorted(by_shard[shard]["indexers"]) == [f"indexer-{n}" for n in holders]
        assert sorted(by_shard[shard]["queryWorkers"]) == [f"query-{n}" for n in holders]
    health_url = cluster.stats_url.rsplit("/", 1)[0] + "/health"
    assert http_json(health_url) == (200, {"healthy": True, "servedShards": SHARDS, "shardCount": SHARDS})

    # Each worker's connection to the coordinator leaves from its host's address
    # (and, with namespaces, from inside its host's namespace).
    ours = os.readlink("/proc/self/ns/net")
    for worker, (_, _, host) in expected_workers.items():
        pid = processes.running[worker].pid
        links = connections(pid)
        coordinator = (network.root_address, cluster.worker_port)
        assert any(local[0] == host.address and remote == coordinator for local, remote in links), (
            f"{worker}: connections {links}")
        if host.netns:
            assert os.readlink(f"/proc/{pid}/ns/net") == f"net:[{os.stat(f'/var/run/netns/{host.netns}').st_ino}]"
            assert os.readlink(f"/proc/{pid}/ns/net") != ours

    # Publish from the root namespace: items of every shard, four batches. Each
    # acknowledgement comes after every replica committed, so right after it
    # both copies of shards 0 and 1 (hosts a and c) hold the batch.
    samples = [read_jsonl("green-grocer.jsonl"), read_jsonl("debian-packages.jsonl")]
    items = [i for sample in samples for i in sample]
    shard_of = {i["uniqueIdentifier"]: fnv1a_shard(i["domainIdentifier"]) for i in items}
    assert set(shard_of.values()) == set(range(SHARDS))
    batches = [samples[0]] + [samples[1][n:n + 100] for n in range(0, len(samples[1]), 100)]
    traffic = Traffic()
    t = time.monotonic()
    with Client(cluster.endpoint, timeout=10, observer=traffic) as client:
        published = defaultdict(set)
        for n, batch in enumerate(batches):
            ack = client.publish(batch, batch=f"multihost-{n}")
            assert (ack["stored"], ack["rejected"]) == (len(batch), 0), ack
            for i in batch:
                published[shard_of[i["uniqueIdentifier"]]].add(i["uniqueIdentifier"])
            for name, shards in LAYOUT.items():
                for shard in shards:
                    assert stored_ids(cluster.data[name], shard) == published[shard], (
                        f"host {name}, shard {shard}, after batch {n}")
        timings["publish"] = time.monotonic() - t

        # Query them back across the hosts: everything, no failed shard.
        everything = set(shard_of)
        t = time.monotonic()
        for _ in range(4):  # several: queries of shards 0 and 1 take turns between hosts a and c
            assert_complete(*query_all(client), everything)
        timings["query x4"] = time.monotonic() - t

        # Host a's query worker dies: queries still answer in full, from host c.
        processes.kill("query-a")
        t = time.monotonic()
        for _ in range(4):
            assert_complete(*query_all(client), everything)
        timings["query x4 after kill"] = time.monotonic() - t
        assert wait_until(lambda: "query-a" not in {w["id"] for w in stats_of(cluster)["workers"]},
                          timeout=LIVENESS_S + 3), "the coordinator still lists query-a"
        by_shard = {s["shard"]: s for s in stats_of(cluster)["shards"]}
        assert [by_shard[s]["queryWorkers"] for s in (0, 1)] == [["query-c"], ["query-c"]]
        assert stats_of(cluster)["servedShards"] == list(range(SHARDS))

        # Delete a domain with its subdomains (shards 1 and 3): gone from the
        # results and from every replica's files.
        fruit = {i["uniqueIdentifier"] for i in samples[0]
                 if (i["domainIdentifier"] + ".").startswith("com.greengrocer.produce.fruit.")}
        assert {shard_of[u] for u in fruit} == {1, 3}
        assert client.delete(domains=["com.greengrocer.produce.fruit"]) == len(fruit)
        assert_complete(*query_all(client), everything - fruit)
        for name, shards in LAYOUT.items():
            for shard in shards:
                assert stored_ids(cluster.data[name], shard) == published[shard] - fruit, f"host {name}, shard {shard}"

    assert traffic.received("publish_ack") and traffic.completions() and traffic.received("delete_ack")
    timings["total"] = time.monotonic() - t0
    print(f"multihost mode {network.mode}: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))


# -- CURVE across hosts (issue 13, part 4) ----------------------------------------------


def test_curve_across_hosts_lets_known_keys_in_and_refuses_others(tmp_path):
    """A coordinator with CURVE and allow-lists; host a's workers with known
    keys serve every shard from their namespace, host b's indexer with an
    unknown key (but the right cluster secret) is refused at the handshake;
    a client with a known key publishes and queries across the hosts, one
    with an unknown key gets no answer."""
    _require_binaries()
    import zmq.auth
    limelight = str(bin_dir() / "limelight")
    keys = tmp_path / "keys"
    for folder in ("clients", "workers", "others"):
        (keys / folder).mkdir(parents=True)
    for name in ("coordinator", "clients/app", "workers/a", "others/b"):
        subprocess.run([limelight, "keys", "curve", str(keys / name)], check=True, capture_output=True, timeout=30)
    server_key = zmq.auth.load_certificate(str(keys / "coordinator.key"))[0].decode()
    network = Network.make(LAYOUT)
    processes = Processes(tmp_path)
    try:
        a = network.root_address
        secret = tmp_path / "cluster.secret"
        processes.start("coordinator", [
            str(bin_dir() / "limelight-coordinator"), "--listen", f"tcp://{a}:0", "--workers", f"tcp://{a}:0",
            "--stats-port", "0", "--stats-host", a, "--shards", "2", "--cluster-secret-file", str(secret),
            "--curve-secret-key", str(keys / "coordinator.key_secret"),
            "--client-keys", str(keys / "clients"), "--worker-keys", str(keys / "workers")])
        _, endpoint, workers_endpoint, stats_url = processes.wait_for_line("coordinator", "listening ", START_TIMEOUT).split()
        port = int(workers_endpoint.rsplit(":", 1)[1])
        for name, role, key in (("a", "indexer", "workers/a"), ("a", "query", "workers/a"), ("b", "indexer", "others/b")):
            host = network.hosts[name]
            processes.start(f"{role}-{name}", network.command(host, [
                str(bin_dir() / f"limelight-{role}"), "--coordinator", network.root_endpoint(host, port),
                "--data", str(tmp_path / f"data-{name}"), "--shards", "0,1", "--id", f"{role}-{name}",
                "--cluster-secret-file", str(secret), "--curve-server-key", str(keys / "coordinator.key"),
                "--curve-secret-key", str(keys / f"{key}.key_secret")]))
        app = zmq.auth.load_certificate(str(keys / "clients/app.key_secret"))
        with Client(endpoint, timeout=10, curve_server_key=server_key,
                    curve_key_pair=(app[0].decode(), app[1].decode())) as client:
            assert wait_until(lambda: len(client.ping()["servedShards"]) == 2, timeout=START_TIMEOUT), processes.logs()
            items = read_jsonl("green-grocer.jsonl")
            ack = client.publish(items)
            assert (ack["stored"], ack["rejected"]) == (len(items), 0), ack
            assert_complete(*query_all(client), {i["uniqueIdentifier"] for i in items})
            # Host b's indexer may not have tried its handshake yet on a busy machine.
            assert wait_until(lambda: client.stats()["counters"].get("connections.refused.workers", 0) >= 1,
                              timeout=START_TIMEOUT), f"{client.stats()['counters']}\n{processes.logs()}"
            stats = client.stats()
        assert {w["id"] for w in stats["workers"]} == {"indexer-a", "query-a"}
        stranger = zmq.auth.load_certificate(str(keys / "others/b.key_secret"))
        with Client(endpoint, timeout=2, curve_server_key=server_key,
                    curve_key_pair=(stranger[0].decode(), stranger[1].decode())) as refused:
            with pytest.raises(LimelightTimeout):
                refused.ping()
        print(f"\ncurve across hosts ({network.mode}): workers {sorted(w['id'] for w in stats['workers'])}, "
              f"refused worker connections {stats['counters']['connections.refused.workers']}")
    finally:
        try:
            processes.stop_all()
        finally:
            network.close()
