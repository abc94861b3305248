"""`limelight up` keeps its children running (issue 9, point 1).

Real processes: a cluster of the test's own, whose children are killed with
SIGKILL. A killed child is restarted with a line on up's standard error that
names it and the signal, and the cluster serves again (every shard served, a
query answers); a child that keeps dying stops the cluster with exit status 1
and a line saying so; SIGTERM still stops every child.
"""

import os
import signal
import time

import pytest

from harness import Client, child_pid, publish_all, require_binaries, start_cluster, stop_cluster, wait_until


def _stderr(path):
    return path.read_text(errors="replace")


def _serving(endpoint):
    """Every shard served and a query over all of them answers."""
    try:
        with Client(endpoint, timeout=2) as c:
            pong = c.ping()
            if len(pong["servedShards"]) != pong["shardCount"]:
                return False
            events = list(c.query('title == "supervised*"', fetch=["title"]))
            return events[-1][0] == "completion" and events[-1][1]["failedShards"] == []
    except Exception:  # noqa: BLE001 - not serving yet, whatever the reason
        return False


@pytest.fixture
def up(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    started = []

    def start(*extra):
        log = open(tmp_path / "up.err", "w")
        cluster = start_cluster(tmp_path / "data", shards=4, extra=extra, stderr=log)
        log.close()
        started.append(cluster)
        return cluster, tmp_path / "up.err"

    yield start
    for cluster in started:
        stop_cluster(cluster.process)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_killed_indexer_comes_back_and_the_cluster_serves(up):
    cluster, err = up()
    # The default durability, as the indexer read it back from SQLite.
    assert "store.durability=process" in (cluster.data / "logs" / "indexer-0.log").read_text()
    items = [{"uniqueIdentifier": f"sup:{n}", "domainIdentifier": f"test.supervised.d{n}", "attributes": {"title": f"supervised {n}"}}
             for n in range(40)]
    assert publish_all(cluster.endpoint, items) == len(items)
    before = child_pid(cluster.process, "indexer-0")
    assert before is not None
    os.kill(before, signal.SIGKILL)
    assert wait_until(lambda: "restarted indexer-0" in _stderr(err), timeout=20), _stderr(err)
    text = _stderr(err)
    assert f"indexer-0 (pid {before}) killed by signal 9 (SIGKILL); restarting it in 0.5 s (failure 1 of 5 within 60 s" in text
    after = child_pid(cluster.process, "indexer-0")
    assert after is not None and after != before
    assert wait_until(lambda: _serving(cluster.endpoint), timeout=20)
    # The restarted indexer takes writes, and what was stored before is still there.
    more = [{"uniqueIdentifier": "sup:after", "domainIdentifier": "test.supervised.after", "attributes": {"title": "supervised after"}}]
    assert publish_all(cluster.endpoint, more) == 1
    with Client(cluster.endpoint, timeout=10) as c:
        found = {i["uniqueIdentifier"] for k, v in c.query('title == "supervised*"', fetch=[]) if k == "batch" for i in v}
    assert found == {i["uniqueIdentifier"] for i in items + more}
    assert cluster.process.poll() is None


def test_killed_coordinator_comes_back_on_the_same_ports(up):
    cluster, err = up()
    before = child_pid(cluster.process, "coordinator")
    os.kill(before, signal.SIGKILL)
    assert wait_until(lambda: "restarted coordinator" in _stderr(err), timeout=20), _stderr(err)
    # Same client endpoint and stats port; the workers register again.
    assert wait_until(lambda: _serving(cluster.endpoint), timeout=30), _stderr(err)
    assert child_pid(cluster.process, "coordinator") not in (None, before)


def test_local_queries_start_no_query_worker_and_survive_a_coordinator_restart(up):
    """``up --local-queries``: the coordinator answers the shards itself (no
    limelight-query child), and after it is killed and restarted it does again."""
    cluster, err = up("--local-queries")
    assert child_pid(cluster.process, "query-0") is None
    items = [{"uniqueIdentifier": f"loc:{n}", "domainIdentifier": f"test.local.d{n}", "attributes": {"title": f"supervised {n}"}}
             for n in range(40)]
    assert publish_all(cluster.endpoint, items) == len(items)

    def answered():
        with Client(cluster.endpoint, timeout=10) as c:
            workers = [w for w in c.stats()["workers"] if w["role"] == "query"]
            found = {i["uniqueIdentifier"] for k, v in c.query('title == "supervised*"', fetch=[]) if k == "batch" for i in v}
        return [w["id"] for w in workers], found
    assert answered() == (["coordinator-local"], {i["uniqueIdentifier"] for i in items})
    before = child_pid(cluster.process, "coordinator")
    os.kill(before, signal.SIGKILL)
    assert wait_until(lambda: "restarted coordinator" in _stderr(err), timeout=20), _stderr(err)
    assert wait_until(lambda: _serving(cluster.endpoint), timeout=30), _stderr(err)
    assert answered() == (["coordinator-local"], {i["uniqueIdentifier"] for i in items})


def test_a_child_that_keeps_failing_stops_the_cluster(up):
    cluster, err = up("--restart-limit", "2", "--restart-window", "60")
    first = child_pid(cluster.process, "query-1")
    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: "restarted query-1" in _stderr(err), timeout=20), _stderr(err)
    second = child_pid(cluster.process, "query-1")
    os.kill(second, signal.SIGKILL)
    assert cluster.process.wait(30) == 1
    text = _stderr(err)
    assert "query-1 killed by signal 9 (SIGKILL) and has failed 2 times within 60 s; stopping the cluster" in text
    # Every other child was stopped with it.
    others = [child_pid(cluster.process, n) for n in ("coordinator", "indexer-0", "indexer-1", "query-0")]
    assert others == [None] * 4


def test_sigterm_stops_every_child_and_restarts_none(up):
    cluster, err = up()
    pids = [child_pid(cluster.process, n) for n in ("coordinator", "indexer-0", "indexer-1", "query-0", "query-1")]
    assert None not in pids
    cluster.process.send_signal(signal.SIGTERM)
    assert cluster.process.wait(30) == 0
    assert not [p for p in pids if _alive(p)]
    assert "restart" not in _stderr(err)


def test_durability_reaches_every_indexer(up):
    cluster, err = up("--durability", "power")
    logs = cluster.data / "logs"
    for name in ("indexer-0", "indexer-1"):
        text = (logs / f"{name}.log").read_text()
        # The value the indexer read back from SQLite (PRAGMA synchronous), once per shard.
        assert text.count("store.durability=power") == 2, text
        assert "store.durability=process" not in text
