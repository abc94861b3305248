#!/usr/bin/env python3
"""Draws the scale benchmark's figures against corpus size.

Reads every `docs/bench/scale-*.json` (written by `scripts/bench scale`, one
per corpus size), draws query latency (p50 of the main kinds, beside
Tantivy's and FTS5's p50), publish rate and the query workers' memory
against the number of items into `docs/bench/scale.png`, and rewrites the
table between the `scale-table` markers of `docs/benchmarks.md`.

usage: bench-chart.py [--folder docs/bench] [--doc docs/benchmarks.md]
"""
import argparse, glob, json, os

KINDS = ["search 1 word", "search 2 words", "faceted", "page 10", "search rare word", "search prefix", "query word"]


def load(folder):
    runs = []
    for path in glob.glob(os.path.join(folder, "scale-*.json")):
        # scale-N.json only: other runs (scale-cluster-…) share the folder.
        if not os.path.basename(path)[len("scale-"):-len(".json")].isdigit():
            continue
        with open(path) as f:
            runs.append(json.load(f))
    return sorted(runs, key=lambda r: r["items"])


def peer(run, engine, field):
    return next((p[field] for p in run.get("peers", []) if p["engine"] == engine), None)


def workers(run, field):
    return sum(m[field] for m in run["memory"] if m["name"].startswith("query"))


def chart(runs, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = [r["items"] for r in runs]
    fig, (lat, rate, mem) = plt.subplots(1, 3, figsize=(15, 4.5))
    for kind in KINDS:
        lat.plot(sizes, [r["kinds"].get(kind, {}).get("p50") for r in runs], marker="o", label=kind)
    for engine, style in (("tantivy", "k--"), ("sqlite-fts5", "k:")):
        points = [(s, peer(r, engine, "query_p50_ms")) for s, r in zip(sizes, runs) if peer(r, engine, "query_p50_ms")]
        if points:
            lat.plot(*zip(*points), style, marker="x", label=engine + " (in process)")
    lat.set(xscale="log", yscale="log", xlabel="items", ylabel="p50 ms", title="Query latency (keyed, admin key)")
    lat.legend(fontsize=7)
    rate.plot(sizes, [r["publish_items_per_s"] for r in runs], marker="o", label="limelight publish")
    for engine, style in (("tantivy", "k--"), ("sqlite-fts5", "k:")):
        points = [(s, peer(r, engine, "index_docs_per_s")) for s, r in zip(sizes, runs) if peer(r, engine, "index_docs_per_s")]
        if points:
            rate.plot(*zip(*points), style, marker="x", label=engine)
    rate.set(xscale="log", xlabel="items", ylabel="items/s", title="Indexing rate")
    rate.legend(fontsize=7)
    mem.plot(sizes, [workers(r, "anon_mb") for r in runs], marker="o", label="query workers, anonymous")
    mem.plot(sizes, [workers(r, "file_mb") for r in runs], marker="o", label="query workers, mapped files")
    mem.plot(sizes, [sum(m["anon_mb"] for m in r["memory"]) for r in runs], marker="o", label="all processes, anonymous")
    mem.set(xscale="log", xlabel="items", ylabel="MB resident", title="Memory")
    mem.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def table(runs):
    head = "| items | date | publish items/s (last part / first) | " + " | ".join(KINDS) + " | Tantivy p50 | query workers MB (anon + files) | bytes/item (FTS5, Tantivy) |"
    rows = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in runs:
        parts = r.get("publish_parts_items_per_s") or [1]
        # A last part shorter than the others (the corpus's remainder) times too few items to compare.
        if len(parts) > 1 and r.get("part_items") and r["items"] % r["part_items"]:
            parts = parts[:-1]
        cells = [f'{r["items"]:,}', r["date"][:10], f'{r["publish_items_per_s"]:,.0f} ({parts[-1] / parts[0]:.2f}x)']
        cells += [f'{r["kinds"][k]["p50"]:.2f}' if k in r["kinds"] else "" for k in KINDS]
        t = peer(r, "tantivy", "query_p50_ms")
        cells.append(f"{t:.3f}" if t else "")
        cells.append(f'{workers(r, "anon_mb")} + {workers(r, "file_mb")}')
        cells.append(f'{r["bytes_per_item"]} ({peer(r, "sqlite-fts5", "bytes_per_doc") or "-"}, {peer(r, "tantivy", "bytes_per_doc") or "-"})')
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", default="docs/bench")
    ap.add_argument("--doc", default="docs/benchmarks.md")
    args = ap.parse_args()
    runs = load(args.folder)
    if not runs:
        raise SystemExit(f"no scale-*.json in {args.folder}: run scripts/bench scale first")
    chart(runs, os.path.join(args.folder, "scale.png"))
    text = table(runs)
    print(text)
    begin, end = "<!-- scale-table -->", "<!-- /scale-table -->"
    with open(args.doc) as f:
        doc = f.read()
    if begin in doc and end in doc:
        doc = doc[: doc.index(begin) + len(begin)] + "\n" + text + "\n" + doc[doc.index(end):]
        with open(args.doc, "w") as f:
            f.write(doc)


if __name__ == "__main__":
    main()
