"""`limelight-bench scale` and `scripts/bench-chart.py`, on a corpus small enough for CI.

The scale benchmark's figures are taken by hand (`scripts/bench scale`); this
holds its behaviour: every item published through a default keyed `limelight
up`, every query kind answered with each key, memory per process and disk
bytes per item recorded, and the chart and table drawn from the JSON. No
time is asserted.
"""

import json
import pathlib
import subprocess
import sys

from harness import REPO, bin_dir

ITEMS = 3000


def test_scale_bench_publishes_times_every_kind_and_charts(tmp_path):
    corpus = tmp_path / "scale.jsonl"
    with open(corpus, "w") as f:
        subprocess.run([sys.executable, str(REPO.parent / "shared/datasets/scale_corpus.py"), "--items", str(ITEMS)],
                       stdout=f, check=True, timeout=120)
    figures = tmp_path / "bench" / f"scale-{ITEMS}.json"
    figures.parent.mkdir()
    done = subprocess.run([str(bin_dir() / "limelight-bench"), "scale", "--corpus", str(corpus), "--queries", "5",
                           "--peers", "none", "--idle-wait", "60", "--json", str(figures)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads(figures.read_text())
    assert run["items"] == ITEMS
    assert run["shards"] == 8
    assert len(run["publish_parts_items_per_s"]) == 10
    kinds = run["kinds"]
    for kind in ["query word", "query two words", "query InRange", "search 1 word", "search 2 words", "faceted",
                 "page 10", "search rare word", "search prefix", "geo", "suggest",
                 "search 2 words @search key", "faceted @secured key"]:
        assert kinds[kind]["p50"] > 0, kind
        # Suggestions (like predicates) are sent no cold first request, so they have no first_ms.
        if kind == "suggest":
            assert "first_ms" not in kinds[kind]
        else:
            assert kinds[kind]["first_ms"] >= 0, kind
    assert run["failed_kinds"] == {}
    names = {m["name"] for m in run["memory"]}
    assert {"indexer-0", "indexer-1", "query-0", "query-1"} <= names, names
    assert all(m["anon_mb"] > 0 for m in run["memory"])
    assert run["bytes_per_item"] > 0

    doc = tmp_path / "benchmarks.md"
    doc.write_text("before\n<!-- scale-table -->\nold\n<!-- /scale-table -->\nafter\n")
    chart = subprocess.run([sys.executable, str(REPO / "scripts/bench-chart.py"), "--folder", str(figures.parent),
                            "--doc", str(doc)], capture_output=True, text=True, timeout=120)
    assert chart.returncode == 0, chart.stderr
    assert (figures.parent / "scale.png").stat().st_size > 10_000
    text = doc.read_text()
    assert "old" not in text and text.startswith("before\n") and text.endswith("after\n")
    assert f"| {ITEMS:,} |" in text


def test_scale_bench_reads_a_corpus_piped_in_once(tmp_path):
    """Past a million items `scripts/bench scale` pipes scale_corpus.py into
    the bench (`--corpus - --items N`), keeping no corpus file; without
    `--items`, or with peers that would read the corpus again, it refuses."""
    items = 1000
    refused = subprocess.run([str(bin_dir() / "limelight-bench"), "scale", "--corpus", "-", "--peers", "none"],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0 and "--items" in refused.stderr, refused.stderr
    refused = subprocess.run([str(bin_dir() / "limelight-bench"), "scale", "--corpus", "-", "--items", "10"],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0 and "--peers none" in refused.stderr, refused.stderr
    maker = subprocess.Popen([sys.executable, str(REPO.parent / "shared/datasets/scale_corpus.py"), "--items", str(items)],
                             stdout=subprocess.PIPE)
    figures = tmp_path / "piped.json"
    done = subprocess.run([str(bin_dir() / "limelight-bench"), "scale", "--corpus", "-", "--items", str(items),
                           "--peers", "none", "--publish-only", "--json", str(figures)],
                          stdin=maker.stdout, capture_output=True, text=True, timeout=600, cwd=REPO)
    maker.stdout.close()
    assert maker.wait(60) == 0
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads(figures.read_text())
    assert run["items"] == items
    assert len(run["publish_parts_items_per_s"]) == 10
