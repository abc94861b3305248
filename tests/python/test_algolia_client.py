"""Algolia's own Python client (``algoliasearch`` v4, from PyPI) against a
running cluster as ``limelight up`` starts it (keys required), through the
REST API the coordinator serves (docs/algolia.md).

No line of the client is ours: it sends what it sends to Algolia, and reads
the answers with its own models. The records are the Debian sample
(samples/debian-packages.jsonl) as Algolia records; every count is checked
against one computed here from the JSON Lines.
"""

import collections
import json
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

# scripts/install-deps --python installs it (clients/python/requirements.txt).
from algoliasearch.http.exceptions import RequestException
from algoliasearch.http.hosts import Host, HostsCollection
from algoliasearch.search.client import SearchClientSync
from algoliasearch.search.config import SearchConfig

from harness import Client, keyed_cluster, read_jsonl

INDEX = "packages"


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    yield from keyed_cluster(tmp_path_factory, "algolia", shards=3)


def client_for(cluster, key, app="default"):
    """The official client, pointed at the cluster instead of Algolia's hosts."""
    port = urllib.parse.urlsplit(cluster.rest_url).port
    config = SearchConfig(app, key)
    config.hosts = HostsCollection([Host(url="127.0.0.1", scheme="http", port=port)])
    return SearchClientSync.create_with_config(config)


def records():
    """The Debian sample as Algolia records: objectID and the attributes."""
    out = []
    for item in read_jsonl("debian-packages.jsonl"):
        r = dict(item["attributes"])
        r["objectID"] = item["uniqueIdentifier"]
        out.append(r)
    return out


@pytest.fixture(scope="module")
def world(keyed):
    """The admin client of `up`'s default app, with the records saved."""
    admin_key = (keyed.data / "limelight.key").read_text().strip()
    client = client_for(keyed, admin_key)
    recs = records()
    responses = client.save_objects(INDEX, recs, wait_for_tasks=True)
    assert sum(len(r.object_ids) for r in responses) == len(recs)
    yield keyed, client, recs, admin_key
    client.close()


def as_dict(response):
    return response.to_dict() if hasattr(response, "to_dict") else response


def test_save_objects_then_search_counts_every_record_and_facet(world):
    _, client, recs, _ = world
    r = as_dict(client.search_single_index(INDEX, {"query": "", "hitsPerPage": 0, "facets": ["section", "priority"],
                                                   "maxValuesPerFacet": 1000}))
    assert r["nbHits"] == len(recs)
    for facet in ("section", "priority"):
        want = collections.Counter(x[facet] for x in recs if facet in x)
        assert r["facets"][facet] == dict(want), facet


def test_search_with_a_typo_a_filter_and_highlights(world):
    _, client, recs, _ = world
    # "intrusoin": one transposition away from "intrusion" (aide's description).
    r = as_dict(client.search_single_index(INDEX, {"query": "intrusoin detection", "hitsPerPage": 50,
                                                   "attributesToHighlight": ["displayName"]}))
    ids = [h["objectID"] for h in r["hits"]]
    assert "deb:aide" in ids
    aide = next(h for h in r["hits"] if h["objectID"] == "deb:aide")
    assert "<em>Intrusion</em> <em>Detection</em>" in aide["_highlightResult"]["displayName"]["value"]
    assert "domainIdentifier" not in aide and aide["section"] == "admin"

    want = [x for x in recs if x.get("section") == "admin" and x.get("installedSize", 0) > 100]
    r = as_dict(client.search_single_index(INDEX, {"query": "", "filters": "section:admin AND installedSize > 100",
                                                   "hitsPerPage": 1000}))
    assert r["nbHits"] == len(want)
    assert sorted(h["objectID"] for h in r["hits"]) == sorted(x["objectID"] for x in want)


def test_nested_objects_and_geolocation_come_back_as_they_were_saved(world):
    _, client, _, _ = world
    record = {"objectID": "n1", "title": "Nested", "brand": {"name": "Acme", "country": {"code": "FR"}},
              "_geoloc": {"lat": 48.85, "lng": 2.35}}
    client.save_objects("nested", [record], wait_for_tasks=True)
    assert as_dict(client.get_object("nested", "n1")) == record
    r = as_dict(client.search_single_index("nested", {"query": "", "filters": "brand.country.code:FR",
                                                      "aroundLatLng": "48.86, 2.34", "aroundRadius": 5000,
                                                      "attributesToRetrieve": ["brand"]}))
    assert r["nbHits"] == 1
    hit = r["hits"][0]
    assert hit["brand"] == record["brand"] and "title" not in hit and "_geoloc" not in hit


