"""A small Python client for Limelight.

It needs nothing but pyzmq and the message shapes of ``proto-schemas/``: every
message is one JSON object in one ZeroMQ frame, ``{"v": 1, "type": ..., "id":
..., ...body}``, sent over a DEALER socket to the coordinator's ROUTER socket.
Replies carry the id of the request they answer, so several requests (a
window of publishes, a query and its cancel) can be in flight at once.

    from limelight import Client

    with Client("tcp://127.0.0.1:7700") as c:
        c.ping()
        c.publish([{"uniqueIdentifier": "produce:kiwi", "attributes": {"title": "Kiwi"}}])
        for kind, value in c.query('title == "kiwi"c', fetch=["title"]):
            print(kind, value)        # ('batch', [items...]) ... then ('completion', {...})

Error replies raise :class:`LimelightError`; silence past the timeout raises
:class:`LimelightTimeout` (the server is down or unreachable).
"""

from __future__ import annotations

import collections
import itertools
import os
import json
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, Optional, Union

import zmq

#: A decoded message or item: a JSON object.
JSONObject = dict[str, Any]
#: Called as ``observer("sent" | "received", message)`` for every message.
Observer = Callable[[str, JSONObject], None]
#: One step of a query: ``("batch", items)`` or ``("completion", completion)``.
QueryEvent = tuple[str, Any]

PROTOCOL_VERSION = 1
DEFAULT_ENDPOINT = "tcp://127.0.0.1:7700"
#: The coordinator's query deadline when a query names none, in milliseconds.
DEFAULT_DEADLINE_MS = 30_000


class LimelightError(Exception):
    """An ``error`` reply: a stable ``code``, a human ``message``, and where
    the fault is: ``position`` (a character offset in a query string) and
    ``field`` (a dotted path such as ``attributes.completionDate``)."""

    def __init__(self, code: str, message: str, position: Optional[int] = None, field: Optional[str] = None,
                 active: Optional[str] = None) -> None:
        super().__init__(code, message, position)
        self.code = code
        self.message = message
        self.position = position
        self.field = field
        #: With ``not_active`` (a standby coordinator): the active one's endpoint, when known.
        self.active = active

    @classmethod
    def from_reply(cls, reply: JSONObject) -> LimelightError:
        """Builds the exception from an ``error`` message."""
        return cls(reply.get("code", "error"), reply.get("message", ""), reply.get("position"), reply.get("field"),
                   reply.get("active"))

    def __str__(self) -> str:
        where: list[str] = []
        if self.position is not None:
            where.append(f"at position {self.position}")
        if self.field:
            where.append(f"in {self.field}")
        return f"{self.code}: {self.message}" + (f" ({', '.join(where)})" if where else "")


class LimelightTimeout(TimeoutError):
    """No reply within the timeout: the server is down or cannot be reached."""


def sort_key(spec: Union[str, JSONObject]) -> JSONObject:
    """Turns ``"price"``, ``"price:desc"`` or ``"relevance"`` into a sort key
    object of ``plan.schema.json``; a dict is passed through unchanged."""
    if isinstance(spec, dict):
        return spec
    name, _, direction = spec.partition(":")
    if name == "relevance" and not direction:
        return {"relevance": True}
    return {"attribute": name, "ascending": not direction.lower().startswith("desc")}


ACCESS_CODES = frozenset({"key_required", "invalid_key", "key_revoked", "key_expired", "forbidden", "keys_disabled"})
"""Error codes of a refused key: the commands exit 6 for them, as ``limelight`` does."""


def key_file_path(name: str = "limelight.key") -> str:
    """The key file of ``limelight up``'s data folder: ``$LIMELIGHT_DATA/NAME``,
    else ``./limelight-data/NAME``."""
    return os.path.abspath(os.path.join(os.environ.get("LIMELIGHT_DATA") or "limelight-data", name))


