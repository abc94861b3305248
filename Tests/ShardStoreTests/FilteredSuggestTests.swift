import Foundation
import QueryPlan
import Testing

@testable import ShardStore

/// Suggestions under a filter (an app's scope, docs/security.md): counted over
/// the items that pass it, and never a word only other items hold.
@Suite struct FilteredSuggestTests {
    @Test func aFilterCountsOnlyItsItemsAndOffersOnlyTheirWords() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("a1", domain: "@alpha", #"{"title": "python tools"}"#),
            item("a2", domain: "@alpha.x", #"{"title": "python pyramid"}"#),
            item("b1", domain: "@beta", #"{"title": "python pygame"}"#),
            item("b2", domain: "@beta", #"{"title": "python pygments"}"#),
            item("b3", domain: "@beta", #"{"title": "python pygments tools"}"#),
        ])
        let alpha: QueryPlan.Predicate = .domain(["@alpha"])
        let one = try s.suggest(SearchPlan(words: ["py"], filter: alpha), limit: 10)
        #expect(one.map(\.text) == ["python", "pyramid"] && one.map(\.count) == [2, 1])
        let beta = try s.suggest(SearchPlan(words: ["py"], filter: .domain(["@beta"])), limit: 10)
        #expect(beta.map(\.text) == ["python", "pygments", "pygame"] && beta.map(\.count) == [3, 2, 1])
        // Several words: the earlier ones must be found in the filter's items too.
        let two = try s.suggest(SearchPlan(words: ["python", "t"], filter: alpha), limit: 10)
        #expect(two.map(\.text) == ["python tools"] && two.map(\.count) == [1])
        let complete = try s.suggest(SearchPlan(words: ["pygments"], prefixLast: false, filter: alpha), limit: 10)
        #expect(complete.isEmpty)
        // Unfiltered, the vocabulary's counts, every item's words.
        #expect(try s.suggest(SearchPlan(words: ["py"]), limit: 10).first == Suggestion(text: "python", count: 5))
    }

    @Test func aSuggestionLeavesNoReadSnapshotOpen() throws {
        let dir = TempDir()
        // A writer and a reader, as an indexer and a query worker share a shard.
        let w = try openStore(dir)
        try w.put([item("a1", domain: "@alpha", #"{"title": "python tools"}"#)])
        let r = try openStore(dir, mode: .readOnly)
        #expect(try r.suggest(SearchPlan(words: ["py"], filter: .domain(["@alpha"])), limit: 1).first?.count == 1)
        try w.put([item("a2", domain: "@alpha", #"{"title": "python tools"}"#)])
        #expect(try r.suggest(SearchPlan(words: ["py"], filter: .domain(["@alpha"])), limit: 1).first?.count == 2)
        #expect(try r.count(matching: .domain(["@alpha"])) == 2)
    }
}
