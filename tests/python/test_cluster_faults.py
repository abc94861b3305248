"""A cluster of many hosts, tested as one (issue 34, point 5): faults of the
active coordinator under traffic, on network-namespace hosts
(tests/python/hosts.py).

Hosts (2 shards)::

    e1, e2, e3   a member each of a real 3-member etcd cluster
    ca, cb       a coordinator each (lease 2 s); ca is made active first
    r1, r2       a replica each of both shards: an indexer and a query
                 worker on the host's own folder, knowing both coordinators
    the test     a producer publishing batches of 25 items one after
                 another, resending each until it is acknowledged whole
                 (test_failover.Producer), and a querier asking for every
                 item, over and over, following `not_active`

Faults:

- a zombie: ca stopped (SIGSTOP) past its lease, cb takes over, a client
  sends ca a publish while it is stopped, then ca is continued: it must
  acknowledge nothing and answer nothing (`not_active`, then exit 3);
- ca cut off from everything: blackhole routes on its host to every other
  host and on every host to it; cb takes over; the routes are healed; ca
  must not serve or acknowledge;
- ca cut off from everything but etcd: it keeps its lease, loses every
  worker, and steps down once it has had none for
  `--step-down-without-workers-ms` (its default); cb takes over.

Then the invariant: every acknowledged item is on both replicas exactly
once (read from the SQLite files) and in query answers, nothing else is
stored (the zombie's publish nowhere), each shard file took changes of epoch
2, and every query answered whole held every item acknowledged before it
was sent. Figures (record_property, printed; scripts/test-cluster sums
them): time from the fault to the first acknowledged write and to the first
query answered whole, batches resent, stale-epoch refusals the indexers
counted.
"""

import signal
import threading
import time

import pytest
import zmq

from etcd_cluster import EtcdCluster
from harness import Client, bin_dir, record_fault, require_binaries, stored_ids, wait_until
from hosts import Network, Processes, tear_down
from limelight_client import LimelightError, LimelightTimeout
from test_failover import SHARDS, active_id, items, shard_epochs
from test_insync import Producer, all_in_sync, assert_every_acknowledged_item_once, replica_state

HOSTS = ("e1", "e2", "e3", "ca", "cb", "r1", "r2")
REPLICAS = ("r1", "r2")
#: Generous but bounded: the machine may be shared with builds.
SETTLE_S = 60


class Cluster:
    """The processes on the hosts, started by name."""

    def __init__(self, network, processes, etcd, folder):
        self.network, self.processes, self.etcd, self.folder = network, processes, etcd, folder
        self.secret = folder / "cluster.secret"
        self.clients, self.workers = {}, {}
        self.data = {name: folder / f"data-{name}" for name in REPLICAS}

    @property
    def control_plane(self):
        return self.etcd.endpoint

    def coordinator(self, name):
        address = self.network.hosts[name].address
        self.processes.start(name, self.network.command(name, [
            str(bin_dir() / "limelight-coordinator"), "--listen", f"tcp://{address}:0", "--workers", f"tcp://{address}:0",
            "--no-stats", "--shards", str(SHARDS), "--heartbeat-ms", "200", "--liveness-ms", "2000",
            "--control-plane", self.control_plane, "--coordinator-id", name, "--lease-seconds", "2",
            "--replicas", str(len(REPLICAS)), "--cluster-secret-file", str(self.secret)]))
        _, self.clients[name], self.workers[name] = self.processes.wait_for_line(name, "listening ").split()[:3]

    def replica(self, name):
        coordinators = ",".join(self.workers[c] for c in ("cb", "ca"))  # the standby first: it names the active one
        for role, short in (("indexer", "ix"), ("query", "q")):
            self.processes.start(f"{short}-{name}", self.network.command(name, [
                str(bin_dir() / f"limelight-{role}"), "--coordinator", coordinators, "--data", str(self.data[name]),
                "--shards", ",".join(map(str, range(SHARDS))), "--id", f"{short}-{name}", "--replica", name,
                "--cluster-secret-file", str(self.secret)]))

    @property
    def endpoints(self):
        return [self.clients["ca"], self.clients["cb"]]


