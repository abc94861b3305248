"""The library: requests, replies matched by id, streams, errors."""

from __future__ import annotations

import socket

import pytest

import limelight
from limelight import Client, LimelightError, LimelightTimeout, sort_key


def test_package_is_typed_and_exports_the_client() -> None:
    import importlib.resources

    assert importlib.resources.files("limelight").joinpath("py.typed").is_file()
    assert limelight.Client is Client
    assert limelight.PROTOCOL_VERSION == 1


def test_ping_publish_and_requests_carry_version_type_and_id(stand_in) -> None:
    with Client(stand_in.endpoint) as c:
        assert c.ping()["servedShards"] == [0]
        ack = c.publish([{"uniqueIdentifier": "produce:kiwi"}, {"attributes": {}}], batch="b1")
    assert (ack["stored"], ack["rejected"]) == (1, 1)
    assert ack["results"][1]["error"]["field"] == "uniqueIdentifier"
    ping, publish = stand_in.requests
    assert ping == {"v": 1, "type": "ping", "id": ping["id"]}
    assert publish["type"] == "publish" and publish["batch"] == "b1" and len(publish["items"]) == 2
    assert ping["id"] != publish["id"]


def test_query_streams_batches_then_completion(stand_in) -> None:
    with Client(stand_in.endpoint) as c:
        events = list(c.query('title == "*"', fetch=["title"], sort=["price:desc"], limit=5))
    assert [kind for kind, _ in events] == ["batch", "batch", "completion"]
    assert [i["uniqueIdentifier"] for _, batch in events[:2] for i in batch] == ["produce:kiwi", "produce:lime"]
    assert events[2][1]["count"] == 2
    sent = stand_in.requests[0]
    assert sent["fetchAttributes"] == ["title"] and sent["limit"] == 5
    assert sent["sort"] == [{"attribute": "price", "ascending": False}]


def test_a_completion_inside_the_last_batch_ends_the_stream(stand_in) -> None:
    with Client(stand_in.endpoint) as c:
        stream = c.query('title == "*"', limit=1)
        events = list(stream)
        assert c.ping()["type"] == "pong"
    assert [kind for kind, _ in events] == ["batch", "completion"]
    assert [i["uniqueIdentifier"] for i in events[0][1]] == ["produce:kiwi"]
    assert events[1][1] == {"type": "completion", "id": stream.id, "v": 1, "count": 1, "failedShards": [],
                            "cancelled": False, "elapsedMs": 0.5}
    assert stand_in.requests[0]["completionInBatch"] is True


def test_replies_to_other_requests_wait_in_their_inbox(stand_in) -> None:
    with Client(stand_in.endpoint) as c:
        first = c.send_request("ping")
        second = c.send_request("delete", ids=["a", "b"])
        # Waiting for the second reads the first's reply and keeps it.
        assert c.next_reply(second)["deleted"] == 2
        assert c.next_reply(first)["type"] == "pong"


def test_error_reply_raises_with_code_and_position(stand_in) -> None:
    with Client(stand_in.endpoint) as c:
        with pytest.raises(LimelightError) as caught:
            list(c.query('title == "x" && ('))
    assert caught.value.code == "bad_query"
    assert caught.value.position == len('title == "x" && (')
    assert str(caught.value) == f"bad_query: expected an expression (at position {caught.value.position})"


def test_silence_raises_timeout() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Client(f"tcp://127.0.0.1:{port}", timeout=0.3) as c:
        with pytest.raises(LimelightTimeout):
            c.ping()


def test_sort_keys() -> None:
    assert sort_key("relevance") == {"relevance": True}
    assert sort_key("title") == {"attribute": "title", "ascending": True}
    assert sort_key("price:DESC") == {"attribute": "price", "ascending": False}
    assert sort_key({"attribute": "x", "ascending": True}) == {"attribute": "x", "ascending": True}
