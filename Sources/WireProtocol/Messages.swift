import Foundation
import Items

/// The version every message carries in `v`. A peer that receives another
/// version answers with an `error` of code `unsupported_version`.
public let protocolVersion = 1

/// Every message type, by its wire name. Each has a JSON Schema in
/// `proto-schemas/<type>.schema.json`.
public enum MessageType: String, Sendable, Hashable, Codable, CaseIterable {
    // Client ↔ coordinator.
    case publish, publishAck = "publish_ack"
    case declare, declareAck = "declare_ack"
    case delete, deleteAck = "delete_ack"
    case query, resultBatch = "result_batch", completion, cancel
    case stats, statsReply = "stats_reply"
    case ping, pong
    case error
    // Coordinator ↔ workers.
    case register, registered, heartbeat, challenge
    case write, writeAck = "write_ack"
    case shardQuery = "shard_query", shardBatch = "shard_batch", shardDone = "shard_done"
    // Parameter search: client ↔ coordinator, and coordinator ↔ query workers.
    case search, searchResult = "search_result"
    case shardSearch = "shard_search", shardSearchResult = "shard_search_result"
    // App entities (client ↔ coordinator; `entity_delete` and `entity_associate` also coordinator → indexer).
    case entityDonate = "entity_donate", entityDelete = "entity_delete", entityAssociate = "entity_associate"
    case entityAck = "entity_ack"
    // Typed queries, Spotlight's grouped results and their continuation.
    case suggest, suggestResult = "suggest_result"
    case spotlight, spotlightResult = "spotlight_result"
    case continueSearch = "continue"
    // API keys (docs/security.md).
    case keys, keysReply = "keys_reply"
    // Copying a shard from one replica to another, through the coordinator (see `ShardCopy`).
    case copyRequest = "copy_request", copyChunk = "copy_chunk", copyAck = "copy_ack"
}

/// A per-item outcome of a write: stored, or rejected with a reason.
public struct ItemResult: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable { case stored, rejected }
    /// Position of the item in the batch it came in.
    public var index: Int
    public var uniqueIdentifier: String?
    public var status: Status
    public var error: WireError?

    public init(index: Int, uniqueIdentifier: String?, status: Status, error: WireError? = nil) {
        self.index = index
        self.uniqueIdentifier = uniqueIdentifier
        self.status = status
        self.error = error
    }
}

/// An error as it travels: a stable code, a human message, and where the
/// fault is (a character offset in a query, or a field path in an item).
public struct WireError: Sendable, Hashable, Codable, Error, CustomStringConvertible {
    public var code: String
    public var message: String
    public var position: Int?
    public var field: String?
    /// With `not_active`: the endpoint of the coordinator that is active (for
    /// a client, its client endpoint; for a worker, its worker endpoint), when
    /// the standby knows it. Clients and workers move there.
    public var active: String?
    /// With `stale_epoch`: the coordinator epoch the refusing shard follows.
    /// A coordinator is fenced off only when this is above its own epoch;
    /// a refusal of an older coordinator's change that reaches its successor
    /// (the worker moved on while that change was still queued) is not.
    public var epoch: Int?

    public init(
        code: String, message: String, position: Int? = nil, field: String? = nil, active: String? = nil, epoch: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.position = position
        self.field = field
        self.active = active
        self.epoch = epoch
    }

    public init(_ e: ItemError) {
        self.init(code: e.code.description, message: e.message, field: e.field)
    }

    /// The error as its JSON object (what `Codable` writes: absent fields left out).
    var json: JSONValue {
        var o: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let position { o["position"] = .number(Double(position)) }
        if let field { o["field"] = .string(field) }
        if let active { o["active"] = .string(active) }
        if let epoch { o["epoch"] = .number(Double(epoch)) }
        return .object(o)
    }

    public var description: String {
        var s = message
        if let field { s = "\(field): " + s }
        if let position { s = "at \(position): " + s }
        return s
    }
}

