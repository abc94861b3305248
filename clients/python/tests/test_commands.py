"""The console scripts, run as a user runs them once the package is installed."""

from __future__ import annotations

import json
import socket

from conftest import run


def test_publish_names_rejected_lines_and_exits_1(stand_in, tmp_path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text('{"uniqueIdentifier": "a"}\n\nnot json\n{"attributes": {}}\n{"uniqueIdentifier": "b"}\n')
    done = run("limelight-publish", items, "--endpoint", stand_in.endpoint, "--batch-size", 2)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("2 stored, 2 rejected")
    assert f"{items}:3: rejected line: not valid JSON" in done.stderr
    assert f"{items}:4: rejected item: missing_identifier" in done.stderr
    publishes = [r for r in stand_in.requests if r["type"] == "publish"]
    assert [len(p["items"]) for p in publishes] == [2, 1]


def test_publish_reads_standard_input(stand_in) -> None:
    done = run("limelight-publish", "-", "--endpoint", stand_in.endpoint, stdin='{"uniqueIdentifier": "a"}\n')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 stored, 0 rejected")


def test_query_prints_items_and_json(stand_in) -> None:
    done = run("limelight-query", 'title == "*"', "--endpoint", stand_in.endpoint, "--fetch", "title,price")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["produce:kiwi\tKiwi\t0.5", "produce:lime\tLime\t0.25"]
    assert "2 items in 1.5 ms" in done.stderr
    done = run("limelight-query", 'title == "*"', "--endpoint", stand_in.endpoint, "--json", "--fetch", "title")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0] == {"uniqueIdentifier": "produce:kiwi", "domainIdentifier": "produce", "attributes": {"title": "Kiwi"}}


def test_bad_query_exits_2_and_points_at_the_fault(stand_in) -> None:
    done = run("limelight-query", 'title == "x" && (', "--endpoint", stand_in.endpoint)
    assert done.returncode == 2
    assert "limelight-query: bad query: bad_query: expected an expression" in done.stderr
    assert done.stderr.splitlines()[-1] == "  " + " " * len('title == "x" && (') + "^"


def test_unreachable_server_exits_3() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name in ("limelight-publish", "limelight-query"):
        done = run(name, "-" if name == "limelight-publish" else "x", "--endpoint", f"tcp://127.0.0.1:{port}",
                   "--timeout", "0.3", stdin="")
        assert done.returncode == 3, (name, done.stderr)
        assert f"{name}: cannot reach a server" in done.stderr
