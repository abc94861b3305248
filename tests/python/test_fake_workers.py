"""Coordinator ↔ worker traffic, captured by fake workers written in Python.

A FakeWorker is a DEALER socket that connects to the worker endpoint of a real
cluster of this module's own, registers, heartbeats, and answers what the
coordinator sends it; every message in both directions is checked against the
schemas. Registered beside the real workers, a fake indexer receives every
write for its shards (writes go to every replica), and a fake query worker
receives some of the shard queries (the coordinator round-robins between the
query workers of a shard).
"""

import itertools
import subprocess
import sys
import time

import pytest

from harness import CLIENTS, Client, FakeWorker, indexer_handler, start_cluster, stop_cluster, wait_until

SHARDS = [0, 1, 2, 3]
_names = itertools.count(1)


@pytest.fixture
def fakes(private_cluster):
    """Starts fake workers: ``register=False`` never registers, ``accepted=False``
    does not wait for the registration to be accepted. Stops them after the
    test and waits until the coordinator has forgotten them, so tests do not
    see each other's fakes."""
    started = []

    def start(role, shards=SHARDS, handler=None, register=True, accepted=True):
        worker = FakeWorker(private_cluster.workers_endpoint, f"fake-{role}-{next(_names)}", role, shards, handler, register,
                            secret_file=private_cluster.data / "cluster.secret")
        worker.start()
        started.append(worker)
        if register and accepted:
            assert worker.registered.wait(10), f"{worker.worker_id} was not registered: {worker.received}"
        return worker

    yield start
    for worker in started:
        worker.stop()
    ids = {w.worker_id for w in started}
    with Client(private_cluster.endpoint) as c:
        assert wait_until(lambda: not ids & {w["id"] for w in c.stats()["workers"]}, timeout=15)
    for worker in started:
        assert worker.errors == [], worker.errors


@pytest.fixture
def client(private_cluster, traffic):
    with Client(private_cluster.endpoint, timeout=15, observer=traffic) as c:
        yield c


def fake_item(shard):
    return {"uniqueIdentifier": f"fake:{shard}", "domainIdentifier": "test.fake",
            "attributes": {"title": f"Fake result of shard {shard}"}}


def answering_query_worker(message):
    """Answers each shard query with one hit and a clean shard_done."""
    if message["type"] != "shard_query":
        return []
    shard = message["shard"]
    return [("shard_batch", {"shard": shard, "seq": 1, "hits": [{"item": fake_item(shard)}]}),
            ("shard_done", {"shard": shard, "count": 1})]


def failing_query_worker(message):
    """Fails every shard query it gets."""
    if message["type"] != "shard_query":
        return []
    return [("shard_done", {"shard": message["shard"], "count": 0,
                            "error": {"code": "query_failed", "message": "the fake shard is broken"}})]


def test_register_and_heartbeat(fakes, private_cluster):
    worker = fakes("query")
    [registered] = [m for m in worker.received if m["type"] == "registered"]
    assert registered["shardCount"] == 4 and registered["heartbeatMs"] > 0
    assert registered["id"] == f"reg-{worker.worker_id}"
    worker.wait_for("heartbeat")
    with Client(private_cluster.endpoint) as c:
        [record] = [w for w in c.stats()["workers"] if w["id"] == worker.worker_id]
    assert record["role"] == "query" and record["shards"] == SHARDS


def test_registration_for_a_missing_shard_is_refused(fakes):
    # First asked to register again: a split adding the shard may be recorded
    # and not read yet. Registering again once the coordinator has read the
    # control plane, it is refused.
    worker = fakes("indexer", shards=[0, 9], accepted=False)
    first = worker.wait_for("error")
    assert first["code"] == "not_active" and "9" in first["message"] and "split" in first["message"], first
    error = first
    deadline = time.monotonic() + 15
    while error["code"] == "not_active" and time.monotonic() < deadline:
        time.sleep(0.5)
        worker.register_again()
        error = worker.wait_for("error")
    assert error["code"] == "bad_shard"
    assert error["id"] == f"reg-{worker.worker_id}"
    assert "9" in error["message"]
    assert not worker.registered.is_set()


def test_unregistered_worker_is_told_to_register(fakes):
    worker = fakes("query", register=False)
    error = worker.wait_for("error")
    assert error["code"] == "unregistered"
    assert error["id"] == "hb"


def test_write_reaches_the_fake_replica(fakes, client, traffic):
    indexer = fakes("indexer", handler=indexer_handler)
    items = [{"uniqueIdentifier": f"replica:{n}", "domainIdentifier": f"test.replica.d{n}", "attributes": {"title": f"Item {n}"}}
             for n in range(6)]
    ack = client.publish(items, batch="replica-1")
    assert (ack["stored"], ack["rejected"]) == (6, 0)
    writes = [m for m in indexer.received if m["type"] == "write"]
    assert sorted(i["uniqueIdentifier"] for w in writes for i in w["items"]) == sorted(i["uniqueIdentifier"] for i in items)
    for write in writes:
        here = {i["uniqueIdentifier"] for i in write["items"]}
        # Items of the batch that live on other shards are evicted from this one.
        assert set(write["evict"]) == {i["uniqueIdentifier"] for i in items} - here
    assert traffic.received("publish_ack") == [ack]
    assert not [m for m in indexer.received if m["type"] == "error"]