/// `CSCustomAttributeKey` as declared on the wire; flags default as Core Spotlight's do.
public struct AttributeDeclaration: Sendable, Hashable, Codable {
    public var name: String
    public var type: ValueType
    public var searchable: Bool?
    public var searchableByDefault: Bool?
    public var unique: Bool?
    public var multiValued: Bool?
    /// Embedded for semantic search (see `SemanticText`): true adds the
    /// attribute to the embedded text, false removes it, nil leaves it be.
    /// A standard attribute may be declared semantic (its type is then
    /// checked, not redeclared).
    public var semantic: Bool?

    public init(_ spec: AttributeSpec, semantic: Bool? = nil) {
        name = spec.name; type = spec.type; searchable = spec.searchable
        searchableByDefault = spec.searchableByDefault; unique = spec.unique; multiValued = spec.multiValued
        self.semantic = semantic
    }

    /// Whether this only marks a standard attribute semantic (or not), rather
    /// than declaring a custom one.
    public var isSemanticOnly: Bool {
        semantic != nil && StandardAttributes.all[name] != nil
    }

    public var spec: AttributeSpec {
        AttributeSpec(
            name: name, type: type, multiValued: multiValued ?? false, searchable: searchable ?? true,
            searchableByDefault: searchableByDefault ?? true, unique: unique ?? false)
    }
}

/// A shard that did not answer, and why.
public struct ShardFailure: Sendable, Hashable, Codable {
    public var shard: Int
    public var reason: String
    public init(shard: Int, reason: String) {
        self.shard = shard
        self.reason = reason
    }
    /// As the wire carries it, in a completion or a search's answer.
    public var json: JSONValue { .object(["shard": .number(Double(shard)), "reason": .string(reason)]) }
}

/// One result from a shard, with what the coordinator needs to merge it.
public struct Hit: Sendable, Hashable, Codable {
    public var item: JSONValue
    /// The values of the query's sort keys, for the coordinator's k-way merge.
    public var sort: [JSONValue]?
    public var score: Double?
    public init(item: JSONValue, sort: [JSONValue]? = nil, score: Double? = nil) {
        self.item = item
        self.sort = sort
        self.score = score
    }
}

