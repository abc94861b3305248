"""In-sync replica sets on the write path (issue 34, points 2 and 5), with
real processes: coordinators with a control plane (a local file, or a real
3-member etcd), two replicas per shard (each an indexer and a query worker
on its own folder), and a producer that resends until each batch is
acknowledged.

- A replica killed during a publish leaves its shards' in-sync sets through
  the control plane before any later write is acknowledged (while the test
  holds the control plane's lock, nothing is), and rejoins once restarted
  and caught up.
- kill -9 of the active coordinator together with one indexer replica
  during a publish: the standby continues each shard from the in-sync
  replica that is left (without waiting for `--replicas 2`), and every
  acknowledged item is on every fresh replica exactly once, read from the
  SQLite files, and in query answers.
"""

import collections
import fcntl
import json
import socket
import subprocess
import threading
import time

import pytest

from etcd_cluster import EtcdCluster
from harness import Client, bin_dir, record_fault, require_binaries, stored_ids, wait_until
from limelight_client import LimelightError, LimelightTimeout
from test_failover import SHARDS, Processes, active_id, items
from test_failover import Producer as FailoverProducer


class Replicas(Processes):
    def replica(self, name, data, coordinators, roles=("indexer", "query")):
        """An indexer and a query worker serving the replica `name` in `data`."""
        for role in roles:
            worker = f"{'ix' if role == 'indexer' else 'q'}-{name}"
            log = open(self.tmp / f"{worker}.log", "a")
            executable = "limelight-indexer" if role == "indexer" else "limelight-query"
            self.running[worker] = subprocess.Popen(
                [str(bin_dir() / executable), "--coordinator", ",".join(coordinators), "--data", str(data),
                 "--shards", ",".join(map(str, range(SHARDS))), "--id", worker, "--replica", name],
                stdout=log, stderr=log)
            log.close()


