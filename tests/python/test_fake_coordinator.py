"""Worker → coordinator traffic, from the real Swift workers.

A fake coordinator written in Python (a ROUTER socket) takes the place of
limelight-coordinator; a real limelight-indexer and a real limelight-query
connect to it and serve shard 0. Everything they send (register, heartbeat,
write_ack, delete_ack, declare_ack, shard_batch, shard_done, error) and
everything sent to them is checked against the schemas.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest
import zmq

import schemas
from harness import bin_dir, read_jsonl, require_binaries, stored_ids, wait_until

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "datasets"


class FakeCoordinator:
    """A ROUTER socket that speaks the coordinator's side of the worker protocol.

    Workers are named by their worker id; their routing ids are random ones of
    their own (docs/security-transport.md), learnt from their ``register``."""

    def __init__(self):
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self.received = []
        self.backlog = []
        self.routes = {}  # worker id -> routing id
        self.names = {}   # routing id -> worker id

    def send(self, worker, kind, message_id, check=True, **body):
        """Sends a message to a worker, schema-checked unless ``check`` is false."""
        message = {"v": 1, "type": kind, "id": message_id, **body}
        if check:
            schemas.assert_valid(message)
        self.socket.send_multipart([self.routes.get(worker, worker).encode(), json.dumps(message).encode()])

    def expect(self, worker, kind, timeout=15):
        """The next message from ``worker`` of type ``kind`` (a name or a set
        of names). Heartbeats are answered as they arrive, as the coordinator
        answers them; other messages wait in a backlog for their turn."""
        kinds = {kind} if isinstance(kind, str) else kind
        for i, (route, message) in enumerate(self.backlog):
            if route == worker and message["type"] in kinds:
                return self.backlog.pop(i)[1]
        deadline = time.monotonic() + timeout
        while self.socket.poll(max(1, int((deadline - time.monotonic()) * 1000))):
            route, frame = self.socket.recv_multipart()
            route, message = route.decode(), json.loads(frame)
            schemas.assert_valid(message)
            if message["type"] == "register":
                self.routes[message["worker"]] = route
                self.names[route] = message["worker"]
            route = self.names.get(route, route)
            self.received.append((route, message))
            if message["type"] == "heartbeat":
                self.send(route, "heartbeat", message["id"])
            if route == worker and message["type"] in kinds:
                return message
            if message["type"] != "heartbeat":
                self.backlog.append((route, message))
            if time.monotonic() >= deadline:
                break
        raise AssertionError(f"no {kind} from {worker} within {timeout} s; got {[m['type'] for _, m in self.received]}")

    def request(self, worker, kind, message_id, reply, **body):
        """Sends a message to a worker and returns its reply of type ``reply``."""
        self.send(worker, kind, message_id, **body)
        answer = self.expect(worker, reply)
        assert answer["id"] == message_id
        return answer

    def collect(self, worker):
        """A query's shard_batch messages and what ended the shard: its
        shard_done, or a last batch carrying ``doneCount`` (returned as the
        shard_done it stands for, with ``last_batch`` set)."""
        batches = []
        while True:
            message = self.expect(worker, {"shard_batch", "shard_done"})
            if message["type"] == "shard_done":
                return batches, message
            batches.append(message)
            if "doneCount" in message:
                return batches, {"type": "shard_done", "id": message["id"], "shard": message["shard"],
                                 "count": message["doneCount"], "last_batch": True}

    def close(self):
        self.socket.close(linger=0)


def stop(*processes):
    """SIGTERM to each worker, then SIGKILL to any still running 10 s later."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    """A fake coordinator with a real indexer and query worker registered for shard 0."""
    require_binaries("limelight-indexer", "limelight-query")
    data = tmp_path_factory.mktemp("workers")
    coordinator = FakeCoordinator()
    processes = []
    for name, role in [("real-indexer", "indexer"), ("real-query", "query")]:
        command = [str(bin_dir() / f"limelight-{role}"), "--coordinator", coordinator.endpoint,
                   "--data", str(data), "--shards", "0", "--id", name]
        log = open(data / f"{name}.log", "w")
        processes.append(subprocess.Popen(command, stdout=log, stderr=log, text=True))
        log.close()
    try:
        for name, role in [("real-indexer", "indexer"), ("real-query", "query")]:
            register = coordinator.expect(name, "register")
            assert (register["role"], register["worker"], register["shards"]) == (role, name, [0])
            # Not the worker id: nobody can take over a worker's connection by presenting its id.
            assert re.fullmatch(re.escape(name) + r"#[0-9a-f]{32}", coordinator.routes[name]), coordinator.routes
            coordinator.send(name, "registered", register["id"], shardCount=1, heartbeatMs=1000)
        yield coordinator
    finally:
        coordinator.close()
        stop(*processes)


@pytest.fixture(scope="module")
def stored(workers):
    """The Green Grocer sample, written to shard 0 by the real indexer."""
    items = read_jsonl("green-grocer.jsonl")
    ack = workers.request("real-indexer", "write", "w1", "write_ack", shard=0, items=items, evict=[])
    assert [r["status"] for r in ack["results"]] == ["stored"] * len(items)
    return items


def test_workers_heartbeat(workers):
    for name in ["real-indexer", "real-query"]:
        beat = workers.expect(name, "heartbeat")
        assert beat["worker"] == name


def test_write_ack_reports_each_item(workers):
    items = [{"uniqueIdentifier": "ack:good", "domainIdentifier": "test.ack", "attributes": {"title": "Good"}},
             {"uniqueIdentifier": "ack:bad", "domainIdentifier": "test.ack", "attributes": {"addedDate": "yesterday"}}]
    ack = workers.request("real-indexer", "write", "w2", "write_ack", shard=0, items=items, evict=[])
    assert ack["shard"] == 0
    assert [(r["index"], r["uniqueIdentifier"], r["status"]) for r in ack["results"]] == [
        (0, "ack:good", "stored"), (1, "ack:bad", "rejected")]
    assert ack["results"][1]["error"]["field"] == "attributes.addedDate"


def test_shard_query_streams_sorted_hits(workers, stored):
    plan = {"predicate": {"op": "text", "attribute": "title", "pattern": "*Apple", "options": ""},
            "sort": [{"attribute": "price", "ascending": False}], "fetchAttributes": ["title", "price"], "batchSize": 2}
    workers.send("real-query", "shard_query", "q1", shard=0, plan=plan, deadlineMs=10_000)
    batches, done = workers.collect("real-query")
    hits = [h for b in batches for h in b["hits"]]
    assert done["id"] == "q1" and "error" not in done
    assert [b["seq"] for b in batches] == list(range(1, len(batches) + 1))
    assert all(len(b["hits"]) <= 2 for b in batches)
    apples = sorted((i["attributes"]["price"] for i in stored if i["attributes"]["title"].endswith("Apple")), reverse=True)
    assert [h["sort"] for h in hits] == [[p] for p in apples]
    assert done["count"] == len(hits) == len(apples)
    assert all(set(h["item"]["attributes"]) == {"title", "price"} for h in hits)
    # The last batch ends the shard: no shard_done follows it.
    assert done.get("last_batch") is True
    assert all("doneCount" not in b for b in batches[:-1])


def test_relevance_sorted_hits_carry_scores(workers, stored):
    plan = {"predicate": {"op": "text", "attribute": "*", "pattern": "citrus", "options": "cdt"},
            "sort": [{"relevance": True}], "batchSize": 100}
    workers.send("real-query", "shard_query", "q2", shard=0, plan=plan)
    batches, done = workers.collect("real-query")
    hits = [h for b in batches for h in b["hits"]]
    # `*` with `t`: every item one of whose text values has the token "citrus"
    # (five by keyword, and the SweeTango apple by its description), and no other.
    citrus = {i["uniqueIdentifier"] for i in stored if any("citrus" in re.findall(r"\w+", t.lower()) for t in _texts(i["attributes"]))}
    assert len(citrus) == 6
    assert {h["item"]["uniqueIdentifier"] for h in hits} == citrus
    assert all(isinstance(h.get("score"), (int, float)) for h in hits)
    assert done["count"] == len(hits)


def _texts(value):
    """Every string inside an attribute value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)


