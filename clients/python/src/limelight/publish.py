"""Publish items from a JSON Lines file to a Limelight cluster.

    limelight-publish FILE.jsonl [--endpoint tcp://127.0.0.1:7700] [--batch-size 500] [--window 4]

Items go in batches, with up to ``--window`` batches in flight: each waits for
its ``publish_ack``, which the coordinator sends only after every replica has
committed, so a slow indexer slows this producer down instead of filling
queues. A line ``{"customAttributeKey": {"name": ..., "type": ...}}`` declares
a custom attribute before the items after it (as ``limelight publish`` does).

Prints a summary on standard output and each rejected item, with its line
number, on standard error. Batches not acknowledged in time (``--ack-timeout``)
or answered ``shard_unavailable`` are sent again until acknowledged, for at
most ``--retry-for`` seconds (see :class:`Publisher`). Exit status: 0 when
everything was stored, 1 when any item was rejected, 2 for bad arguments, 3
when the server cannot be reached, 5 when some items were never acknowledged,
6 when the server refused the key (said once, and nothing more is sent).

Batches are cut by size as well as count (``--batch-bytes``), and a line longer
than ``--max-item-bytes`` is a rejected item, skipped without being read into
memory; the items around it are published.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

from .client import ACCESS_CODES, DEFAULT_ENDPOINT, Client, JSONObject, LimelightError, LimelightTimeout, find_key, key_hint

EXIT_REJECTED = 1
EXIT_UNREACHABLE = 3
EXIT_UNACKNOWLEDGED = 5
EXIT_NOT_ALLOWED = 6


def program_name() -> str:
    """How messages name this program: as it was started (``limelight-publish``, or
    ``publish.py`` through the old script), so a user sees the name they typed."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith(("limelight", "publish")) else "limelight-publish"


RETRYABLE = frozenset({"shard_unavailable", "unavailable", "busy", "timeout"})
"""Error codes that mean "not stored this time, send it again"."""


class _Batch:
    """A batch being published: its items and line numbers, which of them are
    still unacknowledged, when it was first sent and its current request."""

    def __init__(self, items: list[Any], lines: list[int], name: str) -> None:
        self.items = items
        self.lines = lines
        self.name = name
        self.open = list(range(len(items)))  # indices not yet acknowledged
        self.first_sent = time.monotonic()
        self.sent_at = self.first_sent
        self.attempts = 0
        self.backoff = 0.2
        self.last_failure = "no answer"


