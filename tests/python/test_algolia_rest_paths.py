"""Algolia's REST API: InstantSearch's page answered by one search, and the
answers Algolia gives where Limelight used to differ (a secured key's
``restrictIndices``, a batch refused whole, index sizes), on a cluster as
``limelight up`` starts it (keys required), with the Debian sample as records.

The one-search answer is checked against the same requests sent one by one
(each in its own ``/queries`` call, which runs it alone), and the coordinator's
``searches`` counter says how many searches each call cost.
"""

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from algoliasearch.http.exceptions import RequestException
from algoliasearch.http.hosts import Host, HostsCollection
from algoliasearch.search.client import SearchClientSync
from algoliasearch.search.config import SearchConfig

from harness import Client, keyed_cluster, read_jsonl

INDEX = "debian"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    yield from keyed_cluster(tmp_path_factory, "algolia-paths", shards=3)


def client_for(cluster, key):
    port = urllib.parse.urlsplit(cluster.rest_url).port
    config = SearchConfig("default", key)
    config.hosts = HostsCollection([Host(url="127.0.0.1", scheme="http", port=port)])
    return SearchClientSync.create_with_config(config)


def as_dict(response):
    return response.to_dict() if hasattr(response, "to_dict") else response


@pytest.fixture(scope="module")
def world(keyed):
    admin_key = (keyed.data / "limelight.key").read_text().strip()
    master = (keyed.data / "master.key").read_text().strip()
    client = client_for(keyed, admin_key)
    recs = [dict(i["attributes"], objectID=i["uniqueIdentifier"]) for i in read_jsonl("debian-packages.jsonl")]
    client.save_objects(INDEX, recs, wait_for_tasks=True)
    yield keyed, client, recs, admin_key, master
    client.close()


def post(cluster, key, path, body):
    """A POST as a browser sends it (keys in the query string); (status, JSON)."""
    url = f"{cluster.rest_url}{path}?x-algolia-api-key={urllib.parse.quote(key)}&x-algolia-application-id=default"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "text/plain"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def searches(cluster, master):
    with Client(cluster.endpoint, timeout=10, key=master) as probe:
        return probe.stats()["counters"].get("searches", 0)


def encode(params):
    """InstantSearch's v4 `params` string: lists as JSON text."""
    return urllib.parse.urlencode({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in params.items()})


def instantsearch_page(query, refined, numeric=None, facets=None):
    """The requests InstantSearch's helper sends for a page whose disjunctive
    facets `refined` (facet -> values) are refined: the search, then one per
    refined facet without its own refinement (`facets` the facet's name,
    no hits, no attributes, no analytics)."""
    base = {"query": query, "highlightPreTag": "__ais-highlight__", "highlightPostTag": "__/ais-highlight__",
            "maxValuesPerFacet": 10, "tagFilters": ""}

    def filters(without=None):
        p = {"facetFilters": [[f"{f}:{v}" for v in values] for f, values in refined.items() if f != without]}
        if numeric and numeric[0] != without:
            p["numericFilters"] = [numeric[1]]
        return p

    main = dict(base, **filters(), hitsPerPage=20, page=0)
    if facets is not None:
        main["facets"] = facets
    requests = [main]
    for facet in list(refined) + ([numeric[0]] if numeric else []):
        requests.append(dict(base, **filters(facet), facets=facet, hitsPerPage=0, page=0, attributesToRetrieve=[],
                             attributesToHighlight=[], attributesToSnippet=[], analytics="false",
                             clickAnalytics="false"))
    return [{"indexName": INDEX, "params": encode(r)} for r in requests]


def without_time(result):
    return {k: v for k, v in result.items() if k != "processingTimeMS"}


@pytest.mark.parametrize("query, refined, numeric, facets", [
    ("", {"section": ["admin", "net"], "architecture": ["all"], "priority": ["optional"]}, None,
     ["section", "architecture", "priority", "authorNames"]),
    ("lib", {"section": ["libs", "devel", "python"], "architecture": ["amd64"], "priority": ["optional"]}, None,
     ["*"]),
    ("data", {"section": ["database", "science"], "architecture": ["all", "amd64"]},
     ("installedSize", "installedSize>=200"), ["section", "architecture", "installedSize"]),
    ("tool", {"section": ["utils"]}, None, None),
])
def test_instantsearch_page_is_one_search_answered_as_its_requests_alone(world, query, refined, numeric, facets):
    keyed, _, _, admin_key, master = world
    requests = instantsearch_page(query, refined, numeric, facets)
    before = searches(keyed, master)
    status, merged = post(keyed, admin_key, "/1/indexes/*/queries", {"requests": requests})
    assert status == 200, merged
    assert searches(keyed, master) - before == 1, "the page costs one search"
    alone = []
    for r in requests:
        status, answer = post(keyed, admin_key, "/1/indexes/*/queries", {"requests": [r]})
        assert status == 200, answer
        alone.append(answer["results"][0])
    assert len(merged["results"]) == len(alone)
    for got, want in zip(merged["results"], alone):
        assert without_time(got) == without_time(want)
    # The facets' own counts differ from the refined search's: the page is a real disjunctive one.
    first_facet = next(iter(refined))
    assert alone[1]["nbHits"] >= alone[0]["nbHits"]
    assert alone[1]["facets"][first_facet] != alone[0].get("facets", {}).get(first_facet)


