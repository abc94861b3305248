import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// A plan's word alternatives (``WordAlternative``: synonyms, plurals) in
/// one shard: an alternative matches as the word itself, with no typo, and
/// counts as exact when marked so; the same answers with the shard's
/// posting and forward indexes as without them.
@Suite struct AlternativesTests {
    static let items = [
        item("p1", #"{"title": "Blue pants", "contentDescription": "cotton pants for summer"}"#),
        item("p2", #"{"title": "Grey trousers", "contentDescription": "wool trousers, warm"}"#),
        item("p3", #"{"title": "trousers"}"#),
        item("p4", #"{"title": "Pantalón azul"}"#),
        item("p5", #"{"title": "Trousres with a typo"}"#),
        item("c1", #"{"title": "Blue cars", "contentDescription": "racing cars"}"#),
    ]

    /// Three readers of one shard: with the posting and forward indexes,
    /// with the posting index alone, and with FTS5 and the text.
    static func readers(_ dir: TempDir, _ items: [JSONValue] = items) throws -> [ShardStore] {
        let w = try openStore(dir)
        try w.put(items)
        let forward = try openStore(dir, mode: .readOnly)
        let postings = try openStore(dir, mode: .readOnly)
        postings.searchCache.searchesUseForwardIndex = false
        let plain = try openStore(dir, mode: .readOnly)
        plain.searchCache.searchesUsePostingIndex = false
        try forward.buildSuggestionIndex()
        return [forward, postings, plain]
    }

    func ids(_ r: ShardSearchResult) -> [String] { r.hits.map(\.uniqueIdentifier).sorted() }

    @Test func anAlternativeMatchesAsTheWord() throws {
        let dir = try TempDir()
        let stores = try Self.readers(dir)
        defer { PostingIndexes.shared.forget(path: stores[0].path) }
        var plan = SearchPlan(words: ["pants"], prefixLast: false, window: 10)
        let without = try stores.map { try $0.search(plan) }
        #expect(without.allSatisfy { ids($0) == ["p1"] })
        plan.alternatives = [[WordAlternative("trousers"), WordAlternative("pantalon")]]
        let with = try stores.map { try $0.search(plan) }
        #expect(with[0] == with[1] && with[1] == with[2])
        // "Trousres" (p5) is a typo of an alternative: alternatives match
        // whole words only, with no typo of their own.
        #expect(ids(with[0]) == ["p1", "p2", "p3", "p4"])
        for hit in with[0].hits {
            // No typo, one exact word; "trousers" alone is the whole value.
            #expect(hit.rank.typos == 0 && hit.rank.exactWords == 1, "\(hit.uniqueIdentifier)")
        }
        let p3 = try #require(with[0].hits.first { $0.uniqueIdentifier == "p3" })
        #expect(p3.rank.exactAttribute == 0)
        // Not exact when marked so: same matches, no exact word.
        plan.alternatives = [[WordAlternative("trousers", exact: false)]]
        let inexact = try stores.map { try $0.search(plan) }
        #expect(inexact[0] == inexact[1] && inexact[1] == inexact[2])
        let grey = try #require(inexact[0].hits.first { $0.uniqueIdentifier == "p2" })
        #expect(grey.rank.exactWords == 0 && grey.rank.typos == 0)
        #expect(inexact[0].hits.first { $0.uniqueIdentifier == "p3" }?.rank.exactAttribute == SearchRank.noExactAttribute)
    }

    /// With several words: proximity and the attribute count the
    /// alternative where it stands.
    @Test func severalWordsWithAlternatives() throws {
        let dir = try TempDir()
        let stores = try Self.readers(dir)
        defer { PostingIndexes.shared.forget(path: stores[0].path) }
        var plan = SearchPlan(words: ["blue", "car"], prefixLast: false, window: 10)
        #expect(try stores.allSatisfy { try $0.search(plan).hits.isEmpty })
        plan.alternatives = [[], [WordAlternative("cars")]]
        let found = try stores.map { try $0.search(plan) }
        #expect(found[0] == found[1] && found[1] == found[2])
        #expect(ids(found[0]) == ["c1"] && found[0].hits[0].rank.proximity == 1 && found[0].hits[0].rank.exactAttribute == 0)
    }
}
