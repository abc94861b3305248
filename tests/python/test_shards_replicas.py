"""`limelight shards add-replica`, `retire` and `move` on a `limelight up`
cluster (issue 34, point 4): a replica added under publish and query load
holds every acknowledged item exactly once in its own SQLite files and is
queried once in sync; the old replica retired under load leaves answers
complete; retiring a shard's last in-sync replica is refused, naming the shard.
"""

import json
import os
import subprocess
import threading
import time

from harness import Client, FakeWorker, bin_dir, require_binaries, start_cluster, stop_cluster, stored_ids, wait_until

SHARDS = 2


def items(prefix, n, domains=97):
    return [{"uniqueIdentifier": f"{prefix}:{i}", "domainIdentifier": f"test.replicas.d{i % domains}",
             "attributes": {"title": f"replicame {prefix} {i}"}} for i in range(n)]


def found(client):
    """The identifiers a query for every published item answers, duplicates kept."""
    events = list(client.query('title == "replicame*"', fetch=[], deadline_ms=20_000))
    kind, completion = events[-1]
    assert kind == "completion", events[-1]
    assert not completion.get("failedShards"), completion
    return [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]


def limelight(cluster, *args, timeout=240):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
    env["LIMELIGHT_DATA"] = str(cluster.data)
    return subprocess.run([str(bin_dir() / "limelight"), *args, "--endpoint", cluster.endpoint],
                          capture_output=True, text=True, timeout=timeout, env=env)


def status(cluster):
    r = limelight(cluster, "shards", "status", "--json", timeout=30)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def replicas_of(cluster):
    return {s["shard"]: {r["replica"].split(":", 1)[1]: r["state"] for r in s["replicas"]} for s in status(cluster)}


