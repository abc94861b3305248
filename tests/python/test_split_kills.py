"""A split 4 → 8 under publish and query load with kill -9 at each phase
(issue 34, point 5): of the coordinator, of a source indexer and of a
target indexer, at the copy, the catch-up, just before the switch, just
after it and during the background purge.

Each phase is reached for certain through the test-only hook `TestHold`
(Sources/LimelightConcurrency/TestHold.swift): `limelight up` runs with
`LIMELIGHT_TEST_HOLD_DIR`, which its children inherit; the test creates
`hold-PHASE` there before the split, waits for the process that reached the
phase to write `at-PHASE`, kills the victim with SIGKILL, and removes the
hold. `limelight up` restarts the victim.

The invariant each round: the split command exits 0 (docs/operations.md says
what an operator does otherwise); every acknowledged item is answered
exactly once by queries during (those that completed with every shard) and
after the split, and none that was never sent; once the background purges
are done, every acknowledged item is in exactly one of the eight shard
files, read with SQLite, and nothing is there that was not sent; the status
shows eight shards, every replica in sync.

CI runs one kill per phase, rotating the victim, two rounds with two
replicas of every shard, and two rounds with two faults in one split (the
second once the split has gone on from the first: `TWO_FAULTS`); the whole
matrix of one kill, 36 rounds (each phase and victim, with one replica and
with two), runs with LIMELIGHT_SPLIT_KILLS=all. "marking" is a step of
"just before the switch": the marks sent and not applied (a purge lost with
its indexer must be sent again once the shard has one).
"""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from harness import Client, bin_dir, child_pid, require_binaries, start_cluster, stop_cluster, stored_ids, wait_until
from limelight_client import LimelightError, LimelightTimeout

FROM, TO = 4, 8
PHASES = ("copy", "catch-up", "marking", "before-switch", "after-switch", "purge")
VICTIMS = ("coordinator", "source", "target")
# One kill per phase, the victim rotating; the existing test_shards.py kills
# the coordinator during the copy of a 2 → 4 split.
ROUNDS = [("copy", "target", 1), ("catch-up", "coordinator", 1), ("marking", "source", 1), ("before-switch", "source", 1),
          ("after-switch", "target", 1), ("purge", "coordinator", 1),
          # With two replicas of every shard (`up --replicas 2`): the kill takes
          # one replica's process; the other's carries on.
          ("catch-up", "target", 2), ("marking", "coordinator", 2)]
if os.environ.get("LIMELIGHT_SPLIT_KILLS") == "all":
    ROUNDS = [(p, v, r) for r in (1, 2) for p in PHASES for v in VICTIMS]
# Two faults in one split, each a (phase, victim), in the order the split reaches them.
TWO_FAULTS = [((("copy", "target"), ("before-switch", "coordinator")), 1),
              ((("catch-up", "coordinator"), ("purge", "source")), 2)]

# The holds that make each phase last until the kill (TestHold's phases):
# the first is the one whose `at-` marker says the phase is reached.
HOLDS = {
    "copy": ["copy"],
    "catch-up": ["catch-up"],
    # Writes held, queries going by the new map, the shards' marks sent, not applied.
    "marking": ["mark"],
    "before-switch": ["before-switch"],
    # The map is committed; no purge has begun.
    "after-switch": ["after-switch", "purge"],
    # A batch of rows deleted, more to delete.
    "purge": ["purge-batch"],
}


def items(prefix, n, domains=97):
    return [{"uniqueIdentifier": f"{prefix}:{i}", "domainIdentifier": f"test.splitkill.d{i % domains}",
             "attributes": {"title": f"splitkill {prefix} {i}"}} for i in range(n)]


