import Foundation
import Items
import LimelightClient
import Testing
import WireProtocol

/// Semantic search through the Swift client: `SearchParams.semantic` and the
/// `Searcher`, on a real cluster whose indexer and coordinator load the real
/// model (`$LIMELIGHT_MODEL`, else what scripts/install-model prints). The
/// corpus-scale checks are in tests/python/test_semantic.py.
@Suite(.serialized)
struct SemanticSearchTests {
    /// Makes the model known to the processes the fixture starts (they inherit the environment).
    static func useModel() throws {
        if let env = ProcessInfo.processInfo.environment["LIMELIGHT_MODEL"], !env.isEmpty { return }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let r = try ChildProcess.run(repository.appendingPathComponent("scripts/install-model").path, [], limit: 600)
        let folder = String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard r.status == 0, !r.timedOut, !folder.isEmpty else {
            throw FixtureError("scripts/install-model found no model: \(String(decoding: r.stderr, as: UTF8.self).suffix(400))")
        }
        setenv("LIMELIGHT_MODEL", folder, 1)
    }

    @Test func theSearcherRanksByMeaning() async throws {
        try Self.useModel()
        let (cluster, client) = try await ClusterFixture.simple(shards: 2)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        try await client.declare([AttributeDeclaration(StandardAttributes.all["displayName"]!, semantic: true)])
        let ack = try await client.publish([
            item("pasta", domain: "a", ["title": .string("p1"), "displayName": .string("quick weeknight pasta recipes")]),
            item("backup", domain: "b", ["title": .string("b1"), "displayName": .string("incremental backups of your files")]),
            item("garden", domain: "c", ["title": .string("g1"), "displayName": .string("when to plant tomatoes and beans")]),
        ])
        #expect(ack.stored == 3)
        var params = SearchParams(query: "cook dinner tonight")
        params.semantic = SearchParams.Semantic(ratio: 1)
        params.other["getRankingInfo"] = .bool(true)
        let searcher = Searcher(client: client, params: params)
        await searcher.search()
        let r = try #require(await searcher.results)
        #expect(r.hits.first?["objectID"]?.stringValue == "pasta")
        #expect(r.hits.count == 3)
        let score = try #require(r.hits.first?["_rankingInfo"]?["semanticScore"]?.doubleValue)
        #expect(score > 0.2 && score <= 1)
        // The words alone find nothing: none of them is in any item.
        let lexical = try await client.search(.object(["query": .string("cook dinner tonight")]))
        #expect(lexical.response["nbHits"]?.intValue == 0)
    }
}
