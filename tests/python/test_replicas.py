"""Replicas that were away are caught up, and never queried while behind;
an overloaded query worker answers busy; a client that leaves mid-stream
leaves nothing behind (issue 9, points 3 and 5).

Real processes started one by one (not ``limelight up``, whose supervisor
would restart a killed indexer at once): a coordinator, two replicas of two
shards (each an indexer and a query worker on its own data folder), and
SQLite files read directly to see what each replica holds.
"""

import base64
import json
import os
import subprocess
import time

import pytest
import zmq

from harness import Client, FakeWorker, ProcessSet, bin_dir, indexer_handler, require_binaries, stored_ids, wait_until

SHARDS = 2


class Processes(ProcessSet):
    """A coordinator and workers started by name; all stopped at the end."""

    def __init__(self, tmp):
        super().__init__(tmp)
        self.endpoint = self.workers = None

    def coordinator(self, *extra, same_endpoints=False):
        """Starts the coordinator; with ``same_endpoints``, on the endpoints
        the previous one bound (a restart: workers reconnect by themselves)."""
        listen, workers = (self.endpoint, self.workers) if same_endpoints else ("tcp://127.0.0.1:0", "tcp://127.0.0.1:0")
        log = open(self.tmp / "coordinator.log", "a")
        p = subprocess.Popen([str(bin_dir() / "limelight-coordinator"), "--listen", listen,
                              "--workers", workers, "--no-stats", "--shards", str(SHARDS),
                              "--heartbeat-ms", "200", "--liveness-ms", "2000", *extra],
                             stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        line = p.stdout.readline().split()
        assert line and line[0] == "listening", (self.tmp / "coordinator.log").read_text()
        self.running["coordinator"] = p
        self.endpoint, self.workers = line[1], line[2]

    def worker(self, name, role, data, *extra, env=None):
        log = open(self.tmp / f"{name}.log", "a")
        executable = "limelight-indexer" if role == "indexer" else "limelight-query"
        self.running[name] = subprocess.Popen([str(bin_dir() / executable), "--coordinator", self.workers,
                                               "--data", str(data), "--shards", ",".join(map(str, range(SHARDS))),
                                               "--id", name, *extra], stdout=log, stderr=log,
                                              env=None if env is None else {**os.environ, **env})
        log.close()


@pytest.fixture
def procs(tmp_path):
    require_binaries("limelight-coordinator", "limelight-indexer", "limelight-query")
    p = Processes(tmp_path)
    yield p
    p.stop()


def items(prefix, n):
    return [{"uniqueIdentifier": f"{prefix}:{i}", "domainIdentifier": f"test.rep.d{i % 5}",
             "attributes": {"title": f"replicated {prefix} {i}"}} for i in range(n)]


def replication(client):
    return client.stats()["replication"]["shards"]


def all_fresh(client, replicas):
    """Every shard has `replicas` replicas that are live, fresh and not catching up."""
    for shard in replication(client):
        rs = [r for r in shard["replicas"] if r["live"] and r["fresh"] and "catchingUpTo" not in r]
        if len(rs) != replicas:
            return False
    return True


def found(client, text='title == "replicated*"'):
    events = list(client.query(text, fetch=[], deadline_ms=10_000))
    kind, completion = events[-1]
    assert kind == "completion"
    return [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v], completion


def start_two_replicas(procs, tmp_path, *coordinator_args):
    """A coordinator and two replicas (folders a and b), each an indexer and a
    query worker; returns the two folders."""
    a, b = tmp_path / "a", tmp_path / "b"
    procs.coordinator(*coordinator_args)
    for name, role, data in [("ix-a", "indexer", a), ("ix-b", "indexer", b), ("q-a", "query", a), ("q-b", "query", b)]:
        procs.worker(name, role, data)
    return a, b


def test_a_replica_that_was_away_is_caught_up_and_not_queried_meanwhile(procs, tmp_path):
    a, b = start_two_replicas(procs, tmp_path)
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS and all_fresh(c, 2), timeout=30)
        first = items("first", 200)
        assert c.publish(first)["stored"] == 200

        # Replica b's indexer goes away; writes and a delete go on without it.
        procs.kill("ix-b")
        assert wait_until(lambda: all(not r["live"] for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b")),
                          timeout=15)
        second = items("second", 300)
        ack = c.publish(second)
        assert ack["stored"] == 300, ack
        assert c.delete(ids=["first:0", "first:1"]) == 2
        expected = {i["uniqueIdentifier"] for i in first + second} - {"first:0", "first:1"}
        stale = [r for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b")]
        assert stale and all(not r["fresh"] for r in stale), stale
        assert set(stored_ids(b, SHARDS)) == {i["uniqueIdentifier"] for i in first}  # b's files really are behind

        # Its query worker is alive, reading the stale files: queries must not
        # go there (round robin over two workers would, every other time).
        for _ in range(8):
            ids, completion = found(c)
            assert completion["failedShards"] == []
            assert set(ids) == expected and len(ids) == len(expected)

        # b comes back: it is sent what it missed, and serves again once it has it.
        procs.worker("ix-b", "indexer", b)
        assert wait_until(lambda: all_fresh(c, 2), timeout=30), replication(c)
        assert sorted(stored_ids(b, SHARDS)) == sorted(stored_ids(a, SHARDS))
        assert set(stored_ids(b, SHARDS)) == expected
        for shard in replication(c):
            assert {r["sequence"] for r in shard["replicas"]} == {shard["committed"]}
        assert c.stats()["counters"]["catchup.started"] >= 1

        # A replica started now, on an empty folder, gets the whole log.
        fresh = tmp_path / "c"
        procs.worker("ix-c", "indexer", fresh)
        procs.worker("q-c", "query", fresh)
        assert wait_until(lambda: all_fresh(c, 3), timeout=30), replication(c)
        assert set(stored_ids(fresh, SHARDS)) == expected
        for _ in range(6):
            ids, completion = found(c)
            assert completion["failedShards"] == [] and set(ids) == expected


def test_a_replica_further_behind_than_the_log_is_copied_from_a_fresh_one(procs, tmp_path):
    """With a log of 50 items per shard, a replica that missed 400 cannot be
    caught up change by change: it is detached (no writes, no queries) and
    its shards are replaced by copies of the other replica's, after which it
    takes writes and serves queries again. Without the copy it stays
    detached and the wait for both replicas to be fresh times out."""
    a, b = start_two_replicas(procs, tmp_path, "--catch-up-log", "50")
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: all_fresh(c, 2), timeout=30)
        assert c.publish(items("near", 10))["stored"] == 10
        assert c.delete(ids=["near:0"]) == 1
        procs.kill("ix-b")
        assert wait_until(lambda: all(not r["live"] for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b")),
                          timeout=15)
        for n in range(4):
            assert c.publish(items(f"far{n}", 100))["stored"] == 100
        assert c.delete(ids=["far0:0"]) == 1
        behind = sorted(stored_ids(b, SHARDS))
        assert len(behind) == 9
        started = time.monotonic()
        procs.worker("ix-b", "indexer", b)
        assert wait_until(lambda: all_fresh(c, 2), timeout=60), json.dumps(replication(c))
        print(f"replica b copied and fresh {time.monotonic() - started:.1f} s after its indexer started")
        counters = c.stats()["counters"]
        assert counters["catchup.detached"] >= SHARDS and counters["copy.finished"] == SHARDS, counters
        assert sorted(stored_ids(b, SHARDS)) == sorted(stored_ids(a, SHARDS)) and len(stored_ids(b, SHARDS)) == 408
        # It takes writes again, and both replicas answer queries alike.
        assert c.publish(items("after", 50))["stored"] == 50
        assert c.delete(ids=["near:1"]) == 1
        assert wait_until(lambda: all_fresh(c, 2), timeout=30), json.dumps(replication(c))
        assert sorted(stored_ids(b, SHARDS)) == sorted(stored_ids(a, SHARDS)) and len(stored_ids(b, SHARDS)) == 457
        for shard in replication(c):
            assert {r["sequence"] for r in shard["replicas"]} == {shard["committed"]}
        for _ in range(6):
            ids, completion = found(c)
            assert completion["failedShards"] == [] and len(ids) == len(set(ids)) == 457


def test_a_replica_being_caught_up_neither_holds_nor_fails_the_writes(procs, tmp_path):
    """A replica that is behind (here copied, then held before its catch-up)
    takes each new change, numbered, but no client waits for its answer:
    the writes are acknowledged by the fresh replica alone, whole, and the
    held replica is not dropped for lagging (`--replica-lag-ms` 1500, which
    a replica whose answers were awaited would pass at the first write).
    Once let go it catches up and serves again."""
    holds = tmp_path / "holds"
    holds.mkdir()
    a, b = start_two_replicas(procs, tmp_path, "--catch-up-log", "50", "--replica-lag-ms", "1500")
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: all_fresh(c, 2), timeout=30)
        procs.kill("ix-b")
        assert wait_until(lambda: all(not r["live"] for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b")),
                          timeout=15)
        for n in range(3):
            assert c.publish(items(f"away{n}", 100))["stored"] == 100
        (holds / "hold-copy").touch()
        (holds / "hold-catch-up").touch()
        procs.worker("ix-b", "indexer", b, env={"LIMELIGHT_TEST_HOLD_DIR": str(holds)})
        assert wait_until(lambda: (holds / "at-copy").exists(), timeout=30), "replica b was not copied"
        # Changes made while b is being copied: it has to be caught up after its copy.
        assert c.publish(items("copying", 30))["stored"] == 30
        (holds / "hold-copy").unlink()
        assert wait_until(lambda: (holds / "at-catch-up").exists(), timeout=30), "replica b did not install its copy"
        for n in range(6):
            ack = c.publish(items(f"held{n}", 20))
            assert (ack["stored"], ack["rejected"]) == (20, 0), ack
            assert c.delete(ids=[f"held{n}:0"]) == 1
            time.sleep(0.5)
        counters = c.stats()["counters"]
        assert counters.get("replicas.lagging", 0) == 0, counters
        assert [r for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b") and r["live"]], replication(c)
        (holds / "hold-catch-up").unlink()
        assert wait_until(lambda: all_fresh(c, 2), timeout=60), json.dumps(replication(c))
        assert sorted(stored_ids(b, SHARDS)) == sorted(stored_ids(a, SHARDS))
        assert len(stored_ids(a, SHARDS)) == 330 + 6 * 19
        for _ in range(6):
            ids, completion = found(c)
            assert completion["failedShards"] == [] and len(ids) == len(set(ids)) == 330 + 6 * 19


def test_a_copy_that_moves_no_chunk_is_abandoned_and_started_again(procs, tmp_path):
    """A copy waits for one answer at a time. A target that stops answering
    while its heartbeats go on (here a fake indexer that takes its first
    chunk and never acknowledges it) would leave the replica detached for
    good: after `--copy-stall-ms` the coordinator abandons the copy and
    starts another, which this time the fake sees through to its end."""
    secret = tmp_path / "cluster.secret"
    procs.coordinator("--catch-up-log", "5", "--copy-stall-ms", "1500", "--cluster-secret-file", str(secret))
    procs.worker("ix-a", "indexer", tmp_path / "a", "--cluster-secret-file", str(secret))
    chunks = []

    def target(message):
        if message["type"] != "copy_chunk":
            return indexer_handler(message)
        chunks.append((time.monotonic(), message["copy"], message["offset"]))
        if chunks[0][1] == message["copy"]:
            return []
        received = message["offset"] + len(base64.b64decode(message["data"]))
        done = received >= message["size"]
        return [("copy_ack", {"shard": message["shard"], "copy": message["copy"], "received": received,
                              **({"installed": True, "sequence": message["sequence"]} if done else {})})]

    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: len(replication(c)) == SHARDS and all(s["replicas"] for s in replication(c)), timeout=30)
        for n in range(4):
            assert c.publish(items(f"before{n}", 10))["stored"] == 10
        # Behind the start of the log on every shard: detached, to be copied.
        fake = FakeWorker(procs.workers, "fake-b", "indexer", list(range(SHARDS)), target, replica="fake-b",
                          sequences={s: 0 for s in range(SHARDS)}, secret_file=secret)
        fake.start()
        try:
            assert fake.registered.wait(10), fake.received
            assert wait_until(lambda: all_fresh(c, 2), timeout=30), json.dumps(replication(c))
            counters = c.stats()["counters"]
            assert counters["copy.stalled"] == 1 and counters["copy.abandoned"] == 1, counters
            assert counters["copy.finished"] == SHARDS, counters
            stalled = [ch for ch in chunks if ch[1] == chunks[0][1]]
            assert [ch[2] for ch in stalled] == [0], chunks
            shard_of_stalled = next(m["shard"] for m in fake.received if m.get("copy") == chunks[0][1])
            again = [ch for ch in chunks if ch[1] != chunks[0][1] and ch[2] == 0 and
                     next(m["shard"] for m in fake.received if m.get("copy") == ch[1]) == shard_of_stalled]
            assert len(again) == 1 and again[0][0] - stalled[0][0] >= 1.5, chunks
        finally:
            fake.stop()
        assert fake.errors == [], fake.errors


def test_a_restarted_coordinator_gives_its_messages_ids_its_predecessor_did_not(procs, tmp_path):
    """A worker still answers what a coordinator that died had sent it, and
    the answer reaches the coordinator that takes its place. Were that one to
    number its messages from 1 again, such an answer could be taken for the
    answer to its own message of the same id (a stale write_ack counted for a
    new write). The ids two runs of a coordinator send share none."""
    secret = tmp_path / "cluster.secret"
    procs.coordinator("--cluster-secret-file", str(secret))
    procs.worker("ix-a", "indexer", tmp_path / "a", "--cluster-secret-file", str(secret))
    applied = {s: 0 for s in range(SHARDS)}

    def replica(message):
        if message["type"] == "write":
            applied[message["shard"]] = max(applied[message["shard"]], message["sequence"])
        return indexer_handler(message)

    def sent_ids():
        # Ids the coordinator chose (not the answers to the fake's registrations and heartbeats).
        return {m["id"] for m in fake.received if m["type"] == "write"}

    fake = FakeWorker(procs.workers, "fake-b", "indexer", list(range(SHARDS)), replica, replica="fake-b",
                      sequences=applied, secret_file=secret)
    fake.start()
    try:
        assert fake.registered.wait(10), fake.received
        with Client(procs.endpoint, timeout=20) as c:
            assert wait_until(lambda: all_fresh(c, 2), timeout=30), replication(c)
            for n in range(3):
                assert c.publish(items(f"first{n}", 10))["stored"] == 10
        first = sent_ids()
        procs.kill("coordinator")
        procs.coordinator("--cluster-secret-file", str(secret), same_endpoints=True)
        fake.registration["sequences"] = [{"shard": s, "sequence": n} for s, n in sorted(applied.items())]
        fake.registered.clear()
        fake.register_again()
        assert fake.registered.wait(10), fake.received[-3:]
        with Client(procs.endpoint, timeout=20) as c:
            assert wait_until(lambda: all_fresh(c, 2), timeout=30), replication(c)
            for n in range(3):
                assert c.publish(items(f"second{n}", 10))["stored"] == 10
        second = sent_ids() - first
        assert first and second and len(fake.received) > len(first) + len(second)
        # Each write went with an id of its own run's, none reused.
        assert len([m for m in fake.received if m["type"] == "write"]) == len(first) + len(second), sorted(first & second)
    finally:
        fake.stop()
    assert fake.errors == [], fake.errors


def test_a_full_query_queue_answers_busy_and_the_coordinator_tries_the_other_replica(procs, tmp_path):
    """One query worker with one thread and room for one waiting shard query;
    a burst of queries overflows it. With a second query worker on the same
    files the coordinator sends the refused shards there and every query is
    complete; without it, the refused shards are named, as busy, and the
    worker goes on serving."""
    data = tmp_path / "a"
    procs.coordinator()
    procs.worker("ix", "indexer", data)
    procs.worker("q-small", "query", data, "--concurrency", "1", "--max-queued", "1")
    with Client(procs.endpoint, timeout=30) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
        for n in range(4):
            assert c.publish(items(f"load{n}", 500))["stored"] == 500

        def burst(count):
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(procs.endpoint)
            for n in range(count):
                sock.send(json.dumps({"v": 1, "type": "query", "id": f"b{n}", "query": 'title == "*replicated*"cd',
                                      "fetchAttributes": ["title"], "deadlineMs": 60_000}).encode())
            completions = {}
            deadline = time.monotonic() + 120
            while len(completions) < count and time.monotonic() < deadline:
                if sock.poll(1000):
                    m = json.loads(sock.recv())
                    if m["type"] == "completion":
                        completions[m["id"]] = m
            sock.close()
            assert len(completions) == count, f"{count - len(completions)} queries never completed"
            return completions

        alone = burst(20)
        refused = [f for m in alone.values() for f in m["failedShards"]]
        print(f"one worker: {len(refused)} of {20 * SHARDS} shard queries refused")
        assert refused, "the queue bound never refused a shard query"
        assert all("overloaded" in f["reason"] for f in refused), refused
        assert all(m["count"] == 2000 for m in alone.values() if not m["failedShards"])

        def full():
            ids, completion = found(c)
            return completion["failedShards"] == [] and len(ids) == 2000
        # Still serving (once its one thread has finished the burst's last query).
        assert wait_until(full, timeout=20)

        procs.worker("q-big", "query", data)
        assert wait_until(lambda: len(c.stats()["workers"]) == 3, timeout=30)
        both = burst(20)
        assert all(m["failedShards"] == [] and m["count"] == 2000 for m in both.values()), \
            [m["failedShards"] for m in both.values() if m["failedShards"]][:3]
        retried = c.stats()["counters"].get("queries.busyRetried", 0)
        print(f"two workers: {retried} busy shard queries retried on the other worker")
        assert retried > 0


def test_a_client_that_leaves_mid_stream_leaves_nothing_behind(procs, tmp_path):
    data = tmp_path / "a"
    procs.coordinator()
    procs.worker("ix", "indexer", data)
    procs.worker("q", "query", data)
    with Client(procs.endpoint, timeout=30) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
        for n in range(4):
            assert c.publish(items(f"gone{n}", 500))["stored"] == 500
        for round_ in range(5):
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(procs.endpoint)
            sock.send(json.dumps({"v": 1, "type": "query", "id": "leaving", "query": 'title == "replicated*"',
                                  "fetchAttributes": ["title"], "batchSize": 5}).encode())
            assert sock.poll(20_000)
            assert json.loads(sock.recv())["type"] == "result_batch"
            sock.close()  # gone after the first batch
            # Another client is served in full meanwhile.
            ids, completion = found(c)
            assert completion["failedShards"] == [] and len(ids) == 2000
        state = lambda: c.stats()["queryState"]  # noqa: E731
        assert wait_until(lambda: state() == {"running": 0, "searches": 0, "clients": 0, "firstBatchPending": 0}, timeout=30), state()
        assert all(p.poll() is None for p in procs.running.values()), "a process died"


def test_a_restarted_coordinator_continues_the_numbers_and_copies_over_a_diverged_replica(procs, tmp_path):
    a, b = start_two_replicas(procs, tmp_path)
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: all_fresh(c, 2), timeout=30)
        assert c.publish(items("one", 100))["stored"] == 100
    # A restart with every replica up: the numbers go on from what the
    # indexers report, nothing is caught up, and both replicas stay in use.
    procs.kill("coordinator")
    procs.coordinator(same_endpoints=True)
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: all_fresh(c, 2), timeout=30), replication(c)
        assert c.publish(items("two", 100))["stored"] == 100
        assert wait_until(lambda: all_fresh(c, 2), timeout=30), replication(c)
        assert sorted(stored_ids(a, SHARDS)) == sorted(stored_ids(b, SHARDS)) and len(stored_ids(a, SHARDS)) == 200
        for shard in replication(c):
            assert shard["issued"] >= 2 and {r["sequence"] for r in shard["replicas"]} == {shard["issued"]}

        # b misses a write; then the coordinator and a go down together.
        procs.kill("ix-b")
        assert wait_until(lambda: all(not r["live"] for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b")),
                          timeout=15)
        assert c.publish(items("three", 100))["stored"] == 100
    # (q-a goes too: a replica the new coordinator knows of from its query
    # worker is waited for before the shard's numbering goes on; see the next test.)
    procs.kill("coordinator")
    procs.kill("ix-a")
    procs.kill("q-a")
    procs.coordinator(same_endpoints=True)
    procs.worker("ix-b", "indexer", b)
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == SHARDS, timeout=30)
        # b alone numbers new changes from its own (lower) numbers.
        assert c.publish(items("four", 100))["stored"] == 100
        # a comes back with numbers that now name other changes: it must not
        # skip b's as "applied", nor serve queries; it is detached, and its
        # shards are replaced by copies of b's (a's "three", acknowledged
        # while b was down, is lost: see docs/reliability.md).
        procs.worker("ix-a", "indexer", a)
        procs.worker("q-a", "query", a)
        assert wait_until(lambda: all_fresh(c, 2), timeout=60), json.dumps(replication(c))
        counters = c.stats()["counters"]
        assert counters["catchup.detached"] >= SHARDS and counters["copy.finished"] >= SHARDS, counters
        want = {i["uniqueIdentifier"] for i in items("one", 100) + items("two", 100) + items("four", 100)}
        assert set(stored_ids(b, SHARDS)) == want
        assert sorted(stored_ids(a, SHARDS)) == sorted(stored_ids(b, SHARDS))
        for _ in range(6):
            ids, completion = found(c)
            assert completion["failedShards"] == [] and sorted(ids) == sorted(want), json.dumps(replication(c))


