import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// Attributes that share a word-index column (every name without a column
/// of its own shares the last): a search of some of them finds only the
/// items holding the word in those, and confirms matches on the text only
/// when a name it does not search holds text there.
@Suite struct UnsearchedColumnTests {
    static let words = ["red", "green", "blue", "cyan"]

    @Test func aSharedColumnsOtherNamesMatchOnlyWhenSearched() throws {
        var rng = SplitMix(state: 97)
        func word() -> String { Self.words[Int(rng.next() % UInt64(Self.words.count))] }
        let dir = TempDir()
        let s = try openStore(dir)
        var held: [String: [String: String]] = [:]
        try s.put(
            (0..<200).map { i in
                let section = word(), label = word()
                held["u\(i)"] = ["section": section, "label": label]
                return item("u\(i)", #"{"title": "item", "section": "\#(section)", "label": "\#(label)", "size": \#(i), "rankingHint": \#(i % 7)}"#)
            })
        try s.buildSuggestionIndex()
        defer { PostingIndexes.shared.forget(path: s.path) }
        let plain = try openStore(dir, mode: .readOnly)
        plain.searchCache.searchesUsePostingIndex = false
        for store in [s, plain] {
            for attributes in [["section"], ["label"], ["label", "section"]] {
                for w in Self.words {
                    var plan = SearchPlan(words: [w], prefixLast: false, typos: TypoPolicy(enabled: false), searchableAttributes: attributes)
                    plan.window = 1000
                    let r = try store.search(plan)
                    let expected = held.filter { _, values in attributes.contains { values[$0] == w } }.keys.sorted()
                    #expect(r.nbHits == expected.count, "\(attributes) \(w)")
                    #expect(r.hits.map(\.uniqueIdentifier).sorted() == expected, "\(attributes) \(w)")
                    // `label` shares `section`'s column and holds text.
                    #expect(store.searchCache.attributes?.mustVerify == (attributes.count == 1))
                }
            }
            // The default attributes: every text name is searched, and the
            // numbers in the shared column put no word in it.
            let r = try store.search(SearchPlan(words: ["red"], prefixLast: false, typos: TypoPolicy(enabled: false), window: 1000))
            #expect(store.searchCache.attributes?.mustVerify == false)
            #expect(r.nbHits == held.values.filter { $0.values.contains("red") }.count)
        }
    }
}