/// Message bodies. Each is encoded into the same JSON object as the envelope
/// fields `v`, `type` and `id`.
public enum Body: Sendable, Hashable {
    public struct Publish: Sendable, Hashable, Codable {
        public var items: [JSONValue]
        /// Producer-chosen batch id: resending a batch is harmless (upserts are idempotent).
        public var batch: String?
        public init(items: [JSONValue], batch: String? = nil) { self.items = items; self.batch = batch }
    }
    public struct PublishAck: Sendable, Hashable, Codable {
        public var batch: String?
        public var stored: Int
        public var rejected: Int
        public var results: [ItemResult]
        public init(batch: String?, results: [ItemResult]) {
            self.batch = batch
            self.results = results
            stored = results.filter { $0.status == .stored }.count
            rejected = results.count - stored
        }
    }
    public struct Declare: Sendable, Hashable, Codable {
        public var attributes: [AttributeDeclaration]
        /// Coordinator → indexer: only check that every shard would accept the
        /// declaration, changing nothing. The coordinator checks every shard
        /// before it declares on any, so a declaration that conflicts with one
        /// shard's values is refused by all.
        public var check: Bool?
        /// Coordinator → indexer, with `check`: a refusal names an item whose
        /// identifier starts with this (the declaring app's `@APP/`; empty:
        /// any item), so that one app learns nothing of another's items.
        public var exampleTag: String?
        public init(attributes: [AttributeDeclaration], check: Bool? = nil, exampleTag: String? = nil) {
            self.attributes = attributes
            self.check = check
            self.exampleTag = exampleTag
        }
    }
    public struct Delete: Sendable, Hashable, Codable {
        public var ids: [String]?
        public var domains: [String]?
        public var all: Bool?
        /// Coordinator → indexer: the shards to apply it to.
        public var shards: [Int]?
        /// Coordinator → indexer: the shard's write sequence number (see `ShardSequence`).
        public var sequence: Int?
        /// Coordinator → indexer: the coordinator epoch that numbered it; an
        /// indexer refuses changes of an epoch below its shard's (`stale_epoch`).
        public var epoch: Int?
        /// Coordinator → indexer, during a shard split: delete every item
        /// whose domain's slot another shard owns (see ``KeepSlots``).
        public var keepSlots: KeepSlots?
        public init(ids: [String]? = nil, domains: [String]? = nil, all: Bool? = nil, shards: [Int]? = nil, keepSlots: KeepSlots? = nil) {
            self.ids = ids; self.domains = domains; self.all = all; self.shards = shards; self.keepSlots = keepSlots
        }
    }
    /// The slots a shard keeps when it purges after a split: those `s` with
    /// `s mod shards == shard`, a domain's slot being `hash(domain) mod slots`.
    public struct KeepSlots: Sendable, Hashable, Codable {
        public var slots: Int
        public var shards: Int
        public var shard: Int
        public init(slots: Int, shards: Int, shard: Int) { self.slots = slots; self.shards = shards; self.shard = shard }
        var json: JSONValue { .object(["slots": .number(Double(slots)), "shards": .number(Double(shards)), "shard": .number(Double(shard))]) }
    }
    public struct DeleteAck: Sendable, Hashable, Codable {
        public var deleted: Int
        public init(deleted: Int) { self.deleted = deleted }
    }
    public struct QueryRequest: Sendable, Hashable, Codable {
        /// `spotlight` (a CSSearchQuery string in `query`, the default) or
        /// `plan` (in `plan`: a predicate, or a whole plan with its `predicate`).
        public var language: String?
        public var query: String?
        public var plan: JSONValue?
        public var fetchAttributes: [String]?
        public var sort: [JSONValue]?
        public var limit: Int?
        public var batchSize: Int?
        /// The query fails the shards that have not finished by then.
        public var deadlineMs: Int?
        /// `cloudkit` and `nspredicate`: `CKQuery`'s record type (matched
        /// against the item's `contentType`), its predicate format string, and
        /// the arguments that `%@` and `%K` take, in order.
        public var recordType: String?
        public var predicate: String?
        public var arguments: [JSONValue]?
        /// A previous completion's `cursor`: resume right after its last result.
        public var cursor: String?
        /// True from a client that reads a `completion` inside the last
        /// `result_batch` (``ResultBatch/completion``): a query whose last
        /// items and end are known at the same moment — its limit reached, or
        /// its last shard's last batch in — then costs one message to the
        /// client instead of two. Opt-in, so a client written to the
        /// protocol's first form (batches, then a `completion`) keeps working.
        public var completionInBatch: Bool?
        public init(
            language: String? = "spotlight", query: String? = nil, plan: JSONValue? = nil,
            fetchAttributes: [String]? = nil, sort: [JSONValue]? = nil, limit: Int? = nil,
            batchSize: Int? = nil, deadlineMs: Int? = nil, recordType: String? = nil,
            predicate: String? = nil, arguments: [JSONValue]? = nil, cursor: String? = nil,
            completionInBatch: Bool? = nil
        ) {
            self.language = language; self.query = query; self.plan = plan; self.fetchAttributes = fetchAttributes
            self.sort = sort; self.limit = limit; self.batchSize = batchSize; self.deadlineMs = deadlineMs
            self.recordType = recordType; self.predicate = predicate; self.arguments = arguments; self.cursor = cursor
            self.completionInBatch = completionInBatch
        }
    }
    public struct ResultBatch: Sendable, Hashable, Codable {
        public var items: [JSONValue]
        public var seq: Int
        /// Set by a coordinator that forwards a query worker's hits as they
        /// came (``RawJSON``): the items the batch carries on the wire, in
        /// place of `items` (then empty). A decoded batch never has it; it is
        /// not part of the `Codable` form, only of ``Envelope/encoded()``.
        public var rawItems: [RawJSON]?
        /// The query's end, in its last batch, for a client that asked for it
        /// (``QueryRequest/completionInBatch``); no `completion` message
        /// follows then. A query that ends without delivering in the same
        /// step (no items, or a shard failing after the last batch) still
        /// ends with a `completion` message.
        public var completion: Completion?
        public init(items: [JSONValue], seq: Int, completion: Completion? = nil) {
            self.items = items; self.seq = seq; self.completion = completion
        }
        public init(rawItems: [RawJSON], seq: Int) { self.items = []; self.rawItems = rawItems; self.seq = seq }
        enum CodingKeys: String, CodingKey { case items, seq, completion }
    }
    public struct Completion: Sendable, Hashable, Codable {
        public var count: Int
        public var failedShards: [ShardFailure]
        public var cancelled: Bool
        public var elapsedMs: Double
        /// For `cloudkit` and `nspredicate` queries whose page is full (it
        /// reached the limit; the next page may be empty): pass it back as the
        /// request's `cursor`. A page that is not full is the last, without one.
        public var cursor: String?
        public init(count: Int, failedShards: [ShardFailure], cancelled: Bool, elapsedMs: Double, cursor: String? = nil) {
            self.count = count; self.failedShards = failedShards; self.cancelled = cancelled; self.elapsedMs = elapsedMs
            self.cursor = cursor
        }
        /// The fields as the wire carries them, alone or in a batch
        /// (written by hand: the `Codable` encoder's tree of boxes showed in
        /// the coordinator's profile).
        public var json: JSONValue {
            var o: [String: JSONValue] = [
                "count": .number(Double(count)), "cancelled": .bool(cancelled), "elapsedMs": .number(elapsedMs),
                "failedShards": .array(failedShards.map(\.json)),
            ]
            if let cursor { o["cursor"] = .string(cursor) }
            return .object(o)
        }
    }
    public struct Cancel: Sendable, Hashable, Codable {
        /// The id of the query to cancel.
        public var query: String
        public init(query: String) { self.query = query }
    }
    public struct Empty: Sendable, Hashable, Codable { public init() {} }
    public struct Stats: Sendable, Hashable, Codable {
        public var stats: JSONValue
        public init(stats: JSONValue) { self.stats = stats }
    }
    public struct Pong: Sendable, Hashable, Codable {
        public var shardCount: Int
        /// Shards with at least one live indexer and one live query worker.
        public var servedShards: [Int]
        /// The coordinator epoch it serves with (a cluster with a control plane).
        public var epoch: Int?
        public init(shardCount: Int, servedShards: [Int], epoch: Int? = nil) {
            self.shardCount = shardCount; self.servedShards = servedShards; self.epoch = epoch
        }
    }
    public struct Register: Sendable, Hashable, Codable {
        public enum Role: String, Sendable, Hashable, Codable { case indexer, query }
        public var role: Role
        public var worker: String
        public var shards: [Int]
        public var host: String?
        public var pid: Int?
        /// The answer to the coordinator's `challenge`: HMAC-SHA256 of its
        /// nonce and this registration under the cluster secret (see `ClusterSecret`).
        public var proof: String?
        /// The challenge's nonce the proof answers, so that a proof for a
        /// nonce the coordinator no longer holds earns a new challenge, not a refusal.
        public var nonce: String?
        /// The copy of the shard files this worker writes (an indexer) or
        /// reads (a query worker): an indexer and a query worker with the same
        /// replica name share files. Absent: a worker of its own.
        public var replica: String?
        /// An indexer's last applied write sequence number per shard, read
        /// from its shard files: the coordinator sends it what it missed.
        public var sequences: [ShardSequence]?
        public init(
            role: Role, worker: String, shards: [Int], host: String? = nil, pid: Int? = nil,
            proof: String? = nil, nonce: String? = nil
        ) {
            self.role = role; self.worker = worker; self.shards = shards; self.host = host; self.pid = pid
            self.proof = proof; self.nonce = nonce
        }
    }
    /// Coordinator → worker: prove you hold the cluster secret by registering
    /// again with a proof over this nonce (bound to this connection, good for 30 s).
    public struct Challenge: Sendable, Hashable, Codable {
        public var nonce: String
        public init(nonce: String) { self.nonce = nonce }
    }
    public struct Registered: Sendable, Hashable, Codable {
        public var shardCount: Int
        public var heartbeatMs: Int
        /// The accepting coordinator's epoch (a cluster with a control
        /// plane): from now on the worker refuses changes of lower epochs,
        /// which come from a coordinator that no longer leads.
        public var epoch: Int?
        public init(shardCount: Int, heartbeatMs: Int, epoch: Int? = nil) {
            self.shardCount = shardCount; self.heartbeatMs = heartbeatMs; self.epoch = epoch
        }
    }
    public struct Heartbeat: Sendable, Hashable, Codable {
        public var worker: String?
        /// The worker's figures (worker → coordinator); see `WorkerStatus`.
        public var status: WorkerStatus?
        public init(worker: String? = nil, status: WorkerStatus? = nil) { self.worker = worker; self.status = status }
    }
    public struct Write: Sendable, Hashable, Codable {
        public var shard: Int
        public var items: [JSONValue]
        /// Identifiers to remove from this shard in the same transaction: items
        /// that are being written to another shard because their domain changed.
        public var evict: [String]
        /// The shard's write sequence number the coordinator gave this write.
        public var sequence: Int?
        /// Coordinator → indexer: the coordinator epoch that numbered it; an
        /// indexer refuses changes of an epoch below its shard's (`stale_epoch`).
        public var epoch: Int?
        public init(shard: Int, items: [JSONValue], evict: [String] = []) { self.shard = shard; self.items = items; self.evict = evict }
    }
    public struct WriteAck: Sendable, Hashable, Codable {
        public var shard: Int
        public var results: [ItemResult]
        public init(shard: Int, results: [ItemResult]) { self.shard = shard; self.results = results }
    }
    public struct ShardQuery: Sendable, Hashable, Codable {
        public var shard: Int
        public var plan: JSONValue
        public var deadlineMs: Int?
        /// The shard's slots under the map the query was routed by, sent
        /// while a split's switch may leave the shard holding rows that map
        /// gives another shard (from the switch until the new map is
        /// committed): the worker leaves those rows out.
        public var keepSlots: KeepSlots?
        public init(shard: Int, plan: JSONValue, deadlineMs: Int? = nil, keepSlots: KeepSlots? = nil) {
            self.shard = shard; self.plan = plan; self.deadlineMs = deadlineMs; self.keepSlots = keepSlots
        }
    }
    public struct ShardBatch: Sendable, Hashable, Codable {
        public var shard: Int
        public var seq: Int
        public var hits: [Hit]
        /// Set on a shard's last batch when the shard ended without error: its
        /// total count, so the batch is also the shard's `shard_done` and the
        /// common query (one batch) costs one message instead of two each way
        /// through the coordinator. A shard that fails, is cancelled, or
        /// matches nothing still ends with a `shard_done` of its own.
        public var doneCount: Int?
        /// Set by a query worker whose store handed out its items as JSON
        /// (an unsorted query's): the hits on the wire, in place of `hits`
        /// (then empty), written as they are (``RawJSON``). A decoded batch
        /// never has it; it is not part of the `Codable` form, only of
        /// ``Envelope/encoded()``.
        public var rawHits: [RawShardBatch.RawHit]?
        public init(shard: Int, seq: Int, hits: [Hit], doneCount: Int? = nil) {
            self.shard = shard; self.seq = seq; self.hits = hits; self.doneCount = doneCount
        }
        public init(shard: Int, seq: Int, rawHits: [RawShardBatch.RawHit], doneCount: Int? = nil) {
            self.shard = shard; self.seq = seq; self.hits = []; self.rawHits = rawHits; self.doneCount = doneCount
        }
        enum CodingKeys: String, CodingKey { case shard, seq, hits, doneCount }
    }
    public struct ShardDone: Sendable, Hashable, Codable {
        public var shard: Int
        public var count: Int
        public var error: WireError?
        public init(shard: Int, count: Int, error: WireError? = nil) { self.shard = shard; self.count = count; self.error = error }
    }

