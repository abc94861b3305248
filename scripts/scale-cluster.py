#!/usr/bin/env python3
"""The cluster scale run: 16 simulated hosts (network namespaces on one
machine, tests/python/hosts.py), a 3-member etcd, 3 coordinators, a corpus
published while the shards split 4 → 8 and a replica moves to a new host,
queries answered throughout; then the invariant, read from the SQLite files,
and every process's memory.

Hosts::

    e1 e2 e3      an etcd member each
    c1 c2 c3      a coordinator each (c1 made active first; lease 3 s)
    r1 r2         a replica each of shards 0,1 (an indexer and a query worker)
    r3 r4         a replica each of shards 2,3
    n1 n2 n3 n4   started with the split: replicas of the new shards 4,5 (n1, n2) and 6,7 (n3, n4)
    m1            the host r1's replica moves to (`limelight shards move --from r1 --to m1`)
    cl            the clients: publishers and a querier (this script, run there with --load)

As users run it, keys are required (`--keyless`: not): each coordinator has a
key store of its own, and the cluster's keys live in etcd; c1 makes the master
key, and through it an admin key and a search key of the app `scale`, which
the publishers and the querier use. The split and the move then go on through
whichever coordinator is active, with keys made through c1.

The clients publish the corpus in batches of 500 from --publishers threads,
each batch resent until acknowledged, and a querier asks a few queries over
and over, timing each and counting those that miss a shard. Once a quarter
of the corpus is acknowledged the split starts; once it is done, the move.
When both are done and the corpus is published, the load stops, and:

- every acknowledged item is on each replica of its shard exactly once, and
  on no other shard (read from the SQLite files, after the purges);
- `limelight shards status` shows 8 shards, every replica in sync;
- the figures: publish rate, the split's and the move's time, bytes copied
  and pauses, query p50/p99 before, during the split, during the move and
  after, queries that missed a shard, and each process's peak and final
  resident memory (VmHWM, VmRSS).

    sudo scripts/scale-cluster.py --bin .build/release --corpus .bench/scale-1m.jsonl [--out docs/bench/scale-cluster.json]

Needs root (namespaces), `ip`, etcd (scripts/install-deps --tests) and the
release executables. Not run by CI: a million items take a while.
"""

import argparse
import json
import os
import pathlib
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))

SHARDS, TO = 4, 8
WORKERS = {"r1": [0, 1], "r2": [0, 1], "r3": [2, 3], "r4": [2, 3]}
SPLIT_WORKERS = {"n1": [4, 5], "n2": [4, 5], "n3": [6, 7], "n4": [6, 7]}
HOSTS = ["e1", "e2", "e3", "c1", "c2", "c3", *WORKERS, *SPLIT_WORKERS, "m1", "cl"]
QUERIES = ['title == "lib*"', 'displayName == "*editor*"cd', 'title == "python3*" && contentDescription == "*module*"cd']
BATCH = 500
APP = "scale"


def percentile(xs, p):
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))], 2)


# -- the clients (run on host cl) ---------------------------------------------


