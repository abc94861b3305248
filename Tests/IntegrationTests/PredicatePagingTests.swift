import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// CloudKit-style queries through the real coordinator and workers: sorted
/// pages with a cursor over four shards.
@Suite(.serialized)
struct PredicatePagingTests {
    static let stations = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo"]

    func predicate(
        _ format: String, _ arguments: [JSONValue] = [], sort: [JSONValue], limit: Int? = nil,
        cursor: String? = nil, recordType: String = "Reading"
    ) -> Body.QueryRequest {
        Body.QueryRequest(
            language: "cloudkit", fetchAttributes: ["value", "station"], sort: sort, limit: limit,
            recordType: recordType, predicate: format, arguments: arguments, cursor: cursor)
    }

    /// Several thousand records whose sort values tie in large groups, spread
    /// by domain over four shards; walking the pages 37 at a time must give
    /// each match once, in the order of one sort of them all.
    @Test func pagingWalksEveryRecordOnceInOrder() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 4)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        var items: [JSONValue] = []
        var expected: [(uid: String, value: Double?, station: String)] = []
        for i in 0..<3000 {
            let uid = String(format: "r%04d", (i * 7919) % 3000)  // published out of order
            let value: Double? = i % 11 == 0 ? nil : Double(i % 10)
            let station = Self.stations[i % Self.stations.count]
            var attrs: [String: JSONValue] = ["contentType": .string("Reading"), "station": .string(station)]
            if let value { attrs["value"] = .number(value) }
            items.append(item(uid, domain: "org.site\(i % 23)", attrs))
            expected.append((uid, value, station))
        }
        for i in 0..<150 {  // another record type, never returned
            items.append(item("x\(i)", domain: "org.site\(i % 23)", ["contentType": .string("Other"), "value": .number(5)]))
        }
        for start in stride(from: 0, to: items.count, by: 500) {
            let ack = try await client.publish(Array(items[start..<min(items.count, start + 500)]))
            #expect(ack.rejected == 0, "\(ack.firstRejection)")
        }
        // value descending (records without one last), then station, then the identifier.
        expected.sort { a, b in
            switch (a.value, b.value) {
            case let (x?, y?) where x != y: return x > y
            case (nil, _?): return false
            case (_?, nil): return true
            default: return a.station != b.station ? a.station < b.station : a.uid < b.uid
            }
        }
        let sort: [JSONValue] = [
            .object(["attribute": .string("value"), "ascending": .bool(false)]),
            .object(["attribute": .string("station")]),
        ]
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        let started = ContinuousClock.now
        repeat {
            let r = try await collect(client.query(predicate("TRUEPREDICATE", sort: sort, limit: 37, cursor: cursor)))
            #expect(r.completion?.failedShards == [])
            seen += uids(r.items)
            cursor = r.completion?.cursor
            pages += 1
            if cursor != nil { #expect(r.items.count == 37) }
        } while cursor != nil && pages < 200
        let elapsed = ContinuousClock.now - started
        #expect(seen.count == 3000)
        #expect(Set(seen).count == 3000)
        #expect(seen == expected.map(\.uid))
        #expect(pages == 82)  // 81 full pages and 3 records
        print("predicate paging: \(pages) pages of 37 over 3,000 records on 4 shards in \(elapsed), \(elapsed / pages) per page")

        // A filtered walk with arguments: the same order, restricted.
        var filtered: [String] = []
        cursor = nil
        repeat {
            let r = try await collect(
                client.query(
                    predicate(
                        "value BETWEEN %@ AND station IN {'elm', 'fir'}", [.array([.number(2), .number(6)])],
                        sort: sort, limit: 50, cursor: cursor)))
            filtered += uids(r.items)
            cursor = r.completion?.cursor
        } while cursor != nil
        let wanted = expected.filter { ($0.value.map { (2...6).contains($0) } ?? false) && ["elm", "fir"].contains($0.station) }.map(\.uid)
        #expect(filtered == wanted)
        #expect(!wanted.isEmpty)
    }

    @Test func cursorsBelongToTheirQuery() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 4)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        var items: [JSONValue] = []
        for i in 0..<40 {
            items.append(item("e\(i)", domain: "org.d\(i % 5)", ["contentType": .string("Reading"), "value": .number(Double(i % 4))]))
        }
        _ = try await client.publish(items)
        let sort: [JSONValue] = [.object(["attribute": .string("value")])]
        let first = try await collect(client.query(predicate("value >= 1", sort: sort, limit: 5)))
        let cursor = try #require(first.completion?.cursor)
        // The same query resumes; the limit may change.
        let next = try await collect(client.query(predicate("value >= 1", sort: sort, limit: 100, cursor: cursor)))
        #expect(uids(first.items).count + uids(next.items).count == 30)
        #expect(next.completion?.cursor == nil)  // the last page has none
        for other in [
            predicate("value >= 2", sort: sort, cursor: cursor),
            predicate("value >= 1", sort: [.object(["attribute": .string("value"), "ascending": .bool(false)])], cursor: cursor),
            predicate("value >= 1", sort: sort, cursor: cursor, recordType: "Other"),
            predicate("value >= 1", sort: sort, cursor: "bm90IGEgY3Vyc29y"),
        ] {
            do {
                _ = try await collect(client.query(other))
                Issue.record("a cursor of another query must be refused")
            } catch let e as ClientError {
                #expect(e.server?.code == "invalid_cursor")
                #expect(e.server?.field == "cursor")
            }
        }
        // A bad predicate is named with its position, and the service keeps serving.
        do {
            _ = try await collect(client.query(predicate("value > 1 OR value < 0", sort: sort)))
            Issue.record("OR is not CloudKit's")
        } catch let e as ClientError {
            #expect(e.server?.code == "bad_query")
            #expect(e.server?.position == 10)
        }
        #expect(try await client.ping().servedShards == [0, 1, 2, 3])
    }
}
