import ControlPlane
import Foundation
import Items
import LimelightConcurrency
import Logging
import Planner
import QueryPlan
import Synchronization
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
///
/// `core` is a weak reference, set once in CoordinatorCore.init (the closure
/// that reports needs the box before the core exists), behind a `Mutex` so
/// that the socket's thread reads it safely.
final class UnreachableWorkers: Sendable {
    private struct Reference: Sendable { weak var core: CoordinatorCore? }
    private let reference = Mutex(Reference())

    var core: CoordinatorCore? {
        get { reference.withLock { $0.core } }
        set { reference.withLock { $0.core = newValue } }
    }

    func report(_ route: [Data]) {
        guard let core else { return }
        Task { await core.workerUnreachable(route: route) }
    }
}

/// The coordinator: its sockets, and the state that decides what it sends.
///
/// The decisions live in value types, each unit-tested without processes:
/// ``WorkerRegistry`` (who is registered, live, silent, next for a shard),
/// ``WriteTracker`` (when a publish, delete or declaration is answered, and
/// how), ``QueryTracker`` and ``ShardScatter`` (a query's or search's shards:
/// retried elsewhere or named failed, cancels, deadlines). Their methods take
/// an event and say what to send; this actor mints message ids, sends, and
/// keeps what is tied to the process (timers, metrics, the replicas' log).
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

    /// The registered and the lost workers (``WorkerRegistry``).
    var registry = WorkerRegistry()
    /// The registered workers, by id.
    var workers: [String: WorkerRecord] { registry.workers }
    /// The query worker in this process, if any (``LocalQueryWorker``).
    var localWorker: LocalQueryWorker?
    /// Registrations waiting for their proof, by connection (``WorkerChallenges``).
    var challenges: WorkerChallenges
    /// Replicas' sequence numbers and the catch-up log (CoordinatorCore+CatchUp.swift).
    var replication = ReplicationState()
    /// Each shard's in-sync replica set, with a control plane (CoordinatorCore+InSync.swift).
    var inSync = InSyncReplicas()
    /// Answers waiting for the control plane to hold their in-sync requests.
    var heldAnswers: [HeldAnswer] = []
    /// Wakes the service's in-sync loop when a set is to be written
    /// (`CoordinatorService.followInSync`), so that an answer held for it
    /// waits for the control plane's transaction alone.
    let inSyncWork = Wakeup()
    /// Wakes the service's control-plane loop (`CoordinatorService.followSplits`)
    /// when a split or a replica change may move on (a worker answered,
    /// registered or was lost) or a registration waits for a read.
    let controlPlaneWork = Wakeup()
    /// Reads of the shards' records (split, replica change, retired replicas)
    /// made by the control-plane loop: a registration waits for one that
    /// began after it (``ControlPlaneReads``).
    var controlPlaneReads = ControlPlaneReads()
    var nextID = 0
    /// Sets this coordinator's message ids apart from its predecessors': a
    /// worker still answers what a coordinator that died had sent it, and
    /// that answer reaches the restarted one. Counting from 1 again alone,
    /// it could be taken for the answer to a message of the same id sent
    /// since (a stale acknowledgement counted as a new write's).
    let incarnation = String(UInt64.random(in: 1...UInt64(UInt32.max)), radix: 36)

    /// Publishes, deletes and declarations in flight (``WriteTracker``).
    var writes = WriteTracker()
    /// Set while ``startWaitingWrites()`` starts the publishes that waited.
    var startingWaitingWrites = false

    /// Queries and parameter searches in flight (``QueryTracker``).
    var inFlight = QueryTracker()
    var queries: [String: RunningQuery] { inFlight.queries }
    var searches: [String: RunningSearch] { inFlight.searches }
    /// The query embedder, loaded by the first semantic search (see ``QueryEmbedder``).
    let queryEmbedder: QueryEmbedder

    /// Counters for the stats endpoint, by ``CoordinatorCounter`` name (the
    /// names `/stats` shows; ``RateWindow`` samples them as they are).
    var counters: [String: Int] = [:]
    var queryLatenciesMs: [Double] = []
    var firstBatchLatenciesMs: [Double] = []
    var rates = RateWindow()
    /// Prometheus figures (GET /metrics); the HTTP endpoint renders them.
    nonisolated let metrics = CoordinatorMetrics()
    /// Requests made in this process (the REST API), waiting for their answers.
    var localClients = LocalClients()
    /// Items whose writes are in flight, and the writes waiting for them
    /// (CoordinatorCore+ItemLocks.swift).
    var itemLocks = ItemWriteLocks<(isolated CoordinatorCore) -> Void>()
    /// Local requests made by a read-modify-write, by route: its owner name.
    var localLockOwners: [[Data]: String] = [:]
    var nextLockOwner = 0
    /// API keys (`--keys`); nil when the cluster has none (see CoordinatorCore+Keys.swift).
    let keyStore: KeyStore?
    /// With a control plane, the keys every coordinator shares
    /// (CoordinatorCore+KeySharing.swift); `keysWork` wakes the service's
    /// key loop when a key change waits or requests wait for the keys.
    var keySharing = KeySharing()
    let keysWork = Wakeup()
    var rateLimiter = RateLimiter()
    /// Runs the actor on whichever thread holds its lock, so the sockets'
    /// threads handle messages in place (see ``CoordinatorExecutor``).
    nonisolated let executor: CoordinatorExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Queries' and searches' deadlines, on a timer thread of their own.
    nonisolated let deadlines = Deadlines()
    /// The election this coordinator takes part in (a cluster with a control
    /// plane); nil: it is the cluster's only coordinator and always serves.
    nonisolated let election: CoordinatorElection?
    /// The epoch it serves with, from its first request as the active
    /// coordinator on (an election deposes a coordinator for good, so this
    /// never changes once set).
    var activeEpoch: Int?
    /// When to step down for want of workers (with etcd; see ``WorkerAbsence``).
    var workerAbsence: WorkerAbsence?
    /// The cluster's shard map, as the control plane holds it (nil without
    /// one: shards by `hash mod N`, no slots); the stats show it.
    var shardMap: ShardMap?
    /// The shard split under way (CoordinatorCore+Split.swift).
    var splitRun: SplitRun?
    /// The shard count of a split the control plane holds that this
    /// coordinator has not taken up yet: its new shards' workers may register.
    var pendingSplitTo: Int?
    /// Client requests held until the map is read for this epoch, or while
    /// that split is not taken up (``holdForSplit(route:envelope:)``).
    var splitNotTakenUp: [HeldRequest] = []
    /// The serving epoch the shard map was last read for.
    var mapReadFor: Int?
    /// The replica change under way (CoordinatorCore+Replicas.swift).
    var replicaRun: ReplicaRun?
    /// The replicas retired from shards, as the control plane holds them:
    /// their workers are refused.
    var retired = RetiredReplicas()

    func useShardMap(_ map: ShardMap, splitTo: Int? = nil) {
        shardMap = map
        pendingSplitTo = splitTo
    }

    init(
        configuration: CoordinatorConfiguration, logger: Logger, planner: Planner,
        clients: AsyncSocket, workers workerSocket: AsyncSocket, keyStore: sending KeyStore? = nil,
        executor: CoordinatorExecutor = CoordinatorExecutor(), election: CoordinatorElection? = nil
    ) {
        self.executor = executor
        self.election = election
        if election != nil, let ms = configuration.stepDownWithoutWorkersMs, ms > 0 { workerAbsence = WorkerAbsence(after: .milliseconds(ms)) }
        self.keyStore = keyStore
        self.configuration = configuration
        challenges = WorkerChallenges(secret: configuration.clusterSecret)
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
        return "\(prefix)\(incarnation).\(nextID)"
    }

    func count(_ counter: CoordinatorCounter, by n: Int = 1) { counters[counter.rawValue, default: 0] += n }

    func send(_ to: Peer, _ id: String, _ body: Body) {
        if election != nil, case .client = to, body.acknowledgesAChange, !stillActive() {
            // Its lease may have lapsed while the change was on its way: a
            // successor may be numbering changes now, so this one is not
            // reported stored (the producer resends it there).
            sendError(to, id, notActive(to, election!))
            return
        }
        if sendLocal(to, id, body) { return }
        if case .client(let route) = to {
            // Its items' keys go once the request is answered, after the answer.
            defer { releaseItems(answered: route, id, body) }
            if LocalClients.isLocal(route) {
                localClients.deliver(route, body)
                return
            }
        }
        let o = Outgoing(to: to, envelope: Envelope(id: id, body: body))
        let outlet: Outlet
        switch to {
        case .client: outlet = clientOutlet
        case .worker: outlet = workerOutlet
        }
        if case .dropped(let first) = outlet.send(o) {
            count(.outboxDropped)
            if first, case .client(let route) = to { abandonQueries(of: route) }
            if first {
                logger.warning(
                    "a peer is not reading its messages: its outbox is full, dropping new ones until it drains",
                    metadata: [
                        "peer": "\(to.kind)",
                        "peer.route": "\(to.route.map { $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "/"))",
                        "outbox.limit": "\(configuration.peerOutboxLimit)", "message.type": "\(o.envelope.type.rawValue)",
                    ])
            }
        }
    }

    func sendError(_ to: Peer, _ id: String, _ error: WireError) {
        count(.errors)
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
        handleClient(route: route, envelope: envelope)
    }

    /// A decoded client request, from the client socket or from the REST
    /// API (``LocalClients``): the same checks and handlers either way.
    func handleClient(route: [Data], envelope: Envelope) {
        // A standby, or an active coordinator whose lease may have lapsed, serves nothing.
        guard admitWhileActive(.client(route), envelope.id) else { return }
        // A split holds writes for the moments it needs them still.
        if holdForSplit(route: route, envelope: envelope) { return }
        // A coordinator that has just taken over judges keys once it has read the cluster's.
        if holdForKeys(route: route, envelope: envelope) { return }
        // The key decides the app and the rights (CoordinatorCore+Keys.swift).
        guard let access = authorize(envelope, route: route) else { return }
        let scope = access.scope
        switch envelope.body {
        case .publish(let p):
            let p = scope.qualify(publish: p)
            serialised(route, envelope.id, keys: p.items.compactMap { $0["uniqueIdentifier"]?.stringValue }) { core in
                core.publish(client: route, id: envelope.id, p, scope: scope)
            }
        case .query(let q): startQuery(client: route, id: envelope.id, q, scope: scope)
        case .search(let q): startSearch(client: route, id: envelope.id, q, scope: scope)
        case .cancel(let c): cancel(client: route, requestID: c.query)
        case .delete(let d):
            serialised(route, envelope.id, keys: (d.all == true ? [] : d.ids ?? []).map { scope.qualify(uid: $0) }) { core in
                core.delete(client: route, id: envelope.id, d, scope: scope)
            }
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
            sendError(
                .client(route), envelope.id,
                WireError(code: "unexpected_type", message: "'\(envelope.type.rawValue)' is not a request a client can send"))
        }
    }

    func pong() -> Body.Pong {
        Body.Pong(shardCount: shardCount, servedShards: servedShards(), epoch: activeEpoch)
    }

    func servedShards() -> [Int] { registry.servedShards(shardCount: shardCount) }

    func liveWorkers(_ role: Body.Register.Role, shard: Int) -> [WorkerRecord] {
        registry.liveWorkers(role, shard: shard)
    }
}

extension Duration {
    var milliseconds: Double {
        let c = components
        return Double(c.seconds) * 1000 + Double(c.attoseconds) / 1e15
    }
}
