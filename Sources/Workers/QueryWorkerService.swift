import Foundation
import Items
import Logging
import QueryPlan
import ShardStore
import WireProtocol
import ZeroMQ

/// Settings of `limelight-query`.
public struct QueryWorkerConfiguration: WorkerLinkConfiguration {
    public var coordinator: String = "tcp://127.0.0.1:7701"
    public var data: String
    public var shards: [Int]
    public var workerID: String
    /// Queries evaluated at once; more wait their turn.
    public var concurrency: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Shard queries that may wait for a thread; past it one is answered `busy`.
    public var maxQueued: Int = 1000
    /// See `Body.Register.replica`; nil: this host and data folder.
    public var replica: String?
    public var heartbeatMs: Int = 1000
    public var livenessMs: Int = 3000
    /// The cluster secret and CURVE keys shown to the coordinator.
    public var credentials = WorkerCredentials()

    public init(data: String, shards: [Int], workerID: String? = nil) {
        self.data = data
        self.shards = shards
        self.workerID = workerID ?? "query-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }
}

/// A flag a running query polls; set by `cancel` or its deadline.
final class CancelFlag: @unchecked Sendable {
    // `cancelled` is guarded by `lock`.
    private let lock = NSLock()
    private var cancelled = false
    let deadline: Date?
    init(deadline: Date?) { self.deadline = deadline }
    func cancel() { lock.lock(); cancelled = true; lock.unlock() }
    var isCancelled: Bool {
        lock.lock(); defer { lock.unlock() }
        if cancelled { return true }
        if let deadline, Date() >= deadline { return true }
        return false
    }
}

/// Idle read-only connections per shard, so concurrent queries each get one.
final class ConnectionPool: @unchecked Sendable {
    // `idle` is guarded by `lock`; a checked-out store is used by one thread only.
    private let lock = NSLock()
    private var idle: [Int: [ShardStore]] = [:]
    let data: String
    let logger: Logger
    init(data: String, logger: Logger) { self.data = data; self.logger = logger }

    func checkout(_ shard: Int) throws -> ShardStore {
        lock.lock()
        if let s = idle[shard]?.popLast() { lock.unlock(); return s }
        lock.unlock()
        var l = logger
        l[metadataKey: "shard"] = "\(shard)"
        return try ShardStore(path: shardPath(data: data, shard: shard), mode: .readOnly, logger: l)
    }

    func checkin(_ shard: Int, _ store: ShardStore) {
        lock.lock(); idle[shard, default: []].append(store); lock.unlock()
    }
}

/// The query worker process: opens shards read-only beside the indexer (SQLite
/// WAL lets readers run while it writes), evaluates plans and streams batches.
///
/// Each query runs on one of the worker's own threads, never on Swift's
/// cooperative pool nor GCD's; sending a batch waits for the socket, so a slow coordinator slows the
/// scan instead of piling up batches in memory.
public final class QueryWorkerService: Sendable {
    public let configuration: QueryWorkerConfiguration
    let logger: Logger
    let link: WorkerLink
    let pool: ConnectionPool
    let running = RunningQueries()
    let threads: WorkThreads
    let tally = WorkerTally()

    public init(configuration: QueryWorkerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.workerID)"
        self.logger = logger
        pool = ConnectionPool(data: configuration.data, logger: logger)
        threads = WorkThreads(name: "limelight.query", count: configuration.concurrency)
        link = try WorkerLink(role: .query, configuration: configuration, logger: logger)
    }

    public var isRegistered: Bool { link.isRegistered }
    /// Why the coordinator refused this worker, if it did (`run` has then returned).
    public var refusal: String? { link.refusal }

    public func run() async {
        logger.info("query worker serving", metadata: ["shards": "\(configuration.shards.map(String.init).joined(separator: ","))",
                                                       "data": "\(configuration.data)"])
        link.reportStatus { self.tally.status(shards: nil, dataFolder: self.configuration.data) }
        // Shard queries, searches and cancels are taken on the socket's
        // thread and handed straight to the worker's own threads.
        link.handleInline { envelope in self.handleNow(envelope) }
        await link.serve { envelope in await self.handle(envelope) }
        threads.stop()
    }

    public func shutdown() {
        link.close()
    }

    /// What reaches the link's task: anything `handleNow` did not take.
    func handle(_ envelope: Envelope) async {
        if handleNow(envelope) { return }
        await link.send(envelope.id, .error(WireError(code: "unexpected_type", message: "a query worker does not handle '\(envelope.type.rawValue)'")))
    }

    /// Takes a shard query, a shard search or a cancel without waiting: runs
    /// on the socket's thread (``WorkerLink/handleInline(_:)``), so it only
    /// decodes the plan and queues the work. False for any other message.
    func handleNow(_ envelope: Envelope) -> Bool {
        switch envelope.body {
        case .shardQuery(let q):
            let key = envelope.id
            guard let (query, flag) = accept(key, shard: q.shard, deadlineMs: q.deadlineMs, { () throws(PlanDecodingError) in
                try Query(json: q.plan)
            }) else { return true }
            if !threads.trySubmit(limit: configuration.maxQueued, { self.execute(key: key, shard: q.shard, query: query, flag: flag) }) {
                refuseBusy(key, shard: q.shard)
            }
            return true
        case .shardSearch(let q):
            let key = envelope.id
            guard let (plan, flag) = accept(key, shard: q.shard, deadlineMs: q.deadlineMs, { () throws(PlanDecodingError) in
                try SearchPlan(json: q.plan)
            }) else { return true }
            let extras = SearchExtras(suggest: q.suggest, perDomain: q.perDomain)
            if !threads.trySubmit(limit: configuration.maxQueued, { self.executeSearch(key: key, shard: q.shard, plan: plan, extras: extras, flag: flag) }) {
                refuseBusy(key, shard: q.shard)
            }
            return true
        case .cancel(let c):
            running.cancel(c.query)
            return true
        default:
            return false
        }
    }

