"""An index's ranking settings, applied by every shard, through Algolia's own
Python client (``algoliasearch`` v4) against a cluster as ``limelight up``
starts it (keys required): ``ranking`` (Algolia's default order, geo second,
reordered, ``asc()``/``desc()``), the order of ``searchableAttributes``, and
``distinct`` with ``attributeForDistinct`` (docs/algolia.md).

Records spread over three shards by objectID, so the merge is exercised too;
distinct's counts are checked against the JSON Lines.
"""

import collections

import pytest

from algoliasearch.http.exceptions import RequestException

from harness import keyed_cluster, read_jsonl
from test_algolia_client import as_dict, client_for


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    for cluster in keyed_cluster(tmp_path_factory, "ranking", shards=3):
        c = client_for(cluster, (cluster.data / "limelight.key").read_text().strip())
        yield c
        c.close()


def ids(client, index, params):
    return [h["objectID"] for h in as_dict(client.search_single_index(index, params))["hits"]]


def test_searchable_attributes_order_and_ranking_reorder_hits(client):
    client.save_objects("shelf", [
        {"objectID": "in-title", "title": "zebra crossing", "body": "a road sign", "popularity": 1},
        {"objectID": "in-body", "title": "road sign", "body": "zebra crossing", "popularity": 5},
        {"objectID": "late-in-title", "title": "the zebra", "body": "animal", "popularity": 3},
    ], wait_for_tasks=True)
    client.set_settings("shelf", {"searchableAttributes": ["title", "body"], "customRanking": ["desc(popularity)"]})
    assert ids(client, "shelf", {"query": "zebra"}) == ["in-title", "late-in-title", "in-body"]
    client.set_settings("shelf", {"searchableAttributes": ["body", "title"]})
    assert ids(client, "shelf", {"query": "zebra"}) == ["in-body", "in-title", "late-in-title"]
    # One rank for both: where the word starts the attribute decides, then popularity.
    client.set_settings("shelf", {"searchableAttributes": ["title,body"]})
    assert ids(client, "shelf", {"query": "zebra"}) == ["in-body", "in-title", "late-in-title"]
    # unordered(): the position within the title does not count.
    client.set_settings("shelf", {"searchableAttributes": ["unordered(title)", "body"]})
    assert ids(client, "shelf", {"query": "zebra"}) == ["late-in-title", "in-title", "in-body"]
    # The custom ranking before the textual criteria.
    client.set_settings("shelf", {"searchableAttributes": ["title", "body"],
                                  "ranking": ["custom", "typo", "geo", "words", "filters", "proximity", "attribute", "exact"]})
    assert ids(client, "shelf", {"query": "zebra"}) == ["in-body", "late-in-title", "in-title"]
    # asc() anywhere in the list: a sort by popularity, lowest first, after typos.
    client.set_settings("shelf", {"ranking": ["typo", "asc(popularity)", "attribute"]})
    assert ids(client, "shelf", {"query": "zebra"}) == ["in-title", "late-in-title", "in-body"]
    assert as_dict(client.get_settings("shelf"))["ranking"] == ["typo", "asc(popularity)", "attribute"]
    # Algolia's default order again.
    default = ["typo", "geo", "words", "filters", "proximity", "attribute", "exact", "custom"]
    client.set_settings("shelf", {"ranking": default})
    assert ids(client, "shelf", {"query": "zebra"}) == ["in-title", "late-in-title", "in-body"]


def test_unknown_ranking_criteria_are_refused_by_name(client):
    client.save_objects("strict", [{"objectID": "1", "title": "x"}], wait_for_tasks=True)
    with pytest.raises(RequestException) as e:
        client.set_settings("strict", {"ranking": ["typo", "relevance", "desc()"]})
    assert e.value.status_code == 400
    assert "'relevance'" in str(e.value) and "'desc()'" in str(e.value)
    # Nothing was stored.
    assert as_dict(client.get_settings("strict"))["ranking"][0] == "typo"


def test_geo_is_second_a_nearer_hit_before_a_higher_custom_rank(client):
    client.save_objects("cafes", [
        {"objectID": "near", "name": "cafe near", "rating": 2, "_geoloc": {"lat": 48.8570, "lng": 2.3520}},
        {"objectID": "far", "name": "cafe far", "rating": 5, "_geoloc": {"lat": 48.8800, "lng": 2.3800}},
        {"objectID": "nowhere", "name": "cafe nowhere", "rating": 9},
        {"objectID": "elsewhere", "name": "tea room", "rating": 9, "_geoloc": {"lat": 48.8566, "lng": 2.3522}},
    ], wait_for_tasks=True)
    client.set_settings("cafes", {"customRanking": ["desc(rating)"], "searchableAttributes": ["name"]})
    around = {"query": "cafe", "aroundLatLng": "48.8566, 2.3522"}
    # Distance before the custom ranking (a hit without a location last).
    assert ids(client, "cafes", around) == ["near", "far", "nowhere"]
    # Without a point, geo does nothing: the custom ranking decides.
    assert ids(client, "cafes", {"query": "cafe"})[:3] == ["nowhere", "far", "near"]
    # aroundPrecision: groups of 5 km tie both (about 50 m and 3.3 km away),
    # so the custom ranking decides; bands of 100 m up to 1 km and 5 km past
    # it put them in different groups again.
    assert ids(client, "cafes", {**around, "aroundPrecision": 5000}) == ["far", "near", "nowhere"]
    bands = [{"from": 0, "value": 100}, {"from": 1000, "value": 5000}]
    assert ids(client, "cafes", {**around, "aroundPrecision": bands}) == ["near", "far", "nowhere"]
    with pytest.raises(RequestException) as refused:
        client.search_single_index("cafes", {**around, "aroundPrecision": [{"from": 0}]})
    assert refused.value.status_code == 400 and "aroundPrecision" in str(refused.value)
    # Custom before geo: the higher rating first.
    client.set_settings("cafes", {"ranking": ["typo", "custom", "geo"]})
    assert ids(client, "cafes", around)[:3] == ["nowhere", "far", "near"]


