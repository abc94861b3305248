"""Semantic search (issue 14) on a real cluster started with the real model:
a subset of the Debian corpus with displayName and contentDescription
declared semantic, embedded by the indexers as the items are written.

- Queries whose words do not occur in the wanted package's text find it in
  the top 10 (the test checks the words really are absent).
- Navigational queries (a package's exact name) stay first in hybrid search.
- The same text on two shards gets the same semantic score.
- Filters apply before semantic ranking; ratio 0 is the lexical order;
  replacing or deleting an item replaces or deletes its vector; an app
  entity is embedded from its display representation.
- Bad semantic parameters are refused naming the field; a cluster without
  the model refuses semantic searches clearly and does everything else.

Figures (indexing time with embedding, hybrid query p50) are printed.
Nothing is cached across runs: every run embeds the subset afresh.
"""

import json
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
import time

import pytest

from harness import REPO, Client, Traffic, bin_dir, require_binaries, start_cluster, stop_cluster
from limelight_client import LimelightError

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "datasets"
SHARDS = 3
SUBSET = 1200

# (query, package): none of the query's words occurs in the package's text.
BY_MEANING = [
    ("sketch scalable artwork", "inkscape"),
    ("store login secrets safely", "keepassxc"),
    ("synchronise folders remotely", "rsync"),
    ("recognize letters in photographs", "tesseract-ocr"),
    ("read aloud robot voice", "espeak-ng"),
    ("warmer display colours at bedtime", "redshift"),
    ("track household spending", "homebank"),
    ("block brute force login attempts", "fail2ban"),
    ("planetarium stargazing", "stellarium"),
    ("family tree ancestry", "gramps"),
    ("engrave musical scores", "lilypond"),
    ("organize ebooks", "calibre"),
    ("detect misspellings", "hunspell"),
    ("detect malware", "clamav"),
    ("selfie camera", "cheese"),
    ("edit podcast recordings", "audacity"),
    ("resize disk partitions", "gparted"),
]
NAVIGATIONAL = ["inkscape", "gimp", "vim", "calibre", "rsync", "gparted"]
WANTED = {p for _, p in BY_MEANING} | set(NAVIGATIONAL)


def model_folder():
    """$LIMELIGHT_MODEL, else what scripts/install-model prints (installing it
    when missing): the test fails rather than skips without the model."""
    folder = os.environ.get("LIMELIGHT_MODEL") or subprocess.run(
        [str(REPO / "scripts" / "install-model")], check=True, capture_output=True, text=True).stdout.strip()
    assert (pathlib.Path(folder) / "model.safetensors").is_file(), f"no model in {folder}"
    return folder


def fnv1a_shard(domain, shard_count=SHARDS):
    """The coordinator's shard of a domain (Sources/WireProtocol/Sharding.swift)."""
    h = 0xcbf29ce484222325
    for b in domain.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % shard_count


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def package_text(item):
    a = item["attributes"]
    return " ".join(str(a.get(k, "")) for k in ("title", "displayName", "contentDescription"))


def copies_of(item):
    """The item twice more, in two domains that live on different shards."""
    domains = [f"test.copies.d{i}" for i in range(20)]
    first = domains[0]
    second = next(d for d in domains if fnv1a_shard(d) != fnv1a_shard(first))
    return [dict(item, uniqueIdentifier=f"copy-{n}:{item['uniqueIdentifier']}", domainIdentifier=d)
            for n, d in ((1, first), (2, second))]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    out = subprocess.run([sys.executable, str(SHARED / "debian_packages.py")], check=True, capture_output=True, text=True).stdout
    corpus = [json.loads(line) for line in out.splitlines() if line.strip()]
    by_name = {i["attributes"]["title"]: i for i in corpus}
    assert WANTED <= by_name.keys()
    rest = [i for i in corpus if i["attributes"]["title"] not in WANTED]
    subset = [by_name[n] for n in sorted(WANTED)] + random.Random(14).sample(rest, SUBSET)
    copies = copies_of(by_name["inkscape"])
    cluster = start_cluster(tmp_path_factory.mktemp("semantic"), shards=SHARDS, extra=["--model", model_folder()])
    try:
        with Client(cluster.endpoint, timeout=120, observer=Traffic()) as c:
            c.declare([{"name": "displayName", "type": "text", "semantic": True},
                       {"name": "contentDescription", "type": "text", "semantic": True}])
            started = time.monotonic()
            # One batch at a time: a batch waits for its embeddings before it is acknowledged.
            for n, start in enumerate(range(0, len(subset), 100)):
                batch = subset[start:start + 100] + [copies[n]] if n < 2 else subset[start:start + 100]
                ack = c.publish(batch, batch=f"semantic-{start}")
                assert ack["rejected"] == 0, ack
            elapsed = time.monotonic() - started
            total = len(subset) + len(copies)
            print(f"\n[figures] indexing {total} Debian items with embedding ({SHARDS} shards, 2 indexers): "
                  f"{elapsed:.1f} s, {1000 * elapsed / total:.0f} ms per item")
            yield c, by_name, subset, copies, cluster.endpoint
    finally:
        stop_cluster(cluster.process)