def find_key(key: Optional[str] = None) -> Optional[str]:
    """The API key a client sends, found as the ``limelight`` command finds it:
    ``key`` when given, then ``$LIMELIGHT_KEY``, then the file named by
    ``$LIMELIGHT_KEY_FILE``, then ``limelight.key`` in ``$LIMELIGHT_DATA``
    or ``./limelight-data`` (where ``limelight up`` writes an admin key).
    None when there is none (a cluster that does not require keys serves
    such a client unscoped). An empty ``key`` means "send no key"."""
    if key is not None:
        return key or None
    if os.environ.get("LIMELIGHT_KEY"):
        return os.environ["LIMELIGHT_KEY"]
    named = os.environ.get("LIMELIGHT_KEY_FILE")
    path = named or key_file_path()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        if named:
            raise ValueError(f"cannot read the key file {named} (named by LIMELIGHT_KEY_FILE)") from None
        return None


def key_hint() -> str:
    """What to do when a request went without a key."""
    return ("no key was sent: `limelight up` writes an admin key to DATA/limelight.key (DATA is ./limelight-data "
            f"unless `up --data DIR` said otherwise), and {key_file_path()} does not exist; run from the folder that "
            "holds limelight-data, set LIMELIGHT_DATA=DIR, or pass --key KEY (or set LIMELIGHT_KEY)")