def test_several_requests_in_one_call(world):
    _, client, recs, _ = world
    r = as_dict(client.search({"requests": [
        {"indexName": INDEX, "query": "", "hitsPerPage": 0, "filters": "section:net"},
        {"indexName": INDEX, "query": "", "hitsPerPage": 3, "page": 1},
    ]}))
    first, second = r["results"]
    assert first["nbHits"] == sum(1 for x in recs if x.get("section") == "net")
    assert second["nbHits"] == len(recs) and len(second["hits"]) == 3 and second["page"] == 1
    # stopIfEnoughMatches: the first request has enough hits, so the second is not run.
    r = as_dict(client.search({"strategy": "stopIfEnoughMatches", "requests": [
        {"indexName": INDEX, "query": "", "hitsPerPage": 5},
        {"indexName": INDEX, "query": "", "hitsPerPage": 5, "filters": "section:net"},
    ]}))
    first, second = r["results"]
    assert first["nbHits"] == len(recs) and len(first["hits"]) == 5
    assert second["nbHits"] == 0 and second["hits"] == [] and second.get("processed") is False


def test_the_v4_params_form_as_instantsearch_sends_it_from_a_browser(world):
    """A page with one refined disjunctive facet: the refined query, then
    the facet's own query without its refinement. A browser sends the keys in
    the query string and the body as text/plain, to avoid a preflight."""
    keyed, _, recs, admin_key = world
    refined = {"admin", "net"}
    facets = urllib.parse.quote(json.dumps(["section", "priority"]))
    refinement = urllib.parse.quote(json.dumps([["section:admin", "section:net"]]))
    body = {"requests": [
        {"indexName": INDEX, "params": f"facets={facets}&facetFilters={refinement}&highlightPreTag=__ais-highlight__"
                                       f"&highlightPostTag=__%2Fais-highlight__&hitsPerPage=20&maxValuesPerFacet=10"
                                       f"&page=0&query=&tagFilters="},
        {"indexName": INDEX, "params": "analytics=false&clickAnalytics=false&facets=section&hitsPerPage=0"
                                       "&maxValuesPerFacet=10&page=0&query="},
    ]}
    url = (f"{keyed.rest_url}/1/indexes/*/queries?x-algolia-agent=Algolia%20for%20JavaScript"
           f"&x-algolia-api-key={admin_key}&x-algolia-application-id=default")
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        r = json.load(response)
    hits, facet = r["results"]
    assert hits["nbHits"] == sum(1 for x in recs if x.get("section") in refined)
    assert {h["section"] for h in hits["hits"]} <= refined
    want = collections.Counter(x["section"] for x in recs if "section" in x)
    top = dict(sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))[:10])
    assert facet["facets"]["section"] == top
    assert facet["nbHits"] == len(recs)


def test_search_for_facet_values(world):
    _, client, recs, _ = world
    r = as_dict(client.search_for_facet_values(INDEX, "section", {"facetQuery": "ad"}))
    want = collections.Counter(x["section"] for x in recs if x.get("section", "").lower().startswith("ad"))
    assert {h["value"]: h["count"] for h in r["facetHits"]} == dict(want)
    assert all(h["highlighted"].startswith("<em>") for h in r["facetHits"])


def test_a_facet_request_among_queries_as_instantsearch_sends_it(world):
    """InstantSearch's searchForFacetValues: a `type: "facet"` request in `/queries`."""
    _, client, recs, _ = world
    r = as_dict(client.search({"requests": [
        {"indexName": INDEX, "type": "facet", "facet": "priority", "facetQuery": "opt", "maxFacetHits": 5},
        {"indexName": INDEX, "query": "", "hitsPerPage": 0, "facets": ["priority"]},
    ]}))
    values, counts = r["results"]
    want = collections.Counter(x["priority"] for x in recs if x.get("priority", "").startswith("opt"))
    assert [(h["value"], h["count"]) for h in values["facetHits"]] == list(want.items())
    assert counts["facets"]["priority"]["optional"] == want["optional"]


def test_browse_objects_reads_every_record_once(world):
    _, client, recs, _ = world
    seen = []
    client.browse_objects(INDEX, lambda page: seen.extend(h.object_id for h in page.hits), {"hitsPerPage": 70})
    assert sorted(seen) == sorted(x["objectID"] for x in recs)


