import Testing

@testable import Coordinator

/// Counters are typed, but operators, dashboards and alerts read their
/// names: `/stats` shows the raw names and `/metrics` the Prometheus ones.
@Suite("Counter names")
struct CoordinatorCounterTests {
    @Test func theMirroredCountersKeepTheirStatsAndPrometheusNames() {
        let names = Dictionary(uniqueKeysWithValues: CoordinatorMetrics.mirroredCounters.map { ($0.counter.rawValue, $0.name) })
        #expect(
            names == [
                "publish.batches": "publish_batches", "publish.items": "publish_items", "publish.stored": "publish_stored_items",
                "publish.rejected": "publish_rejected_items", "publish.throttled": "publish_throttled", "queries": "queries",
                "queries.cancelled": "queries_cancelled", "queries.timedOut": "queries_timed_out", "queries.partial": "queries_partial",
                "deletes": "deletes", "errors": "errors", "workers.lost": "workers_lost", "replicas.lagging": "replicas_lagging",
            ])
    }

    @Test func namesAreTheOnesStatsHasAlwaysShown() {
        #expect(CoordinatorCounter.keysTooManyItems.rawValue == "keys.tooManyItems")
        #expect(CoordinatorCounter.catchUpDetached.rawValue == "catchup.detached")
        #expect(CoordinatorCounter.connectionsRefusedWorkers.rawValue == "connections.refused.workers")
        #expect(CoordinatorCounter.queriesBusyRetried.rawValue == "queries.busyRetried")
    }
}
