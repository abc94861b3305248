import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// End to end: real coordinator, indexer and query worker processes over ZeroMQ on loopback.
@Suite(.serialized)
struct ClusterTests {
    @Test func publishAcknowledgesEachItemAndQueriesFindThem() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 4)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }

        let ack = try await client.publish([
            item("a", domain: "com.example.ui", ["title": .string("MyWindowClass")]),
            item("b", domain: "com.example.glass", ["title": .string("Broken Window")]),
            item("c", domain: "com.example.ui", ["title": .string("NSWindow")]),
            .object(["domainIdentifier": .string("x")]),  // no identifier
            item("d", domain: "com.example.ui", ["completionDate": .string("yesterday")]),  // not ISO-8601
        ])
        #expect(ack.stored == 3)
        #expect(ack.rejected == 2)
        #expect(ack.results[3].error?.code == "missing_identifier")
        #expect(ack.results[4].error?.field == "attributes.completionDate")

        let r = try await collect(client.query(spotlight(#"title == "Window"w"#)))
        #expect(Set(uids(r.items)) == ["a", "b"])
        #expect(r.completion?.count == 2)
        #expect(r.completion?.failedShards == [])
    }

    @Test func republishingReplacesAndMovingDomainsLeavesNoCopy() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 8)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        _ = try await client.publish([item("x", domain: "org.one", ["title": .string("first")])])
        _ = try await client.publish([item("x", domain: "org.one", ["title": .string("second")])])
        // Same identifier, another domain (very likely another shard): the old copy must go.
        _ = try await client.publish([item("x", domain: "net.two.three", ["title": .string("third")])])
        let r = try await collect(client.query(spotlight(#"title == "*""#)))
        #expect(uids(r.items) == ["x"])
        #expect(r.items.first?["attributes"]?["title"]?.stringValue == "third")
    }

    @Test func orderedQueriesAreMergedAcrossShards() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 4)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        var items: [JSONValue] = []
        for i in 0..<200 {
            items.append(item("n\(i)", domain: "org.d\(i % 13)", ["title": .string("item \(i)"), "rank": .number(Double((i * 37) % 200))]))
        }
        let ack = try await client.publish(items)
        #expect(ack.stored == 200)
        let sort: [JSONValue] = [.object(["attribute": .string("rank"), "ascending": .bool(false)])]
        let r = try await collect(client.query(spotlight(#"rank >= 0"#, sort: sort, batchSize: 7)))
        let ranks = r.items.compactMap { $0["attributes"]?["rank"]?.doubleValue }
        #expect(ranks.count == 200)
        #expect(ranks == ranks.sorted(by: >))
        #expect(r.batches >= 200 / 7)

        let limited = try await collect(client.query(spotlight(#"rank >= 0"#, sort: [.object(["attribute": .string("rank")])], limit: 10)))
        #expect(limited.items.compactMap { $0["attributes"]?["rank"]?.doubleValue } == (0..<10).map(Double.init))
        #expect(limited.completion?.count == 10)
    }

    @Test func aWorkerForShardsTheClusterLacksIsRefusedAndExits() async throws {
        let cluster = try ClusterFixture(shards: 2)
        defer { cluster.stopAll(); cluster.removeData() }
        try cluster.startCoordinator()
        try cluster.startIndexer("indexer-bad", shards: [1, 5])
        let p = try #require(cluster.processes["indexer-bad"])
        let end = Date().addingTimeInterval(10)
        while p.isRunning, Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!p.isRunning)
        #expect(p.terminationStatus == 2)
        let log = try String(contentsOfFile: cluster.logPath("indexer-bad"), encoding: .utf8)
        #expect(log.contains("shards 5 do not exist"))
    }

    /// The executables link mimalloc ahead of the C library (see
    /// ``ProcessAllocator``): each process says at startup which `malloc`
    /// won. Linking it after the C library, or not at all, gives
    /// "system malloc" here.
    @Test func everyServerProcessRunsOnMimalloc() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 1)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        for name in ["coordinator", "indexer-0", "query-0"] {
            let log = try String(contentsOfFile: cluster.logPath(name), encoding: .utf8)
            let line = log.split(separator: "\n").first { $0.contains("process.allocator=") }
            #expect(line?.contains("process.allocator=mimalloc 2.") == true, "\(name): \(line ?? "no allocator line")")
        }
    }

    @Test func textSortsMergeInTheStoresOrder() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 4)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        // Mixed case and accents: shards sort text folded, and the merge must agree.
        let titles = ["apple", "Banana", "cherry", "Élan", "date", "Fig", "éclair", "Grape", "kiwi", "Lemon", "mango", "Nectarine"]
        let items = titles.enumerated().map { i, t in item("t\(i)", domain: "org.fruit\(i)", ["title": .string(t)]) }
        _ = try await client.publish(items)
        let r = try await collect(client.query(spotlight(#"title == "*""#, sort: [.object(["attribute": .string("title")])], batchSize: 1)))
        #expect(
            r.items.compactMap { $0["attributes"]?["title"]?.stringValue } == [
                "apple", "Banana", "cherry", "date", "éclair", "Élan", "Fig", "Grape", "kiwi", "Lemon", "mango", "Nectarine",
            ])
    }

    @Test func manyConcurrentPublishesAreThrottledNotDropped() async throws {
        let cluster = try ClusterFixture(shards: 2)
        defer { cluster.stopAll(); cluster.removeData() }
        try cluster.startCoordinator(extra: ["--max-pending-writes", "2"])
        try cluster.startIndexer("indexer-0", shards: [0, 1])
        try cluster.startQueryWorker("query-0", shards: [0, 1])
        let client = try LimelightClient(endpoint: cluster.clientEndpoint)
        defer { client.close() }
        try await cluster.waitServed(client)
        // 40 batches at once, far more than the coordinator lets in flight.
        let stored = try await withThrowingTaskGroup(of: Int.self) { group in
            for b in 0..<40 {
                let items = (0..<50).map { i in item("bp\(b)-\(i)", domain: "org.bp\(i % 3)", ["title": .string("pressure \(b) \(i)")]) }
                group.addTask { try await client.publish(items).stored }
            }
            return try await group.reduce(0, +)
        }
        #expect(stored == 2000)
        let r = try await collect(client.query(spotlight(#"title == "pressure*""#)))
        #expect(r.items.count == 2000)
        let stats = try await client.stats()
        #expect((stats["counters"]?["publish.throttled"]?.doubleValue ?? 0) > 0)
    }

    @Test func deleteByDomainTakesSubdomainsOnEveryShard() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 4)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        var items: [JSONValue] = []
        for (i, d) in ["org.debian", "org.debian.games", "org.debian.games.strategy", "org.debianx", "org.other"].enumerated() {
            items.append(item("i\(i)", domain: d, ["title": .string("t")]))
        }
        _ = try await client.publish(items)
        let n = try await client.delete(domains: ["org.debian"])
        #expect(n == 3)
        let r = try await collect(client.query(spotlight(#"title == "t""#)))
        #expect(Set(uids(r.items)) == ["i3", "i4"])
        #expect(try await client.delete(all: true) == 2)
    }

    @Test func badQueriesAreNamedAndTheClusterKeepsServing() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        do {
            _ = try await collect(client.query(spotlight(#"title == "#)))
            Issue.record("a malformed query must fail")
        } catch let e as ClientError {
            #expect(e.server?.code == "bad_query")
            #expect(e.server?.position != nil)
        }
        let p = try await client.ping()
        #expect(p.servedShards == [0, 1])
    }

    @Test func cancelStopsAStreamingQuery() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        // The cancel races the stream, so the stream is made long: 8,000
        // items one per batch stream for about half a second in a debug
        // build, where 4,000 in batches of ten took 75 ms and a busy CI
        // machine once delivered them all before the client's cancel.
        for chunk in 0..<8 {
            let items = (0..<1000).map { i in item("k\(chunk)-\(i)", domain: "org.bulk\(i % 5)", ["title": .string("bulk item \(i)")]) }
            _ = try await client.publish(items)
        }
        let handle = client.query(spotlight(#"title == "bulk*""#, batchSize: 1))
        var seen = 0
        var completion: Body.Completion?
        for try await e in handle.events {
            switch e {
            case .batch(let b):
                seen += b.count
                if seen == b.count { await handle.cancel() }
            case .completion(let c): completion = c
            }
        }
        #expect(completion?.cancelled == true)
        #expect((completion?.count ?? .max) < 8000)
        // Still serving afterwards.
        let r = try await collect(client.query(spotlight(#"title == "bulk item 7""#)))
        #expect(r.items.count == 8)
    }

    @Test func aShardWithoutAnyWorkerIsNamedInTheCompletion() async throws {
        let cluster = try ClusterFixture(shards: 2)
        defer { cluster.stopAll(); cluster.removeData() }
        try cluster.startCoordinator()
        try cluster.startIndexer("indexer-0", shards: [0, 1])
        try cluster.startQueryWorker("query-0", shards: [0])  // nobody serves shard 1
        let client = try LimelightClient(endpoint: cluster.clientEndpoint)
        defer { client.close() }
        let end = Date().addingTimeInterval(10)
        while (try? await client.ping())?.servedShards != [0], Date() < end { try await Task.sleep(for: .milliseconds(50)) }
        let r = try await collect(client.query(spotlight(#"title == "*""#)))
        #expect(r.completion?.failedShards.map(\.shard) == [1])
    }

    @Test func aKilledQueryWorkerIsReplacedByItsReplicaAndARestartedOneLosesNothing() async throws {
        let cluster = try ClusterFixture(shards: 2)
        defer { cluster.stopAll(); cluster.removeData() }
        try cluster.startCoordinator(livenessMs: 1000)  // waits below for query-b to be declared dead
        try cluster.startIndexer("indexer-0", shards: [0, 1])
        try cluster.startQueryWorker("query-a", shards: [0, 1])
        try cluster.startQueryWorker("query-b", shards: [0, 1])
        let client = try LimelightClient(endpoint: cluster.clientEndpoint)
        defer { client.close() }
        try await cluster.waitServed(client)
        let items = (0..<50).map { i in item("r\(i)", domain: "org.r\(i % 7)", ["title": .string("replica \(i)")]) }
        #expect(try await client.publish(items).stored == 50)

        cluster.kill("query-a")
        // Queries keep answering in full: at first a shard sent to the dead worker is
        // retried on its replica; once the coordinator notices, it routes around it.
        for _ in 0..<6 {
            let r = try await collect(client.query(spotlight(#"title == "replica*""#, deadlineMs: 5000)))
            #expect(r.items.count == 50)
            #expect(r.completion?.failedShards == [])
        }
        cluster.kill("query-b")
        try await Task.sleep(for: .milliseconds(1500))
        let none = try await collect(client.query(spotlight(#"title == "replica*""#, deadlineMs: 2000)))
        #expect(Set(none.completion?.failedShards.map(\.shard) ?? []) == [0, 1])

        try cluster.startQueryWorker("query-a", shards: [0, 1])
        try await cluster.waitServed(client)
        let back = try await collect(client.query(spotlight(#"title == "replica*""#)))
        #expect(back.items.count == 50)
        #expect(back.completion?.failedShards == [])
    }

    @Test func aDeadlineFailsTheShardsThatDidNotAnswer() async throws {
        let (cluster, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        _ = try await client.publish([item("z", domain: "org.z", ["title": .string("z")])])
        // Stop the query worker without killing it: it keeps its registration for a moment but never answers.
        cluster.kill("query-0", signal: SIGSTOP)
        defer { cluster.kill("query-0", signal: SIGKILL) }
        let r = try await collect(client.query(spotlight(#"title == "z""#, deadlineMs: 300)))
        #expect(r.completion?.failedShards.count == 2)
        #expect(r.completion?.failedShards.first?.reason.contains("deadline") == true)
    }
}