    /// Checks a shard's part of a query or search before it is run: the shard
    /// must be this worker's and the plan must decode; otherwise the shard is
    /// answered as failed. Registers the cancel flag of an accepted one.
    func accept<Plan>(_ key: String, shard: Int, deadlineMs: Int?,
                      _ decode: () throws(PlanDecodingError) -> Plan) -> (Plan, CancelFlag)? {
        guard configuration.shards.contains(shard) else {
            link.sendNow(key, .shardDone(Body.ShardDone(shard: shard, count: 0,
                                                          error: WireError(code: "bad_shard", message: "this worker does not serve shard \(shard)"))))
            return nil
        }
        let plan: Plan
        do throws(PlanDecodingError) { plan = try decode() } catch {
            link.sendNow(key, .shardDone(Body.ShardDone(shard: shard, count: 0, error: WireError(code: "bad_plan", message: error.description))))
            return nil
        }
        let flag = CancelFlag(deadline: deadlineMs.map { Date().addingTimeInterval(Double($0) / 1000) })
        running.add(key, shard: shard, flag)
        return (plan, flag)
    }

    /// Sends from one of the worker's own threads: queued at once, blocking
    /// only while the socket is backed up (``WorkerLink/post(_:_:)``).
    func reply(_ key: String, _ body: Body) {
        link.post(key, body)
    }

    /// Runs on one of the worker's own threads: blocking is fine here.
    func execute(key: String, shard: Int, query: Query, flag: CancelFlag) {
        defer { running.remove(key, shard: shard) }
        var seq = 0
        // Each batch waits for the next (or the end) before it is sent, so the
        // last one can carry the shard's count and stand for its `shard_done`:
        // a one-batch query is one message back instead of two.
        var held: Body.ShardBatch?
        do {
            let store = try pool.checkout(shard)
            defer { pool.checkin(shard, store) }
            let count = try store.run(query, isCancelled: { flag.isCancelled }) { results in
                seq += 1
                let hits = results.map { Hit(item: $0.item, sort: $0.sortValues.isEmpty ? nil : $0.sortValues, score: $0.score) }
                if let h = held { reply(key, .shardBatch(h)) }
                held = Body.ShardBatch(shard: shard, seq: seq, hits: hits)
            }
            tally.finished()
            if flag.isCancelled {
                if let h = held { reply(key, .shardBatch(h)) }
                reply(key, .shardDone(Body.ShardDone(shard: shard, count: count,
                                                       error: WireError(code: "cancelled", message: "cancelled or past its deadline"))))
            } else if var last = held {
                last.doneCount = count
                reply(key, .shardBatch(last))
            } else {
                reply(key, .shardDone(Body.ShardDone(shard: shard, count: count)))
            }
        } catch {
            if let h = held { reply(key, .shardBatch(h)) }
            tally.finished(failed: !flag.isCancelled)
            logger.notice("query failed on a shard", metadata: ["query.id": "\(key)", "shard": "\(shard)", "error": "\(error)"])
            let message = flag.isCancelled ? "cancelled or past its deadline" : "\(error)"
            reply(key, .shardDone(Body.ShardDone(shard: shard, count: 0, error: WireError(code: flag.isCancelled ? "cancelled" : "query_failed", message: message))))
        }
    }
}

extension QueryWorkerService {
    /// Runs a shard's part of a parameter search on one of the worker's own
    /// threads, and sends its one answer.
    func executeSearch(key: String, shard: Int, plan: SearchPlan, extras: SearchExtras = SearchExtras(), flag: CancelFlag) {
        defer { running.remove(key, shard: shard) }
        do {
            let store = try pool.checkout(shard)
            defer { pool.checkin(shard, store) }
            var answer = try extras.answer(store, plan: plan, isCancelled: { flag.isCancelled })
            answer.shard = shard
            reply(key, .shardSearchResult(answer))
        } catch {
            logger.notice("search failed on a shard", metadata: ["query.id": "\(key)", "shard": "\(shard)", "error": "\(error)"])
            let message = flag.isCancelled ? "cancelled or past its deadline" : "\(error)"
            reply(key, .shardDone(Body.ShardDone(shard: shard, count: 0, error: WireError(code: flag.isCancelled ? "cancelled" : "search_failed", message: message))))
        }
    }
}

/// Cancel flags of the queries running now, by query id.
final class RunningQueries: @unchecked Sendable {
    // `flags` is guarded by `lock`.
    private let lock = NSLock()
    private var flags: [String: [Int: CancelFlag]] = [:]
    func add(_ key: String, shard: Int, _ f: CancelFlag) { lock.lock(); flags[key, default: [:]][shard] = f; lock.unlock() }
    func remove(_ key: String, shard: Int) {
        lock.lock()
        flags[key]?.removeValue(forKey: shard)
        if flags[key]?.isEmpty == true { flags.removeValue(forKey: key) }
        lock.unlock()
    }
    func cancel(_ key: String) {
        lock.lock(); let fs = flags[key].map { Array($0.values) } ?? []; lock.unlock()
        fs.forEach { $0.cancel() }
    }
}
