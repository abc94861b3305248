"""Test harness: a real cluster started with ``limelight up``, message capture
for the Python client, and fake workers that speak the worker protocol.
"""

import hashlib
import hmac
import json
import os
import pathlib
import queue
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from typing import NamedTuple

import zmq

import schemas

REPO = pathlib.Path(__file__).resolve().parents[2]
CLIENTS = REPO / "clients" / "python"
SAMPLES = REPO / "samples"
READY_TIMEOUT = 90
STOP_TIMEOUT = 10

# The tests import the client library as its users do, from its folder.
sys.path.insert(0, str(CLIENTS))

from limelight_client import Client  # noqa: E402


def bin_dir():
    """Where the Limelight executables are: $LIMELIGHT_BIN, or .build/debug."""
    return pathlib.Path(os.environ.get("LIMELIGHT_BIN") or REPO / ".build" / "debug")


def under_ci():
    """Whether this is a CI run (CI=true), where nothing may quietly be left out."""
    return os.environ.get("CI", "").lower() in ("true", "1")


def strict():
    """Whether a missing prerequisite must fail the test rather than skip it:
    under CI and when $LIMELIGHT_BIN names the build to test."""
    return under_ci() or bool(os.environ.get("LIMELIGHT_BIN"))


def require_binaries(*names):
    """Skips the test when an executable is missing on a developer's machine
    with nothing built yet; fails it under CI or when $LIMELIGHT_BIN is set, so
    a broken build never passes as a row of skips."""
    import pytest

    missing = [n for n in names if not (bin_dir() / n).exists()]
    if not missing:
        return
    message = f"{', '.join(missing)} missing from {bin_dir()}"
    if strict():
        pytest.fail(f"{message}: build first (swift build)")
    pytest.skip(f"{message}: run `swift build` or set LIMELIGHT_BIN")


def free_port():
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster(NamedTuple):
    """A running ``limelight up``: where clients and workers connect, its stats
    URL, its data folder and its process; ``rest_url`` is the base of
    Algolia's REST API (``http://HOST:PORT``)."""
    endpoint: str
    stats_url: str
    workers_endpoint: str
    data: pathlib.Path
    process: subprocess.Popen
    rest_url: str = ""


