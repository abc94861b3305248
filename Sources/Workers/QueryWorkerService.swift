import Allocator
import Foundation
import Items
import LimelightConcurrency
import Logging
import QueryPlan
import ShardStore
import Synchronization
import WireProtocol
import ZeroMQ

/// Settings of `limelight-query`.
package struct QueryWorkerConfiguration: WorkerLinkConfiguration {
    package var coordinator: String = "tcp://127.0.0.1:7701"
    package var data: String
    package var shards: [Int]
    package var workerID: String
    /// Queries evaluated at once; more wait their turn.
    package var concurrency: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Shard queries that may wait for a thread; past it one is answered `busy`.
    package var maxQueued: Int = 1000
    /// See `Body.Register.replica`; nil: this host and data folder.
    package var replica: String?
    /// Where the socket's thread and ZeroMQ's I/O thread run: together, on
    /// the CPU the link starts on (see ``ThreadPlacement``).
    package var socketPlacement: ThreadPlacement = .here
    package var heartbeatMs: Int = 1000
    package var livenessMs: Int = 3000
    /// The cluster secret and CURVE keys shown to the coordinator.
    package var credentials = WorkerCredentials()
    /// The resident bytes past which the mapped derived files' pages are let
    /// go (see ``ResidentBound``); nil: never.
    package var memoryBudget: Int?
    /// How often the resident bytes are compared with ``memoryBudget``.
    package var memoryCheckMs: Int = 1000

    package init(data: String, shards: [Int], workerID: String? = nil) {
        self.data = data
        self.shards = shards
        self.workerID = workerID ?? "query-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }
}

/// A flag a running query polls; set by `cancel` or its deadline.
final class CancelFlag: Sendable {
    private let cancelled = Atomic<Bool>(false)
    let deadline: Date?
    init(deadline: Date?) { self.deadline = deadline }
    func cancel() { cancelled.store(true, ordering: .releasing) }
    var isCancelled: Bool {
        if cancelled.load(ordering: .acquiring) { return true }
        if let deadline, Date() >= deadline { return true }
        return false
    }
}

/// Idle read-only connections per shard, so concurrent queries each get one.
/// A checked-out connection is used by one query's thread until it is
/// checked in (``ThreadConfined``).
final class ConnectionPool: Sendable {
    private let idle = Mutex<[Int: [ThreadConfined<ShardStore>]]>([:])
    let data: String
    let logger: Logger
    init(data: String, logger: Logger) { self.data = data; self.logger = logger }

    func checkout(_ shard: Int) throws -> ThreadConfined<ShardStore> {
        if let s = idle.withLock({ $0[shard]?.popLast() }) { return s }
        var l = logger
        l[metadataKey: "shard"] = "\(shard)"
        return ThreadConfined(try ShardStore(path: shardPath(data: data, shard: shard), mode: .readOnly, logger: l))
    }

    func checkin(_ shard: Int, _ store: ThreadConfined<ShardStore>) {
        idle.withLock { $0[shard, default: []].append(store) }
    }
}

/// The query worker process: opens shards read-only beside the indexer (SQLite
/// WAL lets readers run while it writes), evaluates plans and streams batches.
///
/// Each query runs on one of the worker's own threads, never on Swift's
/// cooperative pool nor GCD's; sending a batch waits for the socket, so a slow coordinator slows the
/// scan instead of piling up batches in memory.
package final class QueryWorkerService: Sendable {
    package let configuration: QueryWorkerConfiguration
    let logger: Logger
    let link: WorkerLink
    let runner: ShardQueryRunner

    package init(configuration: QueryWorkerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.workerID)"
        self.logger = logger
        let link = try WorkerLink(role: .query, configuration: configuration, logger: logger)
        self.link = link
        // Batches leave with `post` from the runner's threads (queued at once,
        // blocking only while the socket is backed up); refusals with `sendNow`
        // from the socket's thread. A lone search runs on the socket's thread
        // (`inline`), as the coordinator's local worker does, and its answer's
        // `post` then never waits.
        runner = ShardQueryRunner(
            data: configuration.data, shards: configuration.shards, workerID: configuration.workerID,
            concurrency: configuration.concurrency, maxQueued: configuration.maxQueued, logger: logger,
            reply: { link.post($0, $1) }, replyNow: { link.sendNow($0, $1) },
            inline: { link.deferUntilRead($0) })
    }

    package var isRegistered: Bool { link.isRegistered }
    /// Why the coordinator refused this worker, if it did (`run` has then returned).
    package var refusal: String? { link.refusal }

    package func run() async {
        logger.info(
            "query worker serving",
            metadata: [
                "shards": "\(configuration.shards.map(String.init).joined(separator: ","))",
                "data": "\(configuration.data)", "process.allocator": "\(ProcessAllocator.name)",
            ])
        link.reportStatus { self.runner.tally.status(shards: nil, dataFolder: self.configuration.data) }
        // Shard queries, searches and cancels are taken on the socket's
        // thread and handed straight to the worker's own threads.
        link.handleInline { envelope in self.runner.take(envelope) }
        let watch = configuration.memoryBudget.map { limit in Task { await self.keepResident(within: limit) } }
        // Tests only (``TestHold``): a query worker started, not registered.
        await TestHold.wait("query-register")
        await link.serve { envelope in await self.handle(envelope) }
        watch?.cancel()
        runner.stop()
    }

    /// Lets the mapped derived files' pages go whenever the process's
    /// resident bytes pass `limit` (see ``ResidentBound``), until cancelled.
    func keepResident(within limit: Int) async {
        var bound = ResidentBound(limit: limit)
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(configuration.memoryCheckMs))
            guard let before = ResidentBound.resident(), bound.shouldRelease(resident: before, now: .now) else { continue }
            let mapped = ShardStore.releaseMappedPages()
            let after = ResidentBound.resident() ?? before
            bound.released(before: before, after: after, now: .now)
            logger.debug(
                "mapped pages let go",
                metadata: [
                    "memory.resident_before": "\(before)", "memory.resident_after": "\(after)",
                    "memory.mapped_bytes": "\(mapped)", "memory.limit": "\(limit)",
                ])
        }
    }

    package func shutdown() {
        link.close()
    }

    /// What reaches the link's task: anything the runner did not take.
    func handle(_ envelope: Envelope) async {
        if runner.take(envelope) { return }
        await link.send(
            envelope.id, .error(WireError(code: "unexpected_type", message: "a query worker does not handle '\(envelope.type.rawValue)'")))
    }
}

/// Cancel flags of the queries running now, by query id.
final class RunningQueries: Sendable {
    private let flags = Mutex<[String: [Int: CancelFlag]]>([:])
    func add(_ key: String, shard: Int, _ f: CancelFlag) { flags.withLock { $0[key, default: [:]][shard] = f } }
    func remove(_ key: String, shard: Int) {
        flags.withLock {
            $0[key]?.removeValue(forKey: shard)
            if $0[key]?.isEmpty == true { $0.removeValue(forKey: key) }
        }
    }
    func cancel(_ key: String) {
        let fs = flags.withLock { $0[key].map { Array($0.values) } ?? [] }
        fs.forEach { $0.cancel() }
    }
}
