"""The coordinator's HTTP endpoint on a cluster of its own: /stats equals what
the test published and queried, /metrics says the same in Prometheus format
and `promtool check metrics` accepts it, the status page shows the same in
headless Chromium (a screenshot is saved), and the HTTP itself behaves
(HEAD, keep-alive, 400, 404, 405, oversized headers, /healthz, /readyz).

promtool and chromium must be installed (scripts/install-deps --ops): these
tests fail, not skip, without them.
"""

import html.parser
import http.client
import json
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import schemas
from harness import REPO, Client, FakeWorker, bin_dir, free_port, read_jsonl, start_cluster, stop_cluster, wait_until

SHARDS = 4
QUERIES = ['title == "*"', 'title == "apple*"c', 'keywords == "citrus"', 'title == "kiwi"c && price > 0',
           'displayName == "*an*"cd', '**== "green"cd', 'title != "x"']
ARTIFACTS = pathlib.Path(os.environ.get("LIMELIGHT_ARTIFACTS") or REPO / ".test-output")


def tool(name):
    path = shutil.which(name)
    assert path, f"{name} is not installed: run scripts/install-deps --ops"
    return path


def get(url, method="GET"):
    """(status, headers, body bytes) of a request; HTTP errors are answers too."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def metrics_of(text):
    """{(name, frozenset(labels)): value} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)', line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def metric(samples, name, **labels):
    want = frozenset((k, str(v)) for k, v in labels.items())
    found = [v for (n, l), v in samples.items() if n == name and want <= l]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples"
    return found[0]


def fnv1a_shard(domain, shard_count=SHARDS):
    """The coordinator's shard of a domain (Sources/WireProtocol/Sharding.swift)."""
    h = 0xcbf29ce484222325
    for b in domain.encode("utf-8"):
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % shard_count


@pytest.fixture(scope="module")
def http_cluster(tmp_path_factory):
    """A cluster of this module's own, so its counters are exactly this module's traffic."""
    exe = bin_dir() / "limelight"
    assert exe.exists(), f"{exe} does not exist: build first (swift build)"
    cluster = start_cluster(tmp_path_factory.mktemp("http-cluster"), shards=SHARDS)
    try:
        yield cluster
    finally:
        stop_cluster(cluster.process)


@pytest.fixture(scope="module")
def traffic(http_cluster):
    """Publishes the Green Grocer sample in two batches plus one batch with two
    bad items, runs the queries; returns what /stats must then say."""
    grocer = read_jsonl("green-grocer.jsonl")
    bad = [{"attributes": {"title": "no identifier"}}, {"uniqueIdentifier": "x:bad", "domainIdentifier": "not a domain"},
           {"uniqueIdentifier": "extra:1", "domainIdentifier": "extra", "attributes": {"title": "Extra"}}]
    batches = [grocer[:20], grocer[20:], bad]
    stored = rejected = 0
    results = 0
    with Client(http_cluster.endpoint, timeout=30) as c:
        for i, b in enumerate(batches):
            ack = c.publish(b, batch=f"b{i}")
            stored += ack["stored"]
            rejected += ack["rejected"]
        for q in QUERIES:
            for kind, value in c.query(q):
                if kind == "completion":
                    assert value["failedShards"] == []
                    results += value["count"]
    items = grocer + [bad[2]]
    per_shard = [0] * SHARDS
    for item in items:
        per_shard[fnv1a_shard(item.get("domainIdentifier", ""))] += 1
    return {"batches": len(batches), "items": sum(len(b) for b in batches), "stored": stored, "rejected": rejected,
            "queries": len(QUERIES), "per_shard": per_shard, "results": results}


def settled_stats(cluster, traffic):
    """/stats once the workers' heartbeats have caught up with the traffic, and
    the indexers have truncated each quiet shard's write-ahead log (two seconds
    after its last write) and reported the file alone."""
    def wal_bytes(shard):
        wal = cluster.data / f"shard-{shard}.sqlite-wal"
        return wal.stat().st_size if wal.exists() else 0

    def caught_up():
        s = json.loads(get(cluster.stats_url)[2])
        indexer_batches = sum(w.get("batches", 0) for w in s["workers"] if w["role"] == "indexer")
        query_batches = sum(w.get("batches", 0) for w in s["workers"] if w["role"] == "query")
        at_rest = all(wal_bytes(sh["shard"]) == 0
                      and sh["databaseBytes"] == (cluster.data / f"shard-{sh['shard']}.sqlite").stat().st_size
                      for sh in s["shards"])
        return (s["items"] == traffic["stored"] and indexer_batches == SHARDS * traffic["batches"]
                and query_batches == SHARDS * traffic["queries"] and at_rest)
    assert wait_until(caught_up, timeout=15), json.loads(get(cluster.stats_url)[2])
    return json.loads(get(cluster.stats_url)[2])


