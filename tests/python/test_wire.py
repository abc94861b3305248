"""Real client ↔ coordinator traffic, captured from a running cluster: every
message the Python client sends or receives is checked against its schema as
it passes (the `client` fixture's observer), and each test also checks what
the replies say."""

import pytest

import schemas
from harness import Client, Traffic
from limelight_client import LimelightError


def test_ping_is_answered_with_pong(client, traffic):
    pong = client.ping()
    assert pong["shardCount"] == 4
    assert pong["servedShards"] == [0, 1, 2, 3]
    assert [m["id"] for m in traffic.received("pong")] == [traffic.sent("ping")[0]["id"]]


def test_publish_ack_names_each_rejection(cluster):
    items = [
        {"uniqueIdentifier": "wire:good-1", "domainIdentifier": "test.wire", "attributes": {"title": "Good one"}},
        {"uniqueIdentifier": "wire:bad-date", "domainIdentifier": "test.wire", "expirationDate": "next tuesday"},
        {"attributes": {"title": "no identifier"}},
        {"uniqueIdentifier": "wire:good-2", "domainIdentifier": "test.wire.sub", "attributes": {"title": "Good two", "rank": 2}},
        {"uniqueIdentifier": "wire:bad-title", "attributes": {"title": 42}},
    ]
    # The bad items break the item schema on purpose: check the replies only.
    traffic = Traffic(check_sent=False)
    with Client(cluster.endpoint, timeout=30, observer=traffic) as c:
        ack = c.publish(items, batch="wire-batch-1")
    assert traffic.received("publish_ack") == [ack]
    assert ack["batch"] == "wire-batch-1"
    assert (ack["stored"], ack["rejected"]) == (2, 3)
    by_index = {r["index"]: r for r in ack["results"]}
    assert sorted(by_index) == [0, 1, 2, 3, 4]
    assert [by_index[i]["status"] for i in range(5)] == ["stored", "rejected", "rejected", "stored", "rejected"]
    assert by_index[1]["error"]["code"] == "invalid_date"
    assert by_index[1]["error"]["field"] == "expirationDate"
    assert by_index[2]["error"]["code"] == "missing_identifier"
    assert by_index[4]["error"]["code"] == "wrong_type"
    assert by_index[4]["error"]["field"] == "attributes.title"


def test_query_streams_batches_then_one_completion(client, traffic, grocer):
    events = list(client.query('title == "*Apple"', fetch=["title", "price"], batch_size=2))
    kinds = [k for k, _ in events]
    assert kinds[-1] == "completion" and set(kinds[:-1]) == {"batch"}
    items = [i for k, v in events if k == "batch" for i in v]
    apples = {i["uniqueIdentifier"] for i in grocer if i["attributes"]["title"].endswith("Apple")}
    assert {i["uniqueIdentifier"] for i in items} == apples
    assert all(len(v) <= 2 for k, v in events if k == "batch")
    assert all(set(i["attributes"]) <= {"title", "price"} for i in items)
    completion = events[-1][1]
    assert completion["count"] == len(items)
    assert completion["failedShards"] == [] and completion["cancelled"] is False
    batches = traffic.received("result_batch")
    assert [b["seq"] for b in batches] == list(range(1, len(batches) + 1))
    query_id = traffic.sent("query")[0]["id"]
    assert {m["id"] for m in batches + traffic.completions()} == {query_id}


def test_a_query_that_asks_gets_its_completion_in_the_last_batch(client, traffic, grocer):
    """completionInBatch (the Python and Swift clients send it): a query that
    reaches its limit ends in the same step as its last batch, so that batch
    carries the completion and no completion message follows. A query sent
    without the field gets the protocol's first form: batches, then a
    completion message, for clients written to it."""
    apples = sum(i["attributes"]["title"].endswith("Apple") for i in grocer)
    assert apples > 2
    events = list(client.query('title == "*Apple"', fetch=["title"], limit=2))
    assert events[-1][0] == "completion" and {k for k, _ in events[:-1]} == {"batch"}
    assert sum(len(v) for k, v in events if k == "batch") == 2 and events[-1][1]["count"] == 2
    [query] = traffic.sent("query")
    assert query["completionInBatch"] is True
    batches = traffic.received("result_batch")
    assert all("completion" not in b for b in batches[:-1])
    assert batches[-1]["completion"]["count"] == 2 and batches[-1]["completion"]["cancelled"] is False
    assert traffic.received("completion") == []
    assert events[-1][1] == dict(batches[-1]["completion"], type="completion", id=batches[-1]["id"], v=1)

    plain = client.send_request("query", language="spotlight", query='title == "*Apple"', fetchAttributes=["title"], limit=2)
    replies = [client.next_reply(plain, 30)]
    while replies[-1]["type"] != "completion":
        replies.append(client.next_reply(plain, 30))
    client.finish(plain)
    assert [m["type"] for m in replies][-1] == "completion" and replies[-1]["count"] == 2
    assert all(m["type"] == "result_batch" and "completion" not in m for m in replies[:-1])
    assert sum(len(m["items"]) for m in replies[:-1]) == 2