def test_shard_query_for_a_shard_not_served(workers):
    plan = {"predicate": {"op": "all"}, "sort": [], "batchSize": 100}
    workers.send("real-query", "shard_query", "q3", shard=5, plan=plan)
    done = workers.expect("real-query", "shard_done")
    assert (done["shard"], done["count"], done["error"]["code"]) == (5, 0, "bad_shard")


def test_bad_plan_is_a_failed_shard(workers):
    bad = {"shard": 0, "plan": {"sort": []}}
    # The schema and the worker agree that a plan needs a predicate.
    assert schemas.errors({"v": 1, "type": "shard_query", "id": "q4", **bad}, "shard_query.schema.json")
    workers.send("real-query", "shard_query", "q4", check=False, **bad)
    done = workers.expect("real-query", "shard_done")
    assert done["error"]["code"] == "bad_plan"


def test_delete_and_declare_acks(workers, stored):
    ack = workers.request("real-indexer", "declare", "k1", "declare_ack",
                          attributes=[{"name": "pickedOn", "type": "date", "searchableByDefault": False}])
    assert ack["type"] == "declare_ack"
    ack = workers.request("real-indexer", "delete", "x1", "delete_ack", domains=["com.greengrocer.produce.fruit.citrus"], shards=[0])
    citrus = [i for i in stored if i["domainIdentifier"] == "com.greengrocer.produce.fruit.citrus"]
    assert ack["deleted"] == len(citrus)