class Producer(threading.Thread):
    """Publishes batches of 20, each until it is acknowledged whole (as the
    producers' resend does: a refused or unanswered batch is sent again, an
    upsert). Stops after the batch under way when `stop` is set, so every
    batch sent is acknowledged in the end."""

    def __init__(self, endpoint, stop):
        super().__init__(daemon=True)
        self.endpoint, self.stop = endpoint, stop
        self.sent, self.acked = set(), set()
        self.lock = threading.Lock()
        self.resent = 0
        self.error = None

    def run(self):
        try:
            n = 0
            while not self.stop.is_set():
                batch = items(f"p{n}", 20)
                ids = {i["uniqueIdentifier"] for i in batch}
                with self.lock:
                    self.sent |= ids
                deadline = time.monotonic() + 240
                while True:
                    assert time.monotonic() < deadline, f"batch p{n} not acknowledged in 240 s"
                    try:
                        # A batch sent to a coordinator killed before it
                        # answered is resent after 5 s of silence.
                        with Client(self.endpoint, timeout=5) as c:
                            ack = c.publish(batch, timeout=5)
                        if ack["stored"] == len(batch):
                            break
                        codes = {r["error"]["code"] for r in ack["results"] if r["status"] == "rejected"}
                        assert codes <= {"shard_unavailable", "store_failed"}, ack
                    except LimelightError as e:
                        assert e.code in ("not_active", "shard_unavailable", "unavailable"), (e.code, e.message)
                    except (LimelightTimeout, TimeoutError):
                        pass
                    self.resent += 1
                    time.sleep(0.2)
                with self.lock:
                    self.acked |= ids
                n += 1
                time.sleep(0.05)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


def answer(client, deadline_ms=20_000):
    """(identifiers with duplicates, failed shards) of a query for every item."""
    events = list(client.query('title == "splitkill*"', fetch=[], deadline_ms=deadline_ms))
    kind, completion = events[-1]
    assert kind == "completion", events[-1]
    return [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v], completion.get("failedShards") or []


class Querier(threading.Thread):
    """Queries every item over and over; each answer that every shard gave
    must hold every item acknowledged before it began, none twice and none
    never sent. A query that fails (a process was killed) is counted."""

    def __init__(self, endpoint, stop, producer, initial):
        super().__init__(daemon=True)
        self.endpoint, self.stop, self.producer, self.initial = endpoint, stop, producer, initial
        self.problems, self.complete, self.failed = [], 0, 0

    def run(self):
        while not self.stop.is_set():
            with self.producer.lock:
                before = self.initial | self.producer.acked
            try:
                # One sent to a coordinator killed before it answered is
                # given up after 10 s.
                with Client(self.endpoint, timeout=10) as q:
                    ids, failed = answer(q, deadline_ms=8_000)
            except (LimelightError, LimelightTimeout, TimeoutError, AssertionError):
                self.failed += 1
                time.sleep(0.2)
                continue
            with self.producer.lock:
                after = self.initial | self.producer.sent
            got = set(ids)
            if len(ids) != len(got):
                self.problems.append(f"a query answered {len(ids) - len(got)} items twice")
            if not got <= after:
                self.problems.append(f"a query answered {len(got - after)} items never sent, e.g. {sorted(got - after)[:3]}")
            if failed:
                self.failed += 1
                continue
            if not before <= got:
                self.problems.append(f"a query missed {len(before - got)} acknowledged items, e.g. {sorted(before - got)[:3]}")
            self.complete += 1


def status_lines(cluster):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
    env["LIMELIGHT_DATA"] = str(cluster.data)
    r = subprocess.run([str(bin_dir() / "limelight"), "shards", "status", "--json", "--endpoint", cluster.endpoint],
                       capture_output=True, text=True, timeout=30, env=env)
    return [json.loads(line) for line in r.stdout.splitlines()] if r.returncode == 0 else []


