"""Frames a coordinator cannot take are answered with an error that names the
fault, and the cluster goes on serving."""

import json
import time

import pytest
import zmq

import schemas
from harness import Client, registration_proof

#: The coordinator's default limit on a frame (Envelope.defaultMaxFrameBytes).
MAX_FRAME_BYTES = 32 * 1024 * 1024


def oversized_publish():
    padding = "x" * (MAX_FRAME_BYTES + 1024)
    message = {"v": 1, "type": "publish", "id": "big", "items": [{"uniqueIdentifier": "big", "attributes": {"title": padding}}]}
    return json.dumps(message).encode()


CASES = [
    (b"{this is not json", "malformed_json", "", "not valid JSON"),
    (b"[1, 2, 3]", "invalid_message", "", "JSON object"),
    (b'{"type": "ping", "id": "no-version"}', "invalid_message", "no-version", "'v'"),
    (b'{"v": 1, "type": "teleport", "id": "u1"}', "unknown_type", "u1", "teleport"),
    (b'{"v": 2, "type": "ping", "id": "u2"}', "unsupported_version", "u2", "version 2"),
    (b'{"v": 1, "type": "ping"}', "invalid_message", "", "'id'"),
    (b'{"v": 1, "type": "query", "id": "u3", "language": "sql", "query": "SELECT 1"}', "unsupported_language", "u3", "sql"),
    (b'{"v": 1, "type": "query", "id": "u5", "query": 42}', "invalid_message", "u5", "query"),
    (b'{"v": 1, "type": "ping", "id": 7}', "invalid_message", "", "must be text"),
    (b'{"v": 1, "type": "publish", "id": "u4", "items": "not a list"}', "invalid_message", "u4", "items"),
    (oversized_publish, "too_large", "big", "exceeds the limit"),
    # A deadline of 0 or less is refused, not taken as "no deadline".
    (b'{"v": 1, "type": "query", "id": "u6", "query": "title == \\"x\\"", "deadlineMs": 0}', "invalid_parameter", "u6", "deadlineMs"),
    (b'{"v": 1, "type": "query", "id": "u7", "query": "title == \\"x\\"", "deadlineMs": -5}', "invalid_parameter", "u7", "found -5"),
    (b'{"v": 1, "type": "search", "id": "u8", "params": {"query": "x"}, "deadlineMs": 0}', "invalid_parameter", "u8", "deadlineMs"),
    # A delete for a shard the cluster lacks deletes nothing and says which.
    (b'{"v": 1, "type": "delete", "id": "u9", "all": true, "shards": [2, 9]}', "bad_shard", "u9", "no shard 9"),
]


@pytest.fixture
def raw(cluster):
    """A bare DEALER socket to the coordinator, for frames no client would send."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(cluster.endpoint)
    yield sock
    sock.close()


def receive(sock, timeout=20):
    assert sock.poll(timeout * 1000), f"no reply within {timeout} s"
    frames = sock.recv_multipart()
    assert len(frames) == 1, frames
    return json.loads(frames[0])


@pytest.mark.parametrize("frame,code,reply_id,mentions", CASES, ids=[c[1] + ":" + c[3] for c in CASES])
def test_bad_frame_gets_a_named_error_and_the_cluster_keeps_serving(cluster, raw, frame, code, reply_id, mentions):
    raw.send(frame() if callable(frame) else frame)
    reply = receive(raw)
    schemas.assert_valid(reply)
    assert reply["type"] == "error"
    assert reply["code"] == code, reply
    assert reply["id"] == reply_id
    assert mentions in reply["message"], reply
    # The same connection, and a new one, are still served.
    raw.send(b'{"v": 1, "type": "ping", "id": "after"}')
    pong = receive(raw)
    assert (pong["type"], pong["id"]) == ("pong", "after")
    with Client(cluster.endpoint) as c:
        assert c.ping()["servedShards"] == [0, 1, 2, 3]


WORKER_CASES = [
    ([b"{this is not json"], "malformed_json", "", "not valid JSON"),
    ([b'{"v": 1, "type": "teleport", "id": "w1"}'], "unknown_type", "w1", "teleport"),
    ([b'{"v": 1, "type": "heartbeat", "id": "w2", "worker": "nobody"}'], "unregistered", "w2", "register before"),
    ([b'{"v": 1, "type": "write_ack", "id": "w3", "shard": 0, "results": []}'], "unregistered", "w3", "register before"),
    ([b"extra", b'{"v": 1, "type": "heartbeat", "id": "w4", "worker": "x"}'], "invalid_message", "", "2 frames"),
    ([b'{"v": 1, "type": "register", "id": "w5", "role": "indexer", "worker": "bad", "shards": [0, 99]}'], "bad_shard", "w5", "99"),
]


@pytest.mark.parametrize("frames,code,reply_id,mentions", WORKER_CASES, ids=[c[1] + ":" + c[3] for c in WORKER_CASES])
def test_bad_worker_message_gets_a_named_error_and_the_cluster_keeps_serving(cluster, frames, code, reply_id, mentions):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(cluster.workers_endpoint)
    try:
        for attempt in range(40):
            sock.send_multipart(frames)
            reply = receive(sock)
            schemas.assert_valid(reply)
            if reply["type"] == "challenge":
                # A registration is checked for who sends it (the cluster secret)
                # before what it claims: answer the challenge, then see the fault.
                register = json.loads(frames[0])
                register["nonce"] = reply["nonce"]
                register["proof"] = registration_proof(cluster.data / "cluster.secret", reply["nonce"], register["worker"],
                                                       register["role"], register["shards"])
                sock.send(json.dumps(register).encode())
                reply = receive(sock)
                schemas.assert_valid(reply)
            # Shards beyond the map: first asked to register again, until the
            # coordinator has read the control plane for a split adding them.
            if not (code == "bad_shard" and reply.get("code") == "not_active"):
                break
            assert "split" in reply["message"], reply
            time.sleep(0.25)
        assert reply["type"] == "error"
        assert (reply["code"], reply["id"]) == (code, reply_id), reply
        assert mentions in reply["message"], reply
    finally:
        sock.close()
    with Client(cluster.endpoint) as c:
        assert c.ping()["servedShards"] == [0, 1, 2, 3]
