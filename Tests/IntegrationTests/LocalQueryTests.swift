import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// A coordinator that answers its data folder's shard queries itself
/// (`--local-data`): the same answers as a `limelight-query` process on the
/// same files, for every kind of request, with no query worker process.
@Suite(.serialized)
struct LocalQueryTests {
    static func items() -> [JSONValue] {
        (0..<240).map { i in
            item(
                "lq\(i)", domain: "org.local.d\(i % 7)",
                [
                    // Quotes, a backslash, a tab and letters past ASCII: the
                    // unsorted query's items reach the client as the store wrote them.
                    "title": .string(["python \"tools\" \\ \(i)", "rust crate \(i)", "pyramid sch\u{e9}me\t\u{1F600} \(i)"][i % 3]),
                    "rank": .number(Double((i * 37) % 240)),
                    "keywords": .array([.string(["alpha", "beta", "gamma", "delta"][i % 4])]),
                ])
        }
    }

    /// Every kind of answer, in a form two runs can be compared by.
    static func answers(_ client: LimelightClient) async throws -> [String] {
        let sorted = try await collect(client.query(spotlight(#"title == "py*"cd"#, sort: [.object(["attribute": .string("rank")])], batchSize: 9)))
        #expect(sorted.completion?.failedShards == [])
        let search = try await client.search(
            .object([
                "query": .string("python"), "facets": .array([.string("keywords")]), "hitsPerPage": .number(5),
            ]))
        #expect(search.failedShards == [])
        let suggest = try await client.suggest("py", limit: 5)
        // Unsorted: forwarded without being decoded in the coordinator.
        // Shards interleave, so compared in identifier order (all 160 match:
        // with a smaller limit, which ones come depends on the shards' pace), and held to
        // the published items cut to the fetched attributes.
        let plain = try await collect(client.query(spotlight(#"title == "py*"cd"#, fetch: ["title", "rank"], limit: 200, batchSize: 7)))
        #expect(plain.completion?.failedShards == [])
        #expect(plain.items.count == 160)
        let published = Dictionary(uniqueKeysWithValues: items().map { ($0["uniqueIdentifier"]!.stringValue!, $0) })
        for got in plain.items {
            let uid = got["uniqueIdentifier"]?.stringValue ?? "?"
            guard let source = published[uid], case .object(let attrs)? = source["attributes"] else { Issue.record("unknown item \(uid)"); continue }
            let want = item(uid, domain: source["domainIdentifier"]!.stringValue!, attrs.filter { $0.key == "title" || $0.key == "rank" })
            #expect(got == want)
        }
        return [
            plain.items.sorted { uids([$0])[0] < uids([$1])[0] }.map { $0.serializedString() }.joined(separator: "\n"),
            uids(sorted.items).joined(separator: ","),
            "\(search.response["nbHits"]?.intValue ?? -1)",
            (search.response["hits"]?.arrayValue ?? []).compactMap { $0["objectID"]?.stringValue }.joined(separator: ","),
            search.response["facets"].map { $0.serializedString() } ?? "none",
            suggest.suggestions.map { "\($0.suggestion):\($0.count)" }.joined(separator: ","),
        ]
    }

    @Test func theCoordinatorAnswersItsFolderItselfAsAQueryWorkerWould() async throws {
        let f = try ClusterFixture(shards: 3)
        defer { f.stopAll(); f.removeData() }
        try f.startCoordinator(extra: ["--local-data", f.data])
        try f.startIndexer("indexer-0", shards: [0, 1, 2])
        let client = try LimelightClient(endpoint: f.clientEndpoint)
        defer { client.close() }
        // Served with no query worker process: the coordinator's own counts.
        try await f.waitServed(client)
        let workers = try await client.stats()["workers"]?.arrayValue ?? []
        let local = try #require(workers.first { $0["id"]?.stringValue == "coordinator-local" })
        #expect(local["role"]?.stringValue == "query" && local["host"]?.stringValue == "local")
        #expect(!workers.contains { $0["role"]?.stringValue == "query" && $0["id"]?.stringValue != "coordinator-local" })

        let ack = try await client.publish(Self.items())
        #expect(ack.stored == 240, "\(ack.firstRejection)")
        let here = try await Self.answers(client)
        #expect(here[1].split(separator: ",").count == 160)  // "python…" and "pyramid…" titles
        #expect(here[2] == "80")
        #expect(here[5].hasPrefix("py"))
        // The same for a caller running on the client's socket thread
        // (`LimelightClient.executor`): queries' streams, searches, suggestions.
        #expect(try await withTaskExecutorPreference(client.executor) { try await Self.answers(client) } == here)

        // A query worker process on the same files gives the same answers.
        // With both up the coordinator takes turns between them, so four
        // rounds see each at least once.
        try f.startQueryWorker("query-0", shards: [0, 1, 2])
        let end = Date().addingTimeInterval(30)
        while Date() < end {
            let ws = try await client.stats()["workers"]?.arrayValue ?? []
            if ws.contains(where: { $0["id"]?.stringValue == "query-0" }) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        for _ in 0..<4 { #expect(try await Self.answers(client) == here) }
        f.kill("query-0")
        // Until the coordinator has missed its heartbeats, a shard may still
        // be sent to the killed worker and wait out the deadline: which shard
        // goes where depends only on how many were dispatched before.
        let gone = Date().addingTimeInterval(30)
        while Date() < gone {
            let ws = try await client.stats()["workers"]?.arrayValue ?? []
            if !ws.contains(where: { $0["id"]?.stringValue == "query-0" }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await Self.answers(client) == here)

        // A deadline shorter than any shard's work is answered per shard, as a query worker answers it.
        let late = try await collect(client.query(spotlight(#"title == "*""#, deadlineMs: 1)))
        #expect(late.completion != nil)
    }

    @Test func badLocalFlagsAreNamed() async throws {
        let f = try ClusterFixture(shards: 2)
        defer { f.stopAll(); f.removeData() }
        let r = try ChildProcess.run(
            ClusterFixture.binDirectory + "/limelight-coordinator",
            [
                "--listen", "tcp://127.0.0.1:0", "--workers", "tcp://127.0.0.1:0", "--no-stats", "--shards", "2",
                "--local-data", f.data, "--local-shards", "0,5",
            ], limit: 30)
        let text = String(decoding: r.stderr, as: UTF8.self)
        #expect(r.status != 0 && !r.timedOut)
        #expect(text.contains("--local-shards: '0,5'"), "\(text)")
    }
}