@pytest.mark.parametrize("known_from", ["query worker", "replica count"])
def test_a_restarted_coordinator_waits_for_a_replica_before_numbering(procs, tmp_path, known_from):
    """b misses a write; the coordinator and a's indexer go down. The new
    coordinator numbers no change of a shard until a's indexer is back:
    writes meanwhile are refused, naming what is awaited. It knows replica a
    exists either from a's query worker, which stays up and registers, or,
    when that worker went down too, from `--replicas 2` (what `limelight up`
    passes). Then a's numbers are the shard's, b is copied from a, and the
    write b missed is on both (without the wait, b alone would number new
    changes, and a, coming back diverged, would be copied over and lose it:
    the whole-corpus kill test lost acknowledged items that way)."""
    a, b = start_two_replicas(procs, tmp_path)
    with Client(procs.endpoint, timeout=20) as c:
        assert wait_until(lambda: all_fresh(c, 2), timeout=30)
        assert c.publish(items("one", 100))["stored"] == 100
        procs.kill("ix-b")
        assert wait_until(lambda: all(not r["live"] for s in replication(c) for r in s["replicas"] if r["replica"].endswith("/b")),
                          timeout=15)
        assert c.publish(items("three", 100))["stored"] == 100
    procs.kill("coordinator")
    procs.kill("ix-a")
    extra = ("--replica-wait-ms", "60000")
    if known_from == "replica count":
        procs.kill("q-a")
        extra += ("--replicas", "2")
    procs.coordinator(*extra, same_endpoints=True)
    procs.worker("ix-b", "indexer", b)
    with Client(procs.endpoint, timeout=20) as c:
        def registered():
            shards = c.stats()["shards"]
            queried = all("q-a" in s["queryWorkers"] for s in shards) if known_from == "query worker" else \
                all(s["queryWorkers"] == ["q-b"] for s in shards)
            return queried and all(s["indexers"] == ["ix-b"] for s in shards) and \
                len([r for s in replication(c) for r in s["replicas"] if r["live"]]) == SHARDS
        assert wait_until(registered, timeout=30), json.dumps(c.stats()["shards"])
        ack = c.publish(items("four", 100))
        assert ack["stored"] == 0, ack
        reasons = {r["error"]["message"] for r in ack["results"]}
        if known_from == "query worker":
            assert all("waits for the indexer of replica" in m and m.split("replica ")[1].split(" ")[0].endswith("/a") for m in reasons), reasons
        else:
            assert all("waits for the indexer of replica 1 of 2 not registered yet" in m for m in reasons), reasons
        procs.worker("ix-a", "indexer", a)
        if known_from == "replica count":
            procs.worker("q-a", "query", a)
        assert wait_until(lambda: all_fresh(c, 2), timeout=60), json.dumps(replication(c))
        assert c.stats()["counters"]["copy.finished"] >= SHARDS
        assert c.publish(items("four", 100))["stored"] == 100
        assert wait_until(lambda: all_fresh(c, 2), timeout=30), json.dumps(replication(c))
        want = {i["uniqueIdentifier"] for i in items("one", 100) + items("three", 100) + items("four", 100)}
        assert set(stored_ids(a, SHARDS)) == want and sorted(stored_ids(b, SHARDS)) == sorted(stored_ids(a, SHARDS))
        for _ in range(6):
            ids, completion = found(c)
            assert completion["failedShards"] == [] and sorted(ids) == sorted(want)
