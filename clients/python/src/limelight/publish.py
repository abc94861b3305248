"""Publish items from a JSON Lines file to a Limelight cluster.

    limelight-publish FILE.jsonl [--endpoint tcp://127.0.0.1:7700] [--batch-size 500] [--window 4]

Items go in batches, with up to ``--window`` batches in flight: each waits for
its ``publish_ack``, which the coordinator sends only after every replica has
committed, so a slow indexer slows this producer down instead of filling
queues. A line ``{"customAttributeKey": {"name": ..., "type": ...}}`` declares
a custom attribute before the items after it (as ``limelight publish`` does).

Prints a summary on standard output and each rejected item, with its line
number, on standard error. Exit status: 0 when everything was stored, 1 when
any item was rejected, 2 for bad arguments, 3 when the server cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

from .client import DEFAULT_ENDPOINT, Client, JSONObject, LimelightError, LimelightTimeout

EXIT_REJECTED = 1
EXIT_UNREACHABLE = 3


def program_name() -> str:
    """How messages name this program: as it was started (``limelight-publish``, or
    ``publish.py`` through the old script), so a user sees the name they typed."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith(("limelight", "publish")) else "limelight-publish"


class Publisher:
    """Sends batches with a window of them in flight and tallies the acks."""

    def __init__(self, client: Client, name: str, window: int, ack_timeout: float) -> None:
        self.client = client
        self.name = name
        self.window = window
        self.ack_timeout = ack_timeout
        # request id -> the batch's items and their line numbers
        self.in_flight: dict[str, tuple[list[Any], list[int]]] = {}
        self.stored = 0
        self.rejected = 0

    def reject(self, line: Union[int, str], what: str, reason: object) -> None:
        """Counts one rejected line and names it on standard error."""
        self.rejected += 1
        print(f"{self.name}:{line}: rejected {what}: {reason}", file=sys.stderr)

    def send(self, items: list[Any], lines: list[int]) -> None:
        """Sends a batch, first waiting for an ack if the window is full."""
        while len(self.in_flight) >= self.window:
            self.collect_one()
        batch = f"{os.path.basename(self.name)}:{lines[0]}-{lines[-1]}"
        request_id = self.client.send_request("publish", items=items, batch=batch)
        self.in_flight[request_id] = (items, lines)

    def drain(self) -> None:
        """Waits for every batch in flight."""
        while self.in_flight:
            self.collect_one()

    def collect_one(self) -> None:
        """Waits for one ack and reports its rejections."""
        reply = self.client.next_reply(list(self.in_flight), self.ack_timeout)
        if reply["id"] not in self.in_flight:
            # An error without an id: the coordinator could not read one of our frames.
            raise LimelightError.from_reply(reply)
        items, lines = self.in_flight.pop(reply["id"])
        self.client.finish(reply["id"])
        if reply["type"] == "error":
            error = LimelightError.from_reply(reply)
            for item, number in zip(items, lines):
                self.reject(number, uid_of(item), error)
            return
        self.stored += reply["stored"]
        for result in reply["results"]:
            if result["status"] != "rejected":
                continue
            index = result["index"]
            line: Union[int, str] = lines[index] if 0 <= index < len(lines) else "?"
            uid = result.get("uniqueIdentifier") or (uid_of(items[index]) if 0 <= index < len(items) else "item")
            reason: JSONObject = result.get("error") or {"code": "rejected", "message": "no reason given"}
            self.reject(line, uid, LimelightError.from_reply(reason))


def uid_of(item: Any) -> str:
    """The item's uniqueIdentifier for messages, or "item" when it has none."""
    uid = item.get("uniqueIdentifier") if isinstance(item, dict) else None
    return uid if isinstance(uid, str) and uid else "item"


def read_lines(path: str) -> Iterator[tuple[int, str]]:
    """Yields (line number, text) of a file, or of standard input for '-'."""
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8")
    with stream:
        for number, text in enumerate(stream, 1):
            yield number, text


def publish(client: Client, path: str, batch_size: int, window: int, ack_timeout: float) -> Publisher:
    """Publishes a file; returns the Publisher with its counts."""
    publisher = Publisher(client, "stdin" if path == "-" else path, window, ack_timeout)
    items: list[Any] = []
    lines: list[int] = []
    for number, text in read_lines(path):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except ValueError as e:
            publisher.reject(number, "line", f"not valid JSON ({e})")
            continue
        if isinstance(value, dict) and "customAttributeKey" in value:
            # Items after a declaration must be read with it in force.
            if items:
                publisher.send(items, lines)
                items, lines = [], []
            publisher.drain()
            try:
                client.declare([value["customAttributeKey"]])
            except LimelightError as e:
                publisher.reject(number, "declaration", e)
            continue
        items.append(value)
        lines.append(number)
        if len(items) >= batch_size:
            publisher.send(items, lines)
            items, lines = [], []
    if items:
        publisher.send(items, lines)
    publisher.drain()
    return publisher


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``limelight-publish`` command; returns its exit status."""
    parser = argparse.ArgumentParser(prog=program_name(), description="Publish items from a JSON Lines file to Limelight.")
    parser.add_argument("file", help="JSON Lines file of items; - reads standard input")
    parser.add_argument("--endpoint", default=os.environ.get("LIMELIGHT_ENDPOINT", DEFAULT_ENDPOINT),
                        help="coordinator endpoint (default: $LIMELIGHT_ENDPOINT or %(default)s)")
    parser.add_argument("--batch-size", type=int, default=500, help="items per batch (default: %(default)s)")
    parser.add_argument("--window", type=int, default=4, help="batches in flight at once (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the server to answer a ping (default: %(default)s)")
    parser.add_argument("--ack-timeout", type=float, default=120.0, help="seconds to wait for a batch's acknowledgement (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.window < 1:
        parser.error("--batch-size and --window must be at least 1")
    if args.file != "-" and not os.path.isfile(args.file):
        parser.error(f"cannot read {args.file}")

    started = time.monotonic()
    with Client(args.endpoint, timeout=args.timeout) as client:
        try:
            client.ping()
            publisher = publish(client, args.file, args.batch_size, args.window, args.ack_timeout)
        except LimelightTimeout as e:
            print(f"{program_name()}: cannot reach a server at {args.endpoint}: {e}", file=sys.stderr)
            return EXIT_UNREACHABLE
        except LimelightError as e:
            print(f"{program_name()}: the server refused a batch: {e}", file=sys.stderr)
            return EXIT_REJECTED
    elapsed = time.monotonic() - started
    total = publisher.stored + publisher.rejected
    print(f"{publisher.stored} stored, {publisher.rejected} rejected in {elapsed:.2f} s "
          f"({total / max(elapsed, 1e-6):.0f} items/s)")
    return EXIT_REJECTED if publisher.rejected else 0



if __name__ == "__main__":
    sys.exit(main())