def test_word_matching_follows_apple(client, grocer):
    """Apple's rule: "Window"w matches MyWindowClass but not NSWindow."""
    events = list(client.query('title == "Crisp"w', fetch=["title"]))
    titles = sorted(i["attributes"]["title"] for k, v in events if k == "batch" for i in v)
    assert titles == ["Cosmic Crisp Apple", "EverCrisp Apple"]


def test_sorted_query_with_limit(client, grocer):
    events = list(client.query('price > 0', fetch=["price"], sort=["price:desc"], limit=3))
    prices = [i["attributes"]["price"] for k, v in events if k == "batch" for i in v]
    expected = sorted((i["attributes"]["price"] for i in grocer), reverse=True)[:3]
    assert prices == expected
    assert events[-1][1]["count"] == 3


def test_plan_language_query(client, traffic, grocer):
    predicate = {"op": "domain", "domains": ["com.greengrocer.produce.fruit.citrus"]}
    events = list(client.query(None, language="plan", plan=predicate, fetch=["title"]))
    found = {i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v}
    citrus = {i["uniqueIdentifier"] for i in grocer if i["domainIdentifier"].endswith(".citrus")}
    assert found == citrus
    assert traffic.sent("query")[0]["plan"] == predicate


def test_bad_query_is_an_error_with_position(client, traffic):
    with pytest.raises(LimelightError) as caught:
        list(client.query('title == "Window"w && '))
    assert caught.value.code == "bad_query"
    assert isinstance(caught.value.position, int)
    [error] = traffic.received("error")
    assert error["id"] == traffic.sent("query")[0]["id"]


def test_unknown_language_is_an_error(client):
    with pytest.raises(LimelightError) as caught:
        list(client.query("anything", language="sql"))
    assert caught.value.code == "unsupported_language"


def test_cancel_after_the_completion_is_ignored(client, traffic, debian):
    # A running query's cancel is tested where it cannot race the query's end:
    # test_fake_workers.py's silent fake worker holds the query open. Here the
    # query is over before its cancel: the cancel gets no reply and changes nothing.
    stream = client.query('contentDescription == "*"', batch_size=50)
    events = list(stream)
    completion = events[-1][1]
    assert events[-1][0] == "completion" and completion["cancelled"] is False
    assert completion["count"] == sum(len(v) for k, v in events if k == "batch") >= len(debian)
    client.cancel(stream.id)
    [cancel] = traffic.sent("cancel")
    assert cancel["query"] == stream.id
    assert client.ping()["type"] == "pong"
    # Nothing more came for the query or the cancel: the one completion, and the pong.
    assert [m["id"] for m in traffic.completions()] == [stream.id]
    assert not [m for d, m in traffic.messages if d == "received" and m.get("id") == cancel["id"]]


def _shard(domain, shard_count=4):
    """The coordinator's shard of a domain (FNV-1a, Sources/WireProtocol/Sharding.swift)."""
    h = 0xcbf29ce484222325
    for b in domain.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % shard_count


def test_delete_with_shards_deletes_only_there(client, traffic):
    items = [{"uniqueIdentifier": f"shards:{n}", "domainIdentifier": f"test.shards.d{n}", "attributes": {"title": f"sharded {n}"}}
             for n in range(16)]
    by_shard = {}
    for item in items:
        by_shard.setdefault(_shard(item["domainIdentifier"]), set()).add(item["uniqueIdentifier"])
    assert len(by_shard) >= 3, "the items should span several shards"
    assert client.publish(items)["stored"] == len(items)
    target = sorted(by_shard)[0]
    # Every id named, one shard asked: only that shard's items go.
    assert client.delete(ids=[i["uniqueIdentifier"] for i in items], shards=[target]) == len(by_shard[target])
    assert traffic.sent("delete")[0]["shards"] == [target]
    left = {i["uniqueIdentifier"] for k, v in client.query('title == "sharded*"', fetch=[]) if k == "batch" for i in v}
    assert left == {i["uniqueIdentifier"] for i in items} - by_shard[target]
    assert client.delete(domains=["test.shards"]) == len(left)