def test_get_objects_and_a_missing_one(world):
    _, client, recs, _ = world
    r = as_dict(client.get_objects({"requests": [
        {"indexName": INDEX, "objectID": "deb:aide"},
        {"indexName": INDEX, "objectID": "deb:no-such-package"},
    ]}))
    aide = next(x for x in recs if x["objectID"] == "deb:aide")
    assert r["results"][0] == aide
    assert r["results"][1] is None
    with pytest.raises(RequestException) as e:
        client.get_object(INDEX, "deb:no-such-package")
    assert e.value.status_code == 404


def test_partial_updates_with_built_in_operations(world):
    _, client, recs, _ = world
    aide = next(x for x in recs if x["objectID"] == "deb:aide")
    client.partial_update_objects(INDEX, [
        {"objectID": "deb:aide", "installedSize": {"_operation": "Increment", "value": 1000},
         "keywords": {"_operation": "AddUnique", "value": "role::program"}},
    ], wait_for_tasks=True)
    got = as_dict(client.get_object(INDEX, "deb:aide"))
    assert got["installedSize"] == aide["installedSize"] + 1000
    assert got["keywords"] == aide["keywords"] + ["role::program"]
    # Back as it was, for the other tests' counts.
    client.save_objects(INDEX, [aide], wait_for_tasks=True)
    assert as_dict(client.get_object(INDEX, "deb:aide")) == aide


def test_settings_and_a_replica_sorted_by_size(world):
    _, client, recs, _ = world
    task = client.set_settings(INDEX, {"customRanking": ["desc(installedSize)"], "replicas": ["packages_size_asc"],
                                       "attributesForFaceting": ["searchable(section)", "priority"]})
    client.wait_for_task(INDEX, task.task_id)
    s = as_dict(client.get_settings(INDEX))
    assert s["customRanking"] == ["desc(installedSize)"] and s["replicas"] == ["packages_size_asc"]
    sizes = sorted((x["installedSize"] for x in recs if "installedSize" in x), reverse=True)
    r = as_dict(client.search_single_index(INDEX, {"query": "", "hitsPerPage": 5, "filters": "installedSize > 0"}))
    assert [h["installedSize"] for h in r["hits"]] == sizes[:5]

    client.wait_for_task("packages_size_asc", client.set_settings("packages_size_asc", {
        "ranking": ["asc(installedSize)", "typo", "geo", "words", "filters", "proximity", "attribute", "exact", "custom"]}).task_id)
    r = as_dict(client.search_single_index("packages_size_asc", {"query": "", "hitsPerPage": 5, "filters": "installedSize > 0"}))
    assert [h["installedSize"] for h in r["hits"]] == sorted(sizes)[:5]
    assert r["nbHits"] == len(sizes)
    with pytest.raises(RequestException) as e:
        client.save_object("packages_size_asc", {"objectID": "x", "title": "x"})
    assert e.value.status_code == 400
    client.wait_for_task(INDEX, client.set_settings(INDEX, {"customRanking": None}).task_id)


def test_synonyms_are_kept_and_searched(world):
    _, client, _, _ = world
    client.save_synonyms(INDEX, [
        {"objectID": "ids", "type": "synonym", "synonyms": ["intrusion", "breach"]},
        {"objectID": "db", "type": "onewaysynonym", "input": "db", "synonyms": ["database"]},
    ])
    assert as_dict(client.get_synonym(INDEX, "ids"))["synonyms"] == ["intrusion", "breach"]
    found = as_dict(client.search_synonyms(INDEX, {"query": "breach"}))
    assert [h["objectID"] for h in found["hits"]] == ["ids"]
    client.delete_synonym(INDEX, "ids")
    assert as_dict(client.search_synonyms(INDEX, {}))["nbHits"] == 1
    with pytest.raises(RequestException) as e:
        client.get_synonym(INDEX, "ids")
    assert e.value.status_code == 404


def test_replace_all_objects_keeps_only_the_new_records(world):
    _, client, _, _ = world
    grocer = [dict(i["attributes"], objectID=i["uniqueIdentifier"]) for i in read_jsonl("green-grocer.jsonl")]
    client.save_objects("grocer", grocer[:10], wait_for_tasks=True)
    client.wait_for_task("grocer", client.set_settings("grocer", {"hitsPerPage": 7}).task_id)
    client.replace_all_objects("grocer", grocer[10:])
    r = as_dict(client.search_single_index("grocer", {"query": ""}))
    assert r["nbHits"] == len(grocer) - 10 and r["hitsPerPage"] == 7
    everything = as_dict(client.search_single_index("grocer", {"query": "", "hitsPerPage": 100}))
    assert sorted(h["objectID"] for h in everything["hits"]) == sorted(g["objectID"] for g in grocer[10:])