def worker_id(pid):
    """The `--id` of a process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return None
    return argv[argv.index(b"--id") + 1].decode() if b"--id" in argv else None


def victim_name(victim, marker):
    """The `limelight up` child to kill. `limelight up --shards 4` runs
    indexer-0 (shards 0, 2) and indexer-1 (1, 3); the split starts
    indexer-sJ for new shard J, whose source is J mod 4. The indexer that
    reached the phase (its pid in the marker) is the victim of its kind; a
    target reached it, the source is its own."""
    if victim == "coordinator":
        return "coordinator"
    target = "indexer-s4"
    reached = worker_id(int(marker.read_text().split()[0]))
    if reached and reached.startswith("indexer-s"):
        target = reached
    if victim == "target":
        return target
    if reached and reached.startswith("indexer-") and not reached.startswith("indexer-s"):
        return reached
    return f"indexer-{int(target[len('indexer-s'):]) % FROM % 2}"


@pytest.mark.parametrize("phase,victim,replicas", ROUNDS,
                         ids=[f"{p}-{v}" + ("" if r == 1 else f"-{r}-replicas") for p, v, r in ROUNDS])
def test_split_4_to_8_with_a_kill_at_a_phase(tmp_path, phase, victim, replicas):
    split_with_kills(tmp_path, [(phase, victim)], replicas)


@pytest.mark.parametrize("kills,replicas", TWO_FAULTS,
                         ids=["+".join(f"{p}-{v}" for p, v in k) + ("" if r == 1 else f"-{r}-replicas") for k, r in TWO_FAULTS])
def test_split_4_to_8_with_two_kills(tmp_path, kills, replicas):
    split_with_kills(tmp_path, kills, replicas)


def test_a_coordinator_taking_over_a_split_holds_what_comes_before_it_takes_the_split_up(tmp_path):
    """The coordinator is killed with the marks sent (some applied), and its
    successor is kept from taking the split up for 8 s (the `take-up`
    hold; longer than the producer's 5 s wait for an answer, so that its
    resent batch comes meanwhile), as one whose sources' indexers are slow
    to register would be.
    Writes meanwhile must wait: made on the sources alone, the purge the
    successor resumes would delete the new shards' part of them, after they
    were acknowledged. Queries wait too: the marks hide the moved rows from
    the sources' answers until the switch."""
    split_with_kills(tmp_path, [("marking", "coordinator")], 2, take_up_hold_s=8)


def held_cluster(tmp_path, replicas=1):
    """`limelight up --shards FROM` whose processes reach the TestHold
    phases in a folder of holds, 3,000 items published: (cluster, holds
    folder, the identifiers published)."""
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    holds = tmp_path / "holds"
    holds.mkdir()
    os.environ["LIMELIGHT_TEST_HOLD_DIR"] = str(holds)
    try:
        cluster = start_cluster(tmp_path / "data", shards=FROM, extra=("--replicas", str(replicas)))
    finally:
        del os.environ["LIMELIGHT_TEST_HOLD_DIR"]
    published = items("a", 3000)
    try:
        with Client(cluster.endpoint, timeout=30) as c:
            for k in range(0, len(published), 500):
                assert c.publish(published[k:k + 500])["stored"] == 500
    except BaseException:
        stop_cluster(cluster.process)
        raise
    return cluster, holds, {i["uniqueIdentifier"] for i in published}