@pytest.fixture
def procs(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    p = Replicas(tmp_path)
    yield p
    p.stop()


def in_sync(control_plane, shard):
    """The replicas the control plane names in shard's in-sync set (None: no set)."""
    r = subprocess.run([str(bin_dir() / "limelight"), "control-plane", "get", f"shards/{shard}/in-sync",
                        "--control-plane", control_plane], capture_output=True, text=True, timeout=30)
    if r.returncode == 1:
        return None
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["replicas"]


def all_in_sync(control_plane, names):
    return all(in_sync(control_plane, s) == sorted(names) for s in range(SHARDS))


def Producer(endpoints, batches, prefix):
    """test_failover.py's producer, with a 2 s silence and 50 ms pauses."""
    return FailoverProducer(endpoints, batches, prefix=prefix, timeout=2, pause=0.05)


def found(endpoints, follow=True):
    """Every identifier a query answered whole names, from the active
    coordinator (with `follow`), or from the first of `endpoints` only."""
    with (Client.connect_active(endpoints, timeout=1) if follow else Client(endpoints[0], timeout=1)) as c:
        events = list(c.query('title == "failover*"', fetch=[], deadline_ms=10_000))
    kind, completion = events[-1]
    assert kind == "completion" and not completion.get("failedShards"), completion
    return [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]


def replica_state(endpoints, name):
    """Per shard, whether the active coordinator takes `name` as fresh."""
    with Client.connect_active(endpoints, timeout=2) as c:
        shards = c.stats()["replication"]["shards"]
    return [any(r["replica"] == name and r["fresh"] and r["live"] for r in s["replicas"]) for s in shards]


def assert_every_acknowledged_item_once(folders, acknowledged, endpoints):
    """The invariant: every acknowledged item is on every replica exactly
    once (read from the SQLite files) and in query answers; nothing else is
    reported stored (every batch was resent until acknowledged)."""
    expected = sorted(set(acknowledged))
    assert len(expected) == len(acknowledged)
    for folder in folders:
        counts = collections.Counter(stored_ids(folder, SHARDS))
        assert sorted(counts) == expected, f"{folder}: {len(counts)} items stored, {len(expected)} acknowledged"
        assert set(counts.values()) == {1}, folder
    answered = found(endpoints)
    assert sorted(answered) == expected


def test_a_replica_killed_during_a_publish_leaves_the_in_sync_set_before_the_next_ack_and_rejoins(procs, tmp_path):
    control_plane = f"file://{tmp_path}/control-plane.json"
    clients, workers = procs.coordinator("a", control_plane, "--lease-seconds", "4")
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    procs.replica("r1", r1, [workers])
    procs.replica("r2", r2, [workers])
    assert wait_until(lambda: all_in_sync(control_plane, ["r1", "r2"]), timeout=30)

    producer = Producer([clients], batches=40, prefix="rk")
    producer.start()
    assert wait_until(lambda: len(producer.acks) >= 5 or producer.error, timeout=60)
    assert producer.error is None, producer.error
    # The control plane cannot be written while the test holds its lock: a
    # write that r2 did not get may not be acknowledged until it can.
    with open(f"{tmp_path}/control-plane.json.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        procs.kill("ix-r2")
        killed_at = time.monotonic()
        with Client(clients, timeout=5) as c:
            assert wait_until(lambda: c.stats()["counters"].get("workers.lost", 0) >= 1, timeout=10)
        time.sleep(0.5)
        released_at = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_UN)
    early = [a for s, a in producer.acks if s > killed_at and a < released_at]
    assert not early, f"{len(early)} writes r2 missed were acknowledged before r2 could leave the in-sync set"
    assert wait_until(lambda: any(s > killed_at for s, _ in producer.acks) or producer.error, timeout=30)
    assert producer.error is None, producer.error
    # r2 is out of every shard's set that took a change since.
    assert all(in_sync(control_plane, s) == ["r1"] for s in range(SHARDS))
    with Client(clients, timeout=5) as c:
        counters = c.stats()["counters"]
    assert counters["insync.removed"] >= SHARDS and counters["insync.heldAnswers"] >= 1, counters

    # Restarted, it is caught up (or copied) and put back.
    procs.replica("r2", r2, [workers], roles=("indexer",))
    assert wait_until(lambda: all_in_sync(control_plane, ["r1", "r2"]), timeout=60)
    producer.join(120)
    assert not producer.is_alive() and producer.error is None, producer.error
    assert wait_until(lambda: all(replica_state([clients], "r2")) and all(replica_state([clients], "r1")), timeout=30)
    assert_every_acknowledged_item_once([r1, r2], producer.acknowledged, [clients])
    print(f"replica killed: batches resent {producer.resent}; in-sync answers held {counters['insync.heldAnswers']}")


def test_kill_9_of_the_coordinator_with_an_indexer_replica_during_a_publish_loses_nothing(procs, tmp_path, record_property):
    etcd = EtcdCluster(tmp_path)
    try:
        run_coordinator_and_replica_kill(etcd.endpoint, procs, tmp_path, record_property)
    finally:
        procs.stop()
        etcd.stop()


def run_coordinator_and_replica_kill(control_plane, procs, tmp_path, record_property):
    # Both coordinators are told every shard has two replicas, and to wait a
    # minute for them after a start: the one that takes over must not, as
    # the in-sync set says which replica to continue from.
    wait = ("--replicas", "2", "--replica-wait-ms", "60000")
    a_clients, a_workers = procs.coordinator("a", control_plane, *wait)
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    b_clients, b_workers = procs.coordinator("b", control_plane, *wait)
    endpoints = [a_clients, b_clients]
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    procs.replica("r1", r1, [b_workers, a_workers])
    procs.replica("r2", r2, [b_workers, a_workers])
    assert wait_until(lambda: all_in_sync(control_plane, ["r1", "r2"]), timeout=30)

    producer = Producer(endpoints, batches=40, prefix="ck")
    producer.start()
    assert wait_until(lambda: len(producer.acks) >= 8 or producer.error, timeout=60)
    assert producer.error is None, producer.error
    procs.kill("a")
    procs.kill("ix-r2")
    killed_at = time.monotonic()
    answered_at = None
    while answered_at is None and time.monotonic() - killed_at < 60:
        try:
            found(endpoints)
            answered_at = time.monotonic()
        except (LimelightError, LimelightTimeout, AssertionError):
            time.sleep(0.05)
    assert answered_at is not None, "no query was answered whole within a minute of the kill"
    assert wait_until(lambda: any(s > killed_at for s, _ in producer.acks) or producer.error, timeout=60)
    assert producer.error is None, producer.error
    first_ack = min(a for s, a in producer.acks if s > killed_at)
    assert active_id(control_plane) == "b"
    # Well inside the minute --replica-wait-ms would have made it wait for r2.
    assert first_ack - killed_at < 20, f"the first write after the kill was acknowledged {first_ack - killed_at:.1f} s after it"
    # b continued from r1 and took r2 out before acknowledging what r2 missed.
    assert all(in_sync(control_plane, s) == ["r1"] for s in range(SHARDS))

    procs.replica("r2", r2, [b_workers, a_workers], roles=("indexer",))
    assert wait_until(lambda: all_in_sync(control_plane, ["r1", "r2"]), timeout=60)
    producer.join(120)
    assert not producer.is_alive() and producer.error is None, producer.error
    assert wait_until(lambda: all(replica_state(endpoints, "r2")) and all(replica_state(endpoints, "r1")), timeout=30)
    lost = max(len(set(producer.acknowledged) - set(stored_ids(r, SHARDS))) for r in (r1, r2))
    assert_every_acknowledged_item_once([r1, r2], producer.acknowledged, endpoints)
    record_fault(record_property, "kill -9 of the active coordinator and an indexer replica during a publish",
                 first_ack - killed_at, answered_at - killed_at, producer.resent, lost)


class Blackhole:
    """A TCP relay in front of one etcd member that can be cut: from then on
    it forwards nothing either way and answers no new connection, as a
    blackhole route would (the connections stay open, silent)."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.cut_off = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.cut_off.is_set():
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
            except OSError:
                client.close()
                continue
            self.sockets.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if self.cut_off.is_set():
                    continue  # swallowed: nothing reaches the other side
                sink.sendall(data)
            if not self.cut_off.is_set():
                sink.shutdown(socket.SHUT_WR)  # etcd's HTTP/1.0 answers end with the connection
        except OSError:
            pass

    def cut(self):
        self.cut_off.set()

    def close(self):
        self.server.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


def test_the_active_coordinator_cut_off_from_etcd_only_stops_serving_and_a_standby_takes_over(procs, tmp_path, record_property):
    """The active coordinator loses etcd (every member blackholed, for it
    alone) while its clients and workers still reach it: it stops serving
    once its lease's time has passed (exit status 3, deposed), the standby
    takes over, and the invariant holds."""
    etcd = EtcdCluster(tmp_path)
    relays = [Blackhole(client) for _, client, _ in etcd.members]
    try:
        through_relays = "etcd://" + ",".join(f"127.0.0.1:{r.port}" for r in relays)
        a_clients, a_workers = procs.coordinator("a", through_relays)
        assert wait_until(lambda: active_id(etcd.endpoint) == "a", timeout=15)
        b_clients, b_workers = procs.coordinator("b", etcd.endpoint)
        endpoints = [a_clients, b_clients]
        r1, r2 = tmp_path / "r1", tmp_path / "r2"
        procs.replica("r1", r1, [b_workers, a_workers])
        procs.replica("r2", r2, [b_workers, a_workers])
        assert wait_until(lambda: all_in_sync(etcd.endpoint, ["r1", "r2"]), timeout=30)
        # Publishing until stopped: a fixed count could all be acknowledged
        # by `a` in the lease's time it still serves, leaving none for `b`.
        producer = Producer(endpoints, batches=100_000, prefix="cut")
        producer.start()
        assert wait_until(lambda: len(producer.acks) >= 8 or producer.error, timeout=60)
        assert producer.error is None, producer.error
        for r in relays:
            r.cut()
        cut_at = time.monotonic()
        answered_at = None
        while answered_at is None and time.monotonic() - cut_at < 60:
            try:
                found([b_clients], follow=False)  # the standby, once it serves
                answered_at = time.monotonic()
            except (LimelightError, LimelightTimeout, AssertionError):
                time.sleep(0.05)
        assert answered_at is not None, "no query was answered whole within a minute of the cut"
        a = procs.running["a"]
        assert a.wait(30) == 3, "the coordinator cut off from etcd did not stop as deposed"
        stopped_at = time.monotonic()
        procs.running.pop("a")
        assert "deposed" in (tmp_path / "coordinator-a.log").read_text()
        assert active_id(etcd.endpoint) == "b"
        assert wait_until(lambda: b_clients in producer.acked_by or producer.error, timeout=60), "the standby acknowledged no write"
        producer.stop()
        producer.join(120)
        assert not producer.is_alive() and producer.error is None, producer.error
        first_ack = min(t for (s, t), by in zip(producer.acks, producer.acked_by) if by == b_clients)
        with Client(b_clients, timeout=5) as c:
            assert c.ping()["epoch"] == 2
        assert wait_until(lambda: all(replica_state(endpoints, "r1")) and all(replica_state(endpoints, "r2")), timeout=30)
        lost = max(len(set(producer.acknowledged) - set(stored_ids(r, SHARDS))) for r in (r1, r2))
        assert_every_acknowledged_item_once([r1, r2], producer.acknowledged, endpoints)
        print(f"cut off from etcd: exited deposed {stopped_at - cut_at:.2f} s after")
        record_fault(record_property, "the active coordinator cut off from etcd only", first_ack - cut_at,
                     answered_at - cut_at, producer.resent, lost)
    finally:
        procs.stop()
        for r in relays:
            r.close()
        etcd.stop()
