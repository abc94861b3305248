"""A small Python client for Limelight.

It needs nothing but pyzmq and the message shapes of ``proto-schemas/``: every
message is one JSON object in one ZeroMQ frame, ``{"v": 1, "type": ..., "id":
..., ...body}``, sent over a DEALER socket to the coordinator's ROUTER socket.
Replies carry the id of the request they answer, so several requests (a
window of publishes, a query and its cancel) can be in flight at once.

    from limelight_client import Client

    with Client("tcp://127.0.0.1:7700") as c:
        c.ping()
        c.publish([{"uniqueIdentifier": "produce:kiwi", "attributes": {"title": "Kiwi"}}])
        for kind, value in c.query('title == "kiwi"c', fetch=["title"]):
            print(kind, value)        # ('batch', [items...]) ... then ('completion', {...})

Error replies raise :class:`LimelightError`; silence past the timeout raises
:class:`LimelightTimeout` (the server is down or unreachable).
"""

import collections
import itertools
import json
import time

import zmq

PROTOCOL_VERSION = 1
DEFAULT_ENDPOINT = "tcp://127.0.0.1:7700"
#: The coordinator's query deadline when a query names none, in milliseconds.
DEFAULT_DEADLINE_MS = 30_000


class LimelightError(Exception):
    """An ``error`` reply: a stable ``code``, a human ``message``, and where
    the fault is: ``position`` (a character offset in a query string) and
    ``field`` (a dotted path such as ``attributes.completionDate``)."""

    def __init__(self, code, message, position=None, field=None):
        super().__init__(code, message, position)
        self.code = code
        self.message = message
        self.position = position
        self.field = field

    @classmethod
    def from_reply(cls, reply):
        """Builds the exception from an ``error`` message."""
        return cls(reply.get("code", "error"), reply.get("message", ""), reply.get("position"), reply.get("field"))

    def __str__(self):
        where = []
        if self.position is not None:
            where.append(f"at position {self.position}")
        if self.field:
            where.append(f"in {self.field}")
        return f"{self.code}: {self.message}" + (f" ({', '.join(where)})" if where else "")


class LimelightTimeout(TimeoutError):
    """No reply within the timeout: the server is down or cannot be reached."""


def sort_key(spec):
    """Turns ``"price"``, ``"price:desc"`` or ``"relevance"`` into a sort key
    object of ``plan.schema.json``; a dict is passed through unchanged."""
    if isinstance(spec, dict):
        return spec
    name, _, direction = spec.partition(":")
    if name == "relevance" and not direction:
        return {"relevance": True}
    return {"attribute": name, "ascending": not direction.lower().startswith("desc")}