def hybrid(c, text, ratio=None, **params):
    semantic = {} if ratio is None else {"ratio": ratio}
    return c.search({"query": text, "semantic": semantic, "attributesToRetrieve": ["title", "section"],
                     "getRankingInfo": True, **params})


def test_queries_without_the_packages_words_find_them_by_meaning(world):
    c, by_name, _, _, _ = world
    latencies, processing = [], []
    for query, package in BY_MEANING:
        assert not words(query) & words(package_text(by_name[package])), (query, package)
        started = time.monotonic()
        r = hybrid(c, query, hitsPerPage=10)
        latencies.append(1000 * (time.monotonic() - started))
        processing.append(r["processingTimeMS"])
        titles = [h["title"] for h in r["hits"]]
        assert package in titles, (query, package, titles)
        # By words alone it is not found: its text holds none of them.
        lexical = c.search({"query": query, "attributesToRetrieve": ["title"], "hitsPerPage": 10})
        assert package not in [h["title"] for h in lexical["hits"]], (query, package)
    print(f"\n[figures] hybrid search (ratio 0.5, {len(BY_MEANING)} queries, {SUBSET}+ items, query embedded by the "
          f"coordinator): p50 {statistics.median(latencies):.1f} ms, max {max(latencies):.1f} ms (client wall clock, "
          f"the first loads the model); processingTimeMS p50 {statistics.median(processing)} ms")


def test_typed_queries_find_by_meaning_when_a_model_is_present(world):
    """CSUserQuery: a typed query's results are hybrid when the cluster has a
    model, while its suggestions stay completions of the words typed."""
    c, by_name, _, _, _ = world
    found = 0
    for query, package in BY_MEANING:
        r = c.suggest(query, limit=5, hits_per_page=10)
        titles = [h["title"] for h in r["response"]["hits"]]
        found += package in titles
        assert all(s["suggestion"].split()[:-1] == query.split()[:-1] for s in r["suggestions"]), r["suggestions"]
    # Every pair is found by a hybrid search (the test above); a typed query's
    # last word is also a prefix, which may crowd a few out of the top 10.
    assert found >= len(BY_MEANING) - 2, found
    # A navigational typed query still puts the package first.
    r = c.suggest("inkscape", hits_per_page=5)
    assert r["response"]["hits"][0]["title"] == "inkscape"


def test_navigational_queries_stay_first(world):
    c, _, _, _, _ = world
    for name in NAVIGATIONAL:
        for r in (hybrid(c, name), c.search({"query": name, "hybrid": {"semanticRatio": 0.5}, "getRankingInfo": True})):
            first = r["hits"][0]
            assert first["title"] == name, (name, [h["title"] for h in r["hits"][:5]])
            assert first["_rankingInfo"]["navigational"] is True
            assert first["_rankingInfo"]["lexicalRank"] == 1