def start_split(cluster):
    """`limelight shards split --to TO`, running."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
    env["LIMELIGHT_DATA"] = str(cluster.data)
    command = [str(bin_dir() / "limelight"), "shards", "split", "--to", str(TO), "--endpoint", cluster.endpoint,
               "--wait-seconds", "300"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_queries_during_the_switch_go_by_the_new_map_each_item_once(tmp_path):
    """From the stored purge phase until the new map is committed, queries
    are not held: they go by the new map, each shard's part carrying its
    slots under it (`keepSlots`). Held at the marks (sent, not applied), a
    source and its new shard hold the same rows, so each must leave out the
    other's: a query, a search and a typed query's suggestion each count
    every item once, answered while the hold lasts."""
    cluster, holds, everything = held_cluster(tmp_path)
    try:
        (holds / "hold-mark").touch()
        split = start_split(cluster)
        assert wait_until(lambda: (holds / "at-mark").exists(), timeout=180, interval=0.05), f"no mark reached; split: {split.poll()}"
        with Client(cluster.endpoint, timeout=10) as c:
            assert c.ping()["shardCount"] == FROM, "the new map is not committed while the marks are held"
            ids, failed = answer(c, deadline_ms=5_000)
            assert not failed, failed
            assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} items answered twice"
            assert set(ids) == everything
            found = c.search({"query": "splitkill", "hitsPerPage": 1000, "attributesToRetrieve": ["uniqueIdentifier"]})
            assert found["nbHits"] == len(everything), found["nbHits"]
            suggested = c.suggest("splitkil", limit=3)
            assert not suggested["failedShards"], suggested
            counts = {s["suggestion"]: s["count"] for s in suggested["suggestions"]}
            assert counts.get("splitkill") == len(everything), counts
            assert (holds / "hold-mark").exists() and c.ping()["shardCount"] == FROM, "answered before the switch ended"
        (holds / "hold-mark").unlink()
        out, err = split.communicate(timeout=360)
        assert split.returncode == 0, (out, err)
        with Client(cluster.endpoint, timeout=30) as c:
            assert c.ping()["shardCount"] == TO
            ids, failed = answer(c)
            assert not failed and len(ids) == len(set(ids)) and set(ids) == everything
    finally:
        for h in holds.glob("hold-*"):
            h.unlink()
        stop_cluster(cluster.process)


def split_with_kills(tmp_path, kills, replicas, take_up_hold_s=0):
    """A split under load with each of `kills` (phase, victim) in turn: each
    phase's holds are made before the split, and the next kill waits for
    its phase once the one before is done. With `take_up_hold_s`, the
    coordinator that follows the first kill takes the split up that much
    later."""
    cluster, holds, initial = held_cluster(tmp_path, replicas)
    stop = threading.Event()
    producer = None
    try:
        producer = Producer(cluster.endpoint, stop)
        querier = Querier(cluster.endpoint, stop, producer, initial)
        producer.start()
        querier.start()
        time.sleep(1)

        for phase, _ in kills:
            for h in HOLDS[phase]:
                (holds / f"hold-{h}").touch()
        split = start_split(cluster)

        for phase, victim in kills:
            marker = holds / f"at-{HOLDS[phase][0]}"
            assert wait_until(lambda: marker.exists() and marker.read_text().strip(), timeout=180, interval=0.05), \
                f"phase {phase} not reached; split: {split.poll()}"
            name = victim_name(victim, marker)
            pid = child_pid(cluster.process, name)
            assert pid, f"{name} is not running"
            if take_up_hold_s:
                (holds / "hold-take-up").touch()
            os.kill(pid, signal.SIGKILL)
            for h in HOLDS[phase]:
                (holds / f"hold-{h}").unlink()
            if take_up_hold_s:
                assert wait_until(lambda: (holds / "at-take-up").exists(), timeout=60), "no coordinator took over"
                time.sleep(take_up_hold_s)
                (holds / "hold-take-up").unlink()
                take_up_hold_s = 0

        out, err = split.communicate(timeout=360)
        assert split.returncode == 0, (out, err)
        assert f"split done: {TO} shards" in out, out
        time.sleep(1)
        stop.set()
        producer.join(300)
        querier.join(60)
        assert not producer.is_alive(), "the producer did not finish its last batch"
        assert producer.error is None, repr(producer.error)
        assert not querier.problems, querier.problems[:5]
        assert querier.complete >= 1, (querier.complete, querier.failed)

        acked = initial | producer.acked
        assert producer.sent == producer.acked
        with Client(cluster.endpoint, timeout=30) as c:
            assert wait_until(lambda: c.ping()["shardCount"] == TO, timeout=30)

            def answered_exactly():
                ids, failed = answer(c)
                return not failed and len(ids) == len(set(ids)) and set(ids) == acked
            assert wait_until(answered_exactly, timeout=60, interval=1), "the answer is not every acknowledged item once"

        # Each replica's folder: `up` keeps replica r > 0 in DATA/replica-r.
        folders = [cluster.data] + [cluster.data / f"replica-{r}" for r in range(1, replicas)]

        def purged():
            for folder in folders:
                stored = stored_ids(folder, TO)
                if len(stored) != len(set(stored)) or set(stored) != acked:
                    return False
            return True
        assert wait_until(purged, timeout=120, interval=1), \
            "an item on two shard files of a replica or on none, or one never sent, once the purges are done"

        def all_in_sync():
            lines = status_lines(cluster)
            return len(lines) == TO and all(
                len(s["replicas"]) == replicas and all(r["state"] == "in sync" and r["live"] for r in s["replicas"])
                for s in lines)
        assert wait_until(all_in_sync, timeout=60, interval=1), status_lines(cluster)
    finally:
        stop.set()
        for h in holds.glob("hold-*"):
            h.unlink()
        if producer is not None:
            producer.join(30)
        stop_cluster(cluster.process)
