"""Run a Core Spotlight query string against a Limelight cluster and print the
results as they stream in.

    limelight-query 'title == "Window"w' [--endpoint tcp://127.0.0.1:7700] [--fetch title,displayName]
             [--sort price:desc] [--limit N] [--batch-size N] [--deadline-ms N] [--json]

Each batch's header (``batch 1: 100 items``) goes to standard error as it
arrives and its items to standard output: ``uniqueIdentifier`` and the title
(or the fetched attributes), tab-separated; with ``--json``, one JSON object
per item per line (``uniqueIdentifier``, ``domainIdentifier`` and the
requested ``attributes``) and nothing else on standard output. The completion
follows on standard error. Ctrl-C cancels the query.

Exit status: 0; 1 for another server error; 2 for a bad query (the message
names the position of the fault); 3 when the server cannot be reached; 4 when
the result lacks shards (they are named on standard error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, Optional

from .client import ACCESS_CODES, DEFAULT_ENDPOINT, Client, JSONObject, LimelightError, LimelightTimeout, find_key, key_hint

EXIT_ERROR = 1
EXIT_BAD_QUERY = 2
EXIT_UNREACHABLE = 3
EXIT_MISSING_SHARDS = 4
EXIT_NOT_ALLOWED = 6
BAD_QUERY_CODES = {"bad_query", "invalid_query", "unsupported_language"}


def program_name() -> str:
    """How messages name this program: as it was started (``limelight-query``, or
    ``query.py`` through the old script), so a user sees the name they typed."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name.startswith(("limelight", "query")) else "limelight-query"


def json_line(item: JSONObject, fetch: Optional[list[str]]) -> str:
    """The --json form of an item: identifier, domain and requested attributes."""
    attributes = item.get("attributes") or {}
    if fetch is not None:
        attributes = {k: v for k, v in attributes.items() if k in fetch}
    line = {"uniqueIdentifier": item.get("uniqueIdentifier"),
            "domainIdentifier": item.get("domainIdentifier", ""),
            "attributes": attributes}
    return json.dumps(line, ensure_ascii=False, sort_keys=True)


def human_line(item: JSONObject, fetch: Optional[list[str]]) -> str:
    """The identifier, then the fetched attributes or the display name or title."""
    attributes = item.get("attributes") or {}
    if fetch is not None:
        values = [attributes.get(name) for name in fetch]
        shown = ["" if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values]
    else:
        shown = [attributes.get("displayName") or attributes.get("title") or ""]
    return "\t".join([item.get("uniqueIdentifier", "?")] + shown).rstrip("\t")


def report_bad_query(query: str, error: LimelightError) -> None:
    """Names the fault and points at its position under the query."""
    print(f"{program_name()}: bad query: {error}", file=sys.stderr)
    if error.position is not None:
        print(f"  {query}\n  {' ' * min(error.position, len(query))}^", file=sys.stderr)


def run(client: Client, args: argparse.Namespace, fetch: Optional[list[str]]) -> int:
    """Streams the query's results; returns the exit status."""
    stream = client.query(args.query, fetch=fetch, sort=args.sort, limit=args.limit,
                          batch_size=args.batch_size, deadline_ms=args.deadline_ms)
    batches = 0
    while True:
        try:
            kind, value = next(stream)
        except StopIteration:
            return 0
        except KeyboardInterrupt:
            # Cancel, and keep reading: the completion says what arrived.
            stream.cancel()
            continue
        if kind == "batch":
            batches += 1
            print(f"batch {batches}: {len(value)} item{'' if len(value) == 1 else 's'}", file=sys.stderr, flush=True)
            lines = [json_line(i, fetch) if args.json else human_line(i, fetch) for i in value]
            if lines:
                print("\n".join(lines), flush=True)
            continue
        count, failed = value["count"], value["failedShards"]
        print(f"{count} item{'' if count == 1 else 's'} in {value['elapsedMs']} ms"
              f"{' (cancelled)' if value['cancelled'] else ''}", file=sys.stderr)
        for f in failed:
            print(f"{program_name()}: shard {f['shard']} missing from the result: {f['reason']}", file=sys.stderr)
        return EXIT_MISSING_SHARDS if failed else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The ``limelight-query`` command; returns its exit status."""
    parser = argparse.ArgumentParser(prog=program_name(), description="Run a Core Spotlight query string against Limelight.")
    parser.add_argument("query", help='CSSearchQuery string, e.g. \'title == "Window"w\'')
    parser.add_argument("--endpoint", default=os.environ.get("LIMELIGHT_ENDPOINT", DEFAULT_ENDPOINT),
                        help="coordinator endpoint (default: $LIMELIGHT_ENDPOINT or %(default)s)")
    parser.add_argument("--key", help="API key (default: $LIMELIGHT_KEY, else $LIMELIGHT_KEY_FILE, else limelight.key in "
                        "$LIMELIGHT_DATA or ./limelight-data, which limelight up writes; see docs/security.md)")
    parser.add_argument("--fetch", help="attributes to return, comma-separated (default: all)")
    parser.add_argument("--sort", action="append", help="sort key NAME, NAME:desc or relevance; repeatable")
    parser.add_argument("--limit", type=int, help="at most this many results")
    parser.add_argument("--batch-size", type=int, help="results per batch")
    parser.add_argument("--deadline-ms", type=int, help="deadline in milliseconds")
    parser.add_argument("--json", action="store_true", help="one JSON object per item per line on standard output")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the server to answer (default: %(default)s)")
    args = parser.parse_args(argv)
    fetch = [name.strip() for name in args.fetch.split(",") if name.strip()] if args.fetch else None

    try:
        key = find_key(args.key)
    except ValueError as e:
        parser.error(str(e))
    with Client(args.endpoint, timeout=args.timeout, key=key or "") as client:
        try:
            client.ping()
            return run(client, args, fetch)
        except LimelightTimeout as e:
            print(f"{program_name()}: cannot reach a server at {args.endpoint}: {e}", file=sys.stderr)
            return EXIT_UNREACHABLE
        except LimelightError as e:
            if e.code in ACCESS_CODES:
                print(f"{program_name()}: {e}", file=sys.stderr)
                if e.code == "key_required":
                    print(f"  {key_hint()}", file=sys.stderr)
                return EXIT_NOT_ALLOWED
            if e.code in BAD_QUERY_CODES:
                report_bad_query(args.query, e)
                return EXIT_BAD_QUERY
            print(f"{program_name()}: {e}", file=sys.stderr)
            return EXIT_ERROR



if __name__ == "__main__":
    sys.exit(main())