def load(args):
    """Publishes the corpus and queries until `stop` exists in --state; writes
    progress to `progress` and, at the end, the acknowledged ids and the
    query timings to `load.json` there."""
    from harness import Client
    from limelight_client import LimelightError, LimelightTimeout

    state = pathlib.Path(args.state)
    endpoints = args.endpoints.split(",")
    phase_file = state / "phase"
    batches = queue.Queue()
    with open(args.corpus) as corpus:
        batch = []
        for line in corpus:
            batch.append(line)
            if len(batch) == BATCH:
                batches.put(batch)
                batch = []
        if batch:
            batches.put(batch)
    total = batches.qsize()
    acked, lock = [], threading.Lock()
    resent = [0]
    queries = []  # (phase, ms, missed shards)
    stop = threading.Event()

    def phase():
        return phase_file.read_text().strip() if phase_file.exists() else "before"

    keyed = {"key": args.key} if args.key else {}
    search_keyed = {"key": args.search_key} if args.search_key else {}

    def publisher():
        client = Client.connect_active(endpoints, timeout=30, **keyed)
        while True:
            try:
                lines = batches.get_nowait()
            except queue.Empty:
                break
            items = [json.loads(x) for x in lines]
            while True:
                try:
                    ack = client.publish(items, timeout=120)
                    if ack["stored"] == len(items):
                        break
                except (LimelightError, LimelightTimeout, TimeoutError):
                    client.close()
                    time.sleep(0.5)
                    client = Client.connect_active(endpoints, timeout=30, **keyed)
                with lock:
                    resent[0] += 1
            with lock:
                acked.extend(i["uniqueIdentifier"] for i in items)
                (state / "progress").write_text(f"{len(acked)}\n")
        client.close()

    def querier():
        client = Client.connect_active(endpoints, timeout=30, **search_keyed)
        n = 0
        while not stop.is_set():
            text = QUERIES[n % len(QUERIES)]
            n += 1
            started_in = phase()
            t0 = time.monotonic()
            try:
                events = list(client.query(text, fetch=["title"], limit=20, deadline_ms=30_000))
                completion = events[-1][1] if events and events[-1][0] == "completion" else {}
                missed = len(completion.get("failedShards") or [])
            except (LimelightError, LimelightTimeout, TimeoutError):
                missed = -1  # no answer at all
                client.close()
                client = Client.connect_active(endpoints, timeout=30, **search_keyed)
            queries.append((started_in, (time.monotonic() - t0) * 1000, missed))
            time.sleep(0.1)
        client.close()

    started = time.monotonic()
    publishers = [threading.Thread(target=publisher) for _ in range(args.publishers)]
    q = threading.Thread(target=querier)
    for t in [*publishers, q]:
        t.start()
    for t in publishers:
        t.join()
    publish_s = time.monotonic() - started
    (state / "published").write_text(f"{publish_s}\n")
    while not (state / "stop").exists():
        time.sleep(0.2)
    stop.set()
    q.join()
    (state / "load.json").write_text(json.dumps({
        "batches": total, "acked": acked, "resent": resent[0], "publish_s": publish_s, "queries": queries}))


# -- the cluster ----------------------------------------------------------------


def proc_memory(pid):
    """(VmHWM, VmRSS) of a process in MB, or None once it is gone."""
    try:
        fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    except OSError:
        return None
    if "VmHWM" not in fields:  # ended, not yet reaped
        return None
    return tuple(round(int(fields[k].split()[0]) / 1024, 1) for k in ("VmHWM", "VmRSS"))


