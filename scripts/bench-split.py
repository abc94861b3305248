#!/usr/bin/env python3
"""A shard split's figures on a real corpus: `limelight up` with its defaults
(keys required, separate query workers) and --shards FROM (default 2), the
corpus published, then `limelight shards split --to TO` (default 4) while a client publishes
batches and another queries. Prints one JSON object: the split's total
time, bytes copied, the coordinator's write and query pauses, the longest
publish and query seen by the clients during the split, query p50/p99
before and during, and the same while the shards purge the moved rows in
the background after the switch (until no shard file holds a purge mark), and
the machine's load average before and after (other work shares the CPUs).

    scripts/bench-split.py --bin .build-release/release --corpus .bench/debian-packages.jsonl --from 4 --to 8
"""

import argparse
import json
import os
import pathlib
import sqlite3
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
    ap.add_argument("--bin", required=True, help="folder of the release executables")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--before-seconds", type=float, default=15)
    ap.add_argument("--from", dest="from_shards", type=int, default=2, help="shards before the split")
    ap.add_argument("--to", dest="to_shards", type=int, default=4, help="shards after it (a multiple of --from)")
    args = ap.parse_args()
    os.environ["LIMELIGHT_BIN"] = str(pathlib.Path(args.bin).resolve())
    import harness  # noqa: E402  (reads LIMELIGHT_BIN)
    from harness import Client

    items = [json.loads(line) for line in open(args.corpus)]
    data = pathlib.Path(tempfile.mkdtemp(prefix="bench-split-")) / "data"
    cluster = harness.start_cluster(data, shards=args.from_shards, extra=("--require-keys",))
    try:
        key = (data / "limelight.key").read_text().strip()
        t = time.monotonic()
        with Client(cluster.endpoint, timeout=60, key=key) as c:
            for k in range(0, len(items), 1000):
                ack = c.publish(items[k:k + 1000])
                assert ack["stored"] == len(items[k:k + 1000]), ack
        publish_s = time.monotonic() - t

        phase = {"name": "before"}
        latencies = {"before": [], "during": [], "purge": []}
        publishes = []
        purge_publishes = []
        stop = threading.Event()

        def querier():
            with Client(cluster.endpoint, timeout=60, key=key) as q:
                n = 0
                while not stop.is_set():
                    text = QUERIES[n % len(QUERIES)]
                    n += 1
                    # Counted in the phase it started in: one held by the
                    # switch ends after it.
                    started_in = phase["name"]
                    t0 = time.monotonic()
                    events = list(q.query(text, fetch=["title"], limit=20, deadline_ms=30_000))
                    ms = (time.monotonic() - t0) * 1000
                    assert events[-1][0] == "completion"
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
                    assert ack["stored"] == 20, ack
                    if started_in == "during":
                        publishes.append((time.monotonic() - t0) * 1000)
                    elif started_in == "purge":
                        purge_publishes.append((time.monotonic() - t0) * 1000)
                    time.sleep(0.05)

        threads = [threading.Thread(target=querier), threading.Thread(target=publisher)]
        for th in threads:
            th.start()
        time.sleep(args.before_seconds)
        phase["name"] = "during"
        load_before = os.getloadavg()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        env["LIMELIGHT_DATA"] = str(data)
        t = time.monotonic()
        split = subprocess.run([str(pathlib.Path(args.bin) / "limelight"), "shards", "split", "--to", str(args.to_shards),
                                "--endpoint", cluster.endpoint], capture_output=True, text=True, env=env, timeout=1800)
        split_s = time.monotonic() - t
        # The switch is done; each shard deletes the rows it no longer owns
        # in the background, and removes its mark when done.
        phase["name"] = "purge"
        t = time.monotonic()

        def marked():
            n = 0
            for shard in range(args.to_shards):
                with sqlite3.connect(f"file:{data}/shard-{shard}.sqlite?mode=ro", uri=True, timeout=30) as db:
                    n += db.execute("SELECT count(*) FROM meta WHERE key = 'split.keep'").fetchone()[0]
            return n

        while marked() and time.monotonic() - t < 1800:
            time.sleep(0.2)
        purge_s = time.monotonic() - t
        load_after = os.getloadavg()
        phase["name"] = "after"
        stop.set()
        for th in threads:
            th.join(120)
        assert split.returncode == 0, split.stdout + split.stderr
        master = (data / "master.key").read_text().strip()
        with Client(cluster.endpoint, timeout=60, key=master) as c:
            counters = c.stats()["counters"]
        print(json.dumps({
            "items": len(items), "from": args.from_shards, "to": args.to_shards, "publish_s": round(publish_s, 1),
            "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
            "split_s_client": round(split_s, 2), "split_ms": counters.get("split.ms"),
            "copy_bytes": counters.get("copy.bytes"), "copy_ms": counters.get("copy.ms"),
            "write_pause_ms": counters.get("split.writePauseMs"), "switch_ms": counters.get("split.switchMs"),
            "longest_publish_during_ms": round(max(publishes), 1) if publishes else None,
            "publishes_during": len(publishes),
            "query_before": {"n": len(latencies["before"]), "p50": percentile(latencies["before"], 50),
                             "p99": percentile(latencies["before"], 99)},
            "query_during": {"n": len(latencies["during"]), "p50": percentile(latencies["during"], 50),
                             "p99": percentile(latencies["during"], 99),
                             "max": round(max(latencies["during"]), 1) if latencies["during"] else None},
            "purge_s": round(purge_s, 2),
            "longest_publish_purge_ms": round(max(purge_publishes), 1) if purge_publishes else None,
            "query_purge": {"n": len(latencies["purge"]), "p50": percentile(latencies["purge"], 50),
                            "p99": percentile(latencies["purge"], 99),
                            "max": round(max(latencies["purge"]), 1) if latencies["purge"] else None},
            "split_stdout": split.stdout.strip().splitlines(),
        }, indent=1))
    finally:
        harness.stop_cluster(cluster.process)


if __name__ == "__main__":
    main()