class Client:
    """A connection to a Limelight coordinator.

    ``timeout`` (seconds) bounds how long a request waits for its reply;
    ``observer``, when given, is called as ``observer("sent", message)`` and
    ``observer("received", message)`` for every message, decoded (tests use
    it to check real traffic against the schemas). ``key`` is the API key
    every request carries (docs/security.md); when it is not given, it is
    found as the ``limelight`` command finds it (:func:`find_key`: the
    ``LIMELIGHT_KEY`` variable, then the key file ``limelight up`` writes),
    and ``key=""`` sends none, which a cluster that does not require keys
    serves unscoped. ``endpoint`` defaults to ``$LIMELIGHT_ENDPOINT``, else
    ``tcp://127.0.0.1:7700``, as for the ``limelight`` command. Not thread-safe: like a
    ZeroMQ socket, a client belongs to one thread.
    """

    def __init__(self, endpoint: Optional[str] = None, timeout: float = 5.0, observer: Optional[Observer] = None,
                 context: Optional[zmq.Context[Any]] = None, key: Optional[str] = None,
                 curve_server_key: Optional[str] = None, curve_key_pair: Optional[tuple[str, str]] = None) -> None:
        """``key`` is the API key sent with every request (docs/security.md).
        ``curve_server_key`` (the coordinator's public key, Z85 text) turns
        CURVE encryption on; ``curve_key_pair`` is this client's (public,
        secret) pair, which a coordinator with ``--client-keys`` must know
        (``zmq.auth.load_certificate`` reads the files ``limelight keys curve``
        writes). Without a pair the client makes a throwaway one."""
        endpoint = endpoint or os.environ.get("LIMELIGHT_ENDPOINT") or DEFAULT_ENDPOINT
        self.endpoint = endpoint
        self.key = find_key(key)
        self.timeout = timeout
        self.observer = observer
        self._context: zmq.Context[Any] = context or zmq.Context.instance()
        self._socket: zmq.Socket[bytes] = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        if curve_server_key is not None:
            if curve_key_pair is None:
                new_public, new_secret = zmq.curve_keypair()
                curve_key_pair = (new_public.decode(), new_secret.decode())
            public, secret = curve_key_pair
            self._socket.setsockopt(zmq.CURVE_SERVERKEY, curve_server_key.encode())
            self._socket.setsockopt(zmq.CURVE_PUBLICKEY, public.encode())
            self._socket.setsockopt(zmq.CURVE_SECRETKEY, secret.encode())
        elif curve_key_pair is not None:
            raise ValueError("curve_key_pair needs curve_server_key (the coordinator's public key) too")
        self._socket.connect(endpoint)
        self._poller = zmq.Poller()
        self._poller.register(self._socket, zmq.POLLIN)
        self._ids = itertools.count(1)
        # Replies that arrived while waiting for another request, by request id.
        self._inbox: collections.defaultdict[str, collections.deque[JSONObject]] = collections.defaultdict(collections.deque)
        # Requests whose replies are still wanted; replies to others are dropped.
        self._open: set[str] = set()

    @classmethod
    def connect_active(cls, endpoints: Iterable[str], timeout: float = 5.0, **options: Any) -> Client:
        """A client of the active coordinator among ``endpoints``, for a
        cluster with standby coordinators (docs/operations.md): each endpoint
        is pinged in turn; a standby's ``not_active`` names the active one,
        tried next; one silent for ``timeout`` seconds is passed over. Raises
        the last endpoint's error when none answers."""
        queue = list(endpoints)
        tried: set[str] = set()
        last: Optional[Exception] = None
        while queue:
            endpoint = queue.pop(0)
            if endpoint in tried:
                continue
            tried.add(endpoint)
            client = cls(endpoint, timeout=timeout, **options)
            try:
                client.ping()
                return client
            except LimelightError as e:
                client.close()
                last = e
                if e.code == "not_active" and e.active and e.active not in tried:
                    queue.insert(0, e.active)
            except LimelightTimeout as e:
                client.close()
                last = e
        if last is None:
            raise LimelightError("invalid_message", "no coordinator endpoint given")
        raise last

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.close()

    def close(self) -> None:
        """Closes the socket; unanswered requests are abandoned."""
        self._socket.close(linger=0)

    # -- messages --------------------------------------------------------

    def send_request(self, message_type: str, **body: Any) -> str:
        """Sends a message of ``message_type`` with ``body`` fields, without
        waiting; returns its id, for :meth:`next_reply`."""
        request_id = f"py{next(self._ids)}"
        message = {"v": PROTOCOL_VERSION, "type": message_type, "id": request_id, **body}
        if self.key is not None:
            message["key"] = self.key
        frame = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if not self._socket.poll(int(self.timeout * 1000), zmq.POLLOUT):
            raise LimelightTimeout(f"cannot send to {self.endpoint}: its queue stayed full for {self.timeout} s")
        self._socket.send(frame)
        self._open.add(request_id)
        if self.observer:
            self.observer("sent", message)
        return request_id

    def next_reply(self, ids: Union[str, Iterable[str]], timeout: Optional[float] = None) -> JSONObject:
        """Waits for the next message answering one of ``ids`` and returns it
        decoded, error replies included.

        An ``error`` whose id is empty is returned too: the coordinator could
        not read one of our frames far enough to find its id (it was not JSON,
        or too large). Raises :class:`LimelightTimeout` after ``timeout``
        seconds (the client's timeout when None) without such a message.
        """
        wanted = [ids] if isinstance(ids, str) else list(ids)
        for i in wanted:
            if self._inbox.get(i):
                return self._take(i)
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._poller.poll(max(1, int(left * 1000))):
                raise LimelightTimeout(f"no answer from {self.endpoint} within {wait} s")
            message = self._receive()
            reply_id = message.get("id")
            if reply_id in wanted or (reply_id == "" and message.get("type") == "error"):
                return message
            if reply_id in self._open:
                self._inbox[reply_id].append(message)

    def finish(self, request_id: str) -> None:
        """Stops waiting for replies to ``request_id``: late ones are dropped."""
        self._open.discard(request_id)
        self._inbox.pop(request_id, None)

    def request(self, message_type: str, timeout: Optional[float] = None, **body: Any) -> JSONObject:
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

    def _take(self, request_id: str) -> JSONObject:
        queue = self._inbox[request_id]
        message = queue.popleft()
        if not queue:
            del self._inbox[request_id]
        return message

    def _receive(self) -> JSONObject:
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

    def ping(self, timeout: Optional[float] = None) -> JSONObject:
        """Returns the ``pong``: ``shardCount`` and the ``servedShards``."""
        return self.request("ping", timeout)

    def publish(self, items: Iterable[Any], batch: Optional[str] = None, timeout: float = 120.0) -> JSONObject:
        """Publishes (upserts) ``items`` and returns the ``publish_ack``,
        which arrives once every live replica has committed: ``stored``,
        ``rejected`` and per-item ``results`` with the reasons."""
        body: JSONObject = {"items": list(items)}
        if batch is not None:
            body["batch"] = batch
        return self.request("publish", timeout, **body)

    def declare(self, attributes: Iterable[JSONObject], timeout: Optional[float] = None) -> None:
        """Declares custom attributes (``CSCustomAttributeKey``): a list of
        ``{"name", "type", ...flags}`` objects. ``"semantic": True`` makes a
        text attribute (a standard one too, e.g. ``contentDescription``)
        part of the text each item is embedded from for semantic search."""
        self.request("declare", timeout, attributes=list(attributes))

    def delete(self, ids: Optional[Iterable[str]] = None, domains: Optional[Iterable[str]] = None, all: bool = False,
               timeout: Optional[float] = None, shards: Optional[Iterable[int]] = None) -> int:
        """Deletes by unique identifier, by domain (with its subdomains), or
        everything; returns how many items went. With ``shards``, only on
        those shards (a shard the cluster lacks is an error, ``bad_shard``)."""
        body: JSONObject = {}
        if shards is not None:
            body["shards"] = list(shards)
        if ids is not None:
            body["ids"] = list(ids)
        if domains is not None:
            body["domains"] = list(domains)
        if all:
            body["all"] = True
        deleted: int = self.request("delete", timeout, **body)["deleted"]
        return deleted

    def stats(self, timeout: Optional[float] = None) -> JSONObject:
        """Returns the coordinator's statistics object."""
        stats: JSONObject = self.request("stats", timeout)["stats"]
        return stats

    def query(self, text: Optional[str], fetch: Optional[Iterable[str]] = None,
              sort: Optional[Iterable[Union[str, JSONObject]]] = None, limit: Optional[int] = None,
              batch_size: Optional[int] = None, deadline_ms: Optional[int] = None,
              language: str = "spotlight", plan: Optional[JSONObject] = None) -> QueryStream:
        """Starts a query and returns it as a :class:`QueryStream`: iterating
        yields ``('batch', items)`` as the shards produce matches, then one
        ``('completion', completion)``.

        ``text`` is a Core Spotlight query string; with ``language="plan"``
        pass a predicate object as ``plan`` instead. ``sort`` is a list of
        ``"name"``, ``"name:desc"``, ``"relevance"`` or sort key objects.
        """
        body: JSONObject = {"language": language}
        if text is not None:
            body["query"] = text
        if plan is not None:
            body["plan"] = plan
        return self._start_query(body, fetch, sort, limit, batch_size, deadline_ms)

    def predicate(self, record_type: str, predicate: str, *arguments: Any, dialect: str = "cloudkit",
                  sort: Optional[Iterable[Union[str, JSONObject]]] = None, limit: Optional[int] = None,
                  cursor: Optional[str] = None, fetch: Optional[Iterable[str]] = None,
                  batch_size: Optional[int] = None, deadline_ms: Optional[int] = None) -> QueryStream:
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
        body: JSONObject = {"language": dialect, "recordType": record_type, "predicate": predicate,
                            "arguments": list(arguments)}
        if cursor is not None:
            body["cursor"] = cursor
        return self._start_query(body, fetch, sort, limit, batch_size, deadline_ms)

    def _start_query(self, body: JSONObject, fetch: Optional[Iterable[str]],
                     sort: Optional[Iterable[Union[str, JSONObject]]], limit: Optional[int],
                     batch_size: Optional[int], deadline_ms: Optional[int]) -> QueryStream:
        """Adds the options every query language shares and sends the query."""
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
        # The completion may come inside the last batch: one message fewer
        # for most queries (QueryStream yields it as a completion all the same).
        body["completionInBatch"] = True
        query_id = self.send_request("query", **body)
        # The coordinator completes a query by its deadline at the latest.
        wait = self.timeout + (deadline_ms if deadline_ms and deadline_ms > 0 else DEFAULT_DEADLINE_MS) / 1000
        return QueryStream(self, query_id, wait)

    def search(self, params: Optional[JSONObject] = None, deadline_ms: Optional[int] = None,
               timeout: Optional[float] = None, **kwargs: Any) -> JSONObject:
        """Runs a parameter search with Algolia's parameters and returns the
        response object (``hits``, ``nbHits``, ``page``, ``nbPages``,
        ``facets``, ``facets_stats``, ``processingTimeMS``, …). Parameters come
        as a dict, as keyword arguments, or both::

            client.search({"query": "vim", "facets": ["section"]}, hitsPerPage=5)

        Ranking by meaning too: ``semantic={"query": "draw vector graphics",
        "ratio": 0.5}`` (or Meilisearch's ``hybrid={"semanticRatio": 0.5}``;
        see :meth:`semantic_search`); a coordinator without the model refuses
        it with ``semantic_unavailable``.

        A malformed parameter or filter raises :class:`LimelightError` whose
        ``field`` names the parameter (and ``position`` the offset in
        ``filters``). Shards that could not answer are listed in the
        response's ``failedShards`` key (added here; empty when all answered).
        """
        body: JSONObject = {"params": {**(params or {}), **kwargs}}
        if deadline_ms is not None:
            body["deadlineMs"] = deadline_ms
        reply = self.request("search", timeout, **body)
        response: JSONObject = dict(reply["response"])
        response["failedShards"] = reply.get("failedShards", [])
        return response

    def semantic_search(self, text: str, ratio: Optional[float] = None, params: Optional[JSONObject] = None,
                        **kwargs: Any) -> JSONObject:
        """:meth:`search` ranked by meaning as well as by words: ``text`` is
        embedded once by the coordinator, and ``ratio`` (0 words alone, 1
        meaning alone, default 0.5) weighs the two rankings' fusion. ``text``
        is also the query unless ``params`` or ``kwargs`` give another."""
        semantic: JSONObject = {"query": text}
        if ratio is not None:
            semantic["ratio"] = ratio
        merged: JSONObject = {"query": text, **(params or {}), **kwargs, "semantic": semantic}
        return self.search(merged)

    def donate_entities(self, entities: Iterable[JSONObject], priority: Optional[float] = None,
                        batch: Optional[str] = None, timeout: float = 120.0) -> JSONObject:
        """Donates App Intents entities (``indexAppEntities``): each is
        ``{"type", "id", "displayRepresentation": {"title", "subtitle",
        "image"}, "properties", "priority", "domainIdentifier"}`` and is stored
        as the item ``entity:TYPE:ID``. Returns the ``publish_ack``: one
        result per entity, an invalid one rejected with its reason and field.
        ``priority`` is the batch's, overriding each entity's own."""
        body: JSONObject = {"entities": list(entities)}
        if priority is not None:
            body["priority"] = priority
        if batch is not None:
            body["batch"] = batch
        return self.request("entity_donate", timeout, **body)

    def delete_entities(self, entity_type: str, ids: Optional[Iterable[str]] = None,
                        timeout: Optional[float] = None) -> int:
        """Deletes entities of a type: those ``ids``, or every entity of the
        type (and nothing else) without them. Returns how many there were."""
        body: JSONObject = {"entityType": entity_type}
        if ids is not None:
            body["ids"] = list(ids)
        return int(self.request("entity_delete", timeout, **body)["count"])

    def associate_entity(self, unique_identifier: str, entity_type: str, entity_id: str, priority: float = 0,
                         timeout: Optional[float] = None) -> None:
        """Associates a stored item with an entity (``associateAppEntity``):
        its results then carry ``entity``. A missing item raises
        :class:`LimelightError` with code ``not_found``."""
        self.request("entity_associate", timeout, uniqueIdentifier=unique_identifier,
                     entity={"type": entity_type, "id": entity_id, "priority": priority})

    def suggest(self, text: str, limit: Optional[int] = None, hits_per_page: Optional[int] = None,
                params: Optional[JSONObject] = None, timeout: Optional[float] = None) -> JSONObject:
        """A typed query (``CSUserQuery``): returns ``{"suggestions":
        [{"suggestion", "count"}, …], "failedShards"}``, best first, and the
        search ``response`` when ``hits_per_page`` asks for results too."""
        body: JSONObject = {"text": text}
        if limit is not None:
            body["limit"] = limit
        if hits_per_page is not None:
            body["hitsPerPage"] = hits_per_page
        if params:
            body["params"] = params
        return self.request("suggest", timeout, **body)

    def spotlight(self, text: str, per_domain: Optional[int] = None, params: Optional[JSONObject] = None,
                  timeout: Optional[float] = None) -> JSONObject:
        """Spotlight's grouped results: ``{"groups": [{"domainIdentifier",
        "total", "items", "continuation"}, …], "failedShards"}``, best group first."""
        body: JSONObject = {"text": text}
        if per_domain is not None:
            body["perDomain"] = per_domain
        if params:
            body["params"] = params
        return self.request("spotlight", timeout, **body)

    def continue_search(self, token: str, page: int = 0, hits_per_page: Optional[int] = None,
                        timeout: Optional[float] = None) -> JSONObject:
        """One page of a Spotlight group's full list, from its continuation
        token: a search response (``hits``, ``nbHits``, ``page``, ``nbPages``)
        with ``failedShards`` added."""
        body: JSONObject = {"token": token, "page": page}
        if hits_per_page is not None:
            body["hitsPerPage"] = hits_per_page
        reply = self.request("continue", timeout, **body)
        response: JSONObject = dict(reply["response"])
        response["failedShards"] = reply.get("failedShards", [])
        return response

    def keys(self, action: str, timeout: Optional[float] = None, **fields: Any) -> JSONObject:
        """Key management: ``keys("create", app="acme", role="search",
        rateLimit=5)``, ``keys("list")``, ``keys("revoke", target=KEY_OR_ID)``;
        returns the ``keys_reply`` (the new key in ``apiKey``)."""
        return self.request("keys", timeout, action=action, **{k: v for k, v in fields.items() if v is not None})

    def cancel(self, query_id: str) -> None:
        """Asks the coordinator to stop query ``query_id``. There is no reply:
        the query ends with a completion whose ``cancelled`` is true."""
        request_id = self.send_request("cancel", query=query_id)
        self.finish(request_id)


