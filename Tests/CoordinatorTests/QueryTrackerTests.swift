import Foundation
import QueryPlan
import Testing
import WireProtocol

@testable import Coordinator

/// The query and search tracker's decisions, without processes: a worker
/// lost mid-query, a busy worker, a failed search shard, cancels and
/// deadlines.
@Suite("Query tracker")
struct QueryTrackerTests {
    static let client = [Data("client".utf8)]
    static func anyone(_ tried: Set<String>) -> Bool { true }
    static func nobody(_ tried: Set<String>) -> Bool { false }

    /// Shards 0 and 1 running on q1, shard 2 on q2.
    static func scatter() -> ShardScatter {
        var s = ShardScatter()
        s.assign(0, to: "q1")
        s.assign(1, to: "q1")
        s.assign(2, to: "q2")
        return s
    }

    /// A worker lost mid-query: a shard of which nothing reached the client
    /// starts over on another replica; one the client has results of is
    /// named failed (a second run would repeat them).
    @Test func aLostWorkersShardsRetryUnlessTheClientHasSomeOfThem() {
        var s = Self.scatter()
        s.delivered(3, of: 1)
        let outcomes = s.lost("q1")
        #expect(outcomes.map(\.shard) == [0, 1])
        #expect(outcomes.map(\.outcome) == [.retry, .finished])
        #expect(s.failed == [ShardFailure(shard: 1, reason: "query worker q1 was lost mid-stream")])
        #expect(!s.isDone)
        // The retry goes to another worker; the lost one stays tried.
        s.assign(0, to: "q3")
        #expect(s.tried(0) == ["q1", "q3"])
        #expect(s.lost("q9").isEmpty)
    }