def test_stats_equal_what_was_published_and_queried(http_cluster, traffic, capsys):
    assert traffic["stored"] == traffic["items"] - 2 and traffic["rejected"] == 2
    stats = settled_stats(http_cluster, traffic)
    schemas.assert_valid(stats, "stats_reply.schema.json#/$defs/stats")
    c = stats["counters"]
    assert c["publish.batches"] == traffic["batches"]
    assert c["publish.items"] == traffic["items"]
    assert c["publish.stored"] == traffic["stored"]
    assert c["publish.rejected"] == traffic["rejected"]
    assert c["queries"] == traffic["queries"]
    assert stats["queryLatencyMs"]["samples"] == traffic["queries"]
    lat = stats["queryLatencyMs"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
    assert stats["inFlight"] == {"queries": 0, "publishes": 0, "deletes": 0}
    # Items per shard: what the domain hash says, what the indexers report,
    # and what the SQLite files hold.
    assert [s["items"] for s in stats["shards"]] == traffic["per_shard"]
    for s in stats["shards"]:
        path = http_cluster.data / f"shard-{s['shard']}.sqlite"
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            assert db.execute("SELECT count(*) FROM items").fetchone()[0] == s["items"]
        assert s["databaseBytes"] >= path.stat().st_size > 0
        assert s["served"] is True and s["lastWrite"] is not None
    assert stats["items"] == traffic["stored"]
    # Workers: the real processes, at rest.
    assert {w["role"] for w in stats["workers"]} == {"indexer", "query"}
    for w in stats["workers"]:
        cmdline = pathlib.Path(f"/proc/{w['pid']}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].endswith(f"limelight-{w['role']}".encode()), cmdline
        assert w["state"] == "live" and w["queueDepth"] == 0 and w["errors"] == 0
        assert w["uptimeSeconds"] > 0 and 0 < w["diskFreeBytes"] <= w["diskSizeBytes"]
    assert stats["lostWorkers"] == []
    # Rates cover the last 10 seconds: the traffic is in them while the cluster is that young.
    if stats["uptimeSeconds"] < 9:
        assert stats["rates"]["publishItemsPerSecond"] > 0 and stats["rates"]["queriesPerSecond"] > 0, stats["rates"]
    with capsys.disabled():
        print(f"\n/stats after {traffic['items']} items in {traffic['batches']} batches and {traffic['queries']} queries: "
              f"query p50 {lat['p50']} ms, p95 {lat['p95']} ms, p99 {lat['p99']} ms; "
              f"first batch p50 {stats['firstBatchLatencyMs']['p50']} ms")


def test_metrics_pass_promtool_and_match_stats(http_cluster, traffic, tmp_path):
    promtool = tool("promtool")
    stats = settled_stats(http_cluster, traffic)
    base = http_cluster.stats_url.rsplit("/", 1)[0]
    status, headers, body = get(base + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    (tmp_path / "metrics.txt").write_text(text)
    check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    m = metrics_of(text)
    assert metric(m, "limelight_publish_items_total") == traffic["items"]
    assert metric(m, "limelight_publish_batches_total") == traffic["batches"]
    assert metric(m, "limelight_publish_rejected_items_total") == traffic["rejected"]
    assert metric(m, "limelight_queries_total") == traffic["queries"]
    assert metric(m, "limelight_query_duration_seconds_count") == traffic["queries"]
    assert metric(m, "limelight_query_duration_seconds_bucket", le="+Inf") == traffic["queries"]
    assert metric(m, "limelight_publish_duration_seconds_count") == traffic["batches"]
    assert metric(m, "limelight_shards") == SHARDS
    for s in stats["shards"]:
        assert metric(m, "limelight_items", shard=s["shard"]) == s["items"]
        assert metric(m, "limelight_shard_served", shard=s["shard"]) == 1
    for w in stats["workers"]:
        assert metric(m, "limelight_worker_up", worker=w["id"]) == 1
        assert metric(m, "limelight_worker_batches_total", worker=w["id"]) == w["batches"]
        assert metric(m, "limelight_worker_queue_depth", worker=w["id"]) == 0
    # A second scrape counts nothing twice.
    again = metrics_of(get(base + "/metrics")[2].decode())
    assert metric(again, "limelight_publish_items_total") == traffic["items"]
    # Every metric the alerts and the dashboard use is one this endpoint exports.
    exported = {name for name, _ in m}
    used = set()
    for path in (REPO / "ops/prometheus/alerts.yml", REPO / "ops/grafana/limelight.json"):
        used |= set(re.findall(r"\blimelight_[a-z_]+", path.read_text()))
    used = {u for u in used if not u.endswith("_bucket") or u in exported}
    missing = sorted(u for u in used if u not in exported)
    assert not missing, f"ops/ uses metrics /metrics does not export: {missing}"


class _DOM(html.parser.HTMLParser):
    """Elements with an id or a data-field, with their data-value and text."""

    def __init__(self):
        super().__init__()
        self.by_id = {}
        self.rows = {}
        self.stack = []
        self.row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and ("data-shard" in a or "data-worker" in a):
            self.row = ("shard", a["data-shard"]) if "data-shard" in a else ("worker", a["data-worker"])
            self.rows[self.row] = {}
        if "id" in a and "data-value" in a:
            self.by_id[a["id"]] = a["data-value"]
        if "data-field" in a and self.row:
            self.rows[self.row][a["data-field"]] = a.get("data-value", "")

    def handle_endtag(self, tag):
        if tag == "tr":
            self.row = None


def chromium(*args):
    exe = tool("chromium")
    done = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--virtual-time-budget=5000", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_status_page_shows_the_stats_in_chromium(http_cluster, traffic, capsys):
    stats = settled_stats(http_cluster, traffic)
    base = http_cluster.stats_url.rsplit("/", 1)[0]
    status, headers, body = get(base + "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"http://" not in body and b"https://" not in body, "the page must load no external assets"
    dom_text = chromium("--dump-dom", base + "/")
    assert 'data-loaded="true"' in dom_text, "the page's script did not render /stats"
    dom = _DOM()
    dom.feed(dom_text)
    v = dom.by_id
    assert v["cluster-state"] == "ready"
    assert int(v["served-shards"]) == len(stats["servedShards"]) == SHARDS
    assert int(v["shard-count"]) == SHARDS
    assert int(v["total-items"]) == stats["items"] == traffic["stored"]
    assert int(v["published-items"]) == traffic["items"]
    assert int(v["rejected-items"]) == traffic["rejected"]
    assert int(v["queries-total"]) == traffic["queries"]
    assert int(v["latency-samples"]) == traffic["queries"]
    for p in ("p50", "p95", "p99"):
        assert float(v[f"latency-{p}"]) == stats["queryLatencyMs"][p]
    assert int(v["queries-in-flight"]) == 0
    for s in stats["shards"]:
        row = dom.rows[("shard", str(s["shard"]))]
        assert row["state"] == "served"
        assert int(row["items"]) == s["items"]
        assert int(row["databaseBytes"]) == s["databaseBytes"]
        assert row["indexers"] == ",".join(s["indexers"])
        assert row["queryWorkers"] == ",".join(s["queryWorkers"])
    assert {k[1] for k in dom.rows if k[0] == "worker"} == {w["id"] for w in stats["workers"]}
    for w in stats["workers"]:
        row = dom.rows[("worker", w["id"])]
        assert (row["role"], row["state"], int(row["pid"])) == (w["role"], "live", w["pid"])
        assert int(row["batches"]) == w["batches"] and int(row["errors"]) == w["errors"]
        assert int(row["queueDepth"]) == 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "status-page.png"
    shot.unlink(missing_ok=True)
    chromium(f"--screenshot={shot}", "--window-size=1400,1000", base + "/")
    assert shot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nstatus page screenshot: {shot}")


def test_http_protocol(http_cluster):
    url = urllib.parse.urlsplit(http_cluster.stats_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    # Keep-alive: several requests on one connection.
    conn.request("GET", "/stats")
    r = conn.getresponse()
    length = int(r.headers["Content-Length"])
    assert r.status == 200 and len(r.read()) == length
    # HEAD: the GET's headers, no body.
    conn.request("HEAD", "/stats")
    r = conn.getresponse()
    assert r.status == 200 and r.headers["Content-Type"] == "application/json" and r.read() == b""
    conn.request("GET", "/healthz")
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read()) == {"status": "ok"}
    conn.request("GET", "/readyz")
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read())["unservedShards"] == []
    conn.request("GET", "/stats?pretty=1")
    r = conn.getresponse()
    assert r.status == 400 and json.loads(r.read()) == {"error": "/stats takes no parameter 'pretty'"}
    conn.request("GET", "/nowhere")
    r = conn.getresponse()
    assert r.status == 404 and "no such path: /nowhere" in json.loads(r.read())["error"]
    conn.request("POST", "/stats", body=b"{}")
    r = conn.getresponse()
    assert r.status == 405 and r.headers["Allow"] == "GET, HEAD"
    r.read()
    conn.close()
    # A request head past the limit is refused, and the server keeps serving.
    big = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    big.putrequest("GET", "/stats")
    big.putheader("X-Padding", "a" * 20_000)
    big.endheaders()
    r = big.getresponse()
    assert r.status in (400, 431), r.status
    big.close()
    # Not HTTP at all.
    with __import__("socket").create_connection((url.hostname, url.port), timeout=10) as s:
        s.sendall(b"\x16\x03\x01 this is not http\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    assert get(http_cluster.stats_url)[0] == 200


def test_stats_listen_readyz_and_lost_workers(tmp_path):
    """A coordinator alone on --stats-listen: not ready until a worker of each
    role serves every shard; a worker that goes silent is listed as lost."""
    coordinator = bin_dir() / "limelight-coordinator"
    workers = f"tcp://127.0.0.1:{free_port()}"
    p = subprocess.Popen([str(coordinator), "--listen", "tcp://127.0.0.1:0", "--workers", workers,
                          "--stats-listen", "127.0.0.1:0", "--shards", "2", "--heartbeat-ms", "200", "--liveness-ms", "600",
                          "--cluster-secret-file", str(tmp_path / "cluster.secret")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fakes = []
    try:
        line = p.stdout.readline().split()
        assert line[0] == "listening" and line[3].startswith("http://127.0.0.1:") and line[3].endswith("/stats"), line
        base = line[3].rsplit("/", 1)[0]
        status, _, body = get(base + "/readyz")
        assert status == 503 and json.loads(body)["unservedShards"] == [0, 1]
        assert get(base + "/healthz")[0] == 200
        secret = tmp_path / "cluster.secret"
        fakes = [FakeWorker(workers, "fake-indexer", "indexer", [0, 1], secret_file=secret),
                 FakeWorker(workers, "fake-query", "query", [0, 1], secret_file=secret)]
        for f in fakes:
            f.start()
            assert f.registered.wait(10)
        assert wait_until(lambda: get(base + "/readyz")[0] == 200)
        fakes[1].stop()
        assert wait_until(lambda: json.loads(get(base + "/stats")[2])["lostWorkers"], timeout=10)
        stats = json.loads(get(base + "/stats")[2])
        schemas.assert_valid(stats, "stats_reply.schema.json#/$defs/stats")
        [lost] = stats["lostWorkers"]
        assert (lost["id"], lost["state"], lost["role"]) == ("fake-query", "lost", "query")
        assert "heartbeat" in lost["lostReason"] or "connection" in lost["lostReason"]
        assert [w["id"] for w in stats["workers"]] == ["fake-indexer"]
        status, _, body = get(base + "/readyz")
        assert status == 503 and json.loads(body)["unservedShards"] == [0, 1]
        m = metrics_of(get(base + "/metrics")[2].decode())
        assert metric(m, "limelight_worker_up", worker="fake-query") == 0
        assert metric(m, "limelight_worker_up", worker="fake-indexer") == 1
        assert metric(m, "limelight_shard_served", shard=0) == 0
        assert metric(m, "limelight_workers_lost_total") == 1
    finally:
        for f in fakes:
            f.stop()
        p.terminate()
        p.wait(10)
        p.stdout.close()
        p.stderr.close()


def test_bad_stats_listen_and_busy_port_are_named(tmp_path):
    coordinator = str(bin_dir() / "limelight-coordinator")
    done = subprocess.run([coordinator, "--stats-listen", "localhost"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 64, done  # ArgumentParser's usage error, as for every bad flag
    assert "--stats-listen 'localhost': expected HOST:PORT" in done.stderr
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([coordinator, "--listen", "tcp://127.0.0.1:0", "--workers", "tcp://127.0.0.1:0",
                               "--stats-listen", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1, done
    assert f"cannot serve HTTP on 127.0.0.1:{port}" in done.stderr, done.stderr