def test_ranking_info_shows_the_lexical_and_semantic_parts(world):
    c, _, _, _, _ = world
    r = hybrid(c, "inkscape")
    info = r["hits"][0]["_rankingInfo"]
    assert info["lexicalRank"] == 1 and isinstance(info["semanticRank"], int)
    assert 0 < info["semanticScore"] <= 1 and info["hybridScore"] > 0
    assert "nbTypos" in info and "firstMatchedWord" in info  # the lexical criteria are still there
    # A hit found only by meaning has no lexical rank.
    r = hybrid(c, "sketch scalable artwork", hitsPerPage=10)
    only_semantic = [h for h in r["hits"] if h["_rankingInfo"]["lexicalRank"] is None]
    assert only_semantic and all(isinstance(h["_rankingInfo"]["semanticScore"], float) for h in only_semantic)


def test_two_shards_agree_on_the_same_items_score(world):
    c, _, _, copies, _ = world
    assert fnv1a_shard(copies[0]["domainIdentifier"]) != fnv1a_shard(copies[1]["domainIdentifier"])
    r = hybrid(c, "sketch scalable artwork", ratio=1, hitsPerPage=10)
    scores = {h["objectID"]: h["_rankingInfo"]["semanticScore"] for h in r["hits"]}
    ids = [copies[0]["uniqueIdentifier"], copies[1]["uniqueIdentifier"], "deb:inkscape"]
    assert all(i in scores for i in ids), scores
    print(f"\n[figures] one text's semantic score on three shards: {[scores[i] for i in ids]}")
    # The query vector is the same on every shard (the coordinator embeds it
    # once); the item's own vector may differ in its last bits when it was
    # embedded in another packed batch (float32 sums in another order).
    assert scores[ids[0]] == pytest.approx(scores[ids[1]], abs=1e-6)
    assert scores[ids[0]] == pytest.approx(scores[ids[2]], abs=1e-6)


def test_filters_apply_before_semantic_ranking(world):
    c, _, subset, copies, _ = world
    utils = [i for i in subset + copies if i["attributes"].get("section") == "utils"]
    r = hybrid(c, "sketch scalable artwork", ratio=1, hitsPerPage=20, facetFilters=["section:utils"])
    assert r["hits"] and all(h["section"] == "utils" for h in r["hits"])
    assert "inkscape" not in [h["title"] for h in r["hits"]]
    # Every item with a vector that passes the filters matches a search by meaning.
    assert r["nbHits"] == len(utils)