class Load:
    """A publisher and a querier: every answer must hold every item
    acknowledged before it was asked, once, and nothing never sent."""

    def __init__(self, cluster, acked):
        self.cluster, self.acked, self.sent = cluster, acked, set(acked)
        self.lock, self.stop, self.problems, self.queried = threading.Lock(), threading.Event(), [], []
        self.threads = [threading.Thread(target=self.publisher), threading.Thread(target=self.querier)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def publisher(self):
        try:
            self.publish()
        except Exception as e:  # noqa: BLE001  (a failure is a problem the test reports)
            self.problems.append(f"publisher: {e!r}")

    def querier(self):
        try:
            self.query()
        except Exception as e:  # noqa: BLE001
            self.problems.append(f"querier: {e!r}")

    def publish(self):
        with Client(self.cluster.endpoint, timeout=30) as p:
            n = 0
            while not self.stop.is_set():
                batch = items(f"{id(self)}-{n}", 50)
                with self.lock:
                    self.sent.update(i["uniqueIdentifier"] for i in batch)
                ack = p.publish(batch)
                if ack["stored"] != 50:
                    self.problems.append(f"publish {n}: {ack}")
                with self.lock:
                    self.acked.update(r["uniqueIdentifier"] for r in ack["results"] if r["status"] == "stored")
                n += 1
                time.sleep(0.02)

    def query(self):
        with Client(self.cluster.endpoint, timeout=30) as q:
            while not self.stop.is_set():
                with self.lock:
                    before = set(self.acked)
                ids = found(q)
                with self.lock:
                    after = set(self.sent)
                answer = set(ids)
                if len(ids) != len(answer):
                    self.problems.append(f"a query answered {len(ids) - len(answer)} items twice")
                if not before <= answer:
                    self.problems.append(f"a query missed {len(before - answer)} acknowledged items, e.g. {sorted(before - answer)[:3]}")
                if not answer <= after:
                    self.problems.append(f"a query answered {len(answer - after)} items never sent")
                self.queried.append(len(ids))


def query_worker_batches(cluster, worker_id):
    import urllib.request
    with urllib.request.urlopen(cluster.stats_url, timeout=10) as r:
        s = json.load(r)
    return next((w.get("batches", 0) for w in s["workers"] if w["id"] == worker_id and w["state"] == "live"), None)


def test_add_a_replica_under_load_retire_the_old_one_then_move_it(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    cluster = start_cluster(tmp_path / "data", shards=SHARDS)
    new = tmp_path / "data" / "replica-new"
    try:
        old = str(cluster.data.resolve())
        acked = set()
        with Client(cluster.endpoint, timeout=20) as c:
            first = items("a", 3000)
            for k in range(0, len(first), 500):
                assert c.publish(first[k:k + 500])["stored"] == 500
            acked |= {i["uniqueIdentifier"] for i in first}

        # Added under load: answers stay complete and exact throughout.
        with Load(cluster, acked) as load:
            time.sleep(1)
            add = limelight(cluster, "shards", "add-replica", "--data", str(new), "--wait-seconds", "180")
            time.sleep(1)
        assert add.returncode == 0, (add.stdout, add.stderr)
        assert "done: adding replica" in add.stdout, add.stdout
        assert not load.problems, load.problems[:5]
        assert len(load.queried) >= 3, load.queried
        states = replicas_of(cluster)
        assert all(states[s].get(str(new.resolve())) == "in sync" for s in range(SHARDS)), states

        # The new replica's own SQLite files hold every acknowledged item exactly once.
        def complete():
            stored = stored_ids(new, SHARDS)
            return len(stored) == len(set(stored)) and set(stored) == acked
        assert wait_until(complete, timeout=30), "the new replica lacks an acknowledged item, or holds one twice"

        # It is queried now: its query worker answers shards' parts.
        query_id = "added-replica-new-query"
        before = query_worker_batches(cluster, query_id)
        assert before is not None, "the new replica's query worker is not live"
        with Client(cluster.endpoint, timeout=20) as c:
            def answered_by_new():
                ids = found(c)
                assert len(ids) == len(set(ids)) and set(ids) == acked
                return (query_worker_batches(cluster, query_id) or 0) > before
            assert wait_until(answered_by_new, timeout=30), "no query reached the new replica"

        # The old replica (the data folder itself) retired under load.
        with Load(cluster, acked) as load:
            time.sleep(1)
            retire = limelight(cluster, "shards", "retire", "--replica", str(cluster.data), "--wait-seconds", "120")
            time.sleep(1)
        assert retire.returncode == 0, (retire.stdout, retire.stderr)
        assert "done: retiring replica" in retire.stdout, retire.stdout
        assert not load.problems, load.problems[:5]
        assert wait_until(lambda: all(set(r) == {str(new.resolve())} for r in replicas_of(cluster).values()), timeout=20), \
            replicas_of(cluster)
        with Client(cluster.endpoint, timeout=20) as c:
            ids = found(c)
            assert len(ids) == len(set(ids)) and set(ids) == acked
            more = items("after", 200)
            assert c.publish(more)["stored"] == 200
            acked |= {i["uniqueIdentifier"] for i in more}
            ids = found(c)
            assert len(ids) == len(set(ids)) and set(ids) == acked
        # The old replica's files were sent nothing after it was fenced.
        old_ids = set(stored_ids(old, SHARDS))
        assert not any(i.startswith("after:") for i in old_ids)

        # Moved under load to another folder: added, then the new one retired.
        moved = tmp_path / "data" / "replica-moved"
        with Load(cluster, acked) as load:
            time.sleep(1)
            move = limelight(cluster, "shards", "move", "--from", str(new), "--to-data", str(moved), "--wait-seconds", "180")
            time.sleep(1)
        assert move.returncode == 0, (move.stdout, move.stderr)
        assert "done: moving shards 0,1 from replica" in move.stdout, move.stdout
        assert not load.problems, load.problems[:5]
        assert wait_until(lambda: all(set(r) == {str(moved.resolve())} for r in replicas_of(cluster).values()), timeout=20), \
            replicas_of(cluster)
        stored = stored_ids(moved, SHARDS)
        assert len(stored) == len(set(stored)) and set(stored) == acked

        # Retiring the last in-sync replica is refused, naming the shard; nothing changes.
        last = limelight(cluster, "shards", "retire", "--replica", str(moved), timeout=60)
        assert last.returncode == 2, (last.returncode, last.stdout, last.stderr)
        assert "shard 0 has no in-sync replica but" in last.stderr and str(moved.resolve()) in last.stderr, last.stderr
        states = replicas_of(cluster)
        assert all(states[s] == {str(moved.resolve()): "in sync"} for s in range(SHARDS)), states
        with Client(cluster.endpoint, timeout=20) as c:
            assert set(found(c)) == acked

        # The first replica, retired, added again: its files are brought up to date.
        again = limelight(cluster, "shards", "add-replica", "--data", str(cluster.data), "--wait-seconds", "120")
        assert again.returncode == 0, (again.stdout, again.stderr)
        stored = stored_ids(old, SHARDS)
        assert len(stored) == len(set(stored)) and set(stored) == acked
        assert all(set(r) == {old, str(moved.resolve())} and set(r.values()) == {"in sync"} for r in replicas_of(cluster).values()), \
            replicas_of(cluster)
    finally:
        stop_cluster(cluster.process)


def test_a_replica_whose_workers_the_operator_starts_is_waited_for_then_retired_and_told_to_stop(tmp_path):
    """As on a cluster across hosts: `add-replica --replica NAME` waits while
    the operator starts the new replica's indexer and query worker (here by
    hand, naming the replica); once in sync it is queried. Retired, its
    workers are told to stop: they exit 2 with the reason."""
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    cluster = start_cluster(tmp_path / "data", shards=SHARDS)
    folder = tmp_path / "host2"
    name = f"host2:{folder}"
    workers = []
    try:
        acked = set()
        with Client(cluster.endpoint, timeout=20) as c:
            first = items("h", 1000)
            assert c.publish(first)["stored"] == 1000
            acked |= {i["uniqueIdentifier"] for i in first}
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        env["LIMELIGHT_DATA"] = str(cluster.data)
        add = subprocess.Popen([str(bin_dir() / "limelight"), "shards", "add-replica", "--replica", name, "--endpoint", cluster.endpoint,
                                "--wait-seconds", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        first_line = add.stdout.readline()
        assert first_line.startswith(f"adding replica {name} to shards 0,1"), (first_line, add.stderr.read() if add.poll() is not None else "")
        time.sleep(1)
        assert add.poll() is None, "the command did not wait for the replica's workers"
        with Client(cluster.endpoint, timeout=20) as c:
            more = items("h2", 300)
            assert c.publish(more)["stored"] == 300
            acked |= {i["uniqueIdentifier"] for i in more}
        for role, executable in (("indexer", "limelight-indexer"), ("query", "limelight-query")):
            with open(tmp_path / f"host2-{role}.log", "w") as log:
                workers.append(subprocess.Popen(
                    [str(bin_dir() / executable), "--coordinator", cluster.workers_endpoint, "--data", str(folder), "--shards", "0,1",
                     "--replica", name, "--id", f"host2-{role}", "--cluster-secret-file", str(cluster.data / "cluster.secret")],
                    stdout=subprocess.DEVNULL, stderr=log))
        out, err = add.communicate(timeout=150)
        assert add.returncode == 0, (out, err)
        assert "done: adding replica" in out, out
        stored = stored_ids(folder, SHARDS)
        assert len(stored) == len(set(stored)) and set(stored) == acked
        assert all(r.get(str(folder)) == "in sync" for r in replicas_of(cluster).values()), replicas_of(cluster)

        retire = limelight(cluster, "shards", "retire", "--replica", name, "--wait-seconds", "60")
        assert retire.returncode == 0, (retire.stdout, retire.stderr)
        for role, w in zip(("indexer", "query"), workers):
            assert w.wait(timeout=30) == 2, role
            assert f"replica {name} was retired from shard" in (tmp_path / f"host2-{role}.log").read_text(), role
        assert wait_until(lambda: all(str(folder) not in r for r in replicas_of(cluster).values()), timeout=20), replicas_of(cluster)
        with Client(cluster.endpoint, timeout=20) as c:
            ids = found(c)
            assert len(ids) == len(set(ids)) and set(ids) == acked

        # Added again under load, its workers started by hand the moment the
        # change is recorded, the query worker first: the coordinator has not
        # read the change yet, so it must neither refuse them as retired nor
        # let a query read the replica before it is in sync (answers stay
        # complete: the replica's files lack what came since its retirement).
        with Load(cluster, acked) as load:
            time.sleep(1)
            again = subprocess.Popen(
                [str(bin_dir() / "limelight"), "shards", "add-replica", "--replica", name, "--endpoint", cluster.endpoint,
                 "--wait-seconds", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            first_line = again.stdout.readline()
            assert first_line.startswith(f"adding replica {name} to shards 0,1"), first_line
            # A worker of it registering within milliseconds of the record,
            # before the coordinator's loop has read it: asked to register
            # again, never refused as retired.
            fake = FakeWorker(cluster.workers_endpoint, "host2-fake-query", "query", [0, 1],
                              secret_file=str(cluster.data / "cluster.secret"), replica=name)
            fake.start()
            time.sleep(2)
            fake.stop()
            answers = [(m["type"], m.get("code")) for m in fake.received if m["type"] in ("error", "registered")]
            assert ("error", "retired") not in answers and answers, (answers, fake.errors)
            workers = []
            for role, executable in (("query", "limelight-query"), ("indexer", "limelight-indexer")):
                with open(tmp_path / f"host2-again-{role}.log", "w") as log:
                    workers.append(subprocess.Popen(
                        [str(bin_dir() / executable), "--coordinator", cluster.workers_endpoint, "--data", str(folder),
                         "--shards", "0,1", "--replica", name, "--id", f"host2-again-{role}",
                         "--cluster-secret-file", str(cluster.data / "cluster.secret")],
                        stdout=subprocess.DEVNULL, stderr=log))
            out, err = again.communicate(timeout=150)
            time.sleep(1)
        assert again.returncode == 0, (out, err)
        assert all(w.poll() is None for w in workers), \
            [(tmp_path / f"host2-again-{role}.log").read_text()[-2000:] for role in ("query", "indexer")]
        assert not load.problems, load.problems[:5]
        assert len(load.queried) >= 3, load.queried
        stored = stored_ids(folder, SHARDS)
        assert len(stored) == len(set(stored)) and set(stored) == acked
        assert all(r.get(str(folder)) == "in sync" for r in replicas_of(cluster).values()), replicas_of(cluster)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        stop_cluster(cluster.process)