class Client:
    """A connection to a Limelight coordinator.

    ``timeout`` (seconds) bounds how long a request waits for its reply;
    ``observer``, when given, is called as ``observer("sent", message)`` and
    ``observer("received", message)`` for every message, decoded (tests use
    it to check real traffic against the schemas). Not thread-safe: like a
    ZeroMQ socket, a client belongs to one thread.
    """

    def __init__(self, endpoint=DEFAULT_ENDPOINT, timeout=5.0, observer=None, context=None):
        self.endpoint = endpoint
        self.timeout = timeout
        self.observer = observer
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.connect(endpoint)
        self._poller = zmq.Poller()
        self._poller.register(self._socket, zmq.POLLIN)
        self._ids = itertools.count(1)
        # Replies that arrived while waiting for another request, by request id.
        self._inbox = collections.defaultdict(collections.deque)
        # Requests whose replies are still wanted; replies to others are dropped.
        self._open = set()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the socket; unanswered requests are abandoned."""
        self._socket.close(linger=0)

    # -- messages --------------------------------------------------------

    def send_request(self, message_type, **body):
        """Sends a message of ``message_type`` with ``body`` fields, without
        waiting; returns its id, for :meth:`next_reply`."""
        request_id = f"py{next(self._ids)}"
        message = {"v": PROTOCOL_VERSION, "type": message_type, "id": request_id, **body}
        frame = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if not self._socket.poll(int(self.timeout * 1000), zmq.POLLOUT):
            raise LimelightTimeout(f"cannot send to {self.endpoint}: its queue stayed full for {self.timeout} s")
        self._socket.send(frame)
        self._open.add(request_id)
        if self.observer:
            self.observer("sent", message)
        return request_id

    def next_reply(self, ids, timeout=None):
        """Waits for the next message answering one of ``ids`` and returns it
        decoded, error replies included.

        An ``error`` whose id is empty is returned too: the coordinator could
        not read one of our frames far enough to find its id (it was not JSON,
        or too large). Raises :class:`LimelightTimeout` after ``timeout``
        seconds (the client's timeout when None) without such a message.
        """
        ids = [ids] if isinstance(ids, str) else list(ids)
        for i in ids:
            if self._inbox.get(i):
                return self._take(i)
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._poller.poll(max(1, int(left * 1000))):
                raise LimelightTimeout(f"no answer from {self.endpoint} within {timeout} s")
            message = self._receive()
            reply_id = message.get("id")
            if reply_id in ids or (reply_id == "" and message.get("type") == "error"):
                return message
            if reply_id in self._open:
                self._inbox[reply_id].append(message)

    def finish(self, request_id):
        """Stops waiting for replies to ``request_id``: late ones are dropped."""
        self._open.discard(request_id)
        self._inbox.pop(request_id, None)

    def request(self, message_type, timeout=None, **body):
        """Sends a request and returns its one reply; an error reply raises
        :class:`LimelightError`."""
        request_id = self.send_request(message_type, **body)
        try:
            reply = self.next_reply(request_id, timeout)
        finally:
            self.finish(request_id)
        if reply.get("type") == "error":
            raise LimelightError.from_reply(reply)
        return reply

    def _take(self, request_id):
        queue = self._inbox[request_id]
        message = queue.popleft()
        if not queue:
            del self._inbox[request_id]
        return message

    def _receive(self):
        frames = self._socket.recv_multipart()
        try:
            message = json.loads(frames[-1])
        except ValueError as e:
            raise LimelightError("malformed_reply", f"the server sent a frame that is not JSON: {e}") from None
        if not isinstance(message, dict):
            raise LimelightError("malformed_reply", "the server sent a message that is not a JSON object")
        if self.observer:
            self.observer("received", message)
        return message

    # -- requests ---------------------------------------------------------

    def ping(self, timeout=None):
        """Returns the ``pong``: ``shardCount`` and the ``servedShards``."""
        return self.request("ping", timeout)

    def publish(self, items, batch=None, timeout=120.0):
        """Publishes (upserts) ``items`` and returns the ``publish_ack``,
        which arrives once every live replica has committed: ``stored``,
        ``rejected`` and per-item ``results`` with the reasons."""
        body = {"items": list(items)}
        if batch is not None:
            body["batch"] = batch
        return self.request("publish", timeout, **body)

    def declare(self, attributes, timeout=None):
        """Declares custom attributes (``CSCustomAttributeKey``): a list of
        ``{"name", "type", ...flags}`` objects."""
        self.request("declare", timeout, attributes=list(attributes))

    def delete(self, ids=None, domains=None, all=False, timeout=None):
        """Deletes by unique identifier, by domain (with its subdomains), or
        everything; returns how many items went."""
        body = {}
        if ids is not None:
            body["ids"] = list(ids)
        if domains is not None:
            body["domains"] = list(domains)
        if all:
            body["all"] = True
        return self.request("delete", timeout, **body)["deleted"]

    def stats(self, timeout=None):
        """Returns the coordinator's statistics object."""
        return self.request("stats", timeout)["stats"]

    def query(self, text, fetch=None, sort=None, limit=None, batch_size=None, deadline_ms=None,
              language="spotlight", plan=None):
        """Starts a query and returns it as a :class:`QueryStream`: iterating
        yields ``('batch', items)`` as the shards produce matches, then one
        ``('completion', completion)``.

        ``text`` is a Core Spotlight query string; with ``language="plan"``
        pass a predicate object as ``plan`` instead. ``sort`` is a list of
        ``"name"``, ``"name:desc"``, ``"relevance"`` or sort key objects.
        """
        body = {"language": language}
        if text is not None:
            body["query"] = text
        if plan is not None:
            body["plan"] = plan
        if fetch is not None:
            body["fetchAttributes"] = list(fetch)
        if sort:
            body["sort"] = [sort_key(s) for s in sort]
        if limit is not None:
            body["limit"] = limit
        if batch_size is not None:
            body["batchSize"] = batch_size
        if deadline_ms is not None:
            body["deadlineMs"] = deadline_ms
        query_id = self.send_request("query", **body)
        # The coordinator completes a query by its deadline at the latest.
        wait = self.timeout + (deadline_ms if deadline_ms and deadline_ms > 0 else DEFAULT_DEADLINE_MS) / 1000
        return QueryStream(self, query_id, wait)

    def predicate(self, record_type, predicate, *arguments, dialect="cloudkit", sort=None, limit=None,
                  cursor=None, fetch=None, batch_size=None, deadline_ms=None):
        """Starts a CloudKit-style query, ``CKQuery(recordType:predicate:)``,
        and returns it as a :class:`QueryStream`; the completion's ``cursor``
        (absent on the last page) resumes it: pass it as ``cursor`` with the
        same record type, predicate, arguments and sort.

        ``predicate`` is an NSPredicate format string; ``arguments`` are what
        its ``%@`` and ``%K`` take, in order (JSON values; a location is
        ``{"latitude": …, "longitude": …}``, a reference ``{"recordName": …}``).
        ``dialect`` is ``"cloudkit"`` (CloudKit's rules) or ``"nspredicate"``.
        ``sort`` and ``limit`` are the sort descriptors and ``resultsLimit``.
        """
        body = {"language": dialect, "recordType": record_type, "predicate": predicate, "arguments": list(arguments)}
        if sort:
            body["sort"] = [sort_key(s) for s in sort]
        if limit is not None:
            body["limit"] = limit
        if cursor is not None:
            body["cursor"] = cursor
        if fetch is not None:
            body["fetchAttributes"] = list(fetch)
        if batch_size is not None:
            body["batchSize"] = batch_size
        if deadline_ms is not None:
            body["deadlineMs"] = deadline_ms
        query_id = self.send_request("query", **body)
        wait = self.timeout + (deadline_ms if deadline_ms and deadline_ms > 0 else DEFAULT_DEADLINE_MS) / 1000
        return QueryStream(self, query_id, wait)

    def search(self, params=None, deadline_ms=None, timeout=None, **kwargs):
        """Runs a parameter search with Algolia's parameters and returns the
        response object (``hits``, ``nbHits``, ``page``, ``nbPages``,
        ``facets``, ``facets_stats``, ``processingTimeMS``, …). Parameters come
        as a dict, as keyword arguments, or both::

            client.search({"query": "vim", "facets": ["section"]}, hitsPerPage=5)

        A malformed parameter or filter raises :class:`LimelightError` whose
        ``field`` names the parameter (and ``position`` the offset in
        ``filters``). Shards that could not answer are listed in the
        response's ``failedShards`` key (added here; empty when all answered).
        """
        body = {"params": {**(params or {}), **kwargs}}
        if deadline_ms is not None:
            body["deadlineMs"] = deadline_ms
        reply = self.request("search", timeout, **body)
        response = dict(reply["response"])
        response["failedShards"] = reply.get("failedShards", [])
        return response

    def cancel(self, query_id):
        """Asks the coordinator to stop query ``query_id``. There is no reply:
        the query ends with a completion whose ``cancelled`` is true."""
        request_id = self.send_request("cancel", query=query_id)
        self.finish(request_id)


class QueryStream:
    """A running query. Iterate it for ``('batch', items)`` pairs and a final
    ``('completion', completion)``; an error reply (a bad query) raises
    :class:`LimelightError` instead. ``id`` is the query's request id."""

    def __init__(self, client, query_id, wait):
        self.client = client
        self.id = query_id
        self._wait = wait
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        message = self.client.next_reply(self.id, self._wait)
        kind = message.get("type")
        if kind == "result_batch":
            return "batch", message["items"]
        self._end()
        if kind == "completion":
            return "completion", message
        if kind == "error":
            raise LimelightError.from_reply(message)
        raise LimelightError("unexpected_reply", f"expected result_batch or completion, got {kind!r}")

    def cancel(self):
        """Asks the coordinator to stop the query; keep iterating to receive
        the batches already under way and the completion."""
        if not self._done:
            self.client.cancel(self.id)

    def close(self):
        """Abandons the query: cancels it if it is still running and drops
        whatever it would still deliver."""
        if not self._done:
            self.client.cancel(self.id)
            self._end()

    def _end(self):
        self._done = True
        self.client.finish(self.id)