    /// Key management (`limelight keys`): `create` a key of an app and role,
    /// `list` keys, `revoke` one (by value or id, in `target`). A master key
    /// manages every app's keys, an admin key its own app's.
    public struct Keys: Sendable, Hashable, Codable {
        public var action: String
        public var app: String?
        public var role: String?
        public var rateLimit: Double?
        public var maxItemsPerPublish: Int?
        public var description: String?
        /// `revoke`: the key, or its id as `list` shows it.
        public var target: String?
        public init(
            action: String, app: String? = nil, role: String? = nil, rateLimit: Double? = nil,
            maxItemsPerPublish: Int? = nil, description: String? = nil, target: String? = nil
        ) {
            self.action = action; self.app = app; self.role = role; self.rateLimit = rateLimit
            self.maxItemsPerPublish = maxItemsPerPublish; self.description = description; self.target = target
        }
    }
    /// `create`: the new key's value (shown once, never stored) and its record;
    /// `list`: the records; `revoke`: the revoked key's record. Records carry
    /// `id`, `app`, `role`, `rateLimit`, `maxItemsPerPublish`, `description`,
    /// `created`, `revoked`, never a key's value or hash.
    public struct KeysReply: Sendable, Hashable, Codable {
        public var apiKey: String?
        public var keys: [JSONValue]
        public init(apiKey: String? = nil, keys: [JSONValue]) { self.apiKey = apiKey; self.keys = keys }
    }