def start_cluster(data, shards=4, extra=(), stderr=subprocess.PIPE):
    """Runs ``limelight up`` on free ports (with ``extra`` arguments) and
    returns once it prints ``ready ENDPOINT STATS-URL REST-URL``. ``stderr`` may be a
    file, for tests that read ``up``'s messages while it runs."""
    workers_endpoint = f"tcp://127.0.0.1:{free_port()}"
    command = [str(bin_dir() / "limelight"), "up", "--data", str(data), "--listen", "tcp://127.0.0.1:0",
               "--stats-port", "0", "--shards", str(shards), "--workers-endpoint", workers_endpoint, *extra]
    # up requires API keys by default; the tests of other features talk to an
    # open cluster, keyless (test_keys.py asks for keys with --require-keys).
    if "--require-keys" not in extra:
        command.append("--no-require-keys")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    lines = queue.Queue()
    threading.Thread(target=_forward_lines, args=(process.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        if line.startswith("ready "):
            _, endpoint, stats_url, rest_url = line.split()
            return Cluster(endpoint, stats_url, workers_endpoint, pathlib.Path(data), process, rest_url)
    errors = stop_cluster(process)
    raise RuntimeError(f"limelight up did not become ready: {errors.strip()}\n{_logs(data)}")


def keyed_cluster(tmp_path_factory, name, shards):
    """A module fixture's body: ``limelight up`` as users run it (keys
    required), yielded and stopped afterwards."""
    require_binaries("limelight", "limelight-coordinator", "limelight-indexer", "limelight-query")
    cluster = start_cluster(tmp_path_factory.mktemp(name), shards=shards, extra=("--require-keys",))
    try:
        yield cluster
    finally:
        stop_cluster(cluster.process)


def _forward_lines(stream, lines):
    """Puts each line of ``stream`` on ``lines``, then None at its end."""
    with stream:
        for line in stream:
            lines.put(line)
    lines.put(None)


def stop_cluster(process):
    """SIGTERM, then SIGKILL if it has not stopped within 10 s; returns what
    it wrote to standard error. A second call (a fixture's ``finally`` after
    an assertion's message already stopped it) returns ""."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stderr is None or process.stderr.closed:
        return ""
    with process.stderr:
        return process.stderr.read()


def child_pid(up, name):
    """The pid of ``limelight up``'s child ``name`` (coordinator, indexer-0,
    query-1 ...), found in /proc; None when it is not running."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != up.pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if name == "coordinator" and argv[0].endswith(b"limelight-coordinator"):
            return int(entry)
        if b"--id" in argv and argv[argv.index(b"--id") + 1] == name.encode():
            return int(entry)
    return None


def _logs(data):
    """The tails of the cluster's logs, for failure messages."""
    out = []
    for log in sorted(pathlib.Path(data, "logs").glob("*.log")):
        out.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
    return "\n".join(out)


def read_jsonl(name):
    """The items of a sample file."""
    with open(SAMPLES / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def publish_all(endpoint, items, batch_size=100):
    """Publishes items in batches and returns the total stored."""
    stored = 0
    with Client(endpoint, timeout=30, observer=Traffic()) as c:
        for start in range(0, len(items), batch_size):
            ack = c.publish(items[start:start + batch_size], batch=f"sample-{start}")
            assert ack["rejected"] == 0, ack
            stored += ack["stored"]
    return stored


def record_fault(record_property, kind, first_ack_s, first_query_s, resent, lost, refusals=None):
    """A fault test's figures, as JUnit properties (scripts/test-cluster adds
    them up over rounds) and printed: the seconds from the fault to the first
    acknowledged write and to the first query answered whole (None: not
    measured), the batches resent, the acknowledged items lost, and the
    stale-epoch refusals the indexers counted (None: not seen by the test)."""
    figures = {"fault": kind, "fault_first_ack_s": first_ack_s, "fault_first_query_s": first_query_s,
               "fault_resent": resent, "fault_lost": lost, "fault_refusals": refusals}
    for name, value in figures.items():
        if value is not None:
            record_property(name, round(value, 3) if isinstance(value, float) else value)

    def seconds(value):
        return "-" if value is None else f"{value:.2f} s"
    print(f"\nfault {kind}: first acknowledged write {seconds(first_ack_s)} after, first query answered whole "
          f"{seconds(first_query_s)} after; batches resent {resent}; acknowledged items lost {lost}"
          + (f"; stale-epoch refusals {refusals}" if refusals is not None else ""))


def wait_until(predicate, timeout=10.0, interval=0.1):
    """Polls ``predicate`` until it is true; returns whether it became so."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class Traffic:
    """A client observer: checks every message against its schema as it
    passes, and keeps them for the test to look at."""

    def __init__(self, check_sent=True):
        self.check_sent = check_sent
        self.messages = []

    def __call__(self, direction, message):
        if direction == "received" or self.check_sent:
            schemas.assert_valid(message)
        self.messages.append((direction, message))

    def received(self, kind):
        """Received messages of one type, in order."""
        return [m for d, m in self.messages if d == "received" and m["type"] == kind]

    def sent(self, kind):
        """Sent messages of one type, in order."""
        return [m for d, m in self.messages if d == "sent" and m["type"] == kind]

    def completions(self):
        """Every query end received, in order: ``completion`` messages, and
        the ``completion`` a last ``result_batch`` carries (the clients ask
        for it with ``completionInBatch``), each with its message's id."""
        return [m if m["type"] == "completion" else dict(m["completion"], id=m["id"])
                for d, m in self.messages
                if d == "received" and (m["type"] == "completion" or m["type"] == "result_batch" and "completion" in m)]


def registration_proof(secret_file, nonce, worker, role, shards):
    """The proof a challenged worker registers with (docs/security-transport.md):
    hex HMAC-SHA256 under the cluster secret of the nonce and the registration."""
    secret = pathlib.Path(secret_file).read_text().strip().encode()
    message = f"limelight-register-v1\n{nonce}\n{worker}\n{role}\n{','.join(map(str, shards))}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def indexer_handler(message):
    """Acknowledges writes, deletes and declarations as a healthy indexer does."""
    kind = message["type"]
    if kind == "write":
        results = [{"index": i, "uniqueIdentifier": item["uniqueIdentifier"], "status": "stored"}
                   for i, item in enumerate(message["items"])]
        return [("write_ack", {"shard": message["shard"], "results": results})]
    if kind == "delete":
        return [("delete_ack", {"deleted": 0})]
    if kind == "declare":
        return [("declare_ack", {})]
    return []


class FakeWorker(threading.Thread):
    """A worker made of nothing but a DEALER socket, on a thread of its own.

    It registers (unless ``register`` is false), answering the coordinator's
    ``challenge`` with a proof made from the cluster secret in ``secret_file``
    (``limelight up`` keeps it in its data folder), heartbeats every 300 ms, checks
    every message it receives or sends against the schemas, records what it
    receives, and answers each message with what ``handler(message)`` returns:
    a list of ``(type, body)`` pairs sent with the message's id.
    """

    def __init__(self, endpoint, worker_id, role, shards, handler=None, register=True, secret_file=None,
                 curve_server_key=None, replica=None, sequences=None):
        super().__init__(daemon=True, name=worker_id)
        # What its registrations say besides role, id and shards: the replica
        # it names (``--replica``; without it, its id) and an indexer's shard
        # sequence numbers ({shard: number}).
        self.registration = {"replica": replica} if replica else {}
        if sequences is not None:
            self.registration["sequences"] = [{"shard": s, "sequence": n} for s, n in sorted(sequences.items())]
        self.secret_file = secret_file
        self.curve_server_key = curve_server_key
        self.endpoint = endpoint
        self.worker_id = worker_id
        self.role = role
        self.shards = shards
        self.handler = handler
        self.register = register
        self.inbox = queue.Queue()
        self.received = []
        self.errors = []
        self.registered = threading.Event()
        self._again = threading.Event()
        self._stop_requested = threading.Event()

    def run(self):
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.ROUTING_ID, self.worker_id.encode())
        if self.curve_server_key:
            public, secret = zmq.curve_keypair()
            sock.setsockopt(zmq.CURVE_SERVERKEY, self.curve_server_key.encode())
            sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
            sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
        sock.connect(self.endpoint)
        try:
            if self.register:
                self._register(sock)
            next_beat = time.monotonic()
            while not self._stop_requested.is_set():
                if self._again.is_set():
                    self._again.clear()
                    self._register(sock)
                # A worker that registers beats once it is registered: the
                # registration takes a round trip more (the challenge), and a
                # heartbeat before it is answered `unregistered`.
                if time.monotonic() >= next_beat and (not self.register or self.registered.is_set()):
                    self._send(sock, "heartbeat", "hb", worker=self.worker_id)
                    next_beat = time.monotonic() + 0.3
                if not sock.poll(50):
                    continue
                message = json.loads(sock.recv_multipart()[-1])
                self._check(message)
                self.received.append(message)
                if message["type"] == "registered":
                    self.registered.set()
                if message["type"] == "challenge" and self.secret_file:
                    self._send(sock, "register", message["id"], role=self.role, worker=self.worker_id, shards=self.shards,
                               host=socket.gethostname(), pid=os.getpid(), **self.registration,
                               nonce=message["nonce"],
                               proof=registration_proof(self.secret_file, message["nonce"], self.worker_id, self.role, self.shards))
                self.inbox.put(message)
                for kind, body in (self.handler(message) if self.handler else []):
                    self._send(sock, kind, message["id"], **body)
        except Exception as e:  # surfaced by the test through `errors`
            self.errors.append(f"{type(e).__name__}: {e}")
        finally:
            sock.close(linger=0)

    def _register(self, sock):
        self._send(sock, "register", f"reg-{self.worker_id}", role=self.role, worker=self.worker_id,
                   shards=self.shards, host=socket.gethostname(), pid=os.getpid(), **self.registration)

    def register_again(self):
        """Sends the registration once more (as a worker told `not_active` does)."""
        self._again.set()

    def _send(self, sock, kind, message_id, **body):
        message = {"v": 1, "type": kind, "id": message_id, **body}
        self._check(message)
        sock.send(json.dumps(message).encode())

    def _check(self, message):
        try:
            schemas.assert_valid(message)
        except AssertionError as e:
            self.errors.append(str(e))

    def wait_for(self, kind, timeout=10.0):
        """The next received message of type ``kind``; other types are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{self.worker_id}: no {kind} within {timeout} s; got {[m['type'] for m in self.received]}")
            if message["type"] == kind:
                return message

    def stop(self):
        """Closes the socket. There is no goodbye message: the coordinator
        forgets the worker when a send to it fails or its heartbeats lapse."""
        self._stop_requested.set()
        self.join(5)


class ProcessSet:
    """Processes a test starts by name (their logs in ``tmp``), killed or
    stopped by name, and all stopped at the end (SIGTERM, then SIGKILL after
    10 s)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.running = {}

    def kill(self, name):
        p = self.running.pop(name)
        p.kill()
        p.wait()

    def stop(self):
        for name in list(self.running):
            p = self.running.pop(name)
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def stored_ids(data, shards):
    """The unique identifiers in a replica's shard files (``shard-N.sqlite``
    in ``data``), read with SQLite itself."""
    ids = []
    for shard in range(shards):
        with sqlite3.connect(f"file:{data}/shard-{shard}.sqlite?mode=ro", uri=True) as db:
            ids += [row[0] for row in db.execute("SELECT uid FROM items")]
    return ids
