"""Issue 13, parts 3 and 4, from Python: `limelight up` with CURVE, its worker
socket on loopback, the cluster secret it keeps, and pyzmq peers — the Python
client with CURVE, fake workers that must answer the coordinator's challenge
(docs/security-transport.md). Real processes on loopback."""

import os
import re
import socket
import subprocess
import threading

import pytest
import zmq
import zmq.auth

from harness import (Client, FakeWorker, Traffic, bin_dir, read_jsonl, require_binaries, stop_cluster,
                     wait_until)

from limelight_client import LimelightTimeout


@pytest.fixture
def curve_up(tmp_path):
    """`limelight up --listen tcp://0.0.0.0:0 --curve-secret-key …`: the client
    port open to the network (as in a container), nothing said about workers."""
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    keys = tmp_path / "keys"
    keys.mkdir()
    made = subprocess.run([str(bin_dir() / "limelight"), "keys", "curve", str(keys / "coordinator")],
                          capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    public, secret = zmq.auth.load_certificate(str(keys / "coordinator.key_secret"))
    assert made.stdout == f'public-key = "{public.decode()}"\n'
    data = tmp_path / "data"
    process = subprocess.Popen([str(bin_dir() / "limelight"), "up", "--data", str(data), "--listen", "tcp://0.0.0.0:0",
                                "--stats-port", "0", "--shards", "2", "--indexers", "1", "--query-workers", "1",
                                "--curve-secret-key", str(keys / "coordinator.key_secret"), "--no-require-keys"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = {}

    def read():
        for line in process.stdout:
            if line.startswith("ready "):
                ready["line"] = line.split()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(90)
    try:
        assert "line" in ready, stop_cluster(process)
        endpoint = ready["line"][1].replace("0.0.0.0", "127.0.0.1")
        log = (data / "logs" / "coordinator.log").read_text()
        [workers] = re.findall(r"endpoint\.workers=(\S+)", log)[:1]
        yield endpoint, workers, public.decode(), data
    finally:
        stop_cluster(process)


def test_up_keeps_its_workers_on_loopback_and_its_secret_private(curve_up):
    endpoint, workers, _, data = curve_up
    assert workers.startswith("tcp://127.0.0.1:"), workers
    assert (data / "cluster.secret").stat().st_mode & 0o777 == 0o600
    assert len((data / "cluster.secret").read_text().strip()) == 64


def test_a_python_client_with_curve_publishes_and_queries(curve_up):
    endpoint, _, server_key, _ = curve_up
    items = read_jsonl("green-grocer.jsonl")
    traffic = Traffic()
    with Client(endpoint, timeout=20, observer=traffic, curve_server_key=server_key) as c:
        assert wait_until(lambda: len(c.ping()["servedShards"]) == 2, timeout=20)
        ack = c.publish(items)
        assert ack["stored"] == len(items) and ack["rejected"] == 0
        events = list(c.query('title == "*kiwifruit"cd', fetch=["title"]))
        titles = sorted(item["attributes"]["title"] for kind, batch in events if kind == "batch" for item in batch)
        assert titles == ["Green Kiwifruit", "SunGold Kiwifruit"], events
    # Without CURVE the coordinator does not answer at all.
    with Client(endpoint, timeout=1.5) as plain:
        with pytest.raises(LimelightTimeout):
            plain.ping()
    # Nor with the wrong server key.
    wrong, _ = zmq.curve_keypair()
    with Client(endpoint, timeout=1.5, curve_server_key=wrong.decode()) as lost:
        with pytest.raises(LimelightTimeout):
            lost.ping()


def test_a_fake_worker_needs_the_secret_even_over_curve(curve_up):
    endpoint, workers, server_key, data = curve_up
    stranger = FakeWorker(workers, "query-0", "query", [0, 1], curve_server_key=server_key)
    member = FakeWorker(workers, "python-query", "query", [0, 1], curve_server_key=server_key,
                        secret_file=data / "cluster.secret")
    for w in (stranger, member):
        w.start()
    try:
        # The stranger is challenged and, with no secret, never registered.
        challenge = stranger.wait_for("challenge")
        assert re.fullmatch(r"[0-9a-f]{64}", challenge["nonce"])
        assert member.registered.wait(10), member.received
        assert not stranger.registered.is_set()
        with Client(endpoint, timeout=10, curve_server_key=server_key) as c:
            live = {w["id"]: w["pid"] for w in c.stats()["workers"]}
        assert "python-query" in live and live["query-0"] != os.getpid()
    finally:
        for w in (stranger, member):
            w.stop()
    assert stranger.errors == [] and member.errors == []


class Relay(threading.Thread):
    """A TCP relay that keeps a copy of every byte it passes, both ways: what
    someone on the path between two hosts would see."""

    def __init__(self, target):
        super().__init__(daemon=True)
        host, port = target.rsplit("//", 1)[1].rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"tcp://127.0.0.1:{self.listener.getsockname()[1]}"
        self.seen = bytearray()
        self.lock = threading.Lock()

    def run(self):
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for a, b in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while chunk := source.recv(65536):
                with self.lock:
                    self.seen += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


def _publish_through(relay, marker, **curve):
    with Client(relay.endpoint, timeout=20, **curve) as c:
        item = {"uniqueIdentifier": f"wire:{marker}", "domainIdentifier": "org.wire",
                "attributes": {"title": f"{marker} title", "contentDescription": f"{marker} secret recipe"}}
        assert c.publish([item])["stored"] == 1
        events = list(c.query(f'title == "{marker}*"', fetch=["title"]))
        assert [i["uniqueIdentifier"] for kind, batch in events if kind == "batch" for i in batch] == [f"wire:{marker}"]


def test_what_crosses_the_wire_is_encrypted_with_curve(curve_up, cluster):
    """The same publish and query through a relay: in the clear without CURVE
    (so the relay does see what passes), sealed with it."""
    endpoint, _, server_key, _ = curve_up
    marker = "Zanzibarquux"
    plain_relay, curve_relay = Relay(cluster.endpoint), Relay(endpoint)
    for r in (plain_relay, curve_relay):
        r.start()
    try:
        _publish_through(plain_relay, marker)
        _publish_through(curve_relay, marker, curve_server_key=server_key)
    finally:
        plain_relay.close()
        curve_relay.close()
    assert marker.encode() in plain_relay.seen and b"secret recipe" in plain_relay.seen
    assert len(curve_relay.seen) > 1000, "the relay saw too little to judge"
    assert marker.encode() not in curve_relay.seen and b"secret recipe" not in curve_relay.seen
    assert b'"type"' not in curve_relay.seen and b"publish" not in curve_relay.seen
