"""At-least-once publishing, exactly-once results (issue 9, point 2).

A cluster of the test's own under ``limelight up`` (so killed children come
back), a producer publishing a few thousand items, and ``kill -9`` of indexers
(and, in one test, the coordinator) while it runs. The producer must exit 0,
and every item must be present exactly once, counted by query.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from harness import CLIENTS, Client, bin_dir, child_pid, read_jsonl, require_binaries, start_cluster, stop_cluster, wait_until

COPIES = 20  # the 300 Debian packages, 20 times over under new identifiers: 6,000 items


@pytest.fixture
def cluster(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    log = open(tmp_path / "up.err", "w")
    c = start_cluster(tmp_path / "data", shards=4, extra=("--restart-limit", "20"), stderr=log)
    log.close()
    yield c
    stop_cluster(c.process)


@pytest.fixture
def corpus(tmp_path):
    """A JSONL file of 6,000 items, and their identifiers."""
    base = read_jsonl("debian-packages.jsonl")
    path = tmp_path / "items.jsonl"
    ids = []
    with open(path, "w") as f:
        for copy in range(COPIES):
            for item in base:
                item = dict(item, uniqueIdentifier=f"{item['uniqueIdentifier']}#{copy}")
                item["attributes"] = dict(item["attributes"], title=f"retry {item['attributes'].get('title', '')}")
                ids.append(item["uniqueIdentifier"])
                f.write(json.dumps(item) + "\n")
    return path, ids


def present(endpoint):
    """Every uniqueIdentifier a query for the corpus finds, duplicates kept."""
    with Client(endpoint, timeout=30) as c:
        events = list(c.query('title == "retry*"', fetch=[]))
    assert events[-1][1]["failedShards"] == []
    return [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]


def kill_during(process, cluster, names, every=1.0, rounds=4):
    """Kills (SIGKILL) the named children of ``up`` in turn while ``process``
    runs; returns what was killed."""
    killed = []

    def run():
        for n in range(rounds):
            time.sleep(every)
            if process.poll() is not None:
                return
            name = names[n % len(names)]
            pid = child_pid(cluster.process, name)
            if pid:
                os.kill(pid, signal.SIGKILL)
                killed.append(name)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, killed


def check_exactly_once(cluster, ids, killed, output):
    assert killed, "nothing was killed while publishing"
    assert wait_until(lambda: _served(cluster.endpoint), timeout=30)
    found = present(cluster.endpoint)
    assert len(found) == len(set(found)), f"{len(found) - len(set(found))} items are present more than once"
    missing = set(ids) - set(found)
    assert not missing, f"{len(missing)} acknowledged items are missing, e.g. {sorted(missing)[:5]}\n{output}"
    assert set(found) == set(ids)


def _served(endpoint):
    try:
        with Client(endpoint, timeout=2) as c:
            pong = c.ping()
            return len(pong["servedShards"]) == pong["shardCount"]
    except Exception:  # noqa: BLE001 - not up yet
        return False


def test_limelight_publish_survives_killed_indexers(cluster, corpus):
    path, ids = corpus
    command = [str(bin_dir() / "limelight"), "publish", str(path), "--endpoint", cluster.endpoint,
               "--batch-size", "100", "--window", "4", "--ack-timeout", "5", "--retry-for", "120", "--quiet"]
    publish = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killer, killed = kill_during(publish, cluster, ["indexer-0", "indexer-1"], every=0.7, rounds=4)
    out, err = publish.communicate(timeout=300)
    killer.join()
    print(f"killed {killed}; publish said: {err.strip()[-300:]}")
    assert publish.returncode == 0, err
    assert f"published {len(ids)} items" in err
    check_exactly_once(cluster, ids, killed, err)


def test_limelight_publish_survives_killed_coordinator_query_worker_and_indexer(cluster, corpus):
    path, ids = corpus
    command = [str(bin_dir() / "limelight"), "publish", str(path), "--endpoint", cluster.endpoint,
               "--batch-size", "100", "--window", "4", "--ack-timeout", "3", "--retry-for", "120", "--quiet"]
    publish = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killer, killed = kill_during(publish, cluster, ["coordinator", "query-0", "indexer-1"], every=1.0, rounds=3)
    out, err = publish.communicate(timeout=300)
    killer.join()
    print(f"killed {killed}; publish said: {err.strip()[-300:]}")
    assert publish.returncode == 0, err
    check_exactly_once(cluster, ids, killed, err)


def test_python_producer_survives_killed_indexers(cluster, corpus):
    path, ids = corpus
    command = [sys.executable, str(CLIENTS / "publish.py"), str(path), "--endpoint", cluster.endpoint,
               "--batch-size", "100", "--window", "4", "--ack-timeout", "5", "--retry-for", "120"]
    publish = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killer, killed = kill_during(publish, cluster, ["indexer-1", "indexer-0"], every=0.7, rounds=4)
    out, err = publish.communicate(timeout=300)
    killer.join()
    print(f"killed {killed}; publish.py said: {out.strip()} {err.strip()[-300:]}")
    assert publish.returncode == 0, out + err
    assert out.startswith(f"{len(ids)} stored, 0 rejected")
    check_exactly_once(cluster, ids, killed, out + err)


class PongOnly(threading.Thread):
    """A ROUTER socket that answers pings and nothing else: publishes are never acknowledged."""

    def __init__(self):
        super().__init__(daemon=True)
        import zmq

        self.zmq = zmq
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.endpoint = f"tcp://127.0.0.1:{self.socket.bind_to_random_port('tcp://127.0.0.1')}"
        self.publishes = 0
        self.stopping = False

    def run(self):
        while not self.stopping:
            if not self.socket.poll(100):
                continue
            frames = self.socket.recv_multipart()
            route = frames[0]
            message = json.loads(frames[-1])
            if message["type"] == "ping":
                pong = {"v": 1, "type": "pong", "id": message["id"], "shardCount": 1, "servedShards": [0]}
                self.socket.send_multipart([route, json.dumps(pong).encode()])
            elif message["type"] == "publish":
                self.publishes += 1

    def stop(self):
        self.stopping = True
        self.join()
        self.socket.close()


@pytest.mark.parametrize("producer", ["limelight", "publish.py"])
def test_unacknowledged_items_are_named_and_exit_5(tmp_path, producer):
    """A server that never acknowledges: every item is named as not
    acknowledged after the time limit, the batch was resent, and the exit status is 5."""
    require_binaries("limelight")
    path = tmp_path / "two.jsonl"
    path.write_text('{"uniqueIdentifier": "lost:1", "attributes": {}}\n{"uniqueIdentifier": "lost:2", "attributes": {}}\n')
    server = PongOnly()
    server.start()
    if producer == "limelight":
        command = [str(bin_dir() / "limelight"), "publish", str(path), "--quiet"]
    else:
        command = [sys.executable, str(CLIENTS / "publish.py"), str(path)]
    try:
        done = subprocess.run(command + ["--endpoint", server.endpoint, "--ack-timeout", "0.5", "--retry-for", "3"],
                              capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"{path}:1: not acknowledged lost:1" in done.stderr
    assert f"{path}:2: not acknowledged lost:2" in done.stderr
    assert server.publishes >= 2, "the unacknowledged batch should have been sent again"