def test_requests_off_the_pattern_run_one_by_one(world):
    keyed, _, _, admin_key, master = world
    requests = instantsearch_page("", {"section": ["admin"], "architecture": ["all"]})
    # An extra request that asks for a hit: not InstantSearch's page, so not merged.
    params = urllib.parse.parse_qs(requests[1]["params"])
    params["hitsPerPage"] = ["1"]
    requests[1] = {"indexName": INDEX, "params": urllib.parse.urlencode({k: v[0] for k, v in params.items()})}
    before = searches(keyed, master)
    status, answer = post(keyed, admin_key, "/1/indexes/*/queries", {"requests": requests})
    assert status == 200, answer
    assert searches(keyed, master) - before == 3
    assert len(answer["results"][1]["hits"]) == 1


def test_a_secured_key_with_restrict_indices_is_refused_another_index(world):
    keyed, client, recs, admin_key, master = world
    client.save_objects("other", recs[:5], wait_for_tasks=True)
    with Client(keyed.endpoint, timeout=10, key=master) as boss:
        search_key = boss.keys("create", app="default", role="search")["apiKey"]
    secured = client.generate_secured_api_key(search_key, {"restrictIndices": [INDEX]})
    narrowed = client_for(keyed, secured)
    assert as_dict(narrowed.search_single_index(INDEX, {"query": "", "hitsPerPage": 0}))["nbHits"] == len(recs)
    with pytest.raises(RequestException) as e:
        narrowed.search_single_index("other", {"query": ""})
    assert e.value.status_code == 403 and "Index not allowed with this API key" in str(e.value)
    with pytest.raises(RequestException) as e:
        narrowed.get_object("other", recs[0]["objectID"])
    assert e.value.status_code == 403
    status, body = post(keyed, secured, "/1/indexes/*/queries", {"requests": [
        {"indexName": INDEX, "params": "query="}, {"indexName": "other", "params": "query="}]})
    assert status == 403 and body == {"message": "Index not allowed with this API key", "status": 403}
    status, body = post(keyed, secured, "/1/indexes/*/objects", {"requests": [
        {"indexName": "other", "objectID": recs[0]["objectID"]}]})
    assert status == 403 and body["status"] == 403
    status, body = post(keyed, secured, "/1/indexes/*/objects", {"requests": [
        {"indexName": INDEX, "objectID": recs[0]["objectID"]}]})
    assert status == 200 and body["results"][0]["objectID"] == recs[0]["objectID"]
    # The admin key is not restricted.
    assert as_dict(client.search_single_index("other", {"query": "", "hitsPerPage": 0}))["nbHits"] == 5


@pytest.mark.parametrize("bad, named", [
    ({"action": "addObject", "body": {"objectID": "bad", "tags": ["a", 1]}}, ("'bad'", "tags")),
    ({"action": "partialUpdateObject", "body": {"objectID": "bad", "n": {"_operation": "Increment", "value": "x"}}},
     ("'bad'", "Increment")),
    ({"action": "updateObject", "body": "not a record"}, ("requests[1]",)),
    ({"action": "addObject", "body": {"objectID": "bad", "_geoloc": {"lat": "north"}}}, ("'bad'", "_geoloc")),
])
def test_a_batch_with_a_bad_record_is_refused_whole(world, bad, named):
    keyed, client, _, admin_key, _ = world
    client.save_objects("refused", [{"objectID": "kept", "title": "before"}], wait_for_tasks=True)
    requests = [{"action": "addObject", "body": {"objectID": "first", "title": "good"}}, bad,
                {"action": "partialUpdateObject", "body": {"objectID": "kept", "title": "changed"}},
                {"action": "deleteObject", "body": {"objectID": "kept"}}]
    status, body = post(keyed, admin_key, "/1/indexes/refused/batch", {"requests": requests})
    assert status == 400 and all(n in body["message"] for n in named), body
    # Nothing of it was stored: no new record, the old one unchanged.
    with pytest.raises(RequestException) as e:
        client.get_object("refused", "first")
    assert e.value.status_code == 404
    assert as_dict(client.get_object("refused", "kept"))["title"] == "before"
    # The same batch across indices (`*/batch`): nothing stored either.
    multi = [dict(r, indexName="refused") for r in requests]
    multi[0]["indexName"] = "refused-too"
    status, body = post(keyed, admin_key, "/1/indexes/*/batch", {"requests": multi})
    assert status == 400 and all(n in body["message"] for n in named), body
    with pytest.raises(RequestException) as e:
        client.get_object("refused-too", "first")
    assert e.value.status_code == 404


