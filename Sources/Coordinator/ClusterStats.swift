import ControlPlane
import Foundation
import Items
import WireProtocol

/// A worker the coordinator declared dead, kept so that operators see it went.
///
/// Without this a worker that dies simply vanishes from `/stats`, and nothing
/// tells "never existed" from "crashed a minute ago". It stays listed (as
/// `lostWorkers` and `limelight_worker_up 0`) for `LostWorker.keepSeconds`, or
/// until it registers again.
struct LostWorker: Sendable {
    static let keepSeconds: TimeInterval = 3600
    var record: WorkerRecord
    var lostAt: Date
    var reason: String
}

/// Rates over the last few seconds, from the coordinator's own counters.
///
/// Sampled on each liveness sweep (twice a heartbeat), so `/stats` shows what
/// is happening now rather than an average since start; Prometheus computes
/// its own rates from the counters and does not use these.
struct RateWindow: Sendable {
    static let windowSeconds = 10.0
    struct Sample: Sendable {
        var at: ContinuousClock.Instant
        var counters: [String: Int]
    }
    /// Starts with zero counts at creation, so traffic before the first sweep is counted too.
    var samples: [Sample] = [Sample(at: .now, counters: [:])]

    mutating func sample(_ counters: [String: Int], at now: ContinuousClock.Instant = .now) {
        samples.append(Sample(at: now, counters: counters))
        let horizon = Duration.seconds(Self.windowSeconds)
        while samples.count > 2, samples[0].at.duration(to: now) > horizon { samples.removeFirst() }
    }

    /// Per second, of `counter`, from the oldest sample kept to `current`.
    func perSecond(_ counter: CoordinatorCounter, current: [String: Int], now: ContinuousClock.Instant = .now) -> Double {
        let key = counter.rawValue
        guard let first = samples.first else { return 0 }
        let seconds = first.at.duration(to: now).milliseconds / 1000
        guard seconds > 0.05 else { return 0 }
        let delta = Double((current[key] ?? 0) - (first.counters[key] ?? 0))
        return (max(0, delta) / seconds * 100).rounded() / 100
    }
}

/// The cluster as `GET /stats`, `GET /metrics` and the status page see it, at one instant.
///
/// One value feeds all three, so the JSON, the Prometheus figures and the page
/// never disagree about the same moment.
struct ClusterSnapshot: Sendable {
    struct Shard: Sendable {
        var shard: Int
        var indexers: [String]
        var queryWorkers: [String]
        /// A live indexer and a live query worker.
        var served: Bool { !indexers.isEmpty && !queryWorkers.isEmpty }
        /// From the indexers' heartbeats; nil until one has reported. With
        /// replicas, the largest figure (they converge once writes are acked).
        var items: Int?
        var databaseBytes: Int64?
        var lastWrite: Date?
    }
    struct Worker: Sendable {
        var record: WorkerRecord
        var live: Bool
        var lastSeenMsAgo: Int
        /// Requests sent to the worker that it has not answered yet.
        var queueDepth: Int
        var lostAt: Date?
        var lostReason: String?
    }
    /// The coordinator's clock when the snapshot was taken: pages show ages
    /// against it, not against the browser's clock, which may be off.
    var time: Date
    var uptimeSeconds: Double
    var shardCount: Int
    var shards: [Shard]
    /// Live workers, then lost ones.
    var workers: [Worker]
    var counters: [String: Int]
    var queriesInFlight: Int
    var publishesInFlight: Int
    var deletesInFlight: Int
    var queryLatencyMs: [Double]
    var firstBatchLatencyMs: [Double]
    var publishItemsPerSecond: Double
    var publishBatchesPerSecond: Double
    var queriesPerSecond: Double

    var servedShards: [Int] { shards.filter(\.served).map(\.shard) }
}

extension CoordinatorCore {
    /// The latencies the stats describe: the last this many of each series.
    static let latencySamples = 4096

