"""The schemas themselves: valid draft 2020-12, one for each message type of
the Swift code, and they accept what the protocol allows and refuse what it
does not. These need no cluster."""

import json
import re

import pytest
from jsonschema import Draft202012Validator

import schemas
from harness import REPO, read_jsonl


def swift_message_types():
    """The wire names of Swift's MessageType cases, read from Messages.swift."""
    source = (REPO / "Sources" / "WireProtocol" / "Messages.swift").read_text(encoding="utf-8")
    body = re.search(r"enum MessageType\b[^{]*\{(.*?)\n\}", source, re.S).group(1)
    names = []
    for line in body.splitlines():
        line = line.split("//")[0].strip()
        if not line.startswith("case "):
            continue
        for case in line[5:].split(","):
            case = case.strip()
            raw = re.search(r'=\s*"([^"]+)"', case)
            names.append(raw.group(1) if raw else case)
    return names


def test_every_schema_is_valid_draft_2020_12():
    for name, schema in schemas.SCHEMAS.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name


def test_one_schema_per_swift_message_type():
    types = swift_message_types()
    assert len(types) == 42
    for t in types:
        assert f"{t}.schema.json" in schemas.SCHEMAS, f"no schema for {t}"
        assert schemas.SCHEMAS[f"{t}.schema.json"]["properties"]["type"] == {"const": t}
    assert sorted(schemas.SCHEMAS["envelope.schema.json"]["properties"]["type"]["enum"]) == sorted(types)


def test_every_message_schema_refers_to_the_envelope():
    for t in swift_message_types():
        assert {"$ref": "envelope.schema.json"} in schemas.SCHEMAS[f"{t}.schema.json"]["allOf"], t


@pytest.mark.parametrize("sample", ["green-grocer.jsonl", "debian-packages.jsonl"])
def test_samples_are_items(sample):
    items = read_jsonl(sample)
    assert items
    for item in items:
        assert schemas.errors(item, "item.schema.json") == [], item["uniqueIdentifier"]
    assert len({i["uniqueIdentifier"] for i in items}) == len(items)


def test_samples_are_small():
    assert (REPO / "samples" / "debian-packages.jsonl").stat().st_size < 1_000_000
    assert len(read_jsonl("debian-packages.jsonl")) == 300
    assert 35 <= len(read_jsonl("green-grocer.jsonl")) <= 50