    /// With no replica left to retry on, the shard fails, saying so.
    @Test func aShardWithNoWorkerLeftFails() {
        var s = ShardScatter()
        s.unassignable(0)
        s.assign(1, to: "q1")
        _ = s.lost("q1")
        s.unassignable(1)
        #expect(
            s.failed == [
                ShardFailure(shard: 0, reason: "no live query worker"),
                ShardFailure(shard: 1, reason: "every query worker for the shard failed"),
            ])
        #expect(s.isDone)
    }

    /// A busy worker's shard is retried elsewhere, but only before any of
    /// it reached the client and while another replica is left; any other
    /// error fails the shard. Only the shard's current worker is heard.
    @Test func aBusyShardRetriesElsewhereOnlyWhileNothingWasDelivered() {
        let busy = WireError(code: "busy", message: "queue full")
        var s = Self.scatter()
        #expect(s.done(0, by: "q2", error: nil, another: Self.anyone) == .ignored)
        var asked: Set<String> = []
        #expect(
            s.done(
                0, by: "q1", error: busy,
                another: {
                    asked = $0; return true
                }) == .retry)
        #expect(asked == ["q1"])
        #expect(s.failed.isEmpty)

        s.delivered(1, of: 1)
        #expect(s.done(1, by: "q1", error: busy, another: Self.anyone) == .finished)
        #expect(s.done(2, by: "q2", error: busy, another: Self.nobody) == .finished)
        #expect(s.failed.map(\.shard) == [1, 2])

        var t = Self.scatter()
        #expect(t.done(0, by: "q1", error: WireError(code: "store_failed", message: "corrupt"), another: Self.anyone) == .finished)
        #expect(t.done(1, by: "q1", error: nil, another: Self.anyone) == .finished)
        #expect(t.failed == [ShardFailure(shard: 0, reason: "corrupt")])
        #expect(!t.isDone)
        #expect(t.done(2, by: "q2", error: nil, another: Self.anyone) == .finished)
        #expect(t.isDone)
    }

    /// A search's shard that failed on its worker tries another replica
    /// while one is left, and is otherwise named with the reason.
    @Test func aFailedSearchShardTriesAnotherReplicaThenFails() {
        var s = Self.scatter()
        #expect(s.shardFailed(0, by: "q1", reason: "boom", another: Self.anyone) == .retry)
        #expect(s.failed.isEmpty)
        s.assign(0, to: "q2")
        #expect(s.shardFailed(0, by: "q1", reason: "late", another: Self.anyone) == .ignored)
        #expect(s.shardFailed(0, by: "q2", reason: "boom again", another: Self.nobody) == .finished)
        #expect(s.failed == [ShardFailure(shard: 0, reason: "boom again")])
        #expect(s.shard(runBy: "q2") == 2)
    }

    /// A deadline stops every running shard, tells its worker, and names it
    /// failed; a cancel or a reached limit stops them without naming any.
    @Test func deadlinesFailTheRunningShardsAndCancelsDoNot() {
        var s = Self.scatter()
        _ = s.done(2, by: "q2", error: nil, another: Self.anyone)
        let stopped = s.stop(reason: "no answer within the deadline of 50 ms")
        #expect(stopped.map(\.shard) == [0, 1] && stopped.map(\.worker) == ["q1", "q1"])
        #expect(s.failed.map(\.shard) == [0, 1])
        #expect(s.failed.allSatisfy { $0.reason == "no answer within the deadline of 50 ms" })
        #expect(s.isDone)

        var c = Self.scatter()
        #expect(c.stop(reason: nil).count == 3)
        #expect(c.failed.isEmpty && c.isDone)
        #expect(c.stop(reason: "again").isEmpty)
    }

    // MARK: The tracker

    static func query(_ key: String, request: String, client: [Data] = client) -> RunningQuery {
        RunningQuery(key: key, client: client, requestID: request, query: Query(predicate: .all), planJSON: .null, deadlineMs: 0, started: .now)
    }

    /// A cancel finds the client's request; an ended query is forgotten with
    /// its request, so a late cancel finds nothing.
    @Test func cancelsFindTheClientsRunningRequest() {
        var t = QueryTracker()
        let other = [Data("other".utf8)]
        t.begin(Self.query("q1", request: "r1"))
        t.begin(Self.query("q2", request: "r1", client: other))
        #expect(t.cancelled(client: Self.client, requestID: "r1") == .query("q1"))
        #expect(t.cancelled(client: other, requestID: "r1") == .query("q2"))
        #expect(t.cancelled(client: Self.client, requestID: "r2") == nil)
        #expect(t.end("q1")?.key == "q1")
        #expect(t.end("q1") == nil)
        #expect(t.cancelled(client: Self.client, requestID: "r1") == nil)
        #expect(t.queries(of: other) == ["q2"])
        #expect(t.state.running == 1 && t.state.clients == 1)
    }

    @Test func theFirstBatchIsCountedOncePerQuery() {
        var t = QueryTracker()
        t.begin(Self.query("q1", request: "r1"))
        let first = t.firstBatch("q1"), second = t.firstBatch("q1")
        #expect(first && !second)
        #expect(t.state.firstBatchPending == 1)
        _ = t.end("q1")
        #expect(t.state.firstBatchPending == 0 && t.state.clients == 0)
    }

    /// A lost worker's shards are found in every query that ran them.
    @Test func aLostWorkerIsFoundInEveryQuery() {
        var t = QueryTracker()
        var a = Self.query("qa", request: "r1")
        a.scatter.assign(0, to: "w1")
        a.scatter.assign(1, to: "w2")
        var b = Self.query("qb", request: "r2")
        b.scatter.assign(0, to: "w1")
        b.scatter.delivered(5, of: 0)
        t.begin(a)
        t.begin(b)
        t.begin(Self.query("qc", request: "r3"))
        let lost = t.queriesLost("w1")
        #expect(lost.map(\.key) == ["qa", "qb"])
        #expect(lost.map { $0.shards.map(\.outcome) } == [[.retry], [.finished]])
        #expect(t.queries["qa"]?.scatter.outstanding == [1: "w2"])
        var depth: [String: Int] = [:]
        t.outstanding(into: &depth)
        #expect(depth == ["w2": 1])
    }
}