    /// Appends `v` to a series of which ``snapshot()`` reads the last
    /// ``latencySamples``. Trimmed a window at a time: trimmed one sample at
    /// a time, a full series moved all of itself (32 KB) at every query.
    func record(_ series: inout [Double], _ v: Double) { Self.record(&series, v) }

    static func record(_ series: inout [Double], _ v: Double) {
        series.append(v)
        if series.count >= 2 * latencySamples { series.removeFirst(series.count - latencySamples) }
    }

    /// Forgets lost workers past `LostWorker.keepSeconds`: a worker restarted
    /// under a new id (the default id has its pid) leaves one entry per death.
    func snapshot() -> ClusterSnapshot {
        let now = ContinuousClock.now
        registry.pruneLost(at: Date())

        var depth: [String: Int] = [:]
        writes.outstanding(into: &depth)
        inFlight.outstanding(into: &depth)

        let live = workers.values.sorted { $0.id < $1.id }.map { w in
            ClusterSnapshot.Worker(
                record: w, live: true, lastSeenMsAgo: Int(w.lastSeen.duration(to: now).milliseconds),
                queueDepth: depth[w.id] ?? 0)
        }
        let lost = registry.lost.values.sorted { $0.record.id < $1.record.id }.map { l in
            ClusterSnapshot.Worker(
                record: l.record, live: false, lastSeenMsAgo: Int(l.record.lastSeen.duration(to: now).milliseconds),
                queueDepth: 0, lostAt: l.lostAt, lostReason: l.reason)
        }
        let shards = (0..<admittedShardCount).map { s -> ClusterSnapshot.Shard in
            let indexers = liveWorkers(.indexer, shard: s)
            var shard = ClusterSnapshot.Shard(
                shard: s, indexers: indexers.map(\.id),
                queryWorkers: liveWorkers(.query, shard: s).map(\.id))
            for r in indexers.compactMap({ $0.status?.shards?.first { $0.shard == s } }) {
                shard.items = max(shard.items ?? 0, r.items)
                shard.databaseBytes = max(shard.databaseBytes ?? 0, r.databaseBytes)
                if let t = r.lastWriteSeconds {
                    let d = Date(timeIntervalSince1970: t)
                    shard.lastWrite = max(shard.lastWrite ?? d, d)
                }
            }
            return shard
        }
        return ClusterSnapshot(
            time: Date(), uptimeSeconds: Date().timeIntervalSince(startedAt), shardCount: shardCount, shards: shards,
            workers: live + lost, counters: counters, queriesInFlight: queries.count, publishesInFlight: writes.publishes.count,
            deletesInFlight: writes.deletes.count, queryLatencyMs: Array(queryLatenciesMs.suffix(Self.latencySamples)),
            firstBatchLatencyMs: Array(firstBatchLatenciesMs.suffix(Self.latencySamples)),
            publishItemsPerSecond: rates.perSecond(.publishItems, current: counters, now: now),
            publishBatchesPerSecond: rates.perSecond(.publishBatches, current: counters, now: now),
            queriesPerSecond: rates.perSecond(.queries, current: counters, now: now))
    }

    /// The statistics object of `stats_reply` and `GET /stats`.
    func stats() -> JSONValue {
        var o = snapshot().json.objectValue ?? [:]
        o["replication"] = replicationJSON()
        if let election { o["coordinator"] = electionJSON(election) }
        if let m = shardMap {
            o["shardMap"] = .object([
                "slots": .number(Double(m.slots)), "shards": .number(Double(m.shards)), "epoch": .number(Double(m.epoch)),
            ])
        }
        // What a query leaves behind until it completes: all zero when idle,
        // whether its client stayed to the end or went away mid-stream.
        let state = inFlight.state
        o["queryState"] = .object([
            "running": .number(Double(state.running)), "searches": .number(Double(state.searches)),
            "clients": .number(Double(state.clients)),
            "firstBatchPending": .number(Double(state.firstBatchPending)),
        ])
        return .object(o)
    }
}

