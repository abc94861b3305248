import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// `run(_:rawItems:…)`: the items a query worker forwards as JSON text must
/// be exactly what writing the decoded results would give, on every path of
/// a query (word stream, substring, general) and for every fetch list.
struct RawItemsTests {
    static let items: [JSONValue] = [
        item("a1", #"{"title": "Alpha \"quoted\" \\ tab\t", "summary": "alpha one", "n": 3, "ratio": 0.125, "tags": ["x", "y"]}"#),
        item("a2", domain: "org.example.other", #"{"title": "alpha ü \u00e9 😀", "summary": "alpha two\nlines", "n": -12345678901}"#),
        item(
            "a3",
            #"{"summary": "alpha without a title", "nested": ["a \\u0001 \\\"q\\\"", "b"], "at": {"latitude": 48.85, "longitude": 2.35}, "flag": true}"#
        ),
        item("b1", #"{"title": "beta", "summary": "other"}"#),
    ]

    static let queries: [(String, Query)] = [
        ("word stream", Query(predicate: text("*", "alpha", "cdw"), fetchAttributes: ["title"], batchSize: 2)),
        ("word stream, two attributes", Query(predicate: text("*", "alpha", "cdw"), fetchAttributes: ["title", "n", "missing"])),
        ("word stream, no attributes", Query(predicate: text("*", "alpha", "cdw"), fetchAttributes: [])),
        ("word stream, every attribute", Query(predicate: text("*", "alpha", "cdw"))),
        ("substring", Query(predicate: text("summary", "*lph*"), fetchAttributes: ["summary", "nested", "at"])),
        ("general", Query(predicate: .or([range("n", 0, 10), text("title", "beta")]), fetchAttributes: ["title", "n"], limit: 3)),
        ("all", Query(predicate: .all, fetchAttributes: ["tags", "flag"])),
    ]

    @Test(arguments: queries.indices) func rawItemsAreTheWrittenTrees(_ k: Int) throws {
        let (name, query) = Self.queries[k]
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put(Self.items)
        var trees: [JSONValue] = [], raws: [[UInt8]] = []
        let treeCount = try store.run(query) { batch in trees += batch.map(\.item) }
        let rawCount = try store.run(query, rawItems: true) { batch in
            for r in batch {
                #expect(r.item == .null, "\(name)")
                raws.append(try #require(r.rawItem, "\(name): no raw item"))
            }
        }
        #expect(treeCount == rawCount, "\(name)")
        #expect(!trees.isEmpty, "\(name): the query should match")
        #expect(raws == trees.map { JSONWriter.bytes($0) }, "\(name)")
        #expect(try raws.map { try JSONValue.parse(Data($0)) } == trees, "\(name)")
        // The flag ends with the run: the next query builds trees again.
        try store.run(query) { batch in #expect(batch.allSatisfy { $0.rawItem == nil && $0.item != .null }) }
    }
}