def test_ratio_zero_is_the_lexical_order_and_one_the_semantic_order(world):
    c, _, _, _, _ = world
    plain = c.search({"query": "audio editor", "hitsPerPage": 10})
    zero = hybrid(c, "audio editor", ratio=0, hitsPerPage=10)
    assert [h["objectID"] for h in zero["hits"]] == [h["objectID"] for h in plain["hits"]]
    assert zero["nbHits"] == plain["nbHits"]
    one = hybrid(c, "audio editor", ratio=1, hitsPerPage=10)
    scores = [h["_rankingInfo"]["semanticScore"] for h in one["hits"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 10


def test_replacing_or_deleting_an_item_replaces_or_deletes_its_vector(world):
    c, _, _, _, _ = world
    item = {"uniqueIdentifier": "semantic-test:1", "domainIdentifier": "test.semantic",
            "attributes": {"title": "zz-item", "displayName": "a recipe for baking sourdough bread"}}
    assert c.publish([item])["stored"] == 1
    def top(text):
        return [h["objectID"] for h in hybrid(c, text, ratio=1, hitsPerPage=3)["hits"]]
    assert top("bake a loaf at home")[0] == "semantic-test:1"
    item["attributes"]["displayName"] = "tide tables for sailing boats"
    assert c.publish([item])["stored"] == 1
    assert "semantic-test:1" not in top("bake a loaf at home")
    assert top("when is high water for yachts")[0] == "semantic-test:1"
    assert c.delete(ids=["semantic-test:1"]) == 1
    assert "semantic-test:1" not in top("when is high water for yachts")


def test_an_app_entity_is_embedded_from_its_display_representation(world):
    c, _, _, _, _ = world
    ack = c.donate_entities([{"type": "RecipeEntity", "id": "7", "domainIdentifier": "test.entities",
                              "displayRepresentation": {"title": "Grandma's apple pie", "subtitle": "dessert with cinnamon"}}])
    assert ack["stored"] == 1
    hits = hybrid(c, "sweet baked fruit tart", ratio=1, hitsPerPage=3)["hits"]
    assert hits[0]["objectID"] == "entity:RecipeEntity:7"


def test_the_clients_take_semantic_searches(world):
    c, _, _, _, endpoint = world
    r = c.semantic_search("organize ebooks", ratio=0.7, hitsPerPage=5, attributesToRetrieve=["title"])
    assert "calibre" in [h["title"] for h in r["hits"]]
    out = subprocess.run([str(bin_dir() / "limelight"), "search", "--semantic", "organize ebooks", "--ratio", "1",
                          "--params", '{"hitsPerPage": 5, "attributesToRetrieve": ["title"]}', "--endpoint", endpoint],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "calibre" in [h["title"] for h in json.loads(out.stdout)["hits"]]
    out = subprocess.run([str(bin_dir() / "limelight"), "search", "--ratio", "1", "--endpoint", endpoint],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--ratio needs --semantic" in out.stderr


@pytest.mark.parametrize("params,field", [
    ({"query": "x", "semantic": {"ratio": 2}}, "semantic.ratio"),
    ({"query": "x", "semantic": {"qery": "typo"}}, "semantic.qery"),
    ({"query": "x", "semantic": "draw"}, "semantic"),
    ({"query": "x", "semantic": {"query": 5}}, "semantic.query"),
    ({"query": "", "semantic": {}}, "semantic.query"),
    ({"query": "x", "hybrid": {"semanticRatio": -0.1}}, "hybrid.semanticRatio"),
    ({"query": "x", "hybrid": {"embedder": "openai"}}, "hybrid.embedder"),
    ({"query": "x", "semantic": {}, "hybrid": {}}, "hybrid"),
])
def test_bad_semantic_parameters_are_refused_naming_them(world, params, field):
    endpoint = world[4]
    # Replies are schema-checked; the bad requests themselves break the schema on purpose.
    with Client(endpoint, timeout=30, observer=Traffic(check_sent=False)) as c, pytest.raises(LimelightError) as e:
        c.search(params)
    assert e.value.field == field, str(e.value)
    assert e.value.code in ("invalid_parameter", "unknown_parameter")


def test_without_a_model_semantic_search_is_refused_and_the_rest_works(tmp_path, monkeypatch):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    monkeypatch.delenv("LIMELIGHT_MODEL", raising=False)
    cluster = start_cluster(tmp_path, shards=2)
    try:
        limelight = str(bin_dir() / "limelight")
        out = subprocess.run([limelight, "declare", "displayName", "--semantic", "--endpoint", cluster.endpoint],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "declared displayName (text, semantic)" in out.stdout, out.stderr
        # A standard attribute's type is fixed: only --semantic / --no-semantic can be declared.
        out = subprocess.run([limelight, "declare", "title", "--endpoint", cluster.endpoint], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "standard attribute" in out.stderr
        with Client(cluster.endpoint, timeout=30, observer=Traffic()) as c:
            with pytest.raises(LimelightError) as e:  # a number has no sentence to embed
                c.declare([{"name": "rankingHint", "type": "number", "semantic": True}])
            assert "only text attributes can be semantic" in e.value.message
            ack = c.publish([{"uniqueIdentifier": "a", "domainIdentifier": "t",
                              "attributes": {"title": "vim", "displayName": "text editor"}}])
            assert ack["stored"] == 1
            assert [h["objectID"] for h in c.search({"query": "vim"})["hits"]] == ["a"]
            for params, field in (({"query": "vim", "semantic": {}}, "semantic"),
                                  ({"query": "vim", "hybrid": {"semanticRatio": 1}}, "hybrid")):
                with pytest.raises(LimelightError) as e:
                    c.search(params)
                assert e.value.code == "semantic_unavailable" and e.value.field == field
                assert "--model" in e.value.message and "LIMELIGHT_MODEL" in e.value.message
            assert c.search({"query": "vim"})["nbHits"] == 1  # still serving
    finally:
        stop_cluster(cluster.process)