extension ClusterSnapshot {
    /// The `stats` object (`proto-schemas/stats_reply.schema.json`): the
    /// base fields, and the figures the heartbeats and rates add. `workers`
    /// lists live workers only; lost ones are in `lostWorkers`.
    var json: JSONValue {
        func num(_ d: Double) -> JSONValue { .number(d) }
        func int(_ i: Int) -> JSONValue { .number(Double(i)) }
        func round3(_ d: Double) -> Double { (d * 1000).rounded() / 1000 }
        func pct(_ xs: [Double], _ p: Double) -> JSONValue {
            guard !xs.isEmpty else { return .null }
            let s = xs.sorted()
            return num(round3(s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]))
        }
        func worker(_ w: Worker) -> JSONValue {
            var o: [String: JSONValue] = [
                "id": .string(w.record.id), "role": .string(w.record.role.rawValue),
                "shards": .array(w.record.shards.map(int)),
                "state": .string(w.live ? "live" : "lost"),
                "lastSeenMsAgo": int(w.lastSeenMsAgo),
                "registeredAt": .string(ISODate.format(w.record.registeredAt)),
                "queueDepth": int(w.queueDepth),
            ]
            if let h = w.record.host { o["host"] = .string(h) }
            if let p = w.record.pid { o["pid"] = int(p) }
            if let s = w.record.status {
                o["uptimeSeconds"] = num((s.uptimeSeconds * 10).rounded() / 10)
                o["batches"] = int(s.handled)
                o["errors"] = int(s.errors)
                if let f = s.diskFreeBytes { o["diskFreeBytes"] = num(Double(f)) }
                if let t = s.diskSizeBytes { o["diskSizeBytes"] = num(Double(t)) }
                if let n = s.staleEpochRefusals { o["staleEpochRefusals"] = int(n) }
            }
            if let at = w.lostAt { o["lostAt"] = .string(ISODate.format(at)) }
            if let why = w.lostReason { o["lostReason"] = .string(why) }
            return .object(o)
        }
        let shardList: [JSONValue] = shards.map { s in
            .object([
                "shard": int(s.shard),
                "indexers": .array(s.indexers.map(JSONValue.string)),
                "queryWorkers": .array(s.queryWorkers.map(JSONValue.string)),
                "served": .bool(s.served),
                "items": s.items.map(int) ?? .null,
                "databaseBytes": s.databaseBytes.map { num(Double($0)) } ?? .null,
                "lastWrite": s.lastWrite.map { .string(ISODate.format($0)) } ?? .null,
            ])
        }
        let items = shards.compactMap(\.items)
        return .object([
            "time": .string(ISODate.format(time)),
            "uptimeSeconds": num((uptimeSeconds * 10).rounded() / 10),
            "shardCount": int(shardCount),
            "servedShards": .array(servedShards.map(int)),
            "items": items.isEmpty ? .null : int(items.reduce(0, +)),
            "shards": .array(shardList),
            "workers": .array(workers.filter(\.live).map(worker)),
            "lostWorkers": .array(workers.filter { !$0.live }.map(worker)),
            "counters": .object(counters.mapValues(int)),
            "inFlight": .object([
                "queries": int(queriesInFlight), "publishes": int(publishesInFlight),
                "deletes": int(deletesInFlight),
            ]),
            "rates": .object([
                "publishItemsPerSecond": num(publishItemsPerSecond),
                "publishBatchesPerSecond": num(publishBatchesPerSecond),
                "queriesPerSecond": num(queriesPerSecond),
                "windowSeconds": num(RateWindow.windowSeconds),
            ]),
            "queryLatencyMs": .object([
                "p50": pct(queryLatencyMs, 50), "p95": pct(queryLatencyMs, 95),
                "p99": pct(queryLatencyMs, 99), "samples": int(queryLatencyMs.count),
            ]),
            "firstBatchLatencyMs": .object([
                "p50": pct(firstBatchLatencyMs, 50), "p95": pct(firstBatchLatencyMs, 95),
                "p99": pct(firstBatchLatencyMs, 99),
            ]),
        ])
    }
}