class QueryStream:
    """A running query. Iterate it for ``('batch', items)`` pairs and a final
    ``('completion', completion)``; an error reply (a bad query) raises
    :class:`LimelightError` instead. ``id`` is the query's request id."""

    def __init__(self, client: Client, query_id: str, wait: float) -> None:
        self.client = client
        self.id = query_id
        self._wait = wait
        self._done = False
        # A completion that came inside the last batch, yielded after it.
        self._completion: Optional[JSONObject] = None

    def __iter__(self) -> Iterator[QueryEvent]:
        return self

    def __next__(self) -> QueryEvent:
        if self._completion is not None:
            completion, self._completion = self._completion, None
            return "completion", completion
        if self._done:
            raise StopIteration
        message = self.client.next_reply(self.id, self._wait)
        kind = message.get("type")
        if kind == "result_batch":
            inside = message.get("completion")
            if inside is not None:
                # The same object a completion message is: its fields, type and id.
                self._completion = dict(inside, type="completion", id=message.get("id"), v=message.get("v"))
                self._end()
            return "batch", message["items"]
        self._end()
        if kind == "completion":
            return "completion", message
        if kind == "error":
            raise LimelightError.from_reply(message)
        raise LimelightError("unexpected_reply", f"expected result_batch or completion, got {kind!r}")

    def cancel(self) -> None:
        """Asks the coordinator to stop the query; keep iterating to receive
        the batches already under way and the completion."""
        if not self._done:
            self.client.cancel(self.id)

    def close(self) -> None:
        """Abandons the query: cancels it if it is still running and drops
        whatever it would still deliver."""
        if not self._done:
            self.client.cancel(self.id)
            self._end()

    def _end(self) -> None:
        self._done = True
        self.client.finish(self.id)


