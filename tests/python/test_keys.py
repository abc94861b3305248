"""API keys through the Python client, on a cluster of the module's own run
with ``limelight up --require-keys`` (docs/security.md): the keys ``up``
writes, key management, a secured key made in Python accepted by the
server, rights and limits — every message schema-checked as it passes."""

import os
import stat
import time

import pytest

from harness import Client, Traffic, keyed_cluster
from limelight_client import LimelightError, secured_key


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    yield from keyed_cluster(tmp_path_factory, "keyed", shards=3)


def read_key(cluster, name):
    path = cluster.data / name
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, name
    return path.read_text().strip()


def item(uid, owner, category, price, domain="org.example"):
    return {"uniqueIdentifier": uid, "domainIdentifier": domain,
            "attributes": {"title": f"{owner} {category} {uid}", "contentType": "Product",
                           "category": category, "price": price, "owner": owner}}


def code_of(call):
    with pytest.raises(LimelightError) as e:
        call()
    return e.value.code


def test_up_writes_keys_that_manage_two_apps_apart(keyed):
    traffic = Traffic()
    master = read_key(keyed, "master.key")
    default_admin = read_key(keyed, "limelight.key")
    with Client(keyed.endpoint, timeout=10, observer=traffic, key="") as anonymous:
        assert anonymous.ping()["shardCount"] == 3
        assert code_of(lambda: anonymous.search({})) == "key_required"
    with Client(keyed.endpoint, timeout=10, observer=traffic, key=master) as boss:
        keys = {}
        for app in ("py-a", "py-b"):
            for role in ("admin", "search"):
                reply = boss.keys("create", app=app, role=role)
                keys[app, role] = reply["apiKey"]
                assert reply["keys"][0]["app"] == app and reply["keys"][0]["role"] == role
        listed = boss.keys("list")["keys"]
        assert {k["app"] for k in listed} == {None, "default", "py-a", "py-b"}
        assert all(k["id"] not in keys.values() for k in listed)
        assert code_of(lambda: boss.publish([item("x", "boss", "fruit", 1)])) == "forbidden"
    assert traffic.sent("keys") and traffic.received("keys_reply")

    items = {app: [item(f"i{n}", app, ["fruit", "herb"][n % 2], n, ["org.example", "com.shop"][n % 2]) for n in range(20)]
             for app in ("py-a", "py-b")}
    for app in ("py-a", "py-b"):
        with Client(keyed.endpoint, timeout=10, observer=traffic, key=keys[app, "admin"]) as admin:
            ack = admin.publish(items[app])
            assert (ack["stored"], ack["rejected"]) == (20, 0)
            assert [r["uniqueIdentifier"] for r in ack["results"]] == [f"i{n}" for n in range(20)]

    with Client(keyed.endpoint, timeout=10, observer=traffic, key=keys["py-a", "search"]) as a:
        found = [x for kind, batch in a.query('title == "*" || owner == "py-b"') if kind == "batch" for x in batch]
        assert sorted(x["uniqueIdentifier"] for x in found) == sorted(f"i{n}" for n in range(20))
        assert {x["attributes"]["owner"] for x in found} == {"py-a"}
        assert {x["domainIdentifier"] for x in found} == {"org.example", "com.shop"}
        hits = a.search({"query": "", "hitsPerPage": 100, "facets": ["owner"], "filters": "owner:py-b OR category:fruit"})
        assert {h["owner"] for h in hits["hits"]} == {"py-a"} and hits["nbHits"] == 10
        assert set(hits["facets"]["owner"]) == {"py-a"}
        assert code_of(lambda: a.publish([item("x", "py-a", "fruit", 1)])) == "forbidden"
        assert code_of(lambda: a.delete(all=True)) == "forbidden"
        # The default app of `up` is an app like the others: its items are not py-a's.
    with Client(keyed.endpoint, timeout=10, observer=traffic, key=default_admin) as d:
        assert d.search({"query": "", "hitsPerPage": 0})["nbHits"] == 0

    # A secured key made in Python, with no call to the server, is honoured by it.
    fruit = secured_key(keys["py-a", "search"], filters="category:fruit", valid_until=int(time.time()) + 600,
                        restrict_domains=["org.example"], user_token="alice")
    with Client(keyed.endpoint, timeout=10, observer=traffic, key=fruit) as s:
        got = s.search({"query": "", "hitsPerPage": 100, "filters": "category:herb OR category:fruit"})
        assert sorted(h["objectID"] for h in got["hits"]) == sorted(f"i{n}" for n in range(0, 20, 2))
        assert all(h["owner"] == "py-a" and h["category"] == "fruit" for h in got["hits"])
    expired = secured_key(keys["py-a", "search"], valid_until=int(time.time()) - 1)
    with Client(keyed.endpoint, timeout=10, observer=traffic, key=expired) as s:
        assert code_of(lambda: s.search({})) == "key_expired"
    forged = secured_key(keys["py-b", "search"], filters="category:fruit")[:-4] + "AAAA"
    with Client(keyed.endpoint, timeout=10, observer=traffic, key=forged) as s:
        assert code_of(lambda: s.search({})) == "invalid_key"

    with Client(keyed.endpoint, timeout=10, observer=traffic, key=keys["py-a", "admin"]) as admin:
        assert admin.delete(all=True) == 20
    with Client(keyed.endpoint, timeout=10, observer=traffic, key=keys["py-b", "search"]) as b:
        assert b.search({"query": "", "hitsPerPage": 0})["nbHits"] == 20


def test_limits_answer_with_their_own_codes(keyed):
    master = read_key(keyed, "master.key")
    with Client(keyed.endpoint, timeout=10, key=master) as boss:
        key = boss.keys("create", app="py-limits", role="admin", rateLimit=2, maxItemsPerPublish=3)["apiKey"]
    with Client(keyed.endpoint, timeout=10, key=key, observer=Traffic()) as c:
        with pytest.raises(LimelightError) as e:
            c.publish([item(f"x{n}", "py-limits", "fruit", n) for n in range(4)])
        assert e.value.code == "too_many_items" and "at most 3" in str(e.value)
        time.sleep(1.1)
        outcomes = []
        for _ in range(6):
            try:
                c.search({})
                outcomes.append("ok")
            except LimelightError as err:
                outcomes.append(err.code)
        assert "rate_limited" in outcomes and 2 <= outcomes.count("ok") <= 4, outcomes