@pytest.fixture
def cluster(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    network = Network.make(HOSTS, loopback_allowed=False)
    print(f"\n{network.describe()}")
    processes = Processes(tmp_path)
    etcd = None
    try:
        etcd = EtcdCluster(tmp_path, network=network, hosts=["e1", "e2", "e3"])
        c = Cluster(network, processes, etcd, tmp_path)
        c.coordinator("ca")
        assert wait_until(lambda: active_id(c.control_plane) == "ca", timeout=SETTLE_S), processes.logs()
        c.coordinator("cb")
        for name in REPLICAS:
            c.replica(name)
        assert wait_until(lambda: all_in_sync(c.control_plane, list(REPLICAS)), timeout=SETTLE_S), processes.logs()
        yield c
    finally:
        tear_down(processes, etcd, network)


class Querier(threading.Thread):
    """Asks the active coordinator for every item, over and over, until
    stopped. Records each query answered whole (when it was sent and
    answered, by which coordinator) and each that lacked an item
    acknowledged before it was sent, or named one twice."""

    def __init__(self, endpoints, producer):
        super().__init__(daemon=True)
        self.endpoints, self.producer = endpoints, producer
        self.answers = []  # (sent_at, answered_at, endpoint)
        self.wrong = []  # (endpoint, missing identifiers, duplicates)
        self.stopping = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stopping.is_set():
                acknowledged = set(self.producer.acknowledged)
                sent_at = time.monotonic()
                try:
                    with Client.connect_active(self.endpoints, timeout=1) as c:
                        events = list(c.query('title == "failover*"', fetch=[], deadline_ms=3000))
                        endpoint = c.endpoint
                except (LimelightError, LimelightTimeout, TimeoutError, zmq.ZMQError):
                    time.sleep(0.05)
                    continue
                kind, completion = events[-1]
                if kind != "completion" or completion.get("failedShards") or completion.get("cancelled"):
                    time.sleep(0.05)
                    continue
                found = [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]
                self.answers.append((sent_at, time.monotonic(), endpoint))
                missing = acknowledged - set(found)
                if missing or len(found) != len(set(found)):
                    self.wrong.append((endpoint, sorted(missing)[:5], len(found) - len(set(found))))
                time.sleep(0.1)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def stop(self):
        self.stopping.set()
        self.join(30)


def start_traffic(cluster, prefix):
    producer = Producer(cluster.endpoints, batches=100_000, prefix=prefix)
    producer.start()
    querier = Querier(cluster.endpoints, producer)
    querier.start()
    assert wait_until(lambda: len(producer.acks) >= 8 or producer.error, timeout=SETTLE_S), cluster.processes.logs()
    assert producer.error is None, producer.error
    assert wait_until(lambda: querier.answers or querier.error, timeout=SETTLE_S), cluster.processes.logs()
    return producer, querier


def first_after(times, fault_at):
    later = [t for t in times if t > fault_at]
    return min(later) if later else None


def taken_over(cluster, producer, querier, fault_at):
    """Waits until cb leads and has acknowledged a write and answered a
    query whole since the fault; returns those two moments."""
    cb = cluster.clients["cb"]
    assert wait_until(lambda: active_id(cluster.control_plane) == "cb", timeout=SETTLE_S), cluster.processes.logs()

    def acked():
        return first_after([a for (_, a), by in zip(producer.acks, producer.acked_by) if by == cb], fault_at)

    def answered():
        return first_after([a for _, a, by in querier.answers if by == cb], fault_at)

    assert wait_until(lambda: acked() or producer.error, timeout=SETTLE_S), cluster.processes.logs()
    assert producer.error is None, producer.error
    assert wait_until(lambda: answered() or querier.error, timeout=SETTLE_S), cluster.processes.logs()
    assert querier.error is None, querier.error
    return acked(), answered()


def watch_exit(process):
    """A list that gets the moment `process` ends (from a thread waiting on it)."""
    ended = []

    def wait():
        process.wait()
        ended.append(time.monotonic())
    threading.Thread(target=wait, daemon=True).start()
    return ended


def publish_to(endpoint, prefix, answers):
    """A client that knows only `endpoint` publishes one batch: its answer
    (or the error) goes to `answers`."""
    try:
        with Client(endpoint, timeout=10) as c:
            answers.append(c.publish(items(prefix), timeout=10))
    except (LimelightError, LimelightTimeout, zmq.ZMQError) as e:
        answers.append(e)


def assert_not_serving(endpoint):
    """A ping is refused `not_active`, or unanswered (the process has ended);
    returns which."""
    try:
        with Client(endpoint, timeout=2) as c:
            c.ping()
        raise AssertionError(f"the deposed coordinator at {endpoint} answered a ping")
    except LimelightError as e:
        assert e.code == "not_active", e.message
        return "not_active"
    except LimelightTimeout:
        return "no answer"


def stale_epoch_refusals(cluster):
    """The stale-epoch refusals the indexers counted, from the active coordinator's stats."""
    with Client.connect_active(cluster.endpoints, timeout=5) as c:
        workers = c.stats()["workers"]
    return sum(w.get("staleEpochRefusals", 0) for w in workers if w["role"] == "indexer")


def finish(cluster, producer, querier, old, ended_at, zombie_prefix):
    """Stops the traffic and checks the invariant; returns (lost, refusals)."""
    time.sleep(2)  # traffic goes on after the old coordinator has ended
    producer.stop()
    producer.join(SETTLE_S * 2)
    querier.stop()
    assert not producer.is_alive(), f"the producer is still at batch {len(producer.acks)}"
    assert producer.error is None and querier.error is None, (producer.error, querier.error)
    # The old coordinator acknowledged nothing and answered no query once it was deposed.
    late_acks = [a for (_, a), by in zip(producer.acks, producer.acked_by) if by == cluster.clients[old] and a > ended_at]
    late_answers = [a for _, a, by in querier.answers if by == cluster.clients[old] and a > ended_at]
    assert not late_acks and not late_answers, (late_acks, late_answers)
    assert querier.wrong == [], f"answers missing acknowledged items, or with duplicates: {querier.wrong[:3]}"

    folders = [cluster.data[name] for name in REPLICAS]
    acknowledged = set(producer.acknowledged)
    lost = max(len(acknowledged - set(stored_ids(f, SHARDS))) for f in folders)
    assert wait_until(lambda: all_in_sync(cluster.control_plane, list(REPLICAS)), timeout=SETTLE_S)
    assert wait_until(lambda: all(all(replica_state(cluster.endpoints, r)) for r in REPLICAS), timeout=SETTLE_S)
    assert_every_acknowledged_item_once(folders, producer.acknowledged, cluster.endpoints)
    zombie = {i["uniqueIdentifier"] for i in items(zombie_prefix)}
    for f in folders:
        assert not zombie & set(stored_ids(f, SHARDS)), f"{f}: the deposed coordinator's publish was stored"
        assert shard_epochs(f) == [2] * SHARDS, f"{f}: shard epochs {shard_epochs(f)}"
    return lost, stale_epoch_refusals(cluster)


def finish_cut(cluster, producer, querier, record_property, fault, cut_at, first_ack, first_answer):
    """After ca was cut off: nothing it acknowledged after the cut reached the
    producer (its routes were gone), the invariant holds, and the figures are recorded."""
    late = [a for (_, a), by in zip(producer.acks, producer.acked_by) if by == cluster.clients["ca"] and a > cut_at + 0.5]
    assert not late, late
    lost, refusals = finish(cluster, producer, querier, "ca", cut_at + 0.5, "zombie")
    record_fault(record_property, fault, first_ack - cut_at, first_answer - cut_at, producer.resent, lost, refusals)


@pytest.mark.parametrize("resume", ["after_the_standby_served", "once_the_standby_leads"])
def test_a_zombie_coordinator_under_traffic_acknowledges_nothing(cluster, record_property, resume):
    """`after_the_standby_served`: ca is continued once cb has acknowledged a
    write and answered a query, every worker having moved to cb;
    `once_the_standby_leads`: as soon as etcd names cb, while workers may
    still be linked to ca and ca's writes from before the stop still on
    their way."""
    producer, querier = start_traffic(cluster, "zombie-traffic")
    ca = cluster.processes.running["ca"]
    ca_ended = watch_exit(ca)
    cluster.processes.signal("ca", signal.SIGSTOP)
    stopped_at = time.monotonic()
    stale = []
    try:
        if resume == "after_the_standby_served":
            first_ack, first_answer = taken_over(cluster, producer, querier, stopped_at)
        else:
            assert wait_until(lambda: active_id(cluster.control_plane) == "cb", timeout=SETTLE_S, interval=0.02)
        # A client that knows only ca publishes while it is stopped: the
        # request waits in ca's socket for it to resume.
        sender = threading.Thread(target=publish_to, args=(cluster.clients["ca"], "zombie", stale), daemon=True)
        sender.start()
        time.sleep(0.2)
    finally:
        resumed_at = time.monotonic()
        cluster.processes.signal("ca", signal.SIGCONT)
    if resume == "once_the_standby_leads":
        first_ack, first_answer = taken_over(cluster, producer, querier, stopped_at)
    pinged = assert_not_serving(cluster.clients["ca"])
    sender.join(30)
    assert stale and not isinstance(stale[0], dict), f"the zombie acknowledged a publish: {stale}"
    assert isinstance(stale[0], LimelightTimeout) or stale[0].code == "not_active", stale[0]
    assert ca.wait(30) == 3, "the zombie did not end as deposed"
    assert wait_until(lambda: ca_ended, timeout=5)
    assert "deposed" in (cluster.folder / "ca.log").read_text()
    lost, refusals = finish(cluster, producer, querier, "ca", resumed_at, "zombie")
    record_fault(record_property, f"zombie coordinator (SIGSTOP past its lease, SIGCONT {resume.replace('_', ' ')})",
                 first_ack - stopped_at, first_answer - stopped_at, producer.resent, lost, refusals)
    print(f"stopped {resumed_at - stopped_at:.2f} s; continued, it answered a ping: {pinged}, the publish: {stale[0]!r}, "
          f"and ended {ca_ended[0] - resumed_at:.2f} s after; queries answered whole {len(querier.answers)}; "
          f"items acknowledged {len(producer.acknowledged)}")


def test_the_active_coordinator_cut_off_from_everything_stops_serving(cluster, record_property):
    producer, querier = start_traffic(cluster, "cut-traffic")
    ca = cluster.processes.running["ca"]
    ca_ended = watch_exit(ca)
    cluster.network.isolate("ca")
    cut_at = time.monotonic()
    try:
        first_ack, first_answer = taken_over(cluster, producer, querier, cut_at)
    finally:
        cluster.network.heal()
        healed_at = time.monotonic()
    # Healed, ca may reach everyone again: it must serve nothing.
    pinged = assert_not_serving(cluster.clients["ca"])
    stale = []
    publish_to(cluster.clients["ca"], "zombie", stale)
    assert not isinstance(stale[0], dict), f"the coordinator that was cut off acknowledged a publish: {stale}"
    assert isinstance(stale[0], LimelightTimeout) or stale[0].code == "not_active", stale[0]
    assert ca.wait(30) == 3, "the coordinator that was cut off did not end as deposed"
    assert wait_until(lambda: ca_ended, timeout=5)
    assert "deposed" in (cluster.folder / "ca.log").read_text()
    finish_cut(cluster, producer, querier, record_property, "active coordinator cut off from everything (blackhole routes)",
               cut_at, first_ack, first_answer)
    print(f"cut off {healed_at - cut_at:.2f} s; healed, ca answered a ping: {pinged}, the publish: {stale[0]!r}; "
          f"it ended {ca_ended[0] - cut_at:.2f} s after the cut; "
          f"queries answered whole {len(querier.answers)}; items acknowledged {len(producer.acknowledged)}")


def test_the_active_coordinator_cut_off_from_its_workers_but_not_etcd_steps_down(cluster, record_property):
    """ca still reaches etcd and renews its lease, so only its own rule ends
    its term: no live worker for the step-down time after having had some
    (WorkerAbsence). It revokes its lease, cb takes over, and ca ends as deposed."""
    producer, querier = start_traffic(cluster, "cut-workers-traffic")
    ca = cluster.processes.running["ca"]
    ca_ended = watch_exit(ca)
    cluster.network.isolate("ca", keep=("e1", "e2", "e3"))
    cut_at = time.monotonic()
    try:
        first_ack, first_answer = taken_over(cluster, producer, querier, cut_at)
        assert ca.wait(30) == 3, "the coordinator cut off from its workers did not end as deposed"
    finally:
        cluster.network.heal()
    assert wait_until(lambda: ca_ended, timeout=5)
    log = (cluster.folder / "ca.log").read_text()
    assert "stepping down" in log and "no live worker" in log, log[-2000:]
    finish_cut(cluster, producer, querier, record_property, "active coordinator cut off from its workers, not from etcd (steps down)",
               cut_at, first_ack, first_answer)
    print(f"ca stepped down and ended {ca_ended[0] - cut_at:.2f} s after the cut; "
          f"queries answered whole {len(querier.answers)}; items acknowledged {len(producer.acknowledged)}")