class Publisher:
    """Sends batches with a window of them in flight and tallies the acks.

    At least once: a batch whose acknowledgement does not come within
    ``ack_timeout`` seconds (a restarted coordinator, a reconnect), or whose
    items come back ``shard_unavailable``/``unavailable``/``busy``, is sent
    again — what is left of it — until every item is acknowledged or
    ``retry_for`` seconds have passed since its first attempt. Upserts are
    idempotent, so a resent item is stored once. Items never acknowledged are
    counted in ``unacknowledged`` and named on standard error."""

    def __init__(self, client: Client, name: str, window: int, ack_timeout: float, retry_for: float = 300.0) -> None:
        self.client = client
        self.name = name
        self.window = window
        self.ack_timeout = ack_timeout
        self.retry_for = retry_for
        # request id -> its batch
        self.in_flight: dict[str, _Batch] = {}
        self.stored = 0
        self.rejected = 0
        self.unacknowledged = 0
        self.resent = 0

    def reject(self, line: Union[int, str], what: str, reason: object) -> None:
        """Counts one rejected line and names it on standard error."""
        self.rejected += 1
        print(f"{self.name}:{line}: rejected {what}: {reason}", file=sys.stderr)

    def send(self, items: list[Any], lines: list[int]) -> None:
        """Sends a batch, first waiting for an ack if the window is full."""
        while len(self.in_flight) >= self.window:
            self.collect_one()
        self._send(_Batch(items, lines, f"{os.path.basename(self.name)}:{lines[0]}-{lines[-1]}"))

    def _send(self, batch: _Batch) -> None:
        batch.attempts += 1
        batch.sent_at = time.monotonic()
        try:
            request_id = self.client.send_request("publish", items=[batch.items[i] for i in batch.open], batch=batch.name)
        except LimelightTimeout as e:
            # The socket's queue is full: the coordinator is away. Count it as an attempt that timed out.
            batch.last_failure = str(e)
            request_id = f"unsent:{id(batch)}:{batch.attempts}"
        self.in_flight[request_id] = batch

    def drain(self) -> None:
        """Waits for every batch in flight."""
        while self.in_flight:
            self.collect_one()

    def _retry_or_give_up(self, batch: _Batch) -> None:
        """Sends what is left of a batch again after its backoff, or names its
        items as unacknowledged when its time is up."""
        if not batch.open:
            return
        left = batch.first_sent + self.retry_for - time.monotonic()
        if left <= 0:
            for i in batch.open:
                self.unacknowledged += 1
                print(f"{self.name}:{batch.lines[i]}: not acknowledged {uid_of(batch.items[i])} after {batch.attempts} "
                      f"attempts in {self.retry_for:g} s: {batch.last_failure}", file=sys.stderr)
            batch.open = []
            return
        time.sleep(min(batch.backoff, left))
        batch.backoff = min(batch.backoff * 2, 5.0)
        self.resent += len(batch.open)
        self._send(batch)

    def collect_one(self) -> None:
        """Waits for one ack (or the first attempt to time out) and settles it."""
        now = time.monotonic()
        oldest_id = min(self.in_flight, key=lambda r: self.in_flight[r].sent_at)
        wait = max(0.0, self.in_flight[oldest_id].sent_at + self.ack_timeout - now)
        try:
            reply = self.client.next_reply([r for r in self.in_flight if not r.startswith("unsent:")], wait)
        except LimelightTimeout:
            batch = self.in_flight.pop(oldest_id)
            self.client.finish(oldest_id)
            if not oldest_id.startswith("unsent:"):
                batch.last_failure = f"no acknowledgement within {self.ack_timeout:g} s"
            self._retry_or_give_up(batch)
            return
        if reply["id"] not in self.in_flight:
            # An error without an id: the coordinator could not read one of our frames.
            raise LimelightError.from_reply(reply)
        batch = self.in_flight.pop(reply["id"])
        self.client.finish(reply["id"])
        sent = list(batch.open)
        if reply["type"] == "error":
            error = LimelightError.from_reply(reply)
            if error.code in ACCESS_CODES:
                # The key is refused: every batch would be; stop and say it once.
                raise error
            if error.code in RETRYABLE:
                batch.last_failure = str(error)
                self._retry_or_give_up(batch)
                return
            for i in sent:
                self.reject(batch.lines[i], uid_of(batch.items[i]), error)
            batch.open = []
            return
        still: list[int] = []
        for result in reply["results"]:
            index = result["index"]
            if not 0 <= index < len(sent):
                continue
            original = sent[index]
            if result["status"] == "stored":
                self.stored += 1
                continue
            reason: JSONObject = result.get("error") or {"code": "rejected", "message": "no reason given"}
            if reason.get("code") in RETRYABLE:
                still.append(original)
                batch.last_failure = f"{reason.get('code')}: {reason.get('message')}"
                continue
            uid = result.get("uniqueIdentifier") or uid_of(batch.items[original])
            self.reject(batch.lines[original], uid, LimelightError.from_reply(reason))
        batch.open = still
        self._retry_or_give_up(batch)


def uid_of(item: Any) -> str:
    """The item's uniqueIdentifier for messages, or "item" when it has none."""
    uid = item.get("uniqueIdentifier") if isinstance(item, dict) else None
    return uid if isinstance(uid, str) and uid else "item"


DEFAULT_MAX_ITEM_BYTES = 16 << 20
DEFAULT_BATCH_BYTES = 8 << 20