def test_workers_refuse_what_they_do_not_handle(workers):
    error = workers.request("real-query", "write", "w9", "error", shard=0, items=[], evict=[])
    assert error["code"] == "unexpected_type"
    error = workers.request("real-indexer", "write", "w10", "error", shard=3, items=[], evict=[])
    assert error["code"] == "bad_shard"


def test_a_long_write_does_not_make_the_indexer_take_the_coordinator_for_silent(tmp_path):
    """An indexer hears the coordinator when its messages arrive, not when its
    loop, which waits for each write to commit, gets to them. Before, a write
    longer than the liveness period (3 s) made the indexer take the answered
    heartbeats for silence: it stopped heartbeating to register again, and a
    real coordinator then declared it dead and failed its writes (seen in the
    corpus test on a loaded machine)."""
    require_binaries("limelight-indexer")
    # Read before the indexer starts: nothing answers its heartbeats meanwhile
    # (this fake answers them only inside `expect`), and on a loaded machine
    # reading the corpus outlasts the liveness period.
    debian = subprocess.run([sys.executable, str(SHARED / "debian_packages.py")], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    items = [json.loads(line) for line in debian[:12_000]]
    coordinator = FakeCoordinator()
    log_path = tmp_path / "indexer.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([str(bin_dir() / "limelight-indexer"), "--coordinator", coordinator.endpoint,
                                    "--data", str(tmp_path), "--shards", "0", "--id", "slow-indexer"],
                                   stdout=log, stderr=log, text=True)
    try:
        register = coordinator.expect("slow-indexer", "register")
        coordinator.send("slow-indexer", "registered", register["id"], shardCount=1, heartbeatMs=100)
        coordinator.received.clear()
        started = time.monotonic()
        coordinator.send("slow-indexer", "write", "big", check=False, shard=0, items=items, evict=[])
        ack = coordinator.expect("slow-indexer", "write_ack", timeout=300)
        took = time.monotonic() - started
        print(f"a write of {len(items)} items took {took:.1f} s")
        assert [r["status"] for r in ack["results"]].count("stored") == len(items)
        # The test means something only if the write outlasted the liveness period.
        assert took > 3.5, f"the write took {took:.1f} s, not longer than the 3 s liveness period"
        during = [m["type"] for route, m in coordinator.received if route == "slow-indexer"]
        assert "register" not in during, during
        assert during.count("heartbeat") >= took / 0.1 * 0.5, f"{during.count('heartbeat')} heartbeats in {took:.1f} s"
    finally:
        coordinator.close()
        stop(process)


