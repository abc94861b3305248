"""Standby coordinators and fencing (issue 34, point 2), with real processes:
a 3-member etcd cluster, two coordinators electing the active one through it,
and workers that know both.

- A standby answers `not_active`, naming the active coordinator.
- kill -9 of the active coordinator during a publish: the standby takes over
  with the next epoch, the workers move to it, the producer resends what was
  not acknowledged, and every acknowledged item is in the shard files exactly
  once (read with SQLite itself).
- An indexer refuses a change of an epoch below its shard's (`stale_epoch`),
  counts the refusal, and keeps the epoch in the shard file.
"""

import collections
import json
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import zmq

from etcd_cluster import EtcdCluster
from harness import Client, FakeWorker, ProcessSet, bin_dir, free_port, record_fault, require_binaries, stored_ids, wait_until
from limelight_client import LimelightError, LimelightTimeout, secured_key
from test_fake_coordinator import FakeCoordinator

SHARDS = 2


@pytest.fixture
def etcd(tmp_path):
    cluster = EtcdCluster(tmp_path)
    yield cluster
    cluster.stop()


class Processes(ProcessSet):
    def __init__(self, tmp):
        super().__init__(tmp)
        self.endpoints = {}
        self.http = {}

    def coordinator(self, name, control_plane, *extra):
        """Starts a coordinator; its HTTP endpoint only when `extra` names one
        (`--stats-listen`), its URL then in `http[name]`."""
        log = open(self.tmp / f"coordinator-{name}.log", "a")
        stats = () if "--stats-listen" in extra else ("--no-stats",)
        p = subprocess.Popen([str(bin_dir() / "limelight-coordinator"), "--listen", "tcp://127.0.0.1:0",
                              "--workers", "tcp://127.0.0.1:0", *stats, "--shards", str(SHARDS),
                              "--heartbeat-ms", "200", "--liveness-ms", "2000",
                              "--control-plane", control_plane, "--coordinator-id", name, "--lease-seconds", "2", *extra],
                             stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        line = p.stdout.readline().split()
        assert line and line[0] == "listening", (self.tmp / f"coordinator-{name}.log").read_text()
        self.running[name] = p
        self.endpoints[name] = (line[1], line[2])
        self.http[name] = line[3]
        return line[1], line[2]

    def worker(self, name, role, data, coordinators):
        log = open(self.tmp / f"{name}.log", "a")
        executable = "limelight-indexer" if role == "indexer" else "limelight-query"
        self.running[name] = subprocess.Popen([str(bin_dir() / executable), "--coordinator", ",".join(coordinators),
                                               "--data", str(data), "--shards", ",".join(map(str, range(SHARDS))),
                                               "--id", name], stdout=log, stderr=log)
        log.close()


@pytest.fixture
def procs(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    p = Processes(tmp_path)
    yield p
    p.stop()


def status(control_plane):
    r = subprocess.run([str(bin_dir() / "limelight"), "control-plane", "status", "--control-plane", control_plane],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def active_id(control_plane):
    return (status(control_plane)["active"] or {}).get("id")


def ping_error(endpoint):
    with Client(endpoint, timeout=5) as c:
        with pytest.raises(LimelightError) as e:
            c.ping()
    return e.value


@pytest.fixture(params=["etcd", "file"])
def control_plane(request, tmp_path):
    """Either backend: a 3-member etcd cluster, or a local file (coordinators on one host)."""
    if request.param == "file":
        yield f"file://{tmp_path}/control-plane.json"
        return
    cluster = EtcdCluster(tmp_path)
    yield cluster.endpoint
    cluster.stop()


def test_a_standby_answers_not_active_naming_the_active_one(control_plane, procs):
    a_clients, _ = procs.coordinator("a", control_plane)
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    b_clients, _ = procs.coordinator("b", control_plane, "--stats-listen", "127.0.0.1:0")
    time.sleep(1)
    assert active_id(control_plane) == "a"
    refused = ping_error(b_clients)
    assert refused.code == "not_active"
    assert refused.active == a_clients, refused.message
    assert "a (epoch 1)" in refused.message
    # Its REST API answers 503 (Algolia's clients try their next host on it),
    # a search as well as a write.
    for path, body in (("/1/indexes/products/query", {"params": "query=x"}), ("/1/indexes/products/batch", {"requests": [{"action": "addObject", "body": {"objectID": "1", "title": "x"}}]})):
        base = urllib.parse.urlsplit(procs.http["b"])
        request = urllib.request.Request(f"{base.scheme}://{base.netloc}{path}", data=json.dumps(body).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=10)
        assert e.value.code == 503, (path, e.value.code)
        assert "a (epoch 1)" in json.load(e.value)["message"], path
    with Client(a_clients, timeout=5) as c:
        assert c.ping()["epoch"] == 1
    # The command line given the standby alone follows it to the active one,
    # and given a dead endpoint first passes it over.
    dead = f"tcp://127.0.0.1:{free_port()}"
    for endpoints in (b_clients, f"{dead},{b_clients}"):
        r = subprocess.run([str(bin_dir() / "limelight"), "stats", "--endpoint", endpoints, "--timeout", "1"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
    # So does the Python client.
    with Client.connect_active([dead, b_clients], timeout=1) as c:
        assert c.endpoint == a_clients and c.ping()["epoch"] == 1
    # The active one stops cleanly: it resigns, and the standby takes over at once.
    p = procs.running.pop("a")
    p.terminate()
    assert p.wait(10) == 0
    assert wait_until(lambda: active_id(control_plane) == "b", timeout=10)
    with Client(b_clients, timeout=5) as c:
        assert wait_until(lambda: c.ping().get("epoch") == 2, timeout=5)
    assert status(control_plane)["epoch"] == 2


def test_a_coordinator_started_with_another_shard_count_does_not_serve(tmp_path, procs):
    """The shard count is the cluster's, kept in the control plane: a second
    coordinator with another --shards exits 2 naming both counts."""
    control_plane = f"file://{tmp_path}/control-plane.json"
    procs.coordinator("a", control_plane)
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    r = subprocess.run([str(bin_dir() / "limelight-coordinator"), "--listen", "tcp://127.0.0.1:0", "--workers", "tcp://127.0.0.1:0",
                        "--no-stats", "--shards", "8", "--control-plane", control_plane], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert f"{SHARDS} shards" in r.stderr and "--shards 8" in r.stderr, r.stderr
    listed = subprocess.run([str(bin_dir() / "limelight"), "control-plane", "get", "shards/map", "--control-plane", control_plane],
                            capture_output=True, text=True, timeout=30)
    shard_map = json.loads(listed.stdout)
    assert (shard_map["shards"], shard_map["slots"]) == (SHARDS, SHARDS * 1024)


def items(batch, n=25):
    return [{"uniqueIdentifier": f"fo:{batch}:{i}", "domainIdentifier": f"test.failover.d{i % 7}",
             "attributes": {"title": f"failover {batch} {i}"}} for i in range(n)]


class Producer(threading.Thread):
    """Publishes numbered batches one after another, each until it is
    acknowledged whole, moving between coordinators on `not_active` or
    silence. Records each acknowledged batch with when its acknowledged
    attempt was sent and when the acknowledgement came, which coordinator
    gave it, and how many attempts had to be resent. `timeout`: how long a
    coordinator may stay silent; `pause`: the wait before resending a
    refused batch (test_insync.py uses it too). `stop()` ends it after the
    batch under way is acknowledged, for tests that keep traffic going
    until they are done (test_cluster_faults.py)."""

    def __init__(self, endpoints, batches, prefix="", timeout=3, pause=0.1):
        super().__init__(daemon=True)
        self.endpoints = list(endpoints)
        self.current = 0
        self.batches = batches
        self.prefix = prefix
        self.timeout = timeout
        self.pause = pause
        self.acknowledged = []
        self.acks = []  # (sent_at, acked_at)
        self.acked_by = []  # the endpoint of each acknowledgement
        self.resent = 0
        self.error = None
        self.stopping = threading.Event()

    @property
    def acked_at(self):
        return [a for _, a in self.acks]

    def stop(self):
        self.stopping.set()

    def run(self):
        try:
            for b in range(self.batches):
                if self.stopping.is_set():
                    break
                batch = items(f"{self.prefix}{b}")
                while True:
                    sent_at = time.monotonic()
                    try:
                        with Client(self.endpoints[self.current], timeout=self.timeout) as c:
                            ack = c.publish(batch, timeout=self.timeout)
                        if ack["stored"] == len(batch):
                            self.acknowledged += [i["uniqueIdentifier"] for i in batch]
                            self.acks.append((sent_at, time.monotonic()))
                            self.acked_by.append(self.endpoints[self.current])
                            break
                        # A new coordinator before its indexers registered: the
                        # items are refused as a shard's unavailable, and resent
                        # (as the producers' resend does).
                        codes = {r["error"]["code"] for r in ack["results"] if r["status"] == "rejected"}
                        assert codes == {"shard_unavailable"}, ack
                        time.sleep(self.pause)
                    except LimelightError as e:
                        assert e.code in ("not_active", "shard_unavailable"), (e.code, e.message)
                        if e.code == "not_active" and e.active in self.endpoints:
                            self.current = self.endpoints.index(e.active)
                        elif e.code == "not_active":
                            self.current = (self.current + 1) % len(self.endpoints)
                        time.sleep(self.pause)
                    except (LimelightTimeout, TimeoutError, zmq.ZMQError):
                        self.current = (self.current + 1) % len(self.endpoints)
                    self.resent += 1
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


def shard_epochs(data):
    epochs = []
    for shard in range(SHARDS):
        with sqlite3.connect(f"file:{data}/shard-{shard}.sqlite?mode=ro", uri=True) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'coordinator.epoch'").fetchone()
            epochs.append(int(row[0]) if row else 0)
    return epochs


def test_kill_9_of_the_active_coordinator_during_a_publish_loses_nothing(etcd, procs, tmp_path, record_property):
    a_clients, a_workers = procs.coordinator("a", etcd.endpoint)
    assert wait_until(lambda: active_id(etcd.endpoint) == "a", timeout=15)
    b_clients, b_workers = procs.coordinator("b", etcd.endpoint)
    data = tmp_path / "replica"
    # The workers know both coordinators, the standby first: it sends them to the active one.
    procs.worker("ix", "indexer", data, [b_workers, a_workers])
    procs.worker("q", "query", data, [b_workers, a_workers])
    with Client(a_clients, timeout=5) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)

    producer = Producer([a_clients, b_clients], batches=60)
    producer.start()
    assert wait_until(lambda: len(producer.acknowledged) >= 10 * 25 or producer.error, timeout=60)
    assert producer.error is None, producer.error
    # A publish is in flight now (the producer sends the next batch at once).
    procs.kill("a")
    killed_at = time.monotonic()
    # Meanwhile a reader asks until a query is answered whole again.
    answered_at = None
    while answered_at is None and time.monotonic() - killed_at < 60:
        try:
            with Client.connect_active([a_clients, b_clients], timeout=1) as c:
                events = list(c.query('title == "failover*"', fetch=[], deadline_ms=2000))
            kind, completion = events[-1]
            if kind == "completion" and not completion.get("failedShards"):
                answered_at = time.monotonic()
        except (LimelightError, LimelightTimeout):
            time.sleep(0.05)
    assert answered_at is not None, "no query was answered whole within a minute of the kill"
    producer.join(120)
    assert not producer.is_alive(), f"the producer is still at batch {len(producer.acknowledged) // 25}"
    assert producer.error is None, producer.error

    assert active_id(etcd.endpoint) == "b"
    with Client(b_clients, timeout=5) as c:
        assert c.ping()["epoch"] == 2
    first_after = min(t for t in producer.acked_at if t > killed_at)

    # Every acknowledged item is in the shard files exactly once.
    def settled():
        counts = collections.Counter(stored_ids(data, SHARDS))
        return all(counts[u] == 1 for u in producer.acknowledged)
    assert len(producer.acknowledged) == 60 * 25
    assert wait_until(settled, timeout=10)
    counts = collections.Counter(stored_ids(data, SHARDS))
    record_fault(record_property, "kill -9 of the active coordinator during a publish (one replica)", first_after - killed_at,
                 answered_at - killed_at, producer.resent, len(set(producer.acknowledged) - set(counts)))
    assert sorted(counts) == sorted(set(producer.acknowledged))
    assert set(counts.values()) == {1}
    # Both shards took changes of the new epoch, recorded in their files.
    assert shard_epochs(data) == [2, 2]


def test_the_etcd_leader_killed_during_a_publish_loses_nothing(etcd, procs, tmp_path, record_property):
    """The control plane's own leader dies while items are published: the
    coordinators' calls move to the other members; the active coordinator
    keeps its lease or, if a renewal came too late, the standby takes over.
    Either way every acknowledged item is stored once."""
    # The coordinators talk to the leader first: its death is theirs to get over.
    leader = etcd.leader()
    control_plane = etcd.endpoint_first(leader)
    a_clients, a_workers = procs.coordinator("a", control_plane)
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    b_clients, b_workers = procs.coordinator("b", control_plane)
    data = tmp_path / "replica"
    procs.worker("ix", "indexer", data, [a_workers, b_workers])
    procs.worker("q", "query", data, [a_workers, b_workers])
    with Client(a_clients, timeout=5) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
    producer = Producer([a_clients, b_clients], batches=60)
    producer.start()
    assert wait_until(lambda: len(producer.acknowledged) >= 10 * 25 or producer.error, timeout=60)
    assert etcd.leader() == leader
    etcd.kill(leader)
    producer.join(120)
    assert not producer.is_alive() and producer.error is None, producer.error
    assert etcd.wait_for_leader() != leader
    active = active_id(control_plane)
    assert active in ("a", "b")
    print(f"etcd leader killed: coordinator {active} active after")
    counts = collections.Counter(stored_ids(data, SHARDS))
    record_fault(record_property, "the etcd leader killed during a publish", None, None, producer.resent,
                 len(set(producer.acknowledged) - set(counts)))
    assert sorted(counts) == sorted(set(producer.acknowledged)) and len(producer.acknowledged) == 60 * 25
    assert set(counts.values()) == {1}


def test_limelight_publish_given_both_coordinators_moves_to_the_new_one(etcd, procs, tmp_path):
    """The command line's publish (the Swift client's resend) given both
    coordinators: the active one is killed mid-file, and every item is
    acknowledged all the same, and stored once."""
    a_clients, a_workers = procs.coordinator("a", etcd.endpoint)
    assert wait_until(lambda: active_id(etcd.endpoint) == "a", timeout=15)
    b_clients, b_workers = procs.coordinator("b", etcd.endpoint)
    data = tmp_path / "replica"
    procs.worker("ix", "indexer", data, [a_workers, b_workers])
    procs.worker("q", "query", data, [a_workers, b_workers])
    with Client(a_clients, timeout=5) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
    path = tmp_path / "items.jsonl"
    every = [item for b in range(200) for item in items(f"cli{b}")]
    path.write_text("".join(json.dumps(i) + "\n" for i in every))
    log = open(tmp_path / "publish.log", "w")
    publisher = subprocess.Popen([str(bin_dir() / "limelight"), "publish", str(path), "--endpoint", f"{b_clients},{a_clients}",
                                  "--batch-size", "25", "--window", "1", "--ack-timeout", "2", "--retry-for", "60", "--quiet"],
                                 stdout=log, stderr=log)
    log.close()
    assert wait_until(lambda: len(stored_ids(data, SHARDS)) >= 500 if data.exists() and (data / "shard-1.sqlite").exists() else False,
                      timeout=60)
    procs.kill("a")
    assert publisher.wait(120) == 0, (tmp_path / "publish.log").read_text()
    counts = collections.Counter(stored_ids(data, SHARDS))
    assert sorted(counts) == sorted(i["uniqueIdentifier"] for i in every)
    assert set(counts.values()) == {1}


def test_a_coordinator_paused_past_its_lease_stops_serving(etcd, procs, tmp_path):
    """A zombie: the active coordinator is stopped (SIGSTOP) past its lease,
    the standby takes over, and when the first resumes it serves nothing
    more — it answers `not_active` or has ended, deposed (exit status 3)."""
    a_clients, a_workers = procs.coordinator("a", etcd.endpoint)
    assert wait_until(lambda: active_id(etcd.endpoint) == "a", timeout=15)
    b_clients, b_workers = procs.coordinator("b", etcd.endpoint)
    data = tmp_path / "replica"
    procs.worker("ix", "indexer", data, [a_workers, b_workers])
    procs.worker("q", "query", data, [a_workers, b_workers])
    with Client(a_clients, timeout=5) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
        assert c.publish(items("before"))["stored"] == 25
    a = procs.running["a"]
    a.send_signal(signal.SIGSTOP)
    try:
        assert wait_until(lambda: active_id(etcd.endpoint) == "b", timeout=15)
        with Client(b_clients, timeout=5) as c:
            assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
            assert c.ping()["epoch"] == 2
            assert c.publish(items("after"))["stored"] == 25
    finally:
        a.send_signal(signal.SIGCONT)
    # Resumed, it must not serve: each request is refused until it ends.
    with Client(a_clients, timeout=2) as c:
        try:
            c.ping()
            raise AssertionError("the deposed coordinator answered a ping")
        except LimelightError as e:
            assert e.code == "not_active", e.message
        except LimelightTimeout:
            pass  # it has ended already
    assert a.wait(15) == 3
    procs.running.pop("a")
    assert "deposed" in (tmp_path / "coordinator-a.log").read_text()
    assert shard_epochs(data) == [2, 2]


def test_a_coordinator_whose_lease_lapsed_acknowledges_nothing(etcd, procs, tmp_path):
    """A write in flight when the active coordinator is paused past its
    lease: its indexer's answer reaches the coordinator only once it resumes,
    deposed. It must not report the item stored (its successor may number
    changes of the shard already); the producer gets `not_active` (or
    nothing, if the process ends first), and resends."""
    secret = tmp_path / "cluster.secret"
    a_clients, a_workers = procs.coordinator("a", etcd.endpoint, "--cluster-secret-file", str(secret))
    assert wait_until(lambda: active_id(etcd.endpoint) == "a", timeout=15)
    procs.coordinator("b", etcd.endpoint, "--cluster-secret-file", str(secret))
    release = threading.Event()

    def hold_writes(message):
        if message["type"] != "write":
            return []
        release.wait(60)
        return [("write_ack", {"shard": message["shard"], "results": [
            {"index": i, "uniqueIdentifier": item["uniqueIdentifier"], "status": "stored"}
            for i, item in enumerate(message["items"])]})]

    indexer = FakeWorker(a_workers, "fake-ix", "indexer", list(range(SHARDS)), handler=hold_writes, secret_file=secret)
    indexer.start()
    try:
        assert indexer.registered.wait(10), (indexer.received, indexer.errors)
        answers = []

        def publish():
            try:
                with Client(a_clients, timeout=30) as c:
                    answers.append(c.request("publish", timeout=30, items=items("held", 1)))
            except (LimelightError, LimelightTimeout) as e:
                answers.append(e)

        producer = threading.Thread(target=publish, daemon=True)
        producer.start()
        indexer.wait_for("write")
        a = procs.running["a"]
        a.send_signal(signal.SIGSTOP)
        try:
            assert wait_until(lambda: active_id(etcd.endpoint) == "b", timeout=15)
            release.set()  # the indexer's answer waits in the paused coordinator's socket
            time.sleep(0.5)
        finally:
            a.send_signal(signal.SIGCONT)
        producer.join(40)
        assert answers, "the producer got no answer at all"
        answer = answers[0]
        assert not isinstance(answer, dict), f"the deposed coordinator acknowledged the write: {answer}"
        assert isinstance(answer, LimelightTimeout) or answer.code == "not_active", answer
        assert a.wait(15) == 3
        procs.running.pop("a")
    finally:
        release.set()
        indexer.stop()


def test_a_coordinator_fenced_off_by_an_indexer_stops_at_once(tmp_path, procs):
    """An indexer whose shards have taken changes of a later epoch than the
    coordinator's refuses its write (`stale_epoch`): the coordinator learns
    that a successor leads, reports nothing stored, and ends (exit 3) without
    waiting for its lease to run out."""
    data = tmp_path / "replica"
    control_plane = f"file://{tmp_path}/control-plane.json"
    # Shard files that a coordinator of epoch 5 has written to.
    procs.coordinator("seed", f"file://{tmp_path}/other.json")
    procs.worker("ix", "indexer", data, [procs.endpoints["seed"][1]])
    def opened():
        try:
            for shard in range(SHARDS):
                with sqlite3.connect(f"file:{data}/shard-{shard}.sqlite?mode=ro", uri=True) as db:
                    db.execute("SELECT count(*) FROM meta").fetchone()
            return True
        except sqlite3.Error:
            return False
    assert wait_until(opened, timeout=15)
    procs.stop()
    for shard in range(SHARDS):
        with sqlite3.connect(data / f"shard-{shard}.sqlite") as db:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('coordinator.epoch', '5')")
    a_clients, a_workers = procs.coordinator("a", control_plane, "--lease-seconds", "30")
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    procs.worker("ix", "indexer", data, [a_workers])
    procs.worker("q", "query", data, [a_workers])
    with Client(a_clients, timeout=10) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
        # Fenced off by the first refusal, it withholds even the rejection's answer.
        with pytest.raises(LimelightError) as refused:
            c.publish(items("fenced"))
    assert refused.value.code == "not_active" and "epoch 5" in refused.value.message, refused.value.message
    started = time.monotonic()
    assert procs.running["a"].wait(10) == 3
    # Its election loop pauses a third of the lease (10 s) between renewals:
    # the fence wakes it, so the end does not wait for the next renewal either.
    assert time.monotonic() - started < 3, "it waited for its election loop's next turn or its 30 s lease"
    procs.running.pop("a")
    log = (tmp_path / "coordinator-a.log").read_text()
    assert "fenced off" in log and "deposed" in log
    assert collections.Counter(stored_ids(data, SHARDS)) == collections.Counter()


def algolia_secured_key(parent, params):
    """Algolia's secured key: signed with the search key itself."""
    import base64
    import hashlib
    import hmac
    return base64.b64encode((hmac.new(parent.encode(), params.encode(), hashlib.sha256).hexdigest() + params).encode()).decode()


def test_api_keys_outlive_the_coordinator_they_were_made_through(tmp_path, procs):
    """The cluster's API keys live in the control plane, their secrets sealed
    with a key derived from the cluster secret: a key made through one
    coordinator admits its holder through its successor, and so do the
    secured keys made from it (Limelight's and Algolia's); a key revoked
    through the successor is refused by the one after it. Each coordinator
    also writes there the keys only it had (its `--master-key-file`)."""
    control_plane = f"file://{tmp_path}/control-plane.json"

    def keyed(name):
        return ("--keys", str(tmp_path / f"keys-{name}.sqlite"), "--require-keys",
                "--master-key-file", str(tmp_path / f"master-{name}"), "--lease-seconds", "3")

    a_clients, a_workers = procs.coordinator("a", control_plane, *keyed("a"))
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    b_clients, b_workers = procs.coordinator("b", control_plane, *keyed("b"))
    # A third, with an empty key store of its own and no master key file.
    c_clients, c_workers = procs.coordinator("c", control_plane, "--keys", str(tmp_path / "keys-c.sqlite"), "--require-keys",
                                             "--lease-seconds", "3")
    data = tmp_path / "replica"
    procs.worker("ix", "indexer", data, [a_workers, b_workers, c_workers])
    procs.worker("q", "query", data, [a_workers, b_workers, c_workers])
    master_a = (tmp_path / "master-a").read_text().strip()
    master_b = (tmp_path / "master-b").read_text().strip()
    with Client(a_clients, timeout=10, key=master_a) as boss:
        admin = boss.keys("create", app="shop", role="admin")["apiKey"]
        search = boss.keys("create", app="shop", role="search")["apiKey"]
    with Client(a_clients, timeout=10, key=admin) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
        assert c.publish(items("keys", 10))["stored"] == 10
    secured = secured_key(search, user_token="alice")
    algolia = algolia_secured_key(search, "userToken=alice")

    def found(endpoint, key):
        with Client(endpoint, timeout=10, key=key) as c:
            return c.search({"query": "failover", "hitsPerPage": 0})["nbHits"]

    assert found(a_clients, search) == found(a_clients, secured) == found(a_clients, algolia) == 10
    # The standbys read the keys too (every 2 s): killed now, the active leaves nothing it alone knew.
    # c waits, stopped, so that b is the one to take over.
    procs.running["c"].send_signal(signal.SIGSTOP)
    procs.running["a"].kill()
    procs.running.pop("a").wait(10)
    assert wait_until(lambda: active_id(control_plane) == "b", timeout=20)
    procs.running["c"].send_signal(signal.SIGCONT)
    assert wait_until(lambda: ping_ok(b_clients), timeout=20)
    for key in (search, secured, algolia):
        assert wait_until(lambda: found(b_clients, key) == 10, timeout=20), key
    with Client(b_clients, timeout=10, key=admin) as c:
        assert c.publish(items("keys-b", 5))["stored"] == 5
    # The key a's master key made is revoked through b, with a's master key, which b has read.
    with Client(b_clients, timeout=10, key=master_a) as boss:
        listed = {k["id"]: k for k in boss.keys("list")["keys"]}
        assert len(listed) == 4  # two master keys, the admin and the search key
        revoked = boss.keys("revoke", target=search)["keys"][0]
        assert revoked["revoked"] is not None
    with Client(b_clients, timeout=10, key=search) as c:
        assert code_of(lambda: c.search({"query": ""})) == "key_revoked"
    # c, which made no key and was given none, takes over and knows them all.
    procs.running["b"].kill()
    procs.running.pop("b").wait(10)
    assert wait_until(lambda: active_id(control_plane) == "c", timeout=20)
    assert wait_until(lambda: ping_ok(c_clients), timeout=20)
    for key in (secured, algolia, search):
        with Client(c_clients, timeout=10, key=key) as c:
            assert code_of(lambda: c.search({"query": ""})) in ("key_revoked", "invalid_key"), key
    with Client(c_clients, timeout=10, key=master_b) as boss:
        assert boss.keys("list")["keys"] and len(boss.keys("list")["keys"]) == 4
    with Client(c_clients, timeout=10, key=admin) as c:
        assert wait_until(lambda: found(c_clients, admin) == 15, timeout=20)
    # Nothing of a key's secrets is in the control plane in the clear.
    text = (tmp_path / "control-plane.json").read_text()
    assert search not in text and admin not in text and master_a not in text


def ping_ok(endpoint):
    try:
        with Client(endpoint, timeout=3) as c:
            c.ping()
        return True
    except (LimelightError, LimelightTimeout):
        return False


def code_of(call):
    with pytest.raises(LimelightError) as e:
        call()
    return e.value.code


def test_a_predecessors_refused_change_does_not_fence_off_its_successor(tmp_path, procs):
    """An indexer that moved to a new coordinator while a change of the old
    one was still queued refuses that change (`stale_epoch`) and reports the
    refusal to the coordinator it now follows, naming the epoch its shard
    follows: that coordinator's own. It is not a successor's sign, and the
    coordinator keeps serving; a refusal naming a later epoch than its own
    ends it."""
    secret = tmp_path / "cluster.secret"
    control_plane = f"file://{tmp_path}/control-plane.json"
    a_clients, a_workers = procs.coordinator("a", control_plane, "--lease-seconds", "30", "--cluster-secret-file", str(secret))
    assert wait_until(lambda: active_id(control_plane) == "a", timeout=15)
    epoch = status(control_plane)["active"]["epoch"]
    refuse = {"epoch": None}

    def refusals(message):
        if message["type"] == "registered":
            assert message["epoch"] == epoch, message
            refuse["epoch"] = epoch
        if message["type"] not in ("registered", "heartbeat") or refuse["epoch"] is None:
            return []
        refused, refuse["epoch"] = refuse["epoch"], None
        return [("error", {"code": "stale_epoch", "epoch": refused,
                           "message": f"shard 0 follows coordinator epoch {refused}; this change of epoch {epoch - 1} "
                                      "comes from a coordinator that no longer leads"})]

    indexer = FakeWorker(a_workers, "fake-ix", "indexer", list(range(SHARDS)), handler=refusals, secret_file=secret)
    indexer.start()
    try:
        assert indexer.registered.wait(10), (indexer.received, indexer.errors)
        assert wait_until(lambda: "reported an error" in (tmp_path / "coordinator-a.log").read_text(), timeout=10)
        with Client(a_clients, timeout=5) as c:
            c.ping()  # answered, not `not_active`
        assert procs.running["a"].poll() is None, "a predecessor's refused change deposed the coordinator"
        refuse["epoch"] = epoch + 1
        assert procs.running["a"].wait(10) == 3
        procs.running.pop("a")
        assert "fenced off" in (tmp_path / "coordinator-a.log").read_text()
        assert not indexer.errors, indexer.errors
    finally:
        indexer.stop()


def test_an_indexer_refuses_a_deposed_coordinators_change(tmp_path):
    require_binaries("limelight-indexer")
    coordinator = FakeCoordinator()
    data = tmp_path / "fenced"
    log = open(tmp_path / "indexer.log", "w")
    p = subprocess.Popen([str(bin_dir() / "limelight-indexer"), "--coordinator", coordinator.endpoint, "--data", str(data),
                          "--shards", "0", "--id", "ix"], stdout=log, stderr=log)
    log.close()
    try:
        register = coordinator.expect("ix", "register")
        coordinator.send("ix", "registered", register["id"], shardCount=1, heartbeatMs=200)

        def write(mid, seq, epoch, uid):
            return coordinator.request("ix", "write", mid, {"write_ack", "error"}, shard=0, sequence=seq, epoch=epoch,
                                       items=[{"uniqueIdentifier": uid, "domainIdentifier": "test.fence",
                                               "attributes": {"title": uid}}], evict=[])

        assert write("w1", 1, 1, "one")["type"] == "write_ack"
        assert write("w2", 2, 2, "two")["type"] == "write_ack"
        # The deposed coordinator (epoch 1) sends its next change: refused, whatever its number.
        refused = write("w3", 3, 1, "zombie")
        assert refused["type"] == "error" and refused["code"] == "stale_epoch", refused
        assert "epoch 2" in refused["message"] and "epoch 1" in refused["message"]
        assert refused["epoch"] == 2, refused
        # The next change of epoch 2 still comes next.
        assert write("w4", 3, 2, "three")["type"] == "write_ack"
        # Heartbeats count the refusal.
        deadline = time.monotonic() + 10
        while True:
            beat = coordinator.expect("ix", "heartbeat")
            if (beat.get("status") or {}).get("staleEpochRefusals") == 1 or time.monotonic() > deadline:
                break
        assert beat["status"]["staleEpochRefusals"] == 1
        with sqlite3.connect(f"file:{data}/shard-0.sqlite?mode=ro", uri=True) as db:
            assert sorted(r[0] for r in db.execute("SELECT uid FROM items")) == ["one", "three", "two"]
            meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('sequence', 'coordinator.epoch')"))
        assert meta == {"sequence": "3", "coordinator.epoch": "2"}
    finally:
        p.terminate()
        p.wait(10)
        coordinator.close()
