#!/usr/bin/env python3
"""Tantivy on the free-text query's own semantics, beside peers.py's.

peers.py times Tantivy on `w1 AND w2`: each word exact. Limelight's free-text
search (issue 7) also matches each word misspelt (one typo from 5 letters,
two from 9; a transposition counts one) and the last word as a prefix. This
times Tantivy, in one process and query by query in turn, on the same
two-word queries both ways:

  exact   peers.py's query (parse_query "w1 AND w2" over the text fields)
  typos   per word, a FuzzyTermQuery in every text field at the word's typo
          distance (the last word's with prefix=True), the words ANDed

so that the ratio the issue sets (our p50 over Tantivy's) can be read
against the work each side does. Top 20 hits, as peers.py.

usage: peer-typos.py CORPUS.jsonl [--queries N] [--peers ../shared/bench/peers.py] [--json]
"""
import argparse, importlib.util, json, statistics, tempfile, shutil, time


def typos_allowed(word):
    return 2 if len(word) >= 9 else 1 if len(word) >= 5 else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--peers", default="../shared/bench/peers.py")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("peers", args.peers)
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    import tantivy
    docs = peers.load(args.corpus)
    queries = [q for q in peers.make_queries(docs, args.queries * 2) if " " in q][: args.queries]
    tmp = tempfile.mkdtemp(prefix="peer-typos-")
    try:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("uid", stored=True, tokenizer_name="raw")
        for k in peers.TEXT:
            sb.add_text_field(k, stored=False)
        schema = sb.build()
        index = tantivy.Index(schema, path=tmp)
        writer = index.writer(heap_size=256_000_000)
        for uid, fields in docs:
            d = {"uid": uid}
            d.update(zip(peers.TEXT, fields))
            writer.add_document(tantivy.Document(**d))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        searcher = index.searcher()

        def exact(q):
            return index.parse_query(" AND ".join(q.split()), list(peers.TEXT))

        def typos(q):
            words = q.lower().split()
            must = []
            for i, w in enumerate(words):
                last = i == len(words) - 1
                forms = [tantivy.Query.fuzzy_term_query(schema, f, w, distance=typos_allowed(w), transposition_cost_one=True, prefix=last)
                         for f in peers.TEXT]
                must.append((tantivy.Occur.Must, tantivy.Query.boolean_query([(tantivy.Occur.Should, f) for f in forms])))
            return tantivy.Query.boolean_query(must)

        lat = {"exact": [], "typos": []}
        hits = {"exact": [], "typos": []}
        for q in queries[:50]:  # warm-up
            searcher.search(exact(q), 20)
            searcher.search(typos(q), 20)
        for q in queries:
            for name, make in (("exact", exact), ("typos", typos)):
                t = time.perf_counter()
                r = searcher.search(make(q), 20, count=True)
                r.hits
                lat[name].append((time.perf_counter() - t) * 1000)
                hits[name].append(r.count)
        for name in ("exact", "typos"):
            xs = sorted(lat[name])
            row = {"engine": "tantivy", "query": name, "queries": len(xs), "query_p50_ms": round(statistics.median(xs), 3),
                   "query_p99_ms": round(peers.pct(xs, 99), 3), "mean_hits": round(statistics.mean(hits[name]), 1)}
            print(json.dumps(row) if args.json else
                  f"tantivy {name:5s} two-word queries: p50 {row['query_p50_ms']:.3f} ms  p99 {row['query_p99_ms']:.3f} ms"
                  f"  mean hits {row['mean_hits']}  ({len(xs)} queries, in turn)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
