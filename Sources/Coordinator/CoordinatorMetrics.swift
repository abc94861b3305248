import CoreMetrics
import Foundation
import LimelightConcurrency
import Metrics
import Prometheus

/// The coordinator's Prometheus figures, served by `GET /metrics`.
///
/// Latencies are swift-metrics `Timer`s recorded as they happen (a histogram
/// cannot be rebuilt from a snapshot). Everything else mirrors the coordinator's
/// state and counters at scrape time (`update(from:)`), so `/metrics` and
/// `/stats` are the same figures and the hot paths gain no work. Each metric is
/// made by the registry with its help text (`promtool check metrics` requires
/// one) and handed to swift-metrics as its handler.
///
/// The registry is this object's own, not the process-wide default, so
/// several coordinators in one process (tests) keep separate figures.
/// `docs/operations.md` lists every name; `ops/prometheus/alerts.yml` and the
/// Grafana dashboard use them.
final class CoordinatorMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    /// Client request to completion.
    let queryDuration: CoreMetrics.Timer
    /// Client request to the first result batch.
    let queryFirstBatch: CoreMetrics.Timer
    /// Publish batch received to `publish_ack` sent (every replica committed).
    let publishDuration: CoreMetrics.Timer

    /// Query and publish times run from a fraction of a millisecond (one
    /// shard, a word query) to the 30 s default deadline.
    static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
    ]

    /// The coordinator's counters (`stats.counters`) exported as Prometheus counters.
    static let mirroredCounters: [(counter: CoordinatorCounter, name: String, help: String)] = [
        (.publishBatches, "publish_batches", "Publish requests received."),
        (.publishItems, "publish_items", "Items received in publish requests."),
        (.publishStored, "publish_stored_items", "Items stored (acknowledged as stored)."),
        (.publishRejected, "publish_rejected_items", "Items rejected, with the reason in the publish acknowledgement."),
        (.publishThrottled, "publish_throttled", "Times the coordinator stopped reading client messages because too many publishes were in flight."),
        (.queries, "queries", "Queries received."),
        (.queriesCancelled, "queries_cancelled", "Queries cancelled by their client."),
        (.queriesTimedOut, "queries_timed_out", "Queries that reached their deadline."),
        (.queriesPartial, "queries_partial", "Queries completed without every shard (named in failedShards)."),
        (.deletes, "deletes", "Delete requests received."),
        (.errors, "errors", "Error replies sent to clients and workers."),
        (.workersLost, "workers_lost", "Workers declared dead (no heartbeat, or their connection went away, or a replica that lagged)."),
        (
            .replicasLagging, "replicas_lagging",
            "Replicas declared dead because they left a write unanswered --replica-lag-ms after another replica committed it."
        ),
    ]

    let state = LockedBox(MirrorState())

    struct MirrorState: Sendable {
        var counters: [String: Prometheus.Counter] = [:]
        var counterValues: [String: Int] = [:]
        /// Gauges and per-worker counters by name and labels, for removing series of what went away.
        var gauges: [String: Prometheus.Gauge] = [:]
        var workerCounters: [String: Prometheus.Counter] = [:]
        var workerCounterValues: [String: Int] = [:]
    }

    init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.factory = factory
        func timer(_ name: String, _ help: String) -> CoreMetrics.Timer {
            let h = registry.makeDurationHistogram(
                descriptor: Self.descriptor(name, "seconds", help),
                labels: [], buckets: Self.latencyBuckets)
            return CoreMetrics.Timer(label: "limelight_\(name)_seconds", dimensions: [], handler: h, factory: factory)
        }
        queryDuration = timer("query_duration", "Time from a client's query to its completion.")
        queryFirstBatch = timer("query_first_batch", "Time from a client's query to its first result batch.")
        publishDuration = timer("publish_duration", "Time from a publish request to its acknowledgement (every live replica committed).")
        state.withLock { s in
            for c in Self.mirroredCounters {
                s.counters[c.counter.rawValue] = registry.makeCounter(descriptor: Self.descriptor(c.name, "total", c.help))
            }
        }
    }

    static func descriptor(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "limelight", metricName: name, unitName: unit, helpText: help)
    }

    /// Brings every mirrored figure to `snapshot`'s values, then renders the
    /// Prometheus text format.
    func render(_ snapshot: ClusterSnapshot) -> String {
        update(from: snapshot)
        return registry.emitToString()
    }

    func update(from snapshot: ClusterSnapshot) {
        state.withLock { s in
            // Counters only go up: add what the coordinator counted since the last scrape.
            for c in Self.mirroredCounters {
                let now = snapshot.counters[c.counter.rawValue] ?? 0
                let delta = now - (s.counterValues[c.counter.rawValue] ?? 0)
                if delta > 0 { s.counters[c.counter.rawValue]?.increment(by: Int64(delta)) }
                s.counterValues[c.counter.rawValue] = now
            }

            var seen = Set<String>()
            func gauge(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)], _ value: Double) {
                let key = name + "|" + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
                seen.insert(key)
                let g = s.gauges[key] ?? registry.makeGauge(descriptor: Self.descriptor(name, unit, help), labels: labels)
                s.gauges[key] = g
                g.set(to: value)
            }
            gauge(
                "start_time", "seconds", "When the coordinator started, in seconds since 1970.", [],
                (Date().timeIntervalSince1970 - snapshot.uptimeSeconds).rounded())
            gauge("shards", "", "Shards in the cluster (fixed when it is created).", [], Double(snapshot.shardCount))
            gauge("queries_in_flight", "", "Queries running now.", [], Double(snapshot.queriesInFlight))
            gauge("publishes_in_flight", "", "Publish batches waiting for their acknowledgement.", [], Double(snapshot.publishesInFlight))
            for sh in snapshot.shards {
                let l = [("shard", String(sh.shard))]
                gauge("shard_served", "", "1 when the shard has a live indexer and a live query worker, else 0.", l, sh.served ? 1 : 0)
                gauge("shard_indexers", "", "Live indexers (replicas) of the shard.", l, Double(sh.indexers.count))
                gauge("shard_query_workers", "", "Live query workers of the shard.", l, Double(sh.queryWorkers.count))
                if let n = sh.items { gauge("items", "", "Items stored in the shard, as its indexer last reported.", l, Double(n)) }
                if let b = sh.databaseBytes {
                    gauge("shard_database", "bytes", "Size of the shard's SQLite file and write-ahead log.", l, Double(b))
                }
                if let t = sh.lastWrite {
                    gauge(
                        "shard_last_write", "timestamp_seconds", "When an indexer last committed a write to the shard.", l,
                        t.timeIntervalSince1970)
                }
            }
            for role in ["indexer", "query"] {
                gauge(
                    "workers", "", "Live workers by role.", [("role", role)],
                    Double(snapshot.workers.filter { $0.live && $0.record.role.rawValue == role }.count))
            }
            var seenWorkerCounters = Set<String>()
            for w in snapshot.workers {
                let l = [("worker", w.record.id), ("role", w.record.role.rawValue), ("host", w.record.host ?? "")]
                gauge("worker_up", "", "1 for a live worker, 0 for one declared dead within the last hour.", l, w.live ? 1 : 0)
                guard w.live else { continue }
                gauge("worker_queue_depth", "", "Requests sent to the worker and not answered yet.", l, Double(w.queueDepth))
                guard let st = w.record.status else { continue }
                gauge("worker_uptime", "seconds", "Seconds since the worker process started.", l, st.uptimeSeconds.rounded())
                if let f = st.diskFreeBytes {
                    gauge("worker_disk_free", "bytes", "Free bytes of the file system holding the worker's data folder.", l, Double(f))
                }
                if let t = st.diskSizeBytes {
                    gauge("worker_disk_size", "bytes", "Size of the file system holding the worker's data folder.", l, Double(t))
                }
                // Counts a worker reports since it started: a lower figure means it restarted.
                for (name, help, value) in [
                    ("worker_batches", "Requests the worker finished (writes, deletes, shard queries).", st.handled),
                    ("worker_errors", "Requests the worker failed as a whole.", st.errors),
                ] {
                    let key = name + "|" + w.record.id
                    seenWorkerCounters.insert(key)
                    let c = s.workerCounters[key] ?? registry.makeCounter(descriptor: Self.descriptor(name, "total", help), labels: l)
                    s.workerCounters[key] = c
                    let last = s.workerCounterValues[key] ?? 0
                    let delta = value >= last ? value - last : value
                    if delta > 0 { c.increment(by: Int64(delta)) }
                    s.workerCounterValues[key] = value
                }
            }
            // Series of shards and workers that are gone.
            for (key, g) in s.gauges where !seen.contains(key) {
                registry.unregisterGauge(g)
                s.gauges.removeValue(forKey: key)
            }
            for (key, c) in s.workerCounters where !seenWorkerCounters.contains(key) {
                registry.unregisterCounter(c)
                s.workerCounters.removeValue(forKey: key)
                s.workerCounterValues.removeValue(forKey: key)
            }
        }
    }
}
