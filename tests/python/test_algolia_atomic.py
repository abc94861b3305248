"""Partial updates are atomic (docs/algolia.md, "What differs from Algolia"):
Algolia's own Python client fires many concurrent partial updates at one
record from several threads, and none is lost.

A partial update reads the record and writes it whole; the coordinator holds
the record's key across the two steps, and every other write of the record
waits for it. Without that, two increments that read the same count store the
same sum, and the final count falls short of the increments acknowledged.
"""

import threading

import pytest

from algoliasearch.http.exceptions import RequestException

from harness import keyed_cluster
from test_algolia_client import as_dict, client_for

INDEX = "counters"
THREADS = 6
ROUNDS = 15


@pytest.fixture(scope="module")
def admin(tmp_path_factory):
    for cluster in keyed_cluster(tmp_path_factory, "algolia-atomic", shards=2):
        key = (cluster.data / "limelight.key").read_text().strip()
        client = client_for(cluster, key)
        yield client_for, cluster, key
        client.close()


def test_concurrent_increments_and_saves_of_one_record_lose_nothing(admin):
    make, cluster, key = admin
    client = make(cluster, key)
    client.save_objects(INDEX, [{"objectID": "hits", "count": 0, "tags": []}], wait_for_tasks=True)
    acknowledged = [0] * THREADS
    tagged = [[] for _ in range(THREADS)]
    failures = []

    def worker(n):
        c = make(cluster, key)
        try:
            for i in range(ROUNDS):
                if i % 3 == 0:
                    # The single-record endpoint, POST .../hits/partial.
                    c.partial_update_object(INDEX, "hits", {"count": {"_operation": "Increment", "value": 1}})
                    acknowledged[n] += 1
                elif i % 3 == 1:
                    # A batch: a plain save of another record, then the increment.
                    c.batch(INDEX, {"requests": [
                        {"action": "updateObject", "body": {"objectID": f"other-{n}-{i}", "count": i}},
                        {"action": "partialUpdateObjectNoCreate",
                         "body": {"objectID": "hits", "count": {"_operation": "Increment", "value": 2}}},
                    ]})
                    acknowledged[n] += 2
                else:
                    # A read-modify-write of another attribute: it must keep the count.
                    tag = f"t{n}-{i}"
                    c.partial_update_object(INDEX, "hits", {"tags": {"_operation": "AddUnique", "value": tag}})
                    tagged[n].append(tag)
        except RequestException as e:  # reported below, with what was acknowledged
            failures.append(f"thread {n}: {e}")
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    got = as_dict(client.get_object(INDEX, "hits"))
    assert got["count"] == sum(acknowledged)
    assert sorted(got["tags"]) == sorted(t for ts in tagged for t in ts)
    client.close()


def test_a_no_create_partial_update_of_a_deleted_record_creates_nothing(admin):
    make, cluster, key = admin
    client = make(cluster, key)
    client.save_objects(INDEX, [{"objectID": "gone", "count": 1}], wait_for_tasks=True)
    client.delete_object(INDEX, "gone")
    client.partial_update_objects(INDEX, [{"objectID": "gone", "count": {"_operation": "Increment", "value": 1}}],
                                  create_if_not_exists=False, wait_for_tasks=True)
    with pytest.raises(RequestException) as e:
        client.get_object(INDEX, "gone")
    assert e.value.status_code == 404
    client.close()