def test_delete_ack_counts_subdomains(client, traffic):
    items = [{"uniqueIdentifier": f"delete:{n}", "domainIdentifier": d, "attributes": {"title": n}}
             for n, d in [("a", "test.delete"), ("b", "test.delete.sub"), ("c", "test.deleteme"), ("d", "test.keep")]]
    assert client.publish(items)["stored"] == 4
    assert client.delete(domains=["test.delete"]) == 2
    assert client.delete(ids=["delete:c", "delete:nothing"]) == 1
    assert client.delete(ids=["delete:c"]) == 0
    assert [m["deleted"] for m in traffic.received("delete_ack")] == [2, 1, 0]
    remaining = [i["uniqueIdentifier"] for k, v in client.query('title == "*"', fetch=[]) if k == "batch" for i in v
                 if i["uniqueIdentifier"].startswith("delete:")]
    assert remaining == ["delete:d"]


def test_delete_of_nothing_is_an_error(cluster):
    # The request breaks delete.schema.json on purpose: check the reply only.
    traffic = Traffic(check_sent=False)
    with Client(cluster.endpoint, observer=traffic) as c, pytest.raises(LimelightError) as caught:
        c.request("delete")
    assert caught.value.code == "invalid_message"
    assert len(traffic.received("error")) == 1


def test_declare_ack_and_a_declared_date(client, traffic):
    client.declare([{"name": "harvestedAt", "type": "date", "searchableByDefault": False}])
    assert len(traffic.received("declare_ack")) == 1
    ack = client.publish([{"uniqueIdentifier": "declared:1", "domainIdentifier": "test.declare",
                           "attributes": {"title": "Declared", "harvestedAt": "2026-09-01T00:00:00Z"}},
                          {"uniqueIdentifier": "declared:2", "domainIdentifier": "test.declare",
                           "attributes": {"title": "Not a date", "harvestedAt": "soon"}}])
    assert (ack["stored"], ack["rejected"]) == (1, 1)
    assert ack["results"][1]["error"]["field"] == "attributes.harvestedAt"


def test_stats_reply(client, traffic):
    stats = client.stats()
    assert stats["shardCount"] == 4
    assert [s["shard"] for s in stats["shards"]] == [0, 1, 2, 3]
    assert {w["role"] for w in stats["workers"]} == {"indexer", "query"}
    assert traffic.received("stats_reply")[0]["stats"] == stats


def test_worker_messages_from_a_client_are_refused(client):
    with pytest.raises(LimelightError) as caught:
        client.request("write", shard=0, items=[], evict=[])
    assert caught.value.code == "unexpected_type"


def test_requests_in_flight_are_matched_by_id(client):
    ids = [client.send_request("ping") for _ in range(5)] + [client.send_request("stats")]
    replies = {}
    while len(replies) < len(ids):
        reply = client.next_reply([i for i in ids if i not in replies])
        replies[reply["id"]] = reply
    assert [replies[i]["type"] for i in ids] == ["pong"] * 5 + ["stats_reply"]
    for reply in replies.values():
        schemas.assert_valid(reply)


def test_cloudkit_predicate_pages_with_a_cursor(client, traffic, grocer):
    """CKQuery over the grocer: record type public.item, a predicate with
    arguments, sorted by price then identifier, three at a time; each page's
    completion carries the cursor of the next, the last none."""
    expected = sorted((i for i in grocer if i["attributes"].get("contentType") == "public.item"
                       and i["attributes"].get("price", 0) > 1),
                      key=lambda i: (-i["attributes"]["price"], i["uniqueIdentifier"]))
    seen, cursor, pages = [], None, 0
    while True:
        events = list(client.predicate("public.item", "price > %@", 1, sort=["price:desc"], limit=3,
                                       cursor=cursor, fetch=["price"]))
        pages += 1
        seen += [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]
        cursor = events[-1][1].get("cursor")
        if cursor is None:
            break
        assert pages < 100
    assert seen == [i["uniqueIdentifier"] for i in expected]
    assert len(traffic.completions()) == pages
    assert all(m["language"] == "cloudkit" and m["arguments"] == [1] for m in traffic.sent("query"))


def test_cloudkit_rules_and_cursors_are_errors(client, traffic, grocer):
    with pytest.raises(LimelightError) as e:
        list(client.predicate("public.item", "title ENDSWITH 'Apple'"))
    assert e.value.code == "bad_query" and e.value.position == 6 and "nspredicate" in e.value.message
    events = list(client.predicate("public.item", "title ENDSWITH 'Apple'", dialect="nspredicate", limit=1))
    cursor = events[-1][1]["cursor"]
    with pytest.raises(LimelightError) as e:
        list(client.predicate("public.item", "title ENDSWITH 'Pear'", dialect="nspredicate", cursor=cursor))
    assert e.value.code == "invalid_cursor" and "another query" in e.value.message
    with pytest.raises(LimelightError) as e:
        list(client.predicate("public.item", "TRUEPREDICATE", cursor="not-a-cursor"))
    assert e.value.code == "invalid_cursor"