def run(args):
    from etcd_cluster import EtcdCluster
    from hosts import Network, Processes, tear_down
    from test_failover import active_id

    binaries = pathlib.Path(args.bin).resolve()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="scale-cluster-"))
    state = folder / "state"
    state.mkdir()
    network = Network.make(HOSTS, loopback_allowed=False)
    processes = Processes(folder)
    etcd = None
    secret = folder / "cluster.secret"
    clients, workers = {}, {}
    memory = {}
    figures = {"items": sum(1 for _ in open(args.corpus)), "hosts": len(HOSTS), "shards": [SHARDS, TO]}

    def log(text):
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    def sample_memory():
        for name, p in processes.running.items():
            m = proc_memory(p.pid)
            if m:
                memory[name] = m

    master = folder / "master.key"
    keys = [] if args.keyless else ["--require-keys"]

    def coordinator(name):
        address = network.hosts[name].address
        own_keys = [] if args.keyless else ["--keys", str(folder / f"keys-{name}.sqlite")]
        if not args.keyless and name == "c1":
            own_keys += ["--master-key-file", str(master)]
        processes.start(name, network.command(name, [
            str(binaries / "limelight-coordinator"), "--listen", f"tcp://{address}:7700", "--workers", f"tcp://{address}:7701",
            "--stats-listen", f"{address}:7780", "--shards", str(SHARDS), "--replicas", "2",
            "--control-plane", etcd.endpoint, "--coordinator-id", name, "--cluster-secret-file", str(secret), *own_keys, *keys]))
        _, clients[name], workers[name] = processes.wait_for_line(name, "listening ", 60).split()[:3]

    def replica(host, shards):
        for role, short in (("indexer", "ix"), ("query", "q")):
            processes.start(f"{short}-{host}", network.command(host, [
                str(binaries / f"limelight-{role}"), "--coordinator", ",".join(workers.values()),
                "--data", str(folder / f"data-{host}"), "--shards", ",".join(map(str, shards)),
                "--id", f"{short}-{host}", "--replica", host, "--cluster-secret-file", str(secret)]))

    def shards_command(*argv):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_KEY")}
        if master.exists():
            env["LIMELIGHT_KEY"] = master.read_text().strip()
        return subprocess.run([str(binaries / "limelight"), "shards", *argv, "--control-plane", etcd.endpoint,
                               "--endpoint", ",".join(clients.values())], capture_output=True, text=True, timeout=4000, env=env)

    try:
        log(network.describe())
        etcd = EtcdCluster(folder, network=network, hosts=["e1", "e2", "e3"])
        coordinator("c1")
        deadline = time.monotonic() + 60
        while active_id(etcd.endpoint) != "c1":
            assert time.monotonic() < deadline, processes.logs()
            time.sleep(0.2)
        app_keys = []
        if not args.keyless:
            from harness import Client
            with Client(clients["c1"], timeout=30, key=master.read_text().strip()) as c:
                app_keys = ["--key", c.keys("create", app=APP, role="admin")["apiKey"],
                            "--search-key", c.keys("create", app=APP, role="search")["apiKey"]]
            figures["keys"] = f"required; app '{APP}', an admin key to publish and a search key to query"
        coordinator("c2")
        coordinator("c3")
        for host, shards in WORKERS.items():
            replica(host, shards)
        time.sleep(5)
        log("cluster up; starting the load on host cl")
        load_argv = [sys.executable, str(pathlib.Path(__file__).resolve()), "--load", "--state", str(state),
                     "--corpus", str(pathlib.Path(args.corpus).resolve()), "--publishers", str(args.publishers),
                     "--endpoints", ",".join(clients[c] for c in ("c1", "c2", "c3")), *app_keys]
        loader = processes.start("load", network.command("cl", load_argv))

        def acked():
            try:
                return int((state / "progress").read_text())
            except (OSError, ValueError):
                return 0

        while acked() < figures["items"] // 4:
            assert loader.poll() is None, processes.logs()
            sample_memory()
            time.sleep(1)
        log(f"{acked()} items acknowledged: splitting {SHARDS} → {TO}")
        def change(phase, argv, start_workers):
            """Runs `limelight shards ARGV` while sampling memory, with the
            workers it needs started a second in; records its time and last line."""
            (state / "phase").write_text(f"{phase}\n")
            started = time.monotonic()
            result = {}
            command = threading.Thread(target=lambda: result.update(done=shards_command(*argv, "--wait-seconds", "3600")))
            command.start()
            time.sleep(1)
            start_workers()
            while command.is_alive():
                sample_memory()
                time.sleep(1)
            done = result["done"]
            assert done.returncode == 0, done.stdout + done.stderr
            figures[f"{phase}_s"] = round(time.monotonic() - started, 1)
            figures[f"{phase}_stdout"] = done.stdout.strip().splitlines()[-1:]
            return done.stdout.strip().splitlines()[-1]

        last = change("split", ["split", "--to", str(TO)],
                      lambda: [replica(host, shards) for host, shards in SPLIT_WORKERS.items()])
        log(f"{last}; moving r1's replica to m1 ({acked()} acknowledged)")
        last = change("move", ["move", "--from", "r1", "--to", "m1", "--shards", "0,1"], lambda: replica("m1", WORKERS["r1"]))
        log(f"{last} ({acked()} acknowledged)")

        (state / "phase").write_text("after\n")
        while not (state / "published").exists():
            assert loader.poll() is None, processes.logs()
            sample_memory()
            time.sleep(1)
        time.sleep(10)  # queries after both changes
        sample_memory()
        (state / "stop").write_text("")
        loader.wait(600)
        outcome = json.loads((state / "load.json").read_text())
        acked_ids = outcome["acked"]
        figures["publish_s"] = round(outcome["publish_s"], 1)
        figures["publish_items_per_s"] = round(len(acked_ids) / outcome["publish_s"])
        figures["batches_resent"] = outcome["resent"]
        by_phase = {}
        for phase, ms, missed in outcome["queries"]:
            by_phase.setdefault(phase, []).append((ms, missed))
        figures["queries"] = {
            phase: {"n": len(xs), "p50_ms": percentile([m for m, _ in xs], 50), "p99_ms": percentile([m for m, _ in xs], 99),
                    "missed_a_shard": sum(1 for _, missed in xs if missed > 0),
                    "unanswered": sum(1 for _, missed in xs if missed < 0)}
            for phase, xs in by_phase.items()}
        log(f"published {len(acked_ids)} in {figures['publish_s']} s; checking the files")

        # The invariant, once every purge is done: each acknowledged item on
        # each replica of its shard exactly once, on no other shard.
        expected = sorted(set(acked_ids))
        assert len(expected) == len(acked_ids), "an item acknowledged twice"
        holders = {s: [] for s in range(TO)}
        for host, shards in {**{h: s for h, s in WORKERS.items() if h != "r1"}, **SPLIT_WORKERS, "m1": WORKERS["r1"]}.items():
            for s in shards:
                holders[s].append(host)

        stored_prefix = "" if args.keyless else f"@{APP}/"

        def read(host, shard):
            path = folder / f"data-{host}" / f"shard-{shard}.sqlite"
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60) as db:
                marked = db.execute("SELECT count(*) FROM meta WHERE key = 'split.keep'").fetchone()[0]
                # An app's items are stored under its reserved names (`@APP/uid`).
                return marked, [row[0].removeprefix(stored_prefix) for row in db.execute("SELECT uid FROM items")]

        deadline = time.monotonic() + 1800
        while any(read(h, s)[0] for s, hosts in holders.items() for h in hosts):
            assert time.monotonic() < deadline, "the purges did not finish in 30 minutes"
            time.sleep(2)
        problems = []
        for r in range(2):
            seen = []
            for s, hosts in holders.items():
                seen += read(hosts[r], s)[1]
            if sorted(seen) != expected:
                problems.append(f"replica set {r}: {len(seen)} rows, {len(set(seen))} distinct, "
                                f"{len(set(expected) - set(seen))} acknowledged missing, {len(set(seen) - set(expected))} never acknowledged")
        figures["invariant"] = "held" if not problems else problems
        status = shards_command("status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        lines = [json.loads(x) for x in status.stdout.splitlines()]
        figures["status_in_sync"] = len(lines) == TO and all(
            all(r["state"] == "in sync" for r in s["replicas"]) and len(s["replicas"]) == 2 for s in lines)
        if not figures["status_in_sync"]:
            figures["status"] = lines
        figures["memory_mb"] = {name: {"peak": m[0], "end": m[1]} for name, m in sorted(memory.items())}
        figures["loadavg"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(figures, indent=1))
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
        return 0 if not problems and figures["status_in_sync"] else 1
    finally:
        try:
            tear_down(processes, etcd, network)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / ".build" / "release"), help="folder of the release executables")
    ap.add_argument("--corpus", required=True, help="JSON lines of items (../shared/datasets/scale_corpus.py)")
    ap.add_argument("--publishers", type=int, default=3)
    ap.add_argument("--out", help="also write the figures (JSON) here")
    ap.add_argument("--keep", action="store_true", help="keep the data folders and logs")
    ap.add_argument("--keyless", action="store_true", help="no keys (the coordinators' --require-keys and key stores left out)")
    ap.add_argument("--key", help=argparse.SUPPRESS)
    ap.add_argument("--search-key", help=argparse.SUPPRESS)
    ap.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    ap.add_argument("--endpoints", help=argparse.SUPPRESS)
    args = ap.parse_args()
    # Stopped with SIGTERM, it still removes the hosts and stops the processes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ["LIMELIGHT_BIN"] = str(pathlib.Path(args.bin).resolve())
    if args.load:
        load(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
