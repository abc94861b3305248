import Foundation
import Items
import Logging
import Planner
import QueryPlan
import Tenancy
import WireProtocol
import ZeroMQ

/// Who a message is for: a client or a worker, by its ZeroMQ routing frames.
enum Peer: Sendable, Hashable {
    case client([Data])
    case worker([Data])
}

struct Outgoing: Sendable {
    var to: Peer
    var envelope: Envelope
}

extension Peer {
    var kind: String {
        switch self {
        case .client: "client"
        case .worker: "worker"
        }
    }
}

/// A registered indexer or query worker.
struct WorkerRecord: Sendable {
    var id: String
    var role: Body.Register.Role
    var shards: [Int]
    var route: [Data]
    var lastSeen: ContinuousClock.Instant
    var host: String?
    var pid: Int?
    var registeredAt: Date
    /// What its last heartbeat reported, if it reports (see `WorkerStatus`).
    var status: WorkerStatus?
}

/// Carries a worker that ZeroMQ found gone from the worker socket's thread
/// to the core, which forgets it at once so its work is retried on a replica
/// without waiting for the heartbeat to lapse.
final class UnreachableWorkers: @unchecked Sendable {
    // `core` is set once, in CoordinatorCore.init, before any message is sent.
    weak var core: CoordinatorCore?

    func report(_ route: [Data]) {
        guard let core else { return }
        Task { await core.workerUnreachable(route: route) }
    }
}

