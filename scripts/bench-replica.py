#!/usr/bin/env python3
"""A replica move's figures on a real corpus: `limelight up` with its
defaults (keys required, separate query workers) and --shards 2, the corpus
published, then `limelight shards add-replica --data DATA/replica-new`
while a client publishes batches and another queries, then `limelight
shards retire` of the first replica under the same load. Prints one JSON
object: each command's time, bytes copied, query p50/p99 before, during the
addition and during the retirement, and the longest publish during each.

    scripts/bench-replica.py --bin .build-release/release --corpus .bench/debian-packages.jsonl
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))
os.environ.setdefault("LIMELIGHT_BIN", "")

QUERIES = ['title == "lib*"', 'displayName == "*editor*"cd', 'title == "python3*" && contentDescription == "*module*"cd']


def percentile(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))], 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="folder of the executables")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--before-seconds", type=float, default=10)
    args = ap.parse_args()
    os.environ["LIMELIGHT_BIN"] = str(pathlib.Path(args.bin).resolve())
    import harness  # noqa: E402  (reads LIMELIGHT_BIN)
    from harness import Client

    items = [json.loads(line) for line in open(args.corpus)]
    data = pathlib.Path(tempfile.mkdtemp(prefix="bench-replica-")) / "data"
    cluster = harness.start_cluster(data, shards=2, extra=("--require-keys",))
    try:
        key = (data / "limelight.key").read_text().strip()
        t = time.monotonic()
        with Client(cluster.endpoint, timeout=60, key=key) as c:
            for k in range(0, len(items), 1000):
                ack = c.publish(items[k:k + 1000])
                assert ack["stored"] == len(items[k:k + 1000]), ack
        publish_s = time.monotonic() - t

        phase = {"name": "before"}
        latencies = {"before": [], "add": [], "retire": []}
        publishes = {"add": [], "retire": []}
        failed = []
        resent = []
        stop = threading.Event()

        def querier():
            with Client(cluster.endpoint, timeout=60, key=key) as q:
                n = 0
                while not stop.is_set():
                    text = QUERIES[n % len(QUERIES)]
                    n += 1
                    started_in = phase["name"]
                    t0 = time.monotonic()
                    events = list(q.query(text, fetch=["title"], limit=20, deadline_ms=30_000))
                    ms = (time.monotonic() - t0) * 1000
                    assert events[-1][0] == "completion", events[-1]
                    if events[-1][1].get("failedShards"):
                        failed.append((started_in, events[-1][1]["failedShards"]))
                    if started_in in latencies:
                        latencies[started_in].append(ms)

        def publisher():
            with Client(cluster.endpoint, timeout=60, key=key) as p:
                n = 0
                while not stop.is_set():
                    batch = [dict(items[(n * 20 + i) % len(items)]) for i in range(20)]
                    n += 1
                    started_in = phase["name"]
                    t0 = time.monotonic()
                    ack = p.publish(batch)
                    # A rejected item (a replica lost before it committed) is
                    # sent again, as producers do; counted.
                    while ack["stored"] != len(batch):
                        again = [batch[r["index"]] for r in ack["results"] if r["status"] == "rejected"]
                        resent.append(len(again))
                        batch = again
                        ack = p.publish(batch)
                    if started_in in publishes:
                        publishes[started_in].append((time.monotonic() - t0) * 1000)
                    time.sleep(0.05)

        threads = [threading.Thread(target=querier), threading.Thread(target=publisher)]
        for th in threads:
            th.start()
        time.sleep(args.before_seconds)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        env["LIMELIGHT_DATA"] = str(data)
        limelight = str(pathlib.Path(args.bin) / "limelight")
        phase["name"] = "add"
        t = time.monotonic()
        add = subprocess.run([limelight, "shards", "add-replica", "--data", str(data / "replica-new"), "--endpoint", cluster.endpoint],
                             capture_output=True, text=True, env=env, timeout=1800)
        add_s = time.monotonic() - t
        assert add.returncode == 0, add.stdout + add.stderr
        time.sleep(2)
        phase["name"] = "retire"
        t = time.monotonic()
        retire = subprocess.run([limelight, "shards", "retire", "--replica", str(data), "--endpoint", cluster.endpoint],
                                capture_output=True, text=True, env=env, timeout=1800)
        retire_s = time.monotonic() - t
        time.sleep(2)
        stop.set()
        for th in threads:
            th.join(120)
        assert retire.returncode == 0, retire.stdout + retire.stderr
        master = (data / "master.key").read_text().strip()
        with Client(cluster.endpoint, timeout=60, key=master) as c:
            counters = c.stats()["counters"]

        def q(name):
            xs = latencies[name]
            return {"n": len(xs), "p50": percentile(xs, 50), "p99": percentile(xs, 99), "max": round(max(xs), 1) if xs else None}

        print(json.dumps({
            "items": len(items), "publish_s": round(publish_s, 1),
            "add_s_client": round(add_s, 2), "retire_s_client": round(retire_s, 2),
            "copy_bytes": counters.get("copy.bytes"), "copy_ms": counters.get("copy.ms"),
            "query_before": q("before"), "query_during_add": q("add"), "query_during_retire": q("retire"),
            "longest_publish_add_ms": round(max(publishes["add"]), 1) if publishes["add"] else None,
            "longest_publish_retire_ms": round(max(publishes["retire"]), 1) if publishes["retire"] else None,
            "items_resent": sum(resent), "queries_with_failed_shards": failed[:5], "queries_with_failed_shards_n": len(failed),
            "add_stdout": add.stdout.strip().splitlines(), "retire_stdout": retire.stdout.strip().splitlines(),
        }, indent=1))
    finally:
        harness.stop_cluster(cluster.process)


if __name__ == "__main__":
    main()