def test_changes_of_a_coordinator_that_no_longer_leads_are_not_applied_after_registering_with_a_new_one(tmp_path):
    """An indexer whose loop is held (the test-only hold `mark`) with changes
    of coordinator epoch 1 waiting in it takes the coordinator for silent and
    registers again, reporting shard 0 at 0. The coordinator that accepts it
    (epoch 2) numbers on from 0. Once the loop goes on, the waiting changes of
    epoch 1 are refused as stale, not applied: before, they were, the shard
    moved to 2 behind the report, and the new coordinator's change 1 was then
    skipped as applied — an acknowledged write that no file held."""
    require_binaries("limelight-indexer")
    holds = tmp_path / "holds"
    holds.mkdir()
    coordinator = FakeCoordinator()
    log_path = tmp_path / "indexer.log"
    env = {**os.environ, "LIMELIGHT_TEST_HOLD_DIR": str(holds)}
    with open(log_path, "w") as log:
        process = subprocess.Popen([str(bin_dir() / "limelight-indexer"), "--coordinator", coordinator.endpoint,
                                    "--data", str(tmp_path), "--shards", "0", "--id", "held-indexer"],
                                   stdout=log, stderr=log, text=True, env=env)
    try:
        register = coordinator.expect("held-indexer", "register")
        assert register["sequences"] == [{"shard": 0, "sequence": 0}], register
        coordinator.send("held-indexer", "registered", register["id"], shardCount=1, heartbeatMs=200, epoch=1)
        (holds / "hold-mark").touch()
        coordinator.send("held-indexer", "delete", "old-mark", shards=[0], sequence=1, epoch=1,
                         keepSlots={"slots": 16, "shards": 1, "shard": 0})
        coordinator.send("held-indexer", "write", "old-write", shard=0, sequence=2, epoch=1, evict=[],
                         items=[{"uniqueIdentifier": "old:2", "domainIdentifier": "org.fence", "attributes": {"title": "old"}}])
        assert wait_until(lambda: (holds / "at-mark").exists(), timeout=30), "the indexer did not reach the hold"
        # Silence: nothing answers its heartbeats until it registers again.
        again = None
        deadline = time.monotonic() + 30
        while again is None and time.monotonic() < deadline:
            if coordinator.socket.poll(200):
                route, frame = coordinator.socket.recv_multipart()
                message = json.loads(frame)
                schemas.assert_valid(message)
                if message["type"] == "register":
                    coordinator.routes[message["worker"]] = route.decode()
                    again = message
        assert again is not None, "the indexer did not register again"
        assert again["sequences"] == [{"shard": 0, "sequence": 0}], again
        coordinator.send("held-indexer", "registered", again["id"], shardCount=1, heartbeatMs=200, epoch=2)
        (holds / "hold-mark").unlink()
        refused = [coordinator.expect("held-indexer", "error", timeout=30) for _ in range(2)]
        assert {r["id"] for r in refused} == {"old-mark", "old-write"}, refused
        assert {r["code"] for r in refused} == {"stale_epoch"}, refused
        assert {r["epoch"] for r in refused} == {2}, refused
        ack = coordinator.request("held-indexer", "write", "new-write", "write_ack", shard=0, sequence=1, epoch=2, evict=[],
                                  items=[{"uniqueIdentifier": "new:1", "domainIdentifier": "org.fence", "attributes": {"title": "new"}}])
        assert [r["status"] for r in ack["results"]] == ["stored"], ack
        assert stored_ids(tmp_path, 1) == ["new:1"]
    finally:
        coordinator.close()
        stop(process)