def test_list_indices_measures_the_records_bytes(world):
    _, client, recs, _, _ = world
    small = recs[:40]
    client.save_objects("sized", small, wait_for_tasks=True)
    listed = {i["name"]: i for i in as_dict(client.list_indices())["items"]}
    want = sum(len(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()) for r in small)
    assert listed["sized"]["entries"] == len(small)
    # Each record's JSON, summed (exact up to the sample's 1000 records; the
    # writers may escape a character differently).
    assert abs(listed["sized"]["dataSize"] - want) <= want * 0.01, (listed["sized"]["dataSize"], want)
    assert listed["sized"]["fileSize"] == listed["sized"]["dataSize"]
    everything = sum(len(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()) for r in recs)
    assert abs(listed[INDEX]["dataSize"] - everything) <= everything * 0.01


def test_lists_of_objects_are_faceted_by_field_and_read_back_whole(world):
    _, client, _, _, _ = world
    shirts = [
        {"objectID": "s1", "title": "Linen shirt", "variants": [{"sku": "L-RED", "price": 30, "size": {"eu": 40}},
                                                                 {"sku": "L-BLUE", "price": 35}]},
        {"objectID": "s2", "title": "Cotton shirt", "variants": [{"sku": "C-RED", "price": 20}],
         "care": {"steps": [{"how": "wash"}, {"how": "iron"}]}},
        {"objectID": "s3", "title": "Plain shirt", "variants": []},
    ]
    client.save_objects("shirts", shirts, wait_for_tasks=True)
    for s in shirts:
        assert as_dict(client.get_object("shirts", s["objectID"])) == s
    r = as_dict(client.search_single_index("shirts", {"query": "", "facets": ["variants.sku", "care.steps.how"],
                                                      "hitsPerPage": 10}))
    assert r["facets"]["variants.sku"] == {"L-RED": 1, "L-BLUE": 1, "C-RED": 1}
    assert r["facets"]["care.steps.how"] == {"wash": 1, "iron": 1}
    assert sorted(h["objectID"] for h in r["hits"]) == ["s1", "s2", "s3"]
    assert {h["objectID"]: h.get("variants") for h in r["hits"]} == {s["objectID"]: s["variants"] for s in shirts}
    r = as_dict(client.search_single_index("shirts", {"query": "", "filters": "variants.price < 25"}))
    assert [h["objectID"] for h in r["hits"]] == ["s2"]
    # The values are searched as Algolia searches nested attributes; the kept JSON is not.
    assert [h["objectID"] for h in as_dict(client.search_single_index("shirts", {"query": "l-blue"}))["hits"]] == ["s1"]
    assert as_dict(client.search_single_index("shirts", {"query": "sku"}))["nbHits"] == 0
    every = as_dict(client.search_single_index("shirts", {"query": "", "facets": ["*"]}))
    assert "algoliaObjects" not in every["facets"] and "variants.sku" in every["facets"]


@pytest.mark.parametrize("retrieve, highlight", [
    (["title"], ["title", "contentDescription"]),
    (["title", "section", "objectID"], []),
    (["title", "noSuchAttribute"], ["contentDescription"]),
])
def test_retrieved_attributes_are_the_full_records_cut(world, retrieve, highlight):
    """Records with no nested object are retrieved by the core (only those
    attributes read and sent) when the request names what to highlight; the
    answer is the full records' cut to `attributesToRetrieve`, highlights
    untouched, as the REST API cuts them itself otherwise."""
    keyed, _, _, admin_key, _ = world
    query = {"query": "python", "hitsPerPage": 15, "attributesToHighlight": highlight}
    status, full = post(keyed, admin_key, f"/1/indexes/{INDEX}/query", query)
    assert status == 200, full
    status, cut = post(keyed, admin_key, f"/1/indexes/{INDEX}/query", dict(query, attributesToRetrieve=retrieve))
    assert status == 200, cut
    assert len(full["hits"]) >= 5
    keep = set(retrieve) | {"objectID", "_highlightResult", "_snippetResult", "_rankingInfo"}
    want = [{k: v for k, v in h.items() if k in keep} for h in full["hits"]]
    assert cut["hits"] == want
    assert without_time({k: v for k, v in cut.items() if k not in ("hits", "params")}) == \
        without_time({k: v for k, v in full.items() if k not in ("hits", "params")})


def test_retrieving_without_naming_highlights_keeps_algolias_default_highlights(world):
    """Without `attributesToHighlight`, Algolia highlights every searchable
    attribute whatever is retrieved: the hits keep the contentDescription's highlight."""
    keyed, _, _, admin_key, _ = world
    status, answer = post(keyed, admin_key, f"/1/indexes/{INDEX}/query",
                          {"query": "python", "attributesToRetrieve": ["title"]})
    assert status == 200, answer
    assert answer["hits"]
    for hit in answer["hits"]:
        assert set(hit) <= {"title", "objectID", "_highlightResult"}
    assert any("contentDescription" in hit["_highlightResult"] for hit in answer["hits"])
