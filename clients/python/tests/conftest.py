"""A stand-in coordinator for the package's tests: a ROUTER socket on loopback
that answers the client's messages the way the real coordinator does (same
message shapes, replies matched by id), scripted per test. The real cluster is
exercised by the repository's tests/python suite; these tests pin down what
the installed package itself does, with nothing but pyzmq.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zmq

Message = dict[str, Any]
#: Given a request, returns the replies to send (each without v and id).
Handler = Callable[[Message], list[Message]]


class StandIn:
    """Serves on a free loopback port until closed; records every request."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Message] = []
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.ROUTER)
        self._socket.setsockopt(zmq.LINGER, 0)
        port = self._socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            route, payload = self._socket.recv_multipart()
            request = json.loads(payload)
            self.requests.append(request)
            for reply in self.handler(request):
                message = {"v": 1, "id": request["id"], **reply}
                self._socket.send_multipart([route, json.dumps(message).encode()])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close(0)
        self._context.term()


def coordinator(request: Message) -> list[Message]:
    """A one-shard coordinator over a fixed catalogue of two fruits."""
    kind = request["type"]
    if kind == "ping":
        return [{"type": "pong", "shardCount": 1, "servedShards": [0]}]
    if kind == "publish":
        results = []
        for i, item in enumerate(request["items"]):
            uid = item.get("uniqueIdentifier") if isinstance(item, dict) else None
            if uid:
                results.append({"index": i, "uniqueIdentifier": uid, "status": "stored"})
            else:
                results.append({"index": i, "status": "rejected",
                                "error": {"code": "missing_identifier", "message": "uniqueIdentifier is missing",
                                          "field": "uniqueIdentifier"}})
        stored = sum(r["status"] == "stored" for r in results)
        return [{"type": "publish_ack", "batch": request.get("batch"), "stored": stored,
                 "rejected": len(results) - stored, "results": results}]
    if kind == "query":
        if request.get("query", "").endswith("("):
            return [{"type": "error", "code": "bad_query", "message": "expected an expression",
                     "position": len(request["query"])}]
        items = [{"uniqueIdentifier": "produce:kiwi", "domainIdentifier": "produce",
                  "attributes": {"title": "Kiwi", "price": 0.5}},
                 {"uniqueIdentifier": "produce:lime", "domainIdentifier": "produce",
                  "attributes": {"title": "Lime", "price": 0.25}}]
        if request.get("limit") == 1 and request.get("completionInBatch"):
            # The query's end in its last batch, as the coordinator sends it to a client that asks.
            return [{"type": "result_batch", "seq": 1, "items": items[:1],
                     "completion": {"count": 1, "failedShards": [], "cancelled": False, "elapsedMs": 0.5}}]
        return [{"type": "result_batch", "seq": 1, "items": items[:1]},
                {"type": "result_batch", "seq": 2, "items": items[1:]},
                {"type": "completion", "count": 2, "failedShards": [], "cancelled": False, "elapsedMs": 1.5}]
    if kind == "delete":
        return [{"type": "delete_ack", "deleted": len(request.get("ids", []))}]
    if kind == "stats":
        return [{"type": "stats_reply", "stats": {"shardCount": 1}}]
    return [{"type": "error", "code": "unexpected_type", "message": f"'{kind}' is not a request"}]


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn(coordinator)
    yield server
    server.close()


def command(name: str) -> str:
    """The installed console script ``name``, beside the running interpreter
    (a virtual environment's bin folder), or on PATH. Missing is a failure:
    these tests are about the installed package."""
    beside = pathlib.Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: run `pip install ./clients/python` first"
    return found


def run(name: str, *args: object, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([command(name), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=60)
