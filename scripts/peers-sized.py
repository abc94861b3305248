#!/usr/bin/env python3
"""peers.py's engines on a corpus, with what each leaves on disk.

Runs ../shared/bench/peers.py's own indexing and query functions, engine by
engine, and adds to each of its rows the bytes the engine's files take once
indexed (`bytes_per_doc`), so that the scale benchmark sets Limelight's disk
bytes per item beside FTS5's and Tantivy's, and the documents indexed per
CPU-second of the process (`index_docs_per_cpu_s`: the CPU of indexing and
querying, less the queries' summed latencies, which run on one thread), a
rate a loaded machine disturbs less than the wall-clock one. Same arguments
and JSON rows as peers.py.

usage: peers-sized.py CORPUS.jsonl [--engines sqlite-fts5,tantivy] [--queries N] [--json]
       [--peers ../shared/bench/peers.py]
"""
import argparse, importlib.util, json, os, shutil, statistics, tempfile, time


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--engines", default="sqlite-fts5,tantivy")
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--peers", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../shared/bench/peers.py"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("peers", args.peers)
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    docs = peers.load(args.corpus)
    queries = peers.make_queries(docs, args.queries)
    engines = {"sqlite-fts5": peers.bench_sqlite, "tantivy": peers.bench_tantivy, "xapian": peers.bench_xapian}
    for name in args.engines.split(","):
        tmp = tempfile.mkdtemp(prefix="peer-")
        try:
            cpu0 = time.process_time()
            t_index, lat = engines[name](docs, queries, tmp)
            cpu_index = time.process_time() - cpu0 - sum(lat) / 1000
            size = folder_bytes(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        row = {"engine": name, "docs": len(docs), "index_docs_per_s": round(len(docs) / t_index),
               "query_p50_ms": round(statistics.median(lat), 3), "query_p99_ms": round(peers.pct(lat, 99), 3),
               "bytes_per_doc": round(size / max(1, len(docs))),
               "index_docs_per_cpu_s": round(len(docs) / max(cpu_index, 1e-6))}
        print(json.dumps(row) if args.json else
              f'{name}: {row["docs"]} docs at {row["index_docs_per_s"]} docs/s, {row["bytes_per_doc"]} bytes each; '
              f'query p50 {row["query_p50_ms"]} ms, p99 {row["query_p99_ms"]} ms', flush=True)


if __name__ == "__main__":
    main()
