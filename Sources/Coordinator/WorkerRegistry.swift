import Foundation
import WireProtocol

/// The workers the coordinator knows: who is registered, on which
/// connection, for which role and shards, when each was last heard from,
/// and who was lost and why.
///
/// A value with no sockets and no clock of its own, so that its decisions —
/// whether a registration is valid, whether it replaces a worker that is
/// still registered, who is silent for too long, which query worker takes a
/// shard next — are unit-tested without processes (`WorkerRegistryTests`).
/// ``CoordinatorCore`` owns one, asks it, and does the sending; forgetting a
/// worker here is only the registry's part: the core then fails or retries
/// the worker's writes and queries through its trackers.
struct WorkerRegistry: Sendable {
    /// The registered workers, by id.
    private(set) var workers: [String: WorkerRecord] = [:]
    /// Worker ids by ZeroMQ route: how a message finds its sender.
    private(set) var byRoute: [[Data]: String] = [:]
    /// Workers declared dead, kept for the stats and metrics until
    /// ``LostWorker/keepSeconds`` pass or they register again.
    private(set) var lost: [String: LostWorker] = [:]
    /// ``liveIDs(_:shard:)``'s answers, rebuilt whenever a worker comes or
    /// goes (rarely) because every query and search asks on its path.
    private var live: [LiveKey: [String]] = [:]
    /// Spreads shards' parts over their query workers (``nextQueryWorker(shard:tried:isFresh:)``).
    private var roundRobin = 0

    struct LiveKey: Hashable, Sendable {
        let role: Body.Register.Role
        let shard: Int
    }

    /// What to do with a `register` whose proof (if the cluster needs one) is good.
    enum Admission: Equatable, Sendable {
        /// Refuse it with this error; nothing changes.
        case refuse(WireError)
        /// Register it; first forget the worker of the same id that it
        /// replaces (its in-flight work will not be answered), if any.
        case register(replacing: Replaced?)
    }

    struct Replaced: Equatable, Sendable {
        var worker: String
        var reason: String
    }

    /// Judges a registration: its shards must exist, and a worker of the same
    /// id on another connection, or from another process (a restart quicker
    /// than the heartbeat), is replaced.
    func admit(_ r: Body.Register, route: [Data], shardCount: Int) -> Admission {
        let bad = r.shards.filter { $0 < 0 || $0 >= shardCount }
        if bad.isEmpty && r.shards.isEmpty {
            return .refuse(WireError(code: "invalid_message", message: "a worker must serve at least one shard"))
        }
        guard bad.isEmpty else {
            return .refuse(
                WireError(
                    code: "bad_shard",
                    message:
                        "shards \(bad.map(String.init).joined(separator: ",")) do not exist: this cluster has \(shardCount) (0-\(shardCount - 1))"))
        }
        guard let old = workers[r.worker] else { return .register(replacing: nil) }
        if old.route != route { return .register(replacing: Replaced(worker: old.id, reason: "re-registered from a new connection")) }
        // The same id from a new process (restarted at once, before it was
        // missed): what was in flight to the old one will not be answered.
        if let pid = r.pid, let was = old.pid, pid != was {
            return .register(replacing: Replaced(worker: old.id, reason: "restarted (pid \(was) → \(pid))"))
        }
        return .register(replacing: nil)
    }

    /// Records a registered worker (after ``admit(_:route:shardCount:)``
    /// and forgetting whom it replaces); it is no longer listed as lost.
    mutating func register(_ record: WorkerRecord) {
        workers[record.id] = record
        byRoute[record.route] = record.id
        lost.removeValue(forKey: record.id)
        rebuildLive()
    }

    /// The registered worker on `route`, marked as heard from at `now`; nil
    /// for a connection the coordinator does not know (it must register).
    mutating func heard(route: [Data], at now: ContinuousClock.Instant) -> String? {
        guard let id = byRoute[route], workers[id] != nil else { return nil }
        // Set in place: a record copied out and stored back retains and
        // releases every field at every message.
        workers[id]?.lastSeen = now
        return id
    }

    /// Keeps what a worker's heartbeat reported.
    mutating func report(_ status: WorkerStatus, of id: String) {
        workers[id]?.status = status
    }

    /// Removes a worker, keeping it as lost with `reason`; returns its record,
    /// or nil when it was not registered (forgetting twice does nothing).
    mutating func forget(_ id: String, reason: String, at date: Date) -> WorkerRecord? {
        guard let w = workers.removeValue(forKey: id) else { return nil }
        byRoute.removeValue(forKey: w.route)
        lost[id] = LostWorker(record: w, lostAt: date, reason: reason)
        pruneLost(at: date)
        rebuildLive()
        return w
    }

    /// Drops lost workers kept longer than ``LostWorker/keepSeconds``.
    mutating func pruneLost(at date: Date) {
        let cutoff = date.addingTimeInterval(-LostWorker.keepSeconds)
        lost = lost.filter { $0.value.lostAt > cutoff }
    }

    /// The workers not heard from for longer than `limit`: the sweep declares
    /// them dead. The query worker inside the coordinator (``LocalQueryWorker``)
    /// sends no heartbeats and is never among them.
    func silent(at now: ContinuousClock.Instant, limit: Duration) -> [String] {
        workers.values.filter { $0.lastSeen.duration(to: now) > limit && $0.route != LocalQueryWorker.route }.map(\.id).sorted()
    }

    /// The ids of the workers of `role` serving `shard`, sorted.
    func liveIDs(_ role: Body.Register.Role, shard: Int) -> [String] {
        live[LiveKey(role: role, shard: shard)] ?? []
    }

    func liveWorkers(_ role: Body.Register.Role, shard: Int) -> [WorkerRecord] {
        liveIDs(role, shard: shard).compactMap { workers[$0] }
    }

    /// The shards with a live indexer and a live query worker.
    func servedShards(shardCount: Int) -> [Int] {
        (0..<shardCount).filter { !liveIDs(.indexer, shard: $0).isEmpty && !liveIDs(.query, shard: $0).isEmpty }
    }

    /// The live indexers, sorted by id: a declaration goes to each.
    var indexers: [WorkerRecord] {
        workers.values.filter { $0.role == .indexer }.sorted { $0.id < $1.id }
    }

    /// The next query worker for a shard's part of a query or search: a live
    /// one not in `tried` that `isFresh` accepts (its replica has every
    /// committed change), taken round robin so parts spread over replicas.
    mutating func nextQueryWorker(shard: Int, tried: Set<String>, isFresh: (String) -> Bool) -> WorkerRecord? {
        let ids = liveIDs(.query, shard: shard)
        func candidate(_ id: String) -> Bool { !tried.contains(id) && isFresh(id) }
        let count = ids.reduce(0) { $0 + (candidate($1) ? 1 : 0) }
        guard count > 0 else { return nil }
        roundRobin &+= 1
        var k = roundRobin % count
        for id in ids where candidate(id) {
            if k == 0 { return workers[id] }
            k -= 1
        }
        return nil
    }

    /// Whether ``nextQueryWorker(shard:tried:isFresh:)`` would find one.
    func hasQueryWorker(shard: Int, tried: Set<String>, isFresh: (String) -> Bool) -> Bool {
        liveIDs(.query, shard: shard).contains { !tried.contains($0) && isFresh($0) }
    }

    private mutating func rebuildLive() {
        var m: [LiveKey: [String]] = [:]
        for w in workers.values {
            for s in Set(w.shards) { m[LiveKey(role: w.role, shard: s), default: []].append(w.id) }
        }
        for k in m.keys { m[k]!.sort() }
        live = m
    }
}
