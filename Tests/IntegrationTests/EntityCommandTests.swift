import Foundation
import Items
import LimelightClient
import Testing

/// `limelight entities|suggest|spotlight|continue` as a user runs them, with `--json`.
@Suite(.serialized)
struct EntityCommandTests {
    func jsonLines(_ s: String) throws -> [JSONValue] {
        try s.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }

    @Test func theEntityAndTypedQueryCommands() async throws {
        let (cluster, client) = try await SearchClusterTests.cluster(shards: 3)
        defer { client.close(); cluster.stopAll(); cluster.removeData() }
        let ep = ["--endpoint", cluster.clientEndpoint]
        let run = CommandLineTests.limelight

        // Donate from a file: one line per entity on standard output, a bad one named with exit 1.
        let file = cluster.data + "/entities.jsonl"
        let lines = [
            #"{"type": "RecipeEntity", "id": "r1", "displayRepresentation": {"title": "Pumpkin soup", "subtitle": "Autumn", "image": "file:///soup.png"}, "properties": {"contentDescription": "roasted pumpkin with ginger", "servings": 4, "contentType": "public.recipe"}, "priority": 2, "domainIdentifier": "com.example.recipes"}"#,
            #"{"type": "RecipeEntity", "id": "r2", "displayRepresentation": {"title": "Pumpkin pie"}, "domainIdentifier": "com.example.recipes"}"#,
            #"{"type": "RecipeEntity", "id": "r3", "displayRepresentation": {"subtitle": "no title"}}"#,
        ]
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let donated = try run(["entities", "donate", file, "--json"] + ep, nil, [:])
        #expect(donated.status == 1)
        let results = try jsonLines(donated.stdout)
        #expect(results.map { $0["status"]?.stringValue } == ["stored", "stored", "rejected"])
        #expect(results[0]["uniqueIdentifier"]?.stringValue == "entity:RecipeEntity:r1")
        #expect(donated.stderr.contains("displayRepresentation.title"))

        let search = try await client.search(.object(["query": .string("ginger")])).response
        #expect(search["hits"]?.arrayValue?.first?["entity"]?["id"]?.stringValue == "r1")
        #expect(search["hits"]?.arrayValue?.first?["thumbnailURL"]?.stringValue == "file:///soup.png")

        // `query` and `predicate` lines carry the entity too.
        let query = try run(["query", #"title == "Pumpkin*"cd"#, "--json"] + ep, nil, [:])
        #expect(Set(try jsonLines(query.stdout).compactMap { $0["entity"]?["id"]?.stringValue }) == ["r1", "r2"])
        let predicate = try run(["predicate", "--record-type", "public.recipe", "servings == 4", "--json"] + ep, nil, [:])
        #expect(predicate.status == 0, "\(predicate.stderr)")
        #expect(try jsonLines(predicate.stdout).compactMap { $0["entity"]?["id"]?.stringValue } == ["r1"])

        // Associate, then delete by ids and by type.
        let associated = try run(
            ["entities", "associate", "--item", "deb:emacs", "--type", "AppEntity", "--id", "emacs", "--priority", "3", "--json"] + ep, nil, [:])
        #expect(associated.status == 0)
        #expect(try jsonLines(associated.stdout).first?["associated"]?.stringValue == "deb:emacs")
        let emacs = try await client.search(.object(["query": .string("emacs")])).response
        #expect(emacs["hits"]?.arrayValue?.first { $0["objectID"]?.stringValue == "deb:emacs" }?["entity"]?["id"]?.stringValue == "emacs")
        let missing = try run(["entities", "associate", "--item", "nope", "--type", "T", "--id", "1"] + ep, nil, [:])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("nope"))
        let byID = try run(["entities", "delete", "--type", "RecipeEntity", "--ids", "r2", "--json"] + ep, nil, [:])
        #expect(try jsonLines(byID.stdout).first?["deleted"]?.intValue == 1)
        let byType = try run(["entities", "delete", "--type", "RecipeEntity", "--json"] + ep, nil, [:])
        #expect(try jsonLines(byType.stdout).first?["deleted"]?.intValue == 1)

        // Suggestions: one {"suggestion", "count"} a line, best first.
        let suggest = try run(["suggest", "pyth", "--json"] + ep, nil, [:])
        #expect(suggest.status == 0)
        let suggestions = try jsonLines(suggest.stdout)
        #expect(suggestions.contains { $0["suggestion"]?.stringValue == "python" })
        let counts = suggestions.compactMap { $0["count"]?.intValue }
        #expect(counts.count == suggestions.count && counts == counts.sorted(by: >))

        // Spotlight: one group a line; continue walks a group's pages, naming the next on standard error.
        let spot = try run(["spotlight", "python", "--per-domain", "2", "--json"] + ep, nil, [:])
        #expect(spot.status == 0)
        let groups = try jsonLines(spot.stdout)
        #expect(!groups.isEmpty)
        #expect(groups.allSatisfy { ($0["items"]?.arrayValue?.count ?? 0) <= 2 && $0["continuation"]?.stringValue != nil })
        let big = try #require(groups.max { ($0["total"]?.intValue ?? 0) < ($1["total"]?.intValue ?? 0) })
        let total = try #require(big["total"]?.intValue)
        #expect(total > 3)
        var seen: [String] = []
        var page: Int? = 0
        var pages = 0
        while let p = page {
            let r = try run(["continue", big["continuation"]!.stringValue!, "--page", String(p), "--hits-per-page", "3", "--json"] + ep, nil, [:])
            #expect(r.status == 0)
            seen += try jsonLines(r.stdout).compactMap { $0["objectID"]?.stringValue }
            pages += 1
            let last = r.stderr.split(separator: "\n").last.map(String.init) ?? ""
            page = last.hasPrefix("page ") ? Int(last.dropFirst(5)) : nil
            if pages > 100 { break }
        }
        #expect(pages == (total + 2) / 3)
        #expect(seen.count == total)
        #expect(Set(seen).count == total)
        let bad = try run(["continue", "garbage"] + ep, nil, [:])
        #expect(bad.status == 2)
        #expect(bad.stdout.isEmpty)
    }
}