VALID = [
    {"v": 1, "type": "challenge", "id": "reg-indexer-0", "nonce": "9f" * 32},
    {"v": 1, "type": "register", "id": "reg-indexer-0", "role": "indexer", "worker": "indexer-0", "shards": [0, 2], "nonce": "9f" * 32, "proof": "ab" * 32},
    {"v": 1, "type": "entity_donate", "id": "n1", "priority": 5, "entities": [
        {"type": "LandmarkEntity", "id": 42, "displayRepresentation": {"title": "Golden Gate", "subtitle": "Bridge", "image": "gg.png"},
         "properties": {"city": "San Francisco", "rating": 4.5}, "priority": 10, "domainIdentifier": "com.example.landmarks"}]},
    {"v": 1, "type": "entity_delete", "id": "n2", "entityType": "LandmarkEntity", "ids": ["42"]},
    {"v": 1, "type": "entity_delete", "id": "n3", "entityType": "LandmarkEntity", "shards": [0]},
    {"v": 1, "type": "entity_associate", "id": "n4", "uniqueIdentifier": "deb:0ad",
     "entity": {"type": "GameEntity", "id": "0ad", "priority": 3}},
    {"v": 1, "type": "entity_ack", "id": "n5", "count": 2},
    {"v": 1, "type": "copy_request", "id": "y1", "shard": 2, "copy": "copy-1", "offset": 0, "maxBytes": 1048576},
    {"v": 1, "type": "copy_chunk", "id": "y1", "shard": 2, "copy": "copy-1", "sequence": 40, "offset": 0, "size": 4096, "data": "U1FMaXRl"},
    {"v": 1, "type": "copy_ack", "id": "y1", "shard": 2, "copy": "copy-1", "received": 4096, "installed": True, "sequence": 40},
    {"v": 1, "type": "suggest", "id": "n6", "text": "pyth", "limit": 5, "hitsPerPage": 3, "params": {"aroundLatLng": "1,2"}},
    {"v": 1, "type": "suggest_result", "id": "n7", "suggestions": [{"suggestion": "python", "count": 12}], "failedShards": []},
    {"v": 1, "type": "spotlight", "id": "n8", "text": "python", "perDomain": 3},
    {"v": 1, "type": "spotlight_result", "id": "n9", "failedShards": [], "groups": [
        {"domainIdentifier": "org.debian.python", "total": 40, "items": [{"objectID": "deb:python3"}], "continuation": "eyJ0ZXh0Ijoi"}]},
    {"v": 1, "type": "continue", "id": "n10", "token": "eyJ0ZXh0Ijoi", "page": 2, "hitsPerPage": 20},
    {"v": 1, "type": "keys", "id": "k1", "key": "llk_" + "0" * 64, "action": "create", "app": "acme", "role": "search",
     "rateLimit": 5, "maxItemsPerPublish": 100},
    {"v": 1, "type": "keys_reply", "id": "k1", "apiKey": "llk_" + "a" * 64, "keys": [
        {"id": "0123456789abcdef", "app": "acme", "role": "search", "rateLimit": 5, "maxItemsPerPublish": 100,
         "description": None, "created": "2026-11-23T02:00:00Z", "revoked": None}]},
    {"v": 1, "type": "shard_search", "id": "n11", "shard": 0, "plan": {"words": ["pyth"], "window": 0,
     "filter": {"op": "exactDomain", "domains": ["org.debian"]}}, "suggest": 10, "perDomain": 3},
    {"v": 1, "type": "search", "id": "s1", "params": {"query": "vim", "facets": ["section"], "disjunctiveFacets": ["section"],
                                                      "facetFilters": [["section:editors", "section:-web"]], "numericFilters": ["installedSize > 10"],
                                                      "filters": "NOT section:doc", "page": 0, "hitsPerPage": 20, "getRankingInfo": True}},
    {"v": 1, "type": "search_result", "id": "s1", "failedShards": [], "response": {
        "hits": [{"objectID": "deb:vim", "title": "vim", "_highlightResult": {"title": {"value": "<em>vim</em>", "matchLevel": "full", "matchedWords": ["vim"], "fullyHighlighted": True}}}],
        "nbHits": 1, "page": 0, "nbPages": 1, "hitsPerPage": 20, "exhaustiveNbHits": True, "query": "vim", "params": "query=vim",
        "processingTimeMS": 3, "facets": {"section": {"editors": 1}}, "facets_stats": {}}},
    {"v": 1, "type": "ping", "id": "1"},
    {"v": 1, "type": "publish", "id": "2", "items": [
        {"uniqueIdentifier": "deb:0ad", "domainIdentifier": "org.debian.games",
         "expirationDate": "2027-06-01T00:00:00Z",
         "attributes": {"title": "0ad", "keywords": ["game::strategy"], "installedSize": 28591,
                        "completionDate": "2026-11-01T12:00:00Z", "place": {"latitude": 37.33, "longitude": -122.03}},
         "entity": {"type": "LandmarkEntity", "id": "42", "priority": 10}}]},
    {"v": 1, "type": "query", "id": "3", "language": "spotlight", "query": 'title == "Window"w',
     "fetchAttributes": ["title"], "sort": [{"attribute": "title", "ascending": False}, {"relevance": True}],
     "limit": 10, "batchSize": 5, "deadlineMs": 1000},
    {"v": 1, "type": "query", "id": "4", "language": "plan",
     "plan": {"op": "or", "of": [{"op": "domain", "domains": ["org.debian"]},
                                 {"op": "not", "of": [{"op": "range", "attribute": "installedSize", "min": 5, "maxInclusive": False, "max": 9}]}]}},
    {"v": 1, "type": "query", "id": "4b", "query": 'title == "Window"w'},
    {"v": 1, "type": "query", "id": "4c", "language": "plan",
     "plan": {"predicate": {"op": "exists", "attribute": "title"}, "sort": [{"attribute": "title", "ascending": True}], "limit": 3}},
    {"v": 1, "type": "delete", "id": "5", "domains": ["org.debian"]},
    {"v": 1, "type": "delete", "id": "6", "all": True, "shards": [2]},
    {"v": 1, "type": "error", "id": "", "code": "malformed_json", "message": "frame is not valid JSON (3 bytes)"},
    {"v": 1, "type": "completion", "id": "7", "count": 0, "failedShards": [{"shard": 1, "reason": "no live query worker"}],
     "cancelled": False, "elapsedMs": 1.5},
    {"v": 1, "type": "shard_query", "id": "q1", "shard": 0, "deadlineMs": 29990, "plan": {
        "predicate": {"op": "text", "attribute": "*", "pattern": "Win\\*dow*", "options": "cdwt"},
        "sort": [], "batchSize": 100}},
    {"v": 1, "type": "shard_query", "id": "qg", "shard": 0, "plan": {"predicate": {"op": "and", "of": [
        {"op": "geo", "around": {"latitude": 48.8566, "longitude": 2.3522}, "radius": 1500},
        {"op": "geo", "attribute": "stops", "box": [47.3165, 4.9665, 47.3424, 5.0201]}]}}},
    {"v": 1, "type": "query", "id": "ck1", "language": "cloudkit", "recordType": "Employee",
     "predicate": "favoriteColor == %@ AND distanceToLocation:fromLocation:(location, %@) < 100",
     "arguments": ["red", {"latitude": 37.783, "longitude": -122.404}],
     "sort": [{"attribute": "name", "ascending": False}], "limit": 20, "cursor": "eyJ2IjoxfQ"},
    {"v": 1, "type": "query", "id": "ns1", "language": "nspredicate", "recordType": "Person", "predicate": "name LIKE[c] 'j?n*'"},
    {"v": 1, "type": "completion", "id": "ck1", "count": 20, "failedShards": [], "cancelled": False, "elapsedMs": 3.2,
     "cursor": "eyJ2IjoxLCJxIjoiYWIiLCJhZnRlciI6WyJ4Il19"},
    {"v": 1, "type": "shard_query", "id": "qp", "shard": 1, "plan": {
        "predicate": {"op": "and", "of": [
            {"op": "every", "of": [{"op": "text", "attribute": "tags", "pattern": "a", "options": ""}]},
            {"op": "regex", "attribute": "name", "pattern": "J.n", "options": "c"},
            {"op": "identifier", "ids": ["e1"]}]},
        "sort": [{"attribute": "name"}, {"identifier": True}], "after": ["Jon", "e9"], "limit": 5}},
    {"v": 1, "type": "shard_batch", "id": "q1", "shard": 0, "seq": 1, "hits": [
        {"item": {"uniqueIdentifier": "a", "domainIdentifier": "", "attributes": {}}, "sort": [None, 3], "score": 1.5}]},
    {"v": 1, "type": "shard_batch", "id": "q1", "shard": 0, "seq": 2, "hits": [], "doneCount": 7},
    {"v": 1, "type": "write", "id": "w1", "shard": 3, "items": [{"uniqueIdentifier": "a"}], "evict": []},
    {"v": 1, "type": "heartbeat", "id": "hb"},
    {"v": 1, "type": "declare_ack", "id": "k1", "future": "fields are allowed"},
]

