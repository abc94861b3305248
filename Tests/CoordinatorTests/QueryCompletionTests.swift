import Foundation
import Items
import Planner
import QueryPlan
import Testing
import WireProtocol

@testable import Coordinator

/// What a query's completion tells its client, without processes: when a
/// predicate query's page carries a cursor, and which shards it names failed.
@Suite("Query completion")
struct QueryCompletionTests {
    static func query(limit: Int?, count: Int, fingerprint: String? = "f00d", lastSort: [JSONValue]? = [.number(3)]) -> RunningQuery {
        var plan = Query(predicate: .all)
        plan.limit = limit
        var rq = RunningQuery(key: "k", client: [], requestID: "r", query: plan, planJSON: .null, deadlineMs: 0, started: .now)
        rq.count = count
        rq.cursorFingerprint = fingerprint
        rq.lastSort = lastSort
        return rq
    }

    /// A full page carries the last result's sort values, resumable by the
    /// same query only.
    @Test func aFullPageCarriesACursorAfterItsLastResult() throws {
        let cursor = try #require(Self.query(limit: 2, count: 2).nextCursor)
        #expect(try QueryCursor.decode(cursor, fingerprint: "f00d", sortKeys: 1) == [.number(3)])
        #expect(throws: WireError.self) { try QueryCursor.decode(cursor, fingerprint: "beef", sortKeys: 1) }
    }

    @Test func aPageThatIsNotFullOrHasNoLimitOrNoCursorIdentityHasNone() {
        #expect(Self.query(limit: 3, count: 2).nextCursor == nil)
        #expect(Self.query(limit: nil, count: 2).nextCursor == nil)
        #expect(Self.query(limit: 0, count: 0).nextCursor == nil)
        #expect(Self.query(limit: 2, count: 2, fingerprint: nil).nextCursor == nil)
        #expect(Self.query(limit: 2, count: 2, lastSort: nil).nextCursor == nil)
    }

    /// A cancelled page may stop short, so its completion has no cursor.
    @Test func aCancelledQueryCompletesWithoutACursor() {
        let rq = Self.query(limit: 2, count: 2)
        #expect(rq.completion(cancelled: false, elapsedMs: 1).cursor == rq.nextCursor)
        #expect(rq.completion(cancelled: true, elapsedMs: 1).cursor == nil)
        #expect(rq.completion(cancelled: true, elapsedMs: 1).cancelled)
    }

    @Test func failedShardsAreNamedInShardOrderAndTheTimeInMicroseconds() {
        var rq = Self.query(limit: nil, count: 5)
        rq.scatter.unassignable(3)
        rq.scatter.assign(1, to: "q1")
        rq.scatter.unassignable(1)
        let c = rq.completion(cancelled: false, elapsedMs: 1.234_56)
        #expect(c.failedShards.map(\.shard) == [1, 3])
        #expect(c.failedShards.map(\.reason) == ["every query worker for the shard failed", "no live query worker"])
        #expect(c.count == 5)
        #expect(c.elapsedMs == 1.235)
    }
}