def test_delete_objects_and_list_indices(world):
    keyed, client, recs, _ = world
    gone = [x["objectID"] for x in recs[:10]]
    client.save_objects("scratch", recs[:20], wait_for_tasks=True)
    client.delete_objects("scratch", gone, wait_for_tasks=True)
    r = as_dict(client.search_single_index("scratch", {"query": "", "hitsPerPage": 100}))
    assert sorted(h["objectID"] for h in r["hits"]) == sorted(x["objectID"] for x in recs[10:20])
    listed = {i["name"]: i for i in as_dict(client.list_indices())["items"]}
    assert listed["scratch"]["entries"] == 10
    assert listed[INDEX]["entries"] == len(recs)
    assert listed["packages_size_asc"]["primary"] == INDEX
    client.wait_for_task("scratch", client.delete_index("scratch").task_id)
    assert "scratch" not in {i["name"] for i in as_dict(client.list_indices())["items"]}


def test_keys_and_errors_as_algolia_answers_them(world):
    keyed, _, _, _ = world
    base = keyed.rest_url
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(urllib.request.Request(f"{base}/1/indexes/{INDEX}/query", data=b"{}", method="POST"), timeout=10)
    assert e.value.code == 403
    body = json.load(e.value)
    assert body["status"] == 403 and "key" in body["message"]
    wrong = client_for(keyed, "llk_not_a_key_of_this_cluster_at_all")
    with pytest.raises(RequestException) as e:
        wrong.search_single_index(INDEX, {"query": "a"})
    assert e.value.status_code == 403
    admin = world[1]
    with pytest.raises(RequestException) as e:
        admin.search_single_index("no-such-index", {"query": "a"})
    assert e.value.status_code == 404
    with pytest.raises(RequestException) as e:
        admin.search_single_index(INDEX, {"query": "a", "noSuchParameter": 1})
    assert e.value.status_code == 400 and "noSuchParameter" in str(e.value)
    preflight = urllib.request.Request(f"{base}/1/indexes/*/queries", method="OPTIONS")
    with urllib.request.urlopen(preflight, timeout=10) as r:
        assert r.status == 200 and "x-algolia-api-key" in r.headers["Access-Control-Allow-Headers"]


def test_server_made_ids_no_create_updates_delete_by_and_clear(world):
    _, client, recs, _ = world
    made = client.save_object("writes", {"title": "no id given", "section": "misc"})
    client.wait_for_task("writes", made.task_id)
    assert as_dict(client.get_object("writes", made.object_id))["title"] == "no id given"
    client.save_objects("writes", recs[:30], wait_for_tasks=True)
    # partialUpdateObjectNoCreate: an absent record stays absent.
    client.partial_update_objects("writes", [{"objectID": "deb:absent", "title": "x"}], create_if_not_exists=False,
                                  wait_for_tasks=True)
    with pytest.raises(RequestException) as e:
        client.get_object("writes", "deb:absent")
    assert e.value.status_code == 404
    admin = [x for x in recs[:30] if x.get("section") == "admin"]
    assert admin, "the first records hold some of section admin"
    client.wait_for_task("writes", client.delete_by("writes", {"filters": "section:admin"}).task_id)
    r = as_dict(client.search_single_index("writes", {"query": "", "hitsPerPage": 100}))
    assert r["nbHits"] == 31 - len(admin)
    assert not any(h.get("section") == "admin" for h in r["hits"])
    with pytest.raises(RequestException) as e:
        client.delete_by("writes", {"query": "aide"})
    assert e.value.status_code == 400
    client.wait_for_task("writes", client.clear_objects("writes").task_id)
    assert as_dict(client.search_single_index("writes", {"query": ""}))["nbHits"] == 0
    # Cleared, not deleted: the index and its settings remain.
    assert "writes" in {i["name"] for i in as_dict(client.list_indices())["items"]}