/// The coordinator's state machine: everything it knows and decides.
///
/// Handlers never await; they append replies to their peers' ordered
/// outboxes (``Outlet``), which never suspend either. That keeps every
/// decision atomic inside the actor, and keeps a query's batches and its
/// completion in order even when a deadline fires in the middle of a stream.
actor CoordinatorCore {
    let configuration: CoordinatorConfiguration
    let logger: Logger
    let planner: Planner
    let clientOutlet: Outlet
    let workerOutlet: Outlet
    let startedAt = Date()

    /// The registered workers. A change of who is in it (not of a record's
    /// `lastSeen`, which every message updates) must call ``workersChanged()``.
    var workers: [String: WorkerRecord] = [:]
    /// ``liveWorkerIDs(_:shard:)``'s answers while `workers` holds the same
    /// workers (see ``workersChanged()``).
    var liveWorkerIDsCache: [LiveWorkersKey: [String]] = [:]
    var workerByRoute: [[Data]: String] = [:]
    /// The query worker in this process, if any (``LocalQueryWorker``).
    var localWorker: LocalQueryWorker?
    /// Registrations waiting for their proof, by connection (CoordinatorCore+WorkerAuth.swift).
    var challenges: [[Data]: PendingChallenge] = [:]
    var roundRobin = 0
    /// Replicas' sequence numbers and the catch-up log (CoordinatorCore+CatchUp.swift).
    var replication = ReplicationState()
    var nextID = 0

    // Writes in flight.
    struct ShardWrite: Sendable {
        var publish: String
        var shard: Int
        var worker: String
        /// Positions in the client's batch of the items sent in this write.
        var indices: [Int]
    }
    struct PendingPublish: Sendable {
        var client: [Data]
        var requestID: String
        var batch: String?
        /// Each item's identifier, for rejections the coordinator makes itself.
        var identifiers: [String?]
        var results: [ItemResult?]
        var outstanding: Set<String>
        /// Shards for which at least one replica committed.
        var committed: Set<Int>
        var shardOf: [Int: [Int]] // shard → item positions
        var started: ContinuousClock.Instant
        /// The app the items were published for (their names are qualified; see `TenantScope`).
        var scope: TenantScope = .unscoped
    }
    var publishes: [String: PendingPublish] = [:]
    /// Publishes that came while `maxPendingWrites` were in flight, in order
    /// (at most `maxWaitingWrites`; see ``holdPublish``).
    var waitingWrites: [(client: [Data], id: String, publish: Body.Publish, rejected: [Int: ItemResult], scope: TenantScope)] = []
    var startingWaitingWrites = false
    var shardWrites: [String: ShardWrite] = [:]

    // Deletes in flight.
    struct PendingDelete: Sendable {
        var client: [Data]
        var requestID: String
        var outstanding: [String: (worker: String, shard: Int)]
        var deletedByShard: [Int: Int]
        var failed: [ShardFailure]
        /// Set for entity deletes and associations, which answer `entity_ack`.
        var entity: EntityOperation? = nil
    }
    var deletes: [String: PendingDelete] = [:]
    var deleteOfRequest: [String: String] = [:]

    // Declarations in flight.
    struct PendingDeclare: Sendable {
        var client: [Data]
        var requestID: String
        var declaration: Body.Declare
        /// The first round's message: the declaration with `check` set.
        var check: Body.Declare
        /// Every indexer has checked the declaration; the second round declares it.
        var checked: Bool
        var outstanding: [String: String] // message → worker
        var error: WireError?
    }
    var declares: [String: PendingDeclare] = [:]
    var declareOfRequest: [String: String] = [:]

    // Queries in flight.
    struct RunningQuery: Sendable {
        var key: String
        var client: [Data]
        var requestID: String
        var query: Query
        var planJSON: JSONValue
        var deadlineMs: Int
        var outstanding: [Int: String]       // shard → worker
        var delivered: [Int: Int] = [:]      // shard → hits released to the client
        var tried: [Int: Set<String>] = [:]  // shard → workers tried
        var failed: [ShardFailure] = []
        var count = 0
        var seq = 0
        var merger: ResultMerger?
        var started: ContinuousClock.Instant
        /// Fires the deadline; cancelled when the query completes first.
        var deadlineTimer: Deadlines.Token?
        /// Predicate queries: which query a cursor belongs to, and the sort
        /// values of the last result released (see `QueryCursor`).
        var cursorFingerprint: String?
        var lastSort: [JSONValue]?
        /// Whose query it is: results are given back the names the app published.
        var scope: TenantScope = .unscoped
        /// The client reads the completion inside the last batch
        /// (``Body/QueryRequest/completionInBatch``).
        var completionInBatch = false
        /// Such a client's latest batch, held back while the coordinator
        /// handles the message that produced it, in case the query ends in
        /// the same step: ``CoordinatorCore/complete(_:cancelled:)`` then
        /// sends it with the completion inside, and otherwise
        /// ``CoordinatorCore/flushHeldBatch(_:)`` sends it before the step
        /// ends, so no batch waits for a later message (streaming is kept).
        var held: Body.ResultBatch?
    }
    var queries: [String: RunningQuery] = [:]
    var queryOfRequest: [[Data]: [String: String]] = [:]
    // Parameter searches in flight (CoordinatorCore+Search.swift).
    var searches: [String: RunningSearch] = [:]
    /// The query embedder, loaded by the first semantic search (see ``QueryEmbedder``).
    let queryEmbedder: QueryEmbedder
    var searchOfRequest: [[Data]: [String: String]] = [:]

    // Counters for the stats endpoint.
    var counters: [String: Int] = [:]
    var queryLatenciesMs: [Double] = []
    var firstBatchLatenciesMs: [Double] = []
    var firstBatchSent: Set<String> = []
    /// Workers declared dead, kept for the stats and metrics (see ClusterStats.swift).
    var lostWorkers: [String: LostWorker] = [:]
    var rates = RateWindow()
    /// Prometheus figures (GET /metrics); the HTTP endpoint renders them.
    nonisolated let metrics = CoordinatorMetrics()
    /// API keys (`--keys`); nil when the cluster has none (see CoordinatorCore+Keys.swift).
    let keyStore: KeyStore?
    var rateLimiter = RateLimiter()
    /// Runs the actor on whichever thread holds its lock, so the sockets'
    /// threads handle messages in place (see ``CoordinatorExecutor``).
    nonisolated let executor: CoordinatorExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Queries' and searches' deadlines, on a timer thread of their own.
    nonisolated let deadlines = Deadlines()

    init(configuration: CoordinatorConfiguration, logger: Logger, planner: Planner,
         clients: AsyncSocket, workers workerSocket: AsyncSocket, keyStore: KeyStore? = nil,
         executor: CoordinatorExecutor = CoordinatorExecutor()) {
        self.executor = executor
        self.keyStore = keyStore
        self.configuration = configuration
        self.logger = logger
        self.planner = planner
        clientOutlet = Outlet(socket: clients, limit: configuration.peerOutboxLimit) { o, error in
            logger.debug("dropped a reply to a departed peer", metadata: ["message.type": "\(o.envelope.type.rawValue)", "error": "\(error)"])
        }
        // Filled in below: the closure needs `self`, which exists only once
        // every stored property is set.
        let unreachable = UnreachableWorkers()
        workerOutlet = Outlet(socket: workerSocket, limit: configuration.peerOutboxLimit) { o, error in
            logger.debug("dropped a message to a departed worker", metadata: ["message.type": "\(o.envelope.type.rawValue)", "error": "\(error)"])
            unreachable.report(o.to.route)
        }
        queryEmbedder = QueryEmbedder(modelDirectory: configuration.modelDirectory, logger: logger)
        unreachable.core = self
    }

    func makeID(_ prefix: String) -> String {
        nextID += 1
        return "\(prefix)\(nextID)"
    }

    func count(_ key: String, by n: Int = 1) { counters[key, default: 0] += n }

    func send(_ to: Peer, _ id: String, _ body: Body) {
        if sendLocal(to, id, body) { return }
        let o = Outgoing(to: to, envelope: Envelope(id: id, body: body))
        let outlet: Outlet
        switch to {
        case .client: outlet = clientOutlet
        case .worker: outlet = workerOutlet
        }
        if case .dropped(let first) = outlet.send(o) {
            count("outbox.dropped")
            if first, case .client(let route) = to { abandonQueries(of: route) }
            if first {
                logger.warning("a peer is not reading its messages: its outbox is full, dropping new ones until it drains", metadata: [
                    "peer": "\(to.kind)", "peer.route": "\(to.route.map { $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "/"))",
                    "outbox.limit": "\(configuration.peerOutboxLimit)", "message.type": "\(o.envelope.type.rawValue)",
                ])
            }
        }
    }

    func sendError(_ to: Peer, _ id: String, _ error: WireError) {
        count("errors")
        send(to, id, .error(error))
    }

    // MARK: - Client messages

    func handleClient(route: [Data], payload: Data) {
        let envelope: Envelope
        do { envelope = try Envelope.decode(payload, maxBytes: configuration.maxFrameBytes) } catch {
            logger.notice("rejected a client frame", metadata: ["error.code": "\(error.code)", "error": "\(error.message)"])
            sendError(.client(route), error.id ?? "", error.wire)
            return
        }
        // The key decides the app and the rights (CoordinatorCore+Keys.swift).
        guard let access = authorize(envelope, route: route) else { return }
        let scope = access.scope
        switch envelope.body {
        case .publish(let p): publish(client: route, id: envelope.id, scope.qualify(publish: p), scope: scope)
        case .query(let q): startQuery(client: route, id: envelope.id, q, scope: scope)
        case .search(let q): startSearch(client: route, id: envelope.id, q, scope: scope)
        case .cancel(let c): cancel(client: route, requestID: c.query)
        case .delete(let d): delete(client: route, id: envelope.id, d, scope: scope)
        case .entityDonate(let d): donateEntities(client: route, id: envelope.id, d, scope: scope)
        case .entityDelete(let d): deleteEntities(client: route, id: envelope.id, d, scope: scope)
        case .entityAssociate(let a): associateEntity(client: route, id: envelope.id, a, scope: scope)
        case .suggest(let s): startSuggest(client: route, id: envelope.id, s, scope: scope)
        case .spotlight(let s): startSpotlight(client: route, id: envelope.id, s, scope: scope)
        case .continueSearch(let c): startContinue(client: route, id: envelope.id, c, scope: scope)
        case .declare(let d): declare(client: route, id: envelope.id, d, scope: scope)
        case .keys(let k): manageKeys(client: route, id: envelope.id, k, access: access)
        case .ping: send(.client(route), envelope.id, .pong(pong()))
        case .stats: send(.client(route), envelope.id, .statsReply(Body.Stats(stats: stats())))
        default:
            sendError(.client(route), envelope.id,
                      WireError(code: "unexpected_type", message: "'\(envelope.type.rawValue)' is not a request a client can send"))
        }
    }

    func pong() -> Body.Pong {
        Body.Pong(shardCount: configuration.shards, servedShards: servedShards())
    }

    func servedShards() -> [Int] {
        (0..<configuration.shards).filter { !liveWorkers(.indexer, shard: $0).isEmpty && !liveWorkers(.query, shard: $0).isEmpty }
    }

    func liveWorkers(_ role: Body.Register.Role, shard: Int) -> [WorkerRecord] {
        liveWorkerIDs(role, shard: shard).compactMap { workers[$0] }
    }

    struct LiveWorkersKey: Hashable {
        let role: Body.Register.Role
        let shard: Int
    }

    /// The ids of the workers of `role` serving `shard`, sorted, worked out
    /// once per change of the workers. Why: every search and query picks
    /// its workers here, and filtering and sorting the records (copies of
    /// every field) each time was ~5 us of a two-word search's 430 in the
    /// coordinator (traced through a one-shard cluster, 2026-11-25).
    func liveWorkerIDs(_ role: Body.Register.Role, shard: Int) -> [String] {
        let key = LiveWorkersKey(role: role, shard: shard)
        if let ids = liveWorkerIDsCache[key] {
            assert(ids == Self.workerIDs(workers, role, shard: shard), "workers changed without workersChanged()")
            return ids
        }
        let ids = Self.workerIDs(workers, role, shard: shard)
        liveWorkerIDsCache[key] = ids
        return ids
    }

    static func workerIDs(_ workers: [String: WorkerRecord], _ role: Body.Register.Role, shard: Int) -> [String] {
        workers.values.filter { $0.role == role && $0.shards.contains(shard) }.map(\.id).sorted()
    }

    /// Forgets ``liveWorkerIDs(_:shard:)``'s answers: a worker came or went.
    func workersChanged() {
        liveWorkerIDsCache.removeAll()
    }
}

extension Duration {
    var milliseconds: Double {
        let c = components
        return Double(c.seconds) * 1000 + Double(c.attoseconds) / 1e15
    }
}