    case publish(Publish), publishAck(PublishAck)
    case declare(Declare), declareAck(Empty)
    case delete(Delete), deleteAck(DeleteAck)
    case query(QueryRequest), resultBatch(ResultBatch), completion(Completion), cancel(Cancel)
    case stats(Empty), statsReply(Stats)
    case ping(Empty), pong(Pong)
    case error(WireError)
    case register(Register), registered(Registered), heartbeat(Heartbeat), challenge(Challenge)
    case write(Write), writeAck(WriteAck)
    case shardQuery(ShardQuery), shardBatch(ShardBatch), shardDone(ShardDone)
    case search(Search), searchResult(SearchResult)
    case shardSearch(ShardSearch), shardSearchResult(ShardSearchResult)
    case entityDonate(EntityDonate), entityDelete(EntityDelete), entityAssociate(EntityAssociate), entityAck(EntityAck)
    case suggest(Suggest), suggestResult(SuggestResult)
    case spotlight(Spotlight), spotlightResult(SpotlightResult)
    case continueSearch(Continue)
    case keys(Keys), keysReply(KeysReply)
    case copyRequest(CopyRequest), copyChunk(CopyChunk), copyAck(CopyAck)

    public var type: MessageType {
        switch self {
        case .publish: .publish
        case .publishAck: .publishAck
        case .declare: .declare
        case .declareAck: .declareAck
        case .delete: .delete
        case .deleteAck: .deleteAck
        case .query: .query
        case .resultBatch: .resultBatch
        case .completion: .completion
        case .cancel: .cancel
        case .stats: .stats
        case .statsReply: .statsReply
        case .ping: .ping
        case .pong: .pong
        case .error: .error
        case .register: .register
        case .registered: .registered
        case .challenge: .challenge
        case .heartbeat: .heartbeat
        case .write: .write
        case .writeAck: .writeAck
        case .shardQuery: .shardQuery
        case .shardBatch: .shardBatch
        case .shardDone: .shardDone
        case .search: .search
        case .searchResult: .searchResult
        case .shardSearch: .shardSearch
        case .shardSearchResult: .shardSearchResult
        case .entityDonate: .entityDonate
        case .entityDelete: .entityDelete
        case .entityAssociate: .entityAssociate
        case .entityAck: .entityAck
        case .suggest: .suggest
        case .suggestResult: .suggestResult
        case .spotlight: .spotlight
        case .spotlightResult: .spotlightResult
        case .continueSearch: .continueSearch
        case .keys: .keys
        case .keysReply: .keysReply
        case .copyRequest: .copyRequest
        case .copyChunk: .copyChunk
        case .copyAck: .copyAck
        }
    }
}