INVALID = [
    ({"v": 1, "type": "copy_request", "id": "y2", "shard": 0, "copy": "c", "offset": 0}, "copy_request: no maxBytes"),
    ({"v": 1, "type": "copy_chunk", "id": "y3", "shard": 0, "copy": "c", "sequence": 1, "offset": -1, "size": 2, "data": ""}, "copy_chunk: negative offset"),
    ({"v": 1, "type": "entity_delete", "id": "e1", "entityType": "A:B"}, "entity_delete: type with a colon"),
    ({"v": 1, "type": "entity_delete", "id": "e2", "entityType": "A", "ids": []}, "entity_delete: empty ids"),
    ({"v": 1, "type": "entity_donate", "id": "e3", "entities": [{"type": "T", "id": "1", "displayRepresentation": {}}]},
     "entity_donate: no title"),
    ({"v": 1, "type": "entity_associate", "id": "e4", "uniqueIdentifier": "x", "entity": {"type": "T"}}, "entity_associate: no id"),
    ({"v": 1, "type": "suggest", "id": "e5", "text": "py", "limit": 0}, "suggest: limit 0"),
    ({"v": 1, "type": "suggest_result", "id": "e6", "suggestions": [{"suggestion": "python"}], "failedShards": []},
     "suggest_result: no count"),
    ({"v": 1, "type": "spotlight", "id": "e7", "perDomain": 3}, "spotlight: no text"),
    ({"v": 1, "type": "spotlight_result", "id": "e8", "groups": [{"domainIdentifier": "a", "total": 1, "items": []}],
      "failedShards": []}, "spotlight_result: no continuation"),
    ({"v": 1, "type": "continue", "id": "e9", "token": ""}, "continue: empty token"),
    ({"v": 1, "type": "keys", "id": "k2", "action": "rotate"}, "keys: unknown action"),
    ({"v": 1, "type": "keys", "id": "k3", "action": "create", "app": "Acme.Corp", "role": "admin"}, "keys: app not one label"),
    ({"v": 1, "type": "ping", "id": "k4", "key": ""}, "envelope: empty key"),
    ({"v": 1, "type": "keys_reply", "id": "k5", "keys": [{"id": "0123456789abcdef", "app": "a", "role": "search",
      "created": "x", "revoked": None, "hash": "ab"}]}, "keys_reply: a record with a hash"),
    ({"v": 1, "type": "search", "id": "s2", "params": {"hitsPerPges": 3}}, "search: unknown parameter"),
    ({"v": 1, "type": "search", "id": "s3"}, "search: no params"),
    ({"v": 1, "type": "search_result", "id": "s4", "response": {"hits": []}}, "search_result: no counts"),
    ({"v": 1, "type": "shard_search_result", "id": "s5", "shard": 0, "hits": [], "nbHits": 0, "facets": {},
      "facetStats": {"x": [1, 2]}, "exhaustiveFacetsCount": True}, "shard_search_result: stats of two"),
    ({"v": 2, "type": "ping", "id": "1"}, "envelope: version"),
    ({"v": 1, "type": "ping"}, "envelope: no id"),
    ({"v": 1, "type": "query", "id": "1"}, "query: no language and no text"),
    ({"v": 1, "type": "query", "id": "1", "language": "spotlight"}, "query: spotlight without its text"),
    ({"v": 1, "type": "query", "id": "1", "language": "plan", "plan": {"op": "near"}}, "query: unknown op"),
    ({"v": 1, "type": "query", "id": "1", "language": "spotlight", "query": "x", "batchSize": 0}, "query: batch of 0"),
    ({"v": 1, "type": "publish", "id": "1", "items": [{"attributes": {}}]}, "publish: item without identifier"),
    ({"v": 1, "type": "publish", "id": "1", "items": [{"uniqueIdentifier": "a", "domainIdentifier": "a..b"}]}, "publish: empty domain part"),
    ({"v": 1, "type": "publish", "id": "1", "items": [{"uniqueIdentifier": "a", "expirationDate": "next week"}]}, "publish: date"),
    ({"v": 1, "type": "publish", "id": "1", "items": [{"uniqueIdentifier": "a", "attributes": {"x": {"lat": 1}}}]}, "publish: object that is no location"),
    ({"v": 1, "type": "delete", "id": "1"}, "delete: nothing named"),
    ({"v": 1, "type": "delete", "id": "1", "ids": []}, "delete: empty list only"),
    ({"v": 1, "type": "publish_ack", "id": "1", "stored": 1, "rejected": 0}, "publish_ack: no results"),
    ({"v": 1, "type": "write", "id": "w1", "shard": 0, "items": []}, "write: no evict"),
    ({"v": 1, "type": "register", "id": "r", "role": "janitor", "worker": "w", "shards": [0]}, "register: role"),
    ({"v": 1, "type": "register", "id": "r", "role": "query", "worker": "w", "shards": [0], "proof": 5}, "register: proof not text"),
    ({"v": 1, "type": "challenge", "id": "r"}, "challenge: no nonce"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "not", "of": []}}}, "plan: not of nothing"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "text", "attribute": "t", "pattern": "x", "options": "q"}}}, "plan: options"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "range", "attribute": "*"}}}, "plan: range over every attribute"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "geo", "box": [1, 2, 3]}}}, "plan: box of three"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "geo", "box": [91, 2, 3, 4]}}}, "plan: latitude past 90"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "geo"}}}, "plan: geo without an area"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "geo", "around": {"latitude": 1, "longitude": 2}}}}, "plan: circle without radius"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "geo", "box": [1, 2, 3, 4], "around": {"latitude": 1, "longitude": 2}, "radius": 5}}}, "plan: circle and box"),
    ({"v": 1, "type": "query", "id": "1", "language": "cloudkit", "predicate": "TRUEPREDICATE"}, "query: cloudkit without recordType"),
    ({"v": 1, "type": "query", "id": "1", "language": "nspredicate", "recordType": "T"}, "query: nspredicate without predicate"),
    ({"v": 1, "type": "query", "id": "1", "language": "cloudkit", "recordType": "T", "predicate": "x", "cursor": ""}, "query: empty cursor"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "regex", "attribute": "t", "pattern": "x", "options": "w"}}}, "plan: regex options"),
    ({"v": 1, "type": "shard_query", "id": "q", "shard": 0, "plan": {"predicate": {"op": "every", "of": []}}}, "plan: every of nothing"),
    ({"v": 1, "type": "error", "id": "1", "code": "x"}, "error: no message"),
]


@pytest.mark.parametrize("message", VALID, ids=lambda m: f"{m['type']}-{m['id']}")
def test_valid_messages_pass(message):
    schemas.assert_valid(message)


@pytest.mark.parametrize("message,why", INVALID, ids=[why for _, why in INVALID])
def test_invalid_messages_fail(message, why):
    ref = f"{message['type']}.schema.json"
    assert schemas.errors(message, ref), f"{why}: {json.dumps(message)} passed"
