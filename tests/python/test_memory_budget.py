"""A query worker's ``--memory-budget`` through a real cluster: it bounds
SQLite's page caches and maps of the worker's connections as well as the
derived index structures held on the heap (the sizes each connection takes
are ``ReaderMemoryTests``'). Served with a small budget, a data folder is
answered exactly as with the default one, the workers' anonymous memory
under the budget.
"""

import random

from harness import Client, child_pid, publish_all, read_jsonl, require_binaries, start_cluster, stop_cluster

SHARDS = 2
BUDGET_MB = 32


def answers(client):
    """Searches, plain, faceted and paged, and a suggestion (which reads each
    shard's derived index)."""
    rng = random.Random(11)
    words = ["editor", "library", "python", "vim", "gnome", "server", "font", "perl", "data", "edtor", "pyth"]
    out = []
    for _ in range(30):
        params = {"query": " ".join(rng.sample(words, rng.choice([1, 2]))), "hitsPerPage": 10, "page": rng.choice([0, 1])}
        if rng.random() < 0.4:
            params["facets"] = ["section"]
        answer = client.search(**params)
        out.append((params["query"], answer["nbHits"], [h["objectID"] for h in answer["hits"]], answer.get("facets")))
    out.append(client.suggest("editor li")["suggestions"])
    return out


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def query_workers(cluster):
    pids = [child_pid(cluster.process, f"query-{i}") for i in range(2)]
    assert all(pids), pids
    return pids


def test_a_small_budget_maps_no_shard_file_and_answers_the_same(tmp_path):
    """The same data folder served with the default budget, then again with a
    small one (one folder: two clusters fed the same items may order ties
    apart, their shards' item ids differ)."""
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    items = read_jsonl("debian-packages.jsonl")
    data = tmp_path / "data"
    default = start_cluster(data, shards=SHARDS)
    try:
        assert publish_all(default.endpoint, items) == len(items)
        with Client(default.endpoint, timeout=30) as b:
            expected = answers(b)
            assert answers(b) == expected
        assert sum(n for _, n, _, _ in expected[:-1]) > 100
    finally:
        stop_cluster(default.process)
    small = start_cluster(data, shards=SHARDS, extra=("--memory-budget", f"{BUDGET_MB}M"))
    try:
        with Client(small.endpoint, timeout=30) as a:
            # Twice: the second time with the derived indexes read.
            for _ in range(2):
                assert answers(a) == expected
        for pid in query_workers(small):
            anon_mb = status_kb(pid, "RssAnon") / 1024
            assert anon_mb < BUDGET_MB, f"query worker {pid}: {anon_mb:.1f} MB anonymous, budget {BUDGET_MB} MB"
    finally:
        stop_cluster(small.process)
