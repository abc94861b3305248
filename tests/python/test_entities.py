"""App entities, typed queries and Spotlight's groups on the shared cluster,
through the Python client: every message schema-checked as it passes."""

import pytest

from harness import Client, Traffic, wait_until
from limelight_client import LimelightError


def landmark(i, title, priority=0, domain="com.example.pylandmarks"):
    return {"type": "PyLandmark", "id": str(i), "priority": priority, "domainIdentifier": domain,
            "displayRepresentation": {"title": title, "subtitle": f"landmark {i}"},
            "properties": {"contentDescription": f"{title} described", "city": "Lisbon", "height": 10 * i}}


def test_entity_messages_and_results(client, traffic):
    ack = client.donate_entities([landmark(1, "Belem tower xylofone"), landmark(2, "Belem tower xylofone", priority=10),
                                  landmark(3, "Santa Justa lift xylofone", domain="com.example.pylandmarks.lifts")])
    assert (ack["stored"], ack["rejected"]) == (3, 0)
    hits = client.search({"query": "belem xylofone"})["hits"]
    assert [h["objectID"] for h in hits] == ["entity:PyLandmark:2", "entity:PyLandmark:1"]
    assert hits[0]["entity"] == {"type": "PyLandmark", "id": "2", "priority": 10}

    # A shard's term list may be up to 2 s old (suggestions trade that for speed): wait for the new word.
    assert wait_until(lambda: client.suggest("xylo")["suggestions"] == [{"suggestion": "xylofone", "count": 3}], timeout=10)
    suggested = client.suggest("xylo", hits_per_page=2)
    assert suggested["suggestions"][0] == {"suggestion": "xylofone", "count": 3}
    assert len(suggested["response"]["hits"]) == 2

    groups = client.spotlight("xylofone", per_domain=1)["groups"]
    assert [(g["domainIdentifier"], g["total"]) for g in groups] == [("com.example.pylandmarks", 2),
                                                                     ("com.example.pylandmarks.lifts", 1)]
    pages = [client.continue_search(groups[0]["continuation"], page=p, hits_per_page=1) for p in range(2)]
    assert [h["objectID"] for p in pages for h in p["hits"]] == ["entity:PyLandmark:2", "entity:PyLandmark:1"]
    assert pages[0]["nbPages"] == 2

    client.associate_entity("entity:PyLandmark:3", "PyLift", "lift", priority=1)
    with pytest.raises(LimelightError) as e:
        client.associate_entity("no-such-item", "PyLift", "x")
    assert e.value.code == "not_found"
    assert client.delete_entities("PyLandmark", ids=["1"]) == 1
    assert client.delete_entities("PyLandmark") == 2
    assert client.search({"query": "xylofone"})["nbHits"] == 0

    for kind in ["entity_donate", "entity_delete", "entity_associate", "suggest", "spotlight", "continue"]:
        assert traffic.sent(kind), kind
    for kind in ["entity_ack", "suggest_result", "spotlight_result", "publish_ack", "search_result"]:
        assert traffic.received(kind), kind


def test_bad_entity_requests_name_the_field(cluster):
    traffic = Traffic(check_sent=False)
    with Client(cluster.endpoint, timeout=10, observer=traffic) as client:
        with pytest.raises(LimelightError) as e:
            client.delete_entities("Bad:Type")
        assert e.value.field == "entityType"
        with pytest.raises(LimelightError) as e:
            client.continue_search("@@@")
        assert e.value.field == "token"
        with pytest.raises(LimelightError) as e:
            client.spotlight("x", per_domain=0)
        assert e.value.field == "perDomain"
        ack = client.donate_entities([{"type": "T", "id": "1", "displayRepresentation": {}}])
        assert ack["results"][0]["error"]["field"] == "displayRepresentation.title"