def secured_key(parent_key: str, filters: Optional[str] = None, valid_until: Optional[int] = None,
                restrict_domains: Optional[Iterable[str]] = None, user_token: Optional[str] = None) -> str:
    """A secured API key made from a search key, with no call to the server
    (Algolia's ``generateSecuredApiKey``): ``base64(hex(hmac_sha256(secret,
    params)) + params)``, where ``secret`` is the parent's signing secret
    ``hex(hmac_sha256(parent_key, "limelight secured key v1"))`` and ``params``
    the restrictions as a URL query string, keys sorted (docs/security.md).
    ``valid_until`` is in Unix seconds."""
    import base64
    import hashlib
    import hmac
    import urllib.parse

    def escape(text: str) -> str:
        return urllib.parse.quote(text, safe="-._~,")

    pairs = [("parent", hashlib.sha256(parent_key.encode()).hexdigest()[:16])]
    if filters is not None:
        pairs.append(("filters", filters))
    if restrict_domains is not None:
        pairs.append(("restrictDomains", ",".join(restrict_domains)))
    if user_token is not None:
        pairs.append(("userToken", user_token))
    if valid_until is not None:
        pairs.append(("validUntil", str(int(valid_until))))
    params = "&".join(f"{escape(k)}={escape(v)}" for k, v in sorted(pairs))
    secret = hmac.new(parent_key.encode(), b"limelight secured key v1", hashlib.sha256).hexdigest()
    signature = hmac.new(secret.encode(), params.encode(), hashlib.sha256).hexdigest()
    return base64.b64encode((signature + params).encode()).decode()