def read_lines(path: str, limit: int = DEFAULT_MAX_ITEM_BYTES) -> Iterator[tuple[int, Union[str, int]]]:
    """Yields (line number, text) of a file, or of standard input for '-'; a
    line longer than ``limit`` bytes comes as (line number, its length in
    bytes), counted without holding it in memory."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    with stream:
        number = 0
        while True:
            chunk = stream.readline(limit + 1)
            if not chunk:
                return
            number += 1
            if len(chunk) <= limit or (len(chunk) == limit + 1 and chunk.endswith(b"\n")):
                yield number, chunk.decode("utf-8", errors="replace")
                continue
            length = len(chunk)
            while not chunk.endswith(b"\n"):
                chunk = stream.readline(1 << 20)
                if not chunk:
                    break
                length += len(chunk)
            yield number, length - (1 if chunk.endswith(b"\n") else 0)


def publish(client: Client, path: str, batch_size: int, window: int, ack_timeout: float, retry_for: float = 300.0,
            batch_bytes: int = DEFAULT_BATCH_BYTES, max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES) -> Publisher:
    """Publishes a file; returns the Publisher with its counts."""
    publisher = Publisher(client, "stdin" if path == "-" else path, window, ack_timeout, retry_for)
    items: list[Any] = []
    lines: list[int] = []
    size = 0
    for number, text in read_lines(path, max_item_bytes):
        if isinstance(text, int):
            publisher.reject(number, "item", f"item is {text} bytes, more than the limit of {max_item_bytes} (--max-item-bytes)")
            continue
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
        line_bytes = len(text.encode("utf-8"))
        if items and size + line_bytes > batch_bytes:
            publisher.send(items, lines)
            items, lines, size = [], [], 0
        items.append(value)
        lines.append(number)
        size += line_bytes
        if len(items) >= batch_size:
            publisher.send(items, lines)
            items, lines, size = [], [], 0
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
    parser.add_argument("--key", help="API key (default: $LIMELIGHT_KEY, else $LIMELIGHT_KEY_FILE, else limelight.key in "
                        "$LIMELIGHT_DATA or ./limelight-data, which limelight up writes; see docs/security.md)")
    parser.add_argument("--batch-size", type=int, default=500, help="items per batch (default: %(default)s)")
    parser.add_argument("--window", type=int, default=4, help="batches in flight at once (default: %(default)s)")
    parser.add_argument("--batch-bytes", type=int, default=DEFAULT_BATCH_BYTES,
                        help="bytes of JSON per batch, at most; a larger item goes alone (default: %(default)s)")
    parser.add_argument("--max-item-bytes", type=int, default=DEFAULT_MAX_ITEM_BYTES,
                        help="the largest item accepted, in bytes of its line (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the server to answer a ping (default: %(default)s)")
    parser.add_argument("--ack-timeout", type=float, default=30.0,
                        help="seconds to wait for one attempt's acknowledgement before sending the batch again (default: %(default)s)")
    parser.add_argument("--retry-for", type=float, default=300.0,
                        help="seconds after a batch's first attempt during which unacknowledged items are sent again (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.window < 1:
        parser.error("--batch-size and --window must be at least 1")
    if args.ack_timeout <= 0 or args.retry_for < 0:
        parser.error("--ack-timeout must be more than 0 and --retry-for at least 0")
    if args.file != "-" and not os.path.isfile(args.file):
        parser.error(f"cannot read {args.file}")

    started = time.monotonic()
    try:
        key = find_key(args.key)
    except ValueError as e:
        parser.error(str(e))
    with Client(args.endpoint, timeout=args.timeout, key=key or "") as client:
        try:
            client.ping()
            publisher = publish(client, args.file, args.batch_size, args.window, args.ack_timeout, args.retry_for,
                                args.batch_bytes, args.max_item_bytes)
        except LimelightTimeout as e:
            print(f"{program_name()}: cannot reach a server at {args.endpoint}: {e}", file=sys.stderr)
            return EXIT_UNREACHABLE
        except LimelightError as e:
            # A refusal of a whole batch is the same for every batch: said once.
            print(f"{program_name()}: the server refused a batch: {e}", file=sys.stderr)
            if e.code in ACCESS_CODES:
                if e.code == "key_required":
                    print(f"  {key_hint()}", file=sys.stderr)
                return EXIT_NOT_ALLOWED
            return EXIT_REJECTED
    elapsed = time.monotonic() - started
    total = publisher.stored + publisher.rejected
    print(f"{publisher.stored} stored, {publisher.rejected} rejected"
          + (f", {publisher.unacknowledged} not acknowledged" if publisher.unacknowledged else "")
          + (f" ({publisher.resent} resent)" if publisher.resent else "")
          + f" in {elapsed:.2f} s ({total / max(elapsed, 1e-6):.0f} items/s)")
    if publisher.unacknowledged:
        return EXIT_UNACKNOWLEDGED
    return EXIT_REJECTED if publisher.rejected else 0



if __name__ == "__main__":
    sys.exit(main())
