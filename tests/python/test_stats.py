"""The coordinator's HTTP stats endpoint."""

import json
import urllib.error
import urllib.request

import pytest

import schemas


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers.get("Content-Type"), json.loads(response.read())


def test_stats_url_serves_shards_and_workers(cluster):
    status, content_type, stats = get(cluster.stats_url)
    assert status == 200
    assert content_type.startswith("application/json")
    schemas.assert_valid(stats, "stats_reply.schema.json#/$defs/stats")
    assert stats["shardCount"] == 4
    assert stats["servedShards"] == [0, 1, 2, 3]
    assert [s["shard"] for s in stats["shards"]] == [0, 1, 2, 3]
    for shard in stats["shards"]:
        assert shard["indexers"] and shard["queryWorkers"], shard
    roles = {w["role"] for w in stats["workers"]}
    assert roles == {"indexer", "query"}
    served = {(w["role"], s) for w in stats["workers"] for s in w["shards"]}
    assert served == {(r, s) for r in roles for s in range(4)}


def test_health_and_unknown_paths(cluster):
    base = cluster.stats_url.rsplit("/", 1)[0]
    status, _, health = get(base + "/health")
    assert status == 200 and health["healthy"] is True
    with pytest.raises(urllib.error.HTTPError) as caught:
        get(base + "/nothing-here")
    assert caught.value.code == 404
