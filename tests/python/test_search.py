"""Parameter search (Algolia's parameters) on the shared cluster: every
message schema-checked as it passes, and the answers checked against the
sample data."""

import pytest

from harness import Client, Traffic
from limelight_client import LimelightError


def test_search_answers_with_algolias_fields(client, traffic, grocer):
    response = client.search({"query": "apple", "facets": ["unit"], "getRankingInfo": True,
                              "attributesToRetrieve": ["title", "price"]})
    apples = [i for i in grocer if any(w.lower().startswith("apple") for w in i["attributes"]["title"].replace("-", " ").split())]
    assert response["nbHits"] >= len(apples) > 0
    for key in ["hits", "nbHits", "page", "nbPages", "hitsPerPage", "facets", "exhaustiveNbHits", "query", "params",
                "processingTimeMS"]:
        assert key in response, key
    hit = response["hits"][0]
    assert set(hit) <= {"objectID", "domainIdentifier", "title", "price", "_highlightResult", "_rankingInfo", "entity"}
    assert "<em>" in hit["_highlightResult"]["title"]["value"]
    assert traffic.sent("search")[0]["params"]["query"] == "apple"
    assert traffic.received("search_result")[0]["id"] == traffic.sent("search")[0]["id"]


def test_bad_filters_name_the_parameter_and_position(cluster):
    # The requests break the schema on purpose: check the replies only.
    traffic = Traffic(check_sent=False)
    with Client(cluster.endpoint, timeout=10, observer=traffic) as client:
        with pytest.raises(LimelightError) as e:
            client.search({"filters": "price < 10 OR unit:lb"})
        assert e.value.code == "bad_filter"
        assert e.value.field == "filters"
        assert e.value.position == 0
        with pytest.raises(LimelightError) as e:
            client.search({"query": "x", "facetFilter": ["a:b"]})
        assert (e.value.code, e.value.field) == ("unknown_parameter", "facetFilter")
        assert client.ping()["servedShards"] == [0, 1, 2, 3]
    assert [m["code"] for m in traffic.received("error")] == ["bad_filter", "unknown_parameter"]


def test_keyword_parameters_and_paging(client, debian):
    first = client.search(hitsPerPage=7, attributesToRetrieve=["title"])
    assert first["nbHits"] >= len(debian)
    ids = []
    for page in range(first["nbPages"]):
        ids += [h["objectID"] for h in client.search(hitsPerPage=7, page=page, attributesToRetrieve=["title"])["hits"]]
    assert len(ids) == len(set(ids)) == first["nbHits"]
