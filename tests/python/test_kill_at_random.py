"""Kill at random while the Debian corpus is published (issue 9).

``limelight up`` with two replicas of four shards; ``limelight publish``
(at least once) sends 12,000 Debian packages while a seeded killer sends
SIGKILL to random indexers and query workers at random moments (12 kills,
0.5-2.5 s apart). At the end
every item is acknowledged, every replica is caught up, and each replica's
SQLite files hold exactly the published identifiers, once each; queries
through the coordinator find every one exactly once.

``LIMELIGHT_KILL_SEED``, ``LIMELIGHT_KILL_ITEMS`` and ``LIMELIGHT_KILLS``
change the seed, the number of items (the whole corpus is 63,666) and of kills.
"""

import json
import os
import pathlib
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time

from harness import Client, bin_dir, child_pid, require_binaries, start_cluster, stop_cluster, wait_until

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "datasets"
SEED = int(os.environ.get("LIMELIGHT_KILL_SEED", "20261123"))
COUNT = int(os.environ.get("LIMELIGHT_KILL_ITEMS", "12000"))
KILLS = int(os.environ.get("LIMELIGHT_KILLS", "12"))
SHARDS = 4
CHILDREN = ["indexer-0", "indexer-1", "query-0", "replica1-indexer-0", "replica1-indexer-1", "replica1-query-0"]


def debian(count):
    out = subprocess.run([sys.executable, str(SHARED / "debian_packages.py")], check=True, capture_output=True, text=True).stdout
    seen, items = set(), []
    for line in out.splitlines():
        item = json.loads(line)
        if item["uniqueIdentifier"] not in seen:
            seen.add(item["uniqueIdentifier"])
            items.append(item)
        if len(items) == count:
            break
    assert len(items) == count
    return items


def replica_ids(folder):
    ids = []
    for shard in range(SHARDS):
        with sqlite3.connect(f"file:{folder}/shard-{shard}.sqlite?mode=ro", uri=True) as db:
            ids += [row[0] for row in db.execute("SELECT uid FROM items")]
    return ids


def caught_up(endpoint):
    try:
        with Client(endpoint, timeout=5) as c:
            shards = c.stats()["replication"]["shards"]
    except Exception:  # noqa: BLE001 - the coordinator may be busy; ask again
        return False
    return all(len([r for r in s["replicas"] if r["live"] and r["fresh"] and "catchingUpTo" not in r]) == 2 for s in shards)


def test_every_acknowledged_item_is_on_every_replica_after_random_kills(tmp_path):
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    items = debian(COUNT)
    expected = sorted(i["uniqueIdentifier"] for i in items)
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    data = tmp_path / "data"
    log = open(tmp_path / "up.err", "w")
    cluster = start_cluster(data, shards=SHARDS, stderr=log,
                            extra=("--replicas", "2", "--indexers", "2", "--query-workers", "1", "--restart-limit", "100"))
    log.close()
    try:
        started = time.monotonic()
        publish = subprocess.Popen([str(bin_dir() / "limelight"), "publish", str(path), "--endpoint", cluster.endpoint,
                                    "--batch-size", "200", "--window", "4", "--ack-timeout", "5", "--retry-for", "240"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rng = random.Random(SEED)
        killed = []

        def killer():
            for _ in range(KILLS):
                time.sleep(rng.uniform(0.5, 2.5))
                if publish.poll() is not None:
                    return
                name = rng.choice(CHILDREN)
                pid = child_pid(cluster.process, name)
                if pid and publish.poll() is None:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(name)

        thread = threading.Thread(target=killer)
        thread.start()
        out, err = publish.communicate(timeout=600)
        thread.join()
        published = time.monotonic() - started
        print(f"seed {SEED}: {COUNT} items published in {published:.1f} s with {len(killed)} kills: {killed}")
        print(f"publish said: {err.strip()[-400:]}")
        assert publish.returncode == 0, err
        assert killed, "nothing was killed while publishing"

        assert wait_until(lambda: caught_up(cluster.endpoint), timeout=180, interval=0.5), \
            (tmp_path / "up.err").read_text()[-2000:]
        print(f"every replica caught up {time.monotonic() - started - published:.1f} s after the last acknowledgement")
        with Client(cluster.endpoint, timeout=60) as c:
            counters = c.stats()["counters"]
            print("catch-ups: {} ({} changes resent), workers lost: {}".format(
                counters.get("catchup.started", 0), counters.get("catchup.messages", 0), counters.get("workers.lost", 0)))
            # Each replica's files hold every item, once.
            for folder in [data, data / "replica-1"]:
                ids = replica_ids(folder)
                assert len(ids) == len(set(ids))
                missing = set(expected) - set(ids)
                assert not missing, f"{folder}: {len(missing)} acknowledged items missing, e.g. {sorted(missing)[:5]}"
                assert sorted(ids) == expected
            # And queries, whichever replica's query worker answers, find each once.
            for _ in range(4):
                events = list(c.query('contentType == "org.debian.binary-package"', fetch=[], deadline_ms=60_000))
                assert events[-1][0] == "completion" and events[-1][1]["failedShards"] == [], events[-1]
                found = [i["uniqueIdentifier"] for k, v in events if k == "batch" for i in v]
                assert len(found) == COUNT and sorted(found) == expected
    finally:
        stop_cluster(cluster.process)