def failing_indexer(message):
    """Fails every write, as an indexer whose disk is full does."""
    if message["type"] != "write":
        return indexer_handler(message)
    return [("error", {"code": "store_failed", "message": "the fake replica cannot write"})]


def test_an_item_is_stored_only_when_every_replica_committed_it(fakes, client):
    # The real indexer stores the batch, the fake replica fails it: the item
    # is on one replica only, so it is not acknowledged as stored.
    fakes("indexer", handler=failing_indexer)
    items = [{"uniqueIdentifier": f"quorum:{n}", "domainIdentifier": f"test.quorum.d{n}", "attributes": {"title": f"Item {n}"}}
             for n in range(4)]
    ack = client.publish(items, batch="quorum-1")
    assert (ack["stored"], ack["rejected"]) == (0, 4)
    assert {r["error"]["code"] for r in ack["results"]} == {"store_failed"}


def test_a_replica_lost_before_committing_fails_its_items(fakes, client, private_cluster):
    # The fake replica takes the write and never answers; it is then stopped,
    # and once the coordinator has declared it lost the items come back
    # shard_unavailable (resend), though the real replica committed them.
    silent = fakes("indexer", handler=lambda m: indexer_handler(m) if m["type"] != "write" else [])
    items = [{"uniqueIdentifier": f"lost:{n}", "domainIdentifier": f"test.lost.d{n}", "attributes": {"title": f"Item {n}"}}
             for n in range(4)]
    request = client.send_request("publish", items=items, batch="lost-1")
    assert silent.wait_for("write")
    silent.stop()
    ack = client.next_reply(request, timeout=20)
    client.finish(request)
    assert (ack["stored"], ack["rejected"]) == (0, 4), ack
    assert {r["error"]["code"] for r in ack["results"]} == {"shard_unavailable"}
    assert all(f"replica {silent.worker_id}" in r["error"]["message"] for r in ack["results"])


def test_delete_and_declare_reach_the_fake_indexer(fakes, client):
    indexer = fakes("indexer", handler=indexer_handler)
    client.delete(domains=["test.replica"])
    deletes = [m for m in indexer.received if m["type"] == "delete"]
    assert deletes, "the fake indexer got no delete"
    assert sorted(s for d in deletes for s in d["shards"]) == SHARDS
    assert all(d["domains"] == ["test.replica"] for d in deletes)
    client.declare([{"name": "fakeDate", "type": "date"}])
    # Two rounds: every indexer checks the declaration, then declares it.
    check, declare = [m for m in indexer.received if m["type"] == "declare"]
    assert check["check"] is True and check["attributes"] == [{"name": "fakeDate", "type": "date"}]
    assert "check" not in declare and declare["attributes"] == [{"name": "fakeDate", "type": "date"}]


def test_shard_query_answered_by_the_fake(fakes, client, traffic):
    worker = fakes("query", handler=answering_query_worker)
    events = list(client.query('title == "*"', fetch=["title"]))
    queries = [m for m in worker.received if m["type"] == "shard_query"]
    # The coordinator round-robins between the two query workers of each
    # shard, so the fake gets some of the four shards (today: two).
    assert queries, "the fake got no shard query"
    for q in queries:
        assert q["plan"]["predicate"]["op"] == "exists"
        assert q["plan"]["fetchAttributes"] == ["title"]
    found = {i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v}
    assert {f"fake:{q['shard']}" for q in queries} <= found
    assert not [m for m in worker.received if m["type"] == "error"]
    completion = events[-1][1]
    assert completion["failedShards"] == [] and completion["count"] == len(found)
    assert [{k: v for k, v in m.items() if k not in ("type", "v")} for m in traffic.completions()] \
        == [{k: v for k, v in completion.items() if k not in ("type", "v")}]


def test_failed_shard_is_named_and_query_py_exits_4(fakes, private_cluster):
    worker = fakes("query", handler=failing_query_worker)
    done = subprocess.run([sys.executable, str(CLIENTS / "query.py"), 'title == "*"', "--endpoint", private_cluster.endpoint],
                          capture_output=True, text=True, timeout=60)
    failed = sorted(m["shard"] for m in worker.received if m["type"] == "shard_query")
    assert failed, "the fake got no shard query"
    assert done.returncode == 4, done.stderr
    for shard in failed:
        assert f"shard {shard} missing from the result: the fake shard is broken" in done.stderr


def test_cancel_reaches_the_query_worker(fakes, client, traffic):
    worker = fakes("query")  # takes shard queries and never answers them
    stream = client.query('title == "*"')
    shard_query = worker.wait_for("shard_query")
    stream.cancel()
    events = list(stream)
    assert events[-1][0] == "completion" and events[-1][1]["cancelled"] is True
    [sent] = traffic.sent("cancel")
    assert sent["query"] == stream.id
    cancel = worker.wait_for("cancel")
    assert cancel["query"] == shard_query["id"]


