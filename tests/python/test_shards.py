"""`limelight shards status` on a `limelight up` cluster (issue 34, point 4):
a line per shard with its slots and each replica's state, read from the
coordinator's stats with the data folder's master key, as users run it
(keys required); and `limelight shards split --to 4` on a 2-shard cluster
under publish and query load.
"""

import json
import os
import subprocess
import time

import pytest

from harness import Client, bin_dir, child_pid, require_binaries, start_cluster, stop_cluster, stored_ids, wait_until

SHARDS = 2
REPLICAS = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    c = start_cluster(tmp_path_factory.mktemp("shards"), shards=SHARDS,
                      extra=("--require-keys", "--replicas", str(REPLICAS)))
    try:
        yield c
    finally:
        stop_cluster(c.process)


def shards_status(cluster, *extra, key_env=None):
    """Runs `limelight shards status` as an operator on the cluster's host does:
    the key is found in the data folder ($LIMELIGHT_DATA)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
    env["LIMELIGHT_DATA"] = str(cluster.data)
    env.update(key_env or {})
    return subprocess.run([str(bin_dir() / "limelight"), "shards", "status", "--endpoint", cluster.endpoint, *extra],
                          capture_output=True, text=True, timeout=30, env=env)


def status_lines(cluster):
    r = shards_status(cluster, "--json")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def all_in_sync(cluster, replicas, sequence_at_least=0):
    lines = status_lines(cluster)
    return len(lines) == SHARDS and all(
        len(s["replicas"]) == replicas
        and all(r["state"] == "in sync" and r["live"] and r["sequence"] >= sequence_at_least for r in s["replicas"])
        for s in lines)


def test_a_line_per_shard_with_its_slots_and_replicas_in_sync(cluster):
    admin = (cluster.data / "limelight.key").read_text().strip()
    items = [{"uniqueIdentifier": f"s:{i}", "domainIdentifier": f"test.shards.d{i}",
              "attributes": {"title": f"sharded {i}"}} for i in range(40)]
    with Client(cluster.endpoint, timeout=10, key=admin) as c:
        c.publish(items)
    # Each shard got at least one change (40 domains over 2 shards), applied by both replicas.
    assert wait_until(lambda: all_in_sync(cluster, REPLICAS, sequence_at_least=1), timeout=20), status_lines(cluster)
    lines = status_lines(cluster)
    assert [s["shard"] for s in lines] == list(range(SHARDS))
    # `limelight up` makes 1,024 slots per shard (ShardMap.defaultSlotsPerShard).
    assert all(s["slots"] == 1024 for s in lines)
    assert all(s["queryWorkers"] >= 1 for s in lines)
    names = {r["replica"] for s in lines for r in s["replicas"]}
    assert len(names) == REPLICAS

    text = shards_status(cluster)
    assert text.returncode == 0, text.stderr
    rows = text.stdout.splitlines()
    assert len(rows) == SHARDS
    assert rows[0].startswith("shard 0: 1024 slots,") and "in sync" in rows[0]


def test_an_unknown_key_may_not_read_the_shards(cluster):
    r = shards_status(cluster, key_env={"LIMELIGHT_KEY": "not-a-key"})
    assert r.returncode == 6, (r.returncode, r.stderr)
    assert "key" in r.stderr.lower(), r.stderr
    assert r.stdout == ""


def split_items(prefix, n, domains=97):
    return [{"uniqueIdentifier": f"{prefix}:{i}", "domainIdentifier": f"test.split.d{i % domains}",
             "attributes": {"title": f"splitme {prefix} {i}"}} for i in range(n)]


def found(client):
    """The identifiers a query for every published item answers, duplicates kept."""
    events = list(client.query('title == "splitme*"', fetch=[], deadline_ms=20_000))
    kind, completion = events[-1]
    assert kind == "completion", events[-1]
    assert not completion.get("failedShards"), completion
    return [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]


@pytest.mark.parametrize("replicas", [1, 2])
def test_split_two_shards_into_four_while_publishing_and_querying(tmp_path, replicas):
    """`limelight shards split --to 4` on a 2-shard `limelight up` under load:
    every acknowledged item is found exactly once during and after, on exactly
    one shard file of each replica, and the status shows four shards in sync.
    With two replicas both of a new shard's are copied at once, from one
    source replica each: no copy is abandoned (a source keeps one snapshot of
    a shard, and two copies from the same one took it from each other)."""
    import threading

    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    cluster = start_cluster(tmp_path / "data", shards=2, extra=("--replicas", str(replicas)))
    try:
        acked, sent = set(), set()
        lock = threading.Lock()
        with Client(cluster.endpoint, timeout=20) as c:
            first = split_items("a", 3000)
            for k in range(0, len(first), 500):
                assert c.publish(first[k:k + 500])["stored"] == 500
            acked |= {i["uniqueIdentifier"] for i in first}
            sent |= acked

        stop = threading.Event()
        problems = []

        def recorded(body):
            """Runs a thread's loop; what it raises is a problem of the test's
            (a thread's exception would otherwise end only the thread)."""
            def run():
                try:
                    body()
                except BaseException as e:  # noqa: BLE001 - reported by the test
                    problems.append(f"{body.__name__}: {e!r}")
            return run

        def publisher():
            with Client(cluster.endpoint, timeout=30) as p:
                n = 0
                while not stop.is_set():
                    batch = split_items(f"b{n}", 50)
                    with lock:
                        sent.update(i["uniqueIdentifier"] for i in batch)
                    ack = p.publish(batch)
                    if ack["stored"] != 50:
                        problems.append(f"publish {n}: {ack}")
                    with lock:
                        acked.update(r["uniqueIdentifier"] for r in ack["results"] if r["status"] == "stored")
                    n += 1
                    time.sleep(0.02)

        queried = []

        def querier():
            with Client(cluster.endpoint, timeout=30) as q:
                while not stop.is_set():
                    with lock:
                        before = set(acked)
                    ids = found(q)
                    with lock:
                        after = set(sent)
                    answer = set(ids)
                    if len(ids) != len(answer):
                        problems.append(f"a query answered {len(ids) - len(answer)} items twice")
                    if not before <= answer:
                        problems.append(f"a query missed {len(before - answer)} acknowledged items, e.g. {sorted(before - answer)[:3]}")
                    if not answer <= after:
                        problems.append(f"a query answered {len(answer - after)} items never sent")
                    queried.append(len(ids))

        threads = [threading.Thread(target=recorded(publisher)), threading.Thread(target=recorded(querier))]
        for t in threads:
            t.start()
        time.sleep(1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        env["LIMELIGHT_DATA"] = str(cluster.data)
        split = subprocess.run([str(bin_dir() / "limelight"), "shards", "split", "--to", "4", "--endpoint", cluster.endpoint,
                                "--wait-seconds", "180"], capture_output=True, text=True, timeout=240, env=env)
        time.sleep(1)
        stop.set()
        for t in threads:
            t.join(60)
        assert split.returncode == 0, (split.stdout, split.stderr)
        assert "split done: 4 shards" in split.stdout, split.stdout
        assert not problems, problems[:5]
        assert len(queried) >= 3, queried

        with Client(cluster.endpoint, timeout=20) as c:
            assert c.ping()["shardCount"] == 4
            ids = found(c)
            assert len(ids) == len(set(ids)), "an item answered twice after the split"
            assert set(ids) == acked, (len(set(ids) - acked), len(acked - set(ids)))
            # Every acknowledged item on exactly one shard file, the one its slot
            # names, once the background purges have deleted the moved rows
            # (until then answers leave them out, as checked above).
            folders = [cluster.data] + [cluster.data / f"replica-{r}" for r in range(1, replicas)]

            def purged():
                for folder in folders:
                    stored = stored_ids(folder, 4)
                    if len(stored) != len(set(stored)) or set(stored) != acked:
                        return False
                return True
            assert wait_until(purged, timeout=60), "an item on two shards of a replica, or missing from every one"
            ids = found(c)
            assert len(ids) == len(set(ids)) and set(ids) == acked, "answers changed by the purge"
            counters = c.stats()["counters"]
            assert counters.get("copy.abandoned", 0) == 0, counters
        assert wait_until(lambda: len(status_lines(cluster)) == 4 and all(
            len(s["replicas"]) == replicas and all(r["state"] == "in sync" for r in s["replicas"]) for s in status_lines(cluster)),
            timeout=20), status_lines(cluster)
    finally:
        stop_cluster(cluster.process)


def test_a_coordinator_killed_while_the_new_shards_are_copied_takes_the_split_up_again(tmp_path):
    """kill -9 of the coordinator once the new shards' indexers have
    registered: `limelight up` restarts it, it reads the split from the control
    plane, copies the new shards again, and the split finishes with every
    acknowledged item found exactly once."""
    import signal

    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    cluster = start_cluster(tmp_path / "data", shards=2)
    try:
        with Client(cluster.endpoint, timeout=20) as c:
            first = split_items("k", 3000)
            for k in range(0, len(first), 500):
                assert c.publish(first[k:k + 500])["stored"] == 500
        acked = {i["uniqueIdentifier"] for i in first}
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        env["LIMELIGHT_DATA"] = str(cluster.data)
        split = subprocess.Popen([str(bin_dir() / "limelight"), "shards", "split", "--to", "4", "--endpoint", cluster.endpoint,
                                  "--wait-seconds", "180"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # The new shards' indexers are up and registered: the coordinator is splitting.
        with Client(cluster.endpoint, timeout=20) as c:
            assert wait_until(lambda: any(w["id"] == "indexer-s2" for w in c.stats()["workers"]), timeout=30)
        pid = child_pid(cluster.process, "coordinator")
        os.kill(pid, signal.SIGKILL)
        out, err = split.communicate(timeout=240)
        assert split.returncode == 0, (out, err)
        assert "split done: 4 shards" in out, out
        with Client(cluster.endpoint, timeout=20) as c:
            assert wait_until(lambda: c.ping()["shardCount"] == 4, timeout=20)
            more = split_items("after", 200)
            assert c.publish(more)["stored"] == 200
            acked |= {i["uniqueIdentifier"] for i in more}
            ids = found(c)
            assert len(ids) == len(set(ids)), "an item answered twice"
            assert set(ids) == acked, (len(set(ids) - acked), len(acked - set(ids)))
        assert wait_until(lambda: (lambda stored: len(stored) == len(set(stored)) and set(stored) == acked)(
            stored_ids(cluster.data, 4)), timeout=60), "an item on two shard files, or on none"
    finally:
        stop_cluster(cluster.process)


def test_a_split_waits_for_its_new_shards_query_workers(tmp_path):
    """The new shards' query workers are held before they register (the
    test-only hold `query-register`): the new shards are copied, but the
    split does not switch to a map whose new shards nobody reads; every query
    meanwhile completes with every shard. Once they register, the split
    finishes, and queries still complete whole."""
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    holds = tmp_path / "holds"
    holds.mkdir()
    os.environ["LIMELIGHT_TEST_HOLD_DIR"] = str(holds)
    try:
        cluster = start_cluster(tmp_path / "data", shards=2)
    finally:
        del os.environ["LIMELIGHT_TEST_HOLD_DIR"]
    try:
        first = split_items("q", 1000)
        with Client(cluster.endpoint, timeout=20) as c:
            assert c.publish(first)["stored"] == 1000
        acked = {i["uniqueIdentifier"] for i in first}
        (holds / "hold-query-register").touch()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        env["LIMELIGHT_DATA"] = str(cluster.data)
        split = subprocess.Popen([str(bin_dir() / "limelight"), "shards", "split", "--to", "4", "--endpoint", cluster.endpoint,
                                  "--wait-seconds", "180"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        logs = cluster.data / "logs"
        copied = lambda name: (logs / f"{name}.log").exists() and "shard replaced by a copy" in (logs / f"{name}.log").read_text()
        assert wait_until(lambda: (holds / "at-query-register").exists() and copied("indexer-s2") and copied("indexer-s3"),
                          timeout=120), "the new shards were not copied"
        with Client(cluster.endpoint, timeout=20) as c:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                ids = found(c)
                assert len(ids) == len(set(ids)) and set(ids) == acked
                time.sleep(0.2)
            assert split.poll() is None, ("the split finished with its new shards unread", split.communicate())
            assert c.ping()["shardCount"] == 2
        (holds / "hold-query-register").unlink()
        out, err = split.communicate(timeout=200)
        assert split.returncode == 0, (out, err)
        assert "split done: 4 shards" in out, out
        with Client(cluster.endpoint, timeout=20) as c:
            assert c.ping()["shardCount"] == 4
            ids = found(c)
            assert len(ids) == len(set(ids)) and set(ids) == acked
    finally:
        for h in holds.glob("hold-*"):
            h.unlink()
        stop_cluster(cluster.process)
