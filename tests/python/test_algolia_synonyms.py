"""Synonyms, ``ignorePlurals`` and ``removeStopWords`` change what Algolia's
own Python client (``algoliasearch`` v4) finds through the REST API, on a
cluster as ``limelight up`` starts it (keys required): docs/algolia.md.

The examples are Algolia's documented ones: the regular synonyms
["pants", "trousers", "slacks"], the one-way synonym "tablet" → "ipad",
"galaxy tab", "NY" = "New York" (a query "NY" finds "New York Times", not
"new company in York"), "car"/"cars" and "child"/"children", "what is a
record" searching "record".
"""

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

# scripts/install-deps --python installs it (clients/python/requirements.txt).
from algoliasearch.http.hosts import Host, HostsCollection
from algoliasearch.search.client import SearchClientSync
from algoliasearch.search.config import SearchConfig

from harness import keyed_cluster

INDEX = "shop"

RECORDS = [
    {"objectID": "p1", "title": "Blue pants", "kind": "clothes"},
    {"objectID": "p2", "title": "Grey trousers", "kind": "clothes"},
    {"objectID": "p3", "title": "Corduroy slacks", "kind": "clothes"},
    {"objectID": "p4", "title": "Red shirt", "kind": "clothes"},
    {"objectID": "t1", "title": "Android tablet", "kind": "device"},
    {"objectID": "t2", "title": "Apple iPad", "kind": "device"},
    {"objectID": "c1", "title": "Toy car", "kind": "toy"},
    {"objectID": "c2", "title": "Racing cars", "kind": "toy"},
    {"objectID": "k1", "title": "Books for a child", "kind": "book"},
    {"objectID": "k2", "title": "Stories for children", "kind": "book"},
    {"objectID": "r1", "title": "The record of the year", "kind": "music"},
    {"objectID": "w1", "title": "What is it", "kind": "music"},
    {"objectID": "n1", "title": "NY pizza", "kind": "food"},
    {"objectID": "n2", "title": "New York bagels", "kind": "food"},
    {"objectID": "n3", "title": "The New York Times", "kind": "news"},
    {"objectID": "n4", "title": "new company in York", "kind": "news"},
    {"objectID": "b1", "title": "Big Apple pizza", "kind": "food"},
    {"objectID": "g1", "title": "Samsung Galaxy Tab", "kind": "device"},
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    for cluster in keyed_cluster(tmp_path_factory, "synonyms", shards=2):
        port = urllib.parse.urlsplit(cluster.rest_url).port
        config = SearchConfig("default", (cluster.data / "limelight.key").read_text().strip())
        config.hosts = HostsCollection([Host(url="127.0.0.1", scheme="http", port=port)])
        c = SearchClientSync.create_with_config(config)
        c.save_objects(INDEX, RECORDS, wait_for_tasks=True)
        yield c
        c.close()


def ids(client, query, **params):
    r = client.search_single_index(INDEX, dict({"query": query, "hitsPerPage": 100}, **params)).to_dict()
    return sorted(h["objectID"] for h in r["hits"]), r


def raw_search(client, body):
    """A search sent as raw HTTP, for what the client's models would refuse
    (its `RankingInfo` requires fields Limelight does not write, such as
    `geoDistance` without a point) or validate before sending."""
    config = client._config
    request = urllib.request.Request(
        f"http://127.0.0.1:{config.hosts._hosts[0].port}/1/indexes/{INDEX}/query", method="POST",
        data=json.dumps(body).encode(),
        headers={"X-Algolia-API-Key": config.api_key, "X-Algolia-Application-Id": "default"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_regular_synonyms_find_each_other(client):
    assert ids(client, "trousers")[0] == ["p2"]
    client.wait_for_task(INDEX, client.save_synonyms(INDEX, [
        {"objectID": "pants", "type": "synonym", "synonyms": ["pants", "trousers", "slacks"]}]).task_id)
    for word in ("pants", "trousers", "slacks"):
        found, r = ids(client, word, attributesToHighlight=["title"])
        assert found == ["p1", "p2", "p3"], word
        # The synonym is highlighted where it matched, and ranks as the word
        # itself: no typo, an exact word.
        grey = next(h for h in r["hits"] if h["objectID"] == "p2")
        assert grey["_highlightResult"]["title"]["value"] == "Grey <em>trousers</em>"
    # Ranked as the word itself (alternativesAsExact's default holds
    # singleWordSynonym): no typo, one exact word, every hit alike.
    r = raw_search(client, {"query": "pants", "getRankingInfo": True})
    assert [(h["_rankingInfo"]["nbTypos"], h["_rankingInfo"]["nbExactWords"]) for h in r["hits"]] == [(0, 1)] * 3
    r = raw_search(client, {"query": "pants", "getRankingInfo": True, "alternativesAsExact": ["ignorePlurals"]})
    exact = {h["objectID"]: h["_rankingInfo"]["nbExactWords"] for h in r["hits"]}
    assert exact == {"p1": 1, "p2": 0, "p3": 0}
    # Typed letter by letter, the last word is a prefix of its own: "pan"
    # finds pants, not its synonyms.
    assert ids(client, "pan")[0] == ["p1"]
    # The `synonyms` parameter turns them off for one search.
    assert ids(client, "pants", synonyms=False)[0] == ["p1"]
    # Deleted, they no longer apply.
    client.wait_for_task(INDEX, client.delete_synonym(INDEX, "pants").task_id)
    assert ids(client, "pants")[0] == ["p1"]


def test_a_one_way_synonym_matches_one_way_only(client):
    client.wait_for_task(INDEX, client.save_synonyms(INDEX, [
        {"objectID": "tablet", "type": "onewaysynonym", "input": "tablet", "synonyms": ["ipad", "galaxy tab"]},
    ]).task_id)
    # "galaxy tab" is a phrase: its words adjacent, in order.
    assert ids(client, "tablet")[0] == ["g1", "t1", "t2"]
    assert ids(client, "ipad")[0] == ["t2"]
    assert ids(client, "galaxy tab")[0] == ["g1"]
    client.wait_for_task(INDEX, client.clear_synonyms(INDEX).task_id)
    assert ids(client, "tablet")[0] == ["t1"]


def test_a_phrase_of_the_query_finds_its_one_word_synonyms(client):
    # Algolia's multi-word synonym example: "NY" = "New York".
    assert ids(client, "new york")[0] == ["n2", "n3", "n4"]
    client.wait_for_task(INDEX, client.save_synonyms(INDEX, [
        {"objectID": "ny", "type": "synonym", "synonyms": ["NY", "new york"]}]).task_id)
    try:
        found, r = ids(client, "new york", attributesToHighlight=["title"])
        # (n4 holds both words, which is all a query of two words asks.)
        assert found == ["n1", "n2", "n3", "n4"]
        pizza = next(h for h in r["hits"] if h["objectID"] == "n1")
        assert pizza["_highlightResult"]["title"]["value"] == "<em>NY</em> pizza"
        assert pizza["_highlightResult"]["title"]["matchLevel"] == "full"
        # Algolia: "you may not want to retrieve results with "NY" when you
        # type "ne". However, you do when you type "new yo"."
        assert ids(client, "new yo")[0] == ["n1", "n2", "n3", "n4"]
        assert "n1" not in ids(client, "ne")[0]
    finally:
        client.wait_for_task(INDEX, client.clear_synonyms(INDEX).task_id)


def test_a_word_finds_its_synonyms_of_several_words_as_phrases(client):
    # Algolia: "if you have a synonym "NY = New York", a query "NY" can find
    # a result "New York Times". However, it cannot find a result "new
    # company in York" because it doesn't contain a phrase "New York"."
    assert ids(client, "ny")[0] == ["n1"]
    client.wait_for_task(INDEX, client.save_synonyms(INDEX, [
        {"objectID": "ny", "type": "synonym", "synonyms": ["NY", "New York"]}]).task_id)
    try:
        found, r = ids(client, "ny", attributesToHighlight=["title"])
        assert found == ["n1", "n2", "n3"]
        times = next(h for h in r["hits"] if h["objectID"] == "n3")
        assert times["_highlightResult"]["title"]["value"] == "The <em>New</em> <em>York</em> Times"
        assert times["_highlightResult"]["title"]["matchedWords"] == ["ny"]
        # Not exact by default; exact with multiWordsSynonym; no typo either way.
        def ranking(**params):
            r = raw_search(client, dict({"query": "ny", "getRankingInfo": True}, **params))
            return {h["objectID"]: (h["_rankingInfo"]["nbTypos"], h["_rankingInfo"]["nbExactWords"]) for h in r["hits"]}
        assert ranking() == {"n1": (0, 1), "n2": (0, 0), "n3": (0, 0)}
        assert ranking(alternativesAsExact=["multiWordsSynonym"]) == {"n1": (0, 1), "n2": (0, 1), "n3": (0, 1)}
        # A phrase with the query's other words: "ny bagels".
        assert ids(client, "ny bagels")[0] == ["n2"]
    finally:
        client.wait_for_task(INDEX, client.clear_synonyms(INDEX).task_id)
    assert ids(client, "ny")[0] == ["n1"]


def test_two_phrases_of_one_group_find_each_other(client):
    assert ids(client, "big apple")[0] == ["b1"]
    client.wait_for_task(INDEX, client.save_synonyms(INDEX, [
        {"objectID": "nyc", "type": "synonym", "synonyms": ["big apple", "new york"]}]).task_id)
    try:
        found, r = ids(client, "big apple", attributesToHighlight=["title"])
        assert found == ["b1", "n2", "n3"]
        bagels = next(h for h in r["hits"] if h["objectID"] == "n2")
        assert bagels["_highlightResult"]["title"]["value"] == "<em>New</em> <em>York</em> bagels"
        assert bagels["_highlightResult"]["title"]["matchLevel"] == "full"
        # The reverse; n4 holds both words apart, which the query's own
        # words match.
        assert ids(client, "new york")[0] == ["b1", "n2", "n3", "n4"]
        assert ids(client, "big apple pizza")[0] == ["b1"]
        assert ids(client, "new york bagels")[0] == ["n2"]
    finally:
        client.wait_for_task(INDEX, client.clear_synonyms(INDEX).task_id)


def test_alternative_corrections_count_as_typos(client):
    # Algolia: "Same as a one-way synonym, except that when matched, they
    # will count as 1 (respectively 2) typos in the ranking formula."
    client.wait_for_task(INDEX, client.save_synonyms(INDEX, [
        {"objectID": "t", "type": "altcorrection1", "word": "trousers", "corrections": ["pants"]},
        {"objectID": "p", "type": "altcorrection2", "word": "pants", "corrections": ["trousers"]},
    ]).task_id)
    try:
        def typos(query):
            r = raw_search(client, {"query": query, "getRankingInfo": True})
            return [(h["objectID"], h["_rankingInfo"]["nbTypos"], h["_rankingInfo"]["nbExactWords"]) for h in r["hits"]]
        # The word itself first, then its correction with its typos, not exact.
        assert typos("trousers") == [("p2", 0, 1), ("p1", 1, 0)]
        assert typos("pants") == [("p1", 0, 1), ("p2", 2, 0)]
        assert ids(client, "slacks")[0] == ["p3"]
    finally:
        client.wait_for_task(INDEX, client.clear_synonyms(INDEX).task_id)
    assert ids(client, "trousers")[0] == ["p2"]


def test_synonyms_forwarded_to_a_replica_apply_there(client):
    client.wait_for_task(INDEX, client.set_settings(INDEX, {"replicas": ["shop_by_kind"]}).task_id)
    replica = lambda q: sorted(h["objectID"] for h in client.search_single_index(
        "shop_by_kind", {"query": q, "hitsPerPage": 100}).to_dict()["hits"])
    try:
        pants = [{"objectID": "pants", "type": "synonym", "synonyms": ["pants", "trousers"]}]
        # A replica searches with its own synonyms: none unless forwarded.
        client.wait_for_task(INDEX, client.save_synonyms(INDEX, pants).task_id)
        assert ids(client, "pants")[0] == ["p1", "p2"] and replica("pants") == ["p1"]
        client.wait_for_task(INDEX, client.save_synonyms(INDEX, pants, forward_to_replicas=True).task_id)
        assert replica("pants") == ["p1", "p2"]
        client.wait_for_task(INDEX, client.clear_synonyms(INDEX, forward_to_replicas=True).task_id)
        assert replica("pants") == ["p1"] and ids(client, "pants")[0] == ["p1"]
    finally:
        client.wait_for_task(INDEX, client.set_settings(INDEX, {"replicas": None}).task_id)


def test_ignore_plurals_as_a_parameter_and_a_setting(client):
    # Complete words (a trailing space: no prefix) and no typos ("cars" is
    # one letter from "car"), so that only plurals can join them.
    exact = {"typoTolerance": False}
    assert ids(client, "car ")[0] == ["c1"]
    assert ids(client, "car ", ignorePlurals=True)[0] == ["c1", "c2"]
    assert ids(client, "cars", ignorePlurals=["en"], **exact)[0] == ["c1", "c2"]
    assert ids(client, "child ", ignorePlurals=True)[0] == ["k1", "k2"]
    assert ids(client, "children", ignorePlurals=True)[0] == ["k1", "k2"]
    # Another language than English changes nothing.
    assert ids(client, "cars", ignorePlurals=["fr"], **exact)[0] == ["c2"]
    client.wait_for_task(INDEX, client.set_settings(INDEX, {"ignorePlurals": True}).task_id)
    try:
        assert ids(client, "child ")[0] == ["k1", "k2"]
        # The parameter overrides the setting.
        assert ids(client, "child ", ignorePlurals=False)[0] == ["k1"]
    finally:
        client.wait_for_task(INDEX, client.set_settings(INDEX, {"ignorePlurals": None}).task_id)
    assert ids(client, "child ")[0] == ["k1"]


def test_remove_stop_words_as_a_parameter_and_a_setting(client):
    # Every word must match: "what is a record" finds nothing as typed.
    assert ids(client, "what is a record")[0] == []
    assert ids(client, "what is a record", removeStopWords=True)[0] == ["r1"]
    assert ids(client, "what is a record", removeStopWords=["en"])[0] == ["r1"]
    assert ids(client, "what is a record", removeStopWords=["de"])[0] == []
    # A query of stop words alone is searched as typed.
    assert ids(client, "what is it", removeStopWords=True, queryType="prefixNone")[0] == ["w1"]
    client.wait_for_task(INDEX, client.set_settings(INDEX, {"removeStopWords": ["en"]}).task_id)
    try:
        assert ids(client, "what is a record")[0] == ["r1"]
        assert ids(client, "what is a record", removeStopWords=False)[0] == []
    finally:
        client.wait_for_task(INDEX, client.set_settings(INDEX, {"removeStopWords": None}).task_id)


def test_a_wrong_value_is_refused_and_named(client):
    # Sent as raw HTTP: the client would refuse these values itself.
    for name, value in (("alternativesAsExact", ["sometimes"]), ("ignorePlurals", {"en": True})):
        with pytest.raises(urllib.error.HTTPError) as e:
            raw_search(client, {"query": "x", name: value})
        assert e.value.code == 400
        assert name in json.loads(e.value.read())["message"], name