def test_silent_shard_fails_at_the_deadline(fakes, client):
    worker = fakes("query")
    events = list(client.query('title == "*"', deadline_ms=1500))
    silent = sorted(m["shard"] for m in worker.received if m["type"] == "shard_query")
    assert silent, "the fake got no shard query"
    completion = events[-1][1]
    assert sorted(f["shard"] for f in completion["failedShards"]) == silent
    assert all("deadline" in f["reason"] for f in completion["failedShards"])


def answering_search_worker(message):
    """Answers each shard search with one ranked hit, a count and facet counts."""
    if message["type"] != "shard_search":
        return []
    shard = message["shard"]
    return [("shard_search_result", {
        "shard": shard, "nbHits": 10,
        "hits": [{"id": f"fake:{shard}", "item": fake_item(shard), "rank": {"words": 1, "typos": 0, "proximity": 0,
                                                                          "attribute": 0, "exactAttribute": 1000,
                                                                          "exactWords": 1, "custom": [0, None]}}],
        "facets": {"section": {"fake": 10}}, "facetStats": {"size": [1, 5, 20, 10]}, "exhaustiveFacetsCount": True})]


def test_shard_search_answered_by_the_fake(fakes, client, traffic):
    worker = fakes("query", handler=answering_search_worker)
    response = client.search({"query": "Fake", "facets": ["section", "size"], "hitsPerPage": 50})
    searches = [m for m in worker.received if m["type"] == "shard_search"]
    assert searches, "the fake got no shard search"
    for s in searches:
        assert s["plan"]["words"] == ["fake"] and s["plan"]["window"] == 50
        assert s["plan"]["facets"] == ["section", "size"]
    # The fake's shards count 10 each, and its counts and sums add up in the merge.
    fake_shards = len(searches)
    assert response["nbHits"] >= 10 * fake_shards
    assert response["facets"]["section"]["fake"] == 10 * fake_shards
    assert response["facets_stats"]["size"]["sum"] >= 20 * fake_shards
    assert {f"fake:{s['shard']}" for s in searches} <= {h["objectID"] for h in response["hits"]}
    assert response["failedShards"] == []
    assert traffic.received("search_result")[0]["response"]["nbHits"] == response["nbHits"]


def test_failed_shard_search_is_retried_on_another_replica(fakes, client):
    baseline = client.search({"query": "", "hitsPerPage": 0})
    worker = fakes("query", handler=lambda m: failing_query_worker({**m, "type": "shard_query"}) if m["type"] == "shard_search" else [])
    # Until the fake is asked: the coordinator round-robins between query workers.
    for _ in range(10):
        response = client.search({"query": "", "hitsPerPage": 0})
        if any(m["type"] == "shard_search" for m in worker.received):
            break
    assert any(m["type"] == "shard_search" for m in worker.received), "the fake got no shard search"
    # The shard the fake failed was asked again of the real query worker: the answer is whole.
    assert response["failedShards"] == []
    assert response["nbHits"] == baseline["nbHits"]


def test_a_replica_that_lags_while_alive_is_taken_as_lost_and_writes_go_on(tmp_path):
    """A replica whose heartbeats go on but which leaves a write unanswered
    (a stalled disk) would hold every publish of its shard: once it has left
    one unanswered `--replica-lag-ms` after the other replica committed it,
    the coordinator takes it as lost. The write in flight comes back
    shard_unavailable (resend), and the resend is stored on the real replica
    alone, without waiting for the laggard."""
    cluster = start_cluster(tmp_path / "lag", extra=["--replica-lag-ms", "1000"])
    lagging = FakeWorker(cluster.workers_endpoint, "fake-lagging-indexer", "indexer", SHARDS,
                         lambda m: indexer_handler(m) if m["type"] != "write" else [],
                         secret_file=cluster.data / "cluster.secret")
    try:
        lagging.start()
        assert lagging.registered.wait(10), lagging.received
        items = [{"uniqueIdentifier": f"lag:{n}", "domainIdentifier": f"test.lag.d{n}", "attributes": {"title": f"Item {n}"}}
                 for n in range(4)]
        with Client(cluster.endpoint, timeout=20) as c:
            started = time.monotonic()
            first = c.publish(items, batch="lag-1")
            waited = time.monotonic() - started
            assert (first["stored"], first["rejected"]) == (0, 4), first
            assert {r["error"]["code"] for r in first["results"]} == {"shard_unavailable"}
            assert all("fake-lagging-indexer" in r["error"]["message"] for r in first["results"]), first
            assert 1.0 <= waited < 10, waited
            again = c.publish(items, batch="lag-2")
            assert (again["stored"], again["rejected"]) == (4, 0), again
            counters = c.stats()["counters"]
            assert counters.get("replicas.lagging", 0) >= 1 and counters.get("workers.lost", 0) >= 1, counters
            assert "fake-lagging-indexer" not in {w["id"] for w in c.stats()["workers"]}
        assert lagging.errors == [], lagging.errors
    finally:
        lagging.stop()
        stop_cluster(cluster.process)