def debian_records():
    """The Debian sample with a source-package-like attribute: the name up
    to its first dash (`dpkg-source-gitarchive` is of source `dpkg`)."""
    out = []
    for item in read_jsonl("debian-packages.jsonl"):
        r = dict(item["attributes"])
        r["objectID"] = item["uniqueIdentifier"]
        r["source"] = r["title"].split("-")[0]
        out.append(r)
    return out


def test_distinct_keeps_the_best_per_source_and_counts_groups(client):
    recs = debian_records()
    client.save_objects("debsrc", recs, wait_for_tasks=True)
    client.set_settings("debsrc", {"attributeForDistinct": "source", "distinct": True,
                                   "customRanking": ["desc(installedSize)"]})
    by_source = collections.defaultdict(list)
    for x in recs:
        by_source[x["source"]].append(x)
    assert len(by_source) < len(recs)  # the sample has sources with several packages

    r = as_dict(client.search_single_index("debsrc", {"query": "", "hitsPerPage": 1000, "facets": ["section"]}))
    # nbHits counts groups (Algolia: "nbHits reflects the number of groups").
    assert r["nbHits"] == len(by_source)
    sources = [h["source"] for h in r["hits"]]
    assert len(sources) == len(set(sources)) == len(by_source)
    # The best of each group by the ranking: the largest package of its source.
    best = {s: min(xs, key=lambda x: (-x["installedSize"], x["objectID"]))["objectID"] for s, xs in by_source.items()}
    assert {h["source"]: h["objectID"] for h in r["hits"]} == best
    # Facet counts are those before distinct (facetingAfterDistinct defaults to false).
    assert r["facets"]["section"] == dict(collections.Counter(x["section"] for x in recs))

    # Pages are pages of groups.
    page = as_dict(client.search_single_index("debsrc", {"query": "", "hitsPerPage": 7, "page": 1}))
    assert page["nbPages"] == (len(by_source) + 6) // 7
    assert [h["objectID"] for h in page["hits"]] == [h["objectID"] for h in r["hits"]][7:14]

    # distinct: 2 keeps two per group, each group's together, and still counts groups.
    two = as_dict(client.search_single_index("debsrc", {"query": "", "hitsPerPage": 1000, "distinct": 2}))
    assert two["nbHits"] == len(by_source)
    per = collections.Counter(h["source"] for h in two["hits"])
    assert per == {s: min(2, len(xs)) for s, xs in by_source.items()}
    seen = []
    for h in two["hits"]:
        if not seen or seen[-1] != h["source"]:
            assert h["source"] not in seen
            seen.append(h["source"])

    # With words: "lib" matches packages of several sources.
    words = as_dict(client.search_single_index("debsrc", {"query": "lib", "hitsPerPage": 1000}))
    assert len({h["source"] for h in words["hits"]}) == len(words["hits"]) == words["nbHits"]

    # A search may turn it off.
    assert as_dict(client.search_single_index("debsrc", {"query": "", "hitsPerPage": 0, "distinct": False}))["nbHits"] == len(recs)


def test_ranking_info_is_read_by_the_official_client(client):
    """``getRankingInfo``: the client reads every hit's ``_rankingInfo`` into
    its own model (which requires ``geoDistance``, ``userScore`` and more),
    with Limelight's figures for the criteria it computes."""
    client.save_objects("ranked", [
        {"objectID": "exact", "name": "quokka lantern", "_geoloc": {"lat": 48.8566, "lng": 2.3522}},
        {"objectID": "apart", "name": "lantern of the quokka"},
    ], wait_for_tasks=True)
    r = client.search_single_index("ranked", {"query": "quokka lantern", "getRankingInfo": True})
    info = {h.object_id: h.ranking_info for h in r.hits}
    assert [h.object_id for h in r.hits] == ["exact", "apart"]
    for i in info.values():
        assert (i.nb_typos, i.nb_exact_words, i.words) == (0, 2, 2)
    assert info["exact"].proximity_distance == 1 < info["apart"].proximity_distance
    assert (info["exact"].to_dict()["exactValue"], info["apart"].to_dict()["exactValue"]) == (True, False)
    # No point to measure from: 0, as Algolia answers; the constants.
    assert info["exact"].geo_distance == 0 and info["exact"].geo_precision is None
    assert (info["exact"].user_score, info["exact"].filters, info["exact"].promoted) == (0, 0, False)
    # Around a point: the distance divided by the precision of its group, and
    # that precision (10 m by default, or aroundPrecision's), as Algolia
    # reports them; the hit's _geoDistance in metres.
    around = {"query": "quokka", "aroundLatLng": "48.8606, 2.3376", "getRankingInfo": True}
    r = client.search_single_index("ranked", around)
    hit = {h.object_id: h for h in r.hits}["exact"]
    assert 110 <= hit.ranking_info.geo_distance <= 120
    assert hit.ranking_info.geo_precision == 10
    assert 1100 < hit.to_dict()["_geoDistance"] < 1200
    r = client.search_single_index("ranked", {**around, "aroundPrecision": 500})
    near = {h.object_id: h.ranking_info for h in r.hits}["exact"]
    assert (near.geo_distance, near.geo_precision) == (2, 500)