def test_a_search_key_searches_and_cannot_write(world):
    keyed, _, recs, _ = world
    master = (keyed.data / "master.key").read_text().strip()
    with Client(keyed.endpoint, timeout=10, key=master) as boss:
        search_key = boss.keys("create", app="default", role="search")["apiKey"]
    reader = client_for(keyed, search_key)
    assert as_dict(reader.search_single_index(INDEX, {"query": "", "hitsPerPage": 0}))["nbHits"] == len(recs)
    with pytest.raises(RequestException) as e:
        reader.save_object(INDEX, {"objectID": "x", "title": "x"})
    assert e.value.status_code == 403 and "search" in str(e.value)
    with pytest.raises(RequestException) as e:
        client_for(keyed, search_key, app="another-app").search_single_index(INDEX, {"query": ""})
    assert e.value.status_code == 403


def test_malformed_requests_are_400_naming_the_fault(world):
    keyed, _, _, admin_key = world

    def post(path, data):
        request = urllib.request.Request(f"{keyed.rest_url}{path}", data=data, method="POST",
                                         headers={"X-Algolia-API-Key": admin_key})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=10)
        return e.value.code, json.load(e.value)["message"]

    code, message = post(f"/1/indexes/{INDEX}/query", b"{not json")
    assert code == 400 and "JSON" in message
    code, message = post(f"/1/indexes/{INDEX}/batch", json.dumps({"requests": [{"action": "upsert", "body": {}}]}).encode())
    assert code == 400 and "upsert" in message and "requests[0]" in message
    code, message = post(f"/1/indexes/{INDEX}/batch", json.dumps({"requests": [{"action": "addObject", "body": {
        "objectID": "bad", "variants": [{"size": 1}, 2]}}]}).encode())
    assert code == 400 and "variants" in message


def test_a_batch_runs_its_actions_in_order(world):
    _, client, _, _ = world
    r = client.batch("ordered", {"requests": [
        {"action": "addObject", "body": {"objectID": "a", "title": "first"}},
        {"action": "delete", "body": {}},
        {"action": "addObject", "body": {"objectID": "b", "title": "after the delete"}},
        {"action": "partialUpdateObject", "body": {"objectID": "b", "n": {"_operation": "Increment", "value": 2}}},
        {"action": "updateObject", "body": {"objectID": "c", "title": "third"}},
        {"action": "deleteObject", "body": {"objectID": "c"}},
    ]})
    assert r.object_ids == ["a", "b", "b", "c", "c"]
    client.wait_for_task("ordered", r.task_id)
    hits = as_dict(client.search_single_index("ordered", {"query": ""}))["hits"]
    assert [(h["objectID"], h.get("n")) for h in hits] == [("b", 2)]
    assert "ordered" in {i["name"] for i in as_dict(client.list_indices())["items"]}


def test_a_secured_key_from_the_official_client_narrows_a_search(world):
    keyed, client, recs, _ = world
    master = (keyed.data / "master.key").read_text().strip()
    with Client(keyed.endpoint, timeout=10, key=master) as boss:
        search_key = boss.keys("create", app="default", role="search")["apiKey"]
    secured = client.generate_secured_api_key(search_key, {"filters": "section:admin", "restrictIndices": [INDEX],
                                                           "validUntil": int(time.time()) + 600})
    narrowed = client_for(keyed, secured)
    r = as_dict(narrowed.search_single_index(INDEX, {"query": "", "hitsPerPage": 100, "facets": ["section"]}))
    admin = [x for x in recs if x.get("section") == "admin"]
    assert r["nbHits"] == len(admin) and r["facets"]["section"] == {"admin": len(admin)}
    # The filter cannot be widened by the request's own filters.
    r = as_dict(narrowed.search_single_index(INDEX, {"query": "", "filters": "section:net OR section:admin"}))
    assert r["nbHits"] == len(admin)
    # restrictIndices: another index of the app is refused, as Algolia refuses it.
    with pytest.raises(RequestException) as e:
        narrowed.search_single_index("grocer", {"query": ""})
    assert e.value.status_code == 403 and "Index not allowed" in str(e.value)
    with pytest.raises(RequestException) as e:
        narrowed.save_object(INDEX, {"objectID": "x"})
    assert e.value.status_code == 403
    expired = client.generate_secured_api_key(search_key, {"validUntil": int(time.time()) - 10})
    with pytest.raises(RequestException) as e:
        client_for(keyed, expired).search_single_index(INDEX, {"query": ""})
    assert e.value.status_code == 403 and "expired" in str(e.value)
    forged = client.generate_secured_api_key("llk_" + "0" * 64, {"filters": "section:admin"})
    with pytest.raises(RequestException) as e:
        client_for(keyed, forged).search_single_index(INDEX, {"query": ""})
    assert e.value.status_code == 403
