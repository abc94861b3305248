"""Each shard's derived file (``shard-N.sqlite.derived``: the posting and
forward indexes, rows and item order a query worker maps instead of holding)
through real clusters: written beside the shards by the query workers' first
searches, read again from SQLite when deleted, and never changing an answer:
a cluster whose ``--memory-budget`` holds no index answers from SQLite alone,
exactly as one that maps them.
"""

import random

from harness import Client, publish_all, read_jsonl, require_binaries, start_cluster, stop_cluster, wait_until

SHARDS = 2


def searches(client):
    """Searches of words of the sample, plain, faceted, filtered and paged."""
    rng = random.Random(7)
    words = ["editor", "library", "python", "vim", "gnome", "kde", "server", "font", "perl", "data", "edtor", "libary", "pyth"]
    out = []
    for _ in range(40):
        query = " ".join(rng.sample(words, rng.choice([1, 1, 2])))
        params = {"query": query, "hitsPerPage": rng.choice([5, 20]), "page": rng.choice([0, 0, 1])}
        if rng.random() < 0.3:
            params["facets"] = ["section"]
        answer = client.search(**params)
        out.append((query, answer["nbHits"], [h["objectID"] for h in answer["hits"]], answer.get("facets")))
    return out


def derived(data):
    return sorted(p.name for p in data.glob("shard-*.sqlite.derived"))


def derived_after_suggestions(client, data):
    """The shards' derived files once a suggestion of a second word has asked
    each query worker for its shards' current index (searches ask only on
    shards of many terms)."""
    client.suggest("editor li")
    return derived(data)


def test_answers_are_the_same_mapped_rebuilt_and_without_any_index(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    items = read_jsonl("debian-packages.jsonl")
    mapped = start_cluster(tmp_path / "mapped", shards=SHARDS)
    plain = start_cluster(tmp_path / "plain", shards=SHARDS, extra=("--memory-budget", "0"))
    names = [f"shard-{s}.sqlite.derived" for s in range(SHARDS)]
    try:
        for cluster in (mapped, plain):
            assert publish_all(cluster.endpoint, items) == len(items)
        with Client(mapped.endpoint, timeout=30) as a, Client(plain.endpoint, timeout=30) as b:
            # Before any index: SQLite's answers (small shards: searches do
            # not start a read; a suggestion does).
            assert derived(mapped.data) == []
            expected = searches(a)
            assert sum(n for _, n, _, _ in expected) > 100
            assert wait_until(lambda: derived_after_suggestions(a, mapped.data) == names, timeout=60)
            assert searches(a) == expected

            # Deleted, and every shard's data changed (a process holding a
            # shard's current index keeps it mapped, and writes the file at
            # the next change): read again from SQLite.
            for path in mapped.data.glob("shard-*.sqlite.derived"):
                path.unlink()
            extra = [dict(items[k], uniqueIdentifier=f"derived-extra-{k}") for k in range(20)]
            assert publish_all(mapped.endpoint, extra) == len(extra)
            expected = searches(a)
            assert wait_until(lambda: derived_after_suggestions(a, mapped.data) == names, timeout=60)
            assert searches(a) == expected

            # A budget that holds no index: the files are written, the answers
            # still SQLite's.
            expected = searches(b)
            assert wait_until(lambda: derived_after_suggestions(b, plain.data) == names, timeout=60)
            assert searches(b) == expected
    finally:
        stop_cluster(mapped.process)
        stop_cluster(plain.process)
