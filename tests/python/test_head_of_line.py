"""No head-of-line blocking in the coordinator (issue 9, point 5).

- A client that sends queries and never reads their results must not delay
  another client's query: each peer's messages are queued on their own.
- While writes are throttled (``--max-pending-writes`` in flight, behind a
  fake indexer that never acknowledges), pings, stats and queries are still
  answered, later publishes wait in a bounded queue, and past it a publish is
  answered ``busy``.
"""

import json
import subprocess
import time

import pytest
import zmq

from harness import Client, FakeWorker, bin_dir, publish_all, read_jsonl, require_binaries, start_cluster, stop_cluster, wait_until


@pytest.fixture
def coordinator(tmp_path):
    """A lone coordinator (one shard) with room for 2 writes in flight and 2 waiting."""
    require_binaries("limelight-coordinator")
    log = open(tmp_path / "coordinator.log", "w")
    process = subprocess.Popen([str(bin_dir() / "limelight-coordinator"), "--listen", "tcp://127.0.0.1:0",
                                "--workers", "tcp://127.0.0.1:0", "--no-stats", "--shards", "1",
                                "--max-pending-writes", "2", "--max-waiting-writes", "2",
                                "--cluster-secret-file", str(tmp_path / "cluster.secret")],
                               stdout=subprocess.PIPE, stderr=log, text=True)
    log.close()
    line = process.stdout.readline().split()
    assert line and line[0] == "listening", (tmp_path / "coordinator.log").read_text()
    yield line[1], line[2], tmp_path / "cluster.secret"
    process.terminate()
    process.wait(10)


def test_control_messages_pass_while_writes_are_throttled(coordinator):
    clients, workers, secret = coordinator
    indexer = FakeWorker(workers, "never-acks", "indexer", [0], handler=lambda m: [], secret_file=secret)
    indexer.start()
    try:
        assert indexer.registered.wait(10)
        producer = zmq.Context.instance().socket(zmq.DEALER)
        producer.setsockopt(zmq.LINGER, 0)
        producer.connect(clients)
        for n in range(5):
            item = {"uniqueIdentifier": f"held:{n}", "attributes": {"title": "held"}}
            producer.send(json.dumps({"v": 1, "type": "publish", "id": f"p{n}", "items": [item]}).encode())
        # Two in flight, two waiting: the fifth is refused at once, by name.
        assert producer.poll(10_000), "no answer to the publish past both limits"
        busy = json.loads(producer.recv())
        assert (busy["type"], busy["id"], busy["code"]) == ("error", "p4", "busy")
        assert "2 publish batches in flight and 2 waiting" in busy["message"]
        # Meanwhile another client is answered: ping, stats, a query (the shard has no query worker).
        with Client(clients, timeout=10) as other:
            assert other.ping()["shardCount"] == 1
            assert other.stats()["shards"][0]["served"] is False
            events = list(other.query('title == "held"', deadline_ms=500))
            assert events[-1][0] == "completion"
        # And the same producer's ping too, behind its own waiting publishes.
        producer.send(b'{"v": 1, "type": "ping", "id": "still-there"}')
        assert producer.poll(10_000)
        assert json.loads(producer.recv())["id"] == "still-there"
        # Only the two in flight reached the indexer.
        writes = [m for m in indexer.received if m["type"] == "write"]
        assert sorted(w["items"][0]["uniqueIdentifier"] for w in writes) == ["held:0", "held:1"]
        producer.close()
    finally:
        indexer.stop()


@pytest.fixture
def cluster(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    c = start_cluster(tmp_path / "data", shards=4)
    items = read_jsonl("debian-packages.jsonl")
    assert publish_all(c.endpoint, items) == len(items)
    yield c, len(items)
    stop_cluster(c.process)


def test_a_stalled_client_does_not_delay_another(cluster):
    c, count = cluster
    # The stalled client asks for 200 queries of every item, one item a batch
    # (60,000 messages, far past the coordinator's per-peer high-water mark of
    # 10,000), and reads none of them.
    stalled = zmq.Context.instance().socket(zmq.DEALER)
    stalled.setsockopt(zmq.LINGER, 0)
    stalled.setsockopt(zmq.RCVHWM, 1)
    stalled.setsockopt(zmq.RCVBUF, 4096)
    stalled.connect(c.endpoint)
    for n in range(200):
        stalled.send(json.dumps({"v": 1, "type": "query", "id": f"s{n}", "query": 'title == "*"', "batchSize": 1,
                                 "fetchAttributes": ["title", "contentDescription"]}).encode())
    def counters():
        with Client(c.endpoint, timeout=10) as probe:
            return probe.stats().get("counters", {})
    # The stalled client's outbox overflows: its new messages are dropped,
    # not buffered without bound, and its queries are stopped, freeing the
    # query workers for others. (Waited for: until then its 800 shard queries
    # fill the query workers' queues, and how long the 60,000 messages take
    # to pile up depends on the machine's load.)
    assert wait_until(lambda: counters().get("outbox.dropped", 0) > 0 and counters().get("queries.abandoned", 0) > 0,
                      timeout=60), counters()
    print(f"messages dropped for the stalled client: {counters().get('outbox.dropped')}")
    # Another client's query is answered in full while the stalled one still reads nothing.
    started = time.monotonic()
    with Client(c.endpoint, timeout=30) as other:
        events = list(other.query('title == "*"', fetch=[]))
        pong = other.ping()
    took = time.monotonic() - started
    print(f"another client's query of {count} items took {took:.2f} s beside a stalled client")
    assert events[-1][0] == "completion" and events[-1][1]["count"] == count, events[-1]
    assert len(pong["servedShards"]) == 4
    stalled.close()
