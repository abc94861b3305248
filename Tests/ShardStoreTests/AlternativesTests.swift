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
        let dir = TempDir()
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
        let dir = TempDir()
        let stores = try Self.readers(dir)
        defer { PostingIndexes.shared.forget(path: stores[0].path) }
        var plan = SearchPlan(words: ["blue", "car"], prefixLast: false, window: 10)
        #expect(try stores.allSatisfy { try $0.search(plan).hits.isEmpty })
        plan.alternatives = [[], [WordAlternative("cars")]]
        let found = try stores.map { try $0.search(plan) }
        #expect(found[0] == found[1] && found[1] == found[2])
        #expect(ids(found[0]) == ["c1"] && found[0].hits[0].rank.proximity == 1 && found[0].hits[0].rank.exactAttribute == 0)
    }

    static let cities = [
        item("t1", #"{"title": "The New York Times", "contentDescription": "pizza in new york"}"#),
        item("t2", #"{"title": "new company in York"}"#),
        item("t3", #"{"title": "York, New Brunswick"}"#),
        item("t4", #"{"title": "New", "contentDescription": "York"}"#),
        item("t5", #"{"title": "New York"}"#),
        item("t6", #"{"title": "NY pizza"}"#),
        item("t7", #"{"title": "Big Apple pizza", "contentDescription": "NewYork"}"#),
        item("t8", #"{"title": "new newyork york"}"#),
        item("t9", #"{"title": "Nouvelle Yörk"}"#),
        item("t10", #"{"title": "Nouvelle-yörk pizza"}"#),
    ]

    /// A phrase alternative (``WordAlternative/phrase``) matches its words
    /// only adjacent, in order, in one value ("NY" finds "New York Times",
    /// not "new company in York", Algolia's example), with no typo, exact
    /// as marked, ASCII or not; the three readers agree.
    @Test func aPhraseMatchesOnlyAdjacentWords() throws {
        let dir = TempDir()
        let stores = try Self.readers(dir, Self.cities)
        defer { PostingIndexes.shared.forget(path: stores[0].path) }
        var plan = SearchPlan(words: ["ny"], prefixLast: false, window: 20)
        plan.alternatives = [[WordAlternative(phrase: ["new", "york"], exact: false), WordAlternative(phrase: ["nouvelle", "york"])]]
        let found = try stores.map { try $0.search(plan) }
        #expect(found[0] == found[1] && found[1] == found[2])
        #expect(ids(found[0]) == ["t1", "t10", "t5", "t6", "t9"])
        #expect(found[0].nbHits == 5)
        for hit in found[0].hits { #expect(hit.rank.typos == 0, "\(hit.uniqueIdentifier)") }
        let byID = Dictionary(uniqueKeysWithValues: found[0].hits.map { ($0.uniqueIdentifier, $0.rank) })
        // "new york" is not exact (as marked), "nouvelle york" is.
        #expect(byID["t5"]?.exactWords == 0 && byID["t5"]?.exactAttribute == SearchRank.noExactAttribute)
        #expect(byID["t9"]?.exactWords == 1 && byID["t9"]?.exactAttribute == 0)
        #expect(byID["t6"]?.exactWords == 1 && byID["t6"]?.exactAttribute == SearchRank.noExactAttribute)
        // The phrase at the title's start, or after its first word.
        #expect(byID["t5"]?.attribute == 0 && byID["t1"]?.attribute == 1)
        // The exact whole value first; the inexact phrase after the exact words.
        let order = found[0].hits.map(\.uniqueIdentifier)
        #expect(order.first == "t9" && order.last == "t1")
        #expect(order.firstIndex(of: "t5")! > order.firstIndex(of: "t6")! && order.firstIndex(of: "t5")! > order.firstIndex(of: "t10")!)
    }

    /// Proximity counts a phrase from its ends: "ny pizza" finds "pizza in
    /// new york" at distance 2 (pizza, in, new) and the two words of "big
    /// apple" found as "new york" at one place; a phrase across two values
    /// of a list is no match.
    @Test func phrasesInSeveralWordQueries() throws {
        let dir = TempDir()
        let stores = try Self.readers(
            dir,
            Self.cities + [
                item("l1", #"{"title": "list", "keywords": ["big", "apple"]}"#),
                item("l2", #"{"title": "list", "keywords": ["big apple", "x"]}"#),
            ])
        defer { PostingIndexes.shared.forget(path: stores[0].path) }
        var plan = SearchPlan(words: ["ny", "pizza"], prefixLast: false, window: 20)
        plan.alternatives = [[WordAlternative(phrase: ["new", "york"], exact: false)], []]
        let found = try stores.map { try $0.search(plan) }
        #expect(found[0] == found[1] && found[1] == found[2])
        #expect(ids(found[0]) == ["t1", "t6"])
        let t1 = try #require(found[0].hits.first { $0.uniqueIdentifier == "t1" })
        #expect(t1.rank.proximity == 2 && t1.rank.typos == 0)
        #expect(found[0].hits.first { $0.uniqueIdentifier == "t6" }?.rank.proximity == 1)
        let newYork = WordAlternative(phrase: ["new", "york"], exact: false)
        var apple = SearchPlan(words: ["big", "apple"], prefixLast: false, window: 20)
        apple.alternatives = [[newYork], [newYork]]
        let apples = try stores.map { try $0.search(apple) }
        #expect(apples[0] == apples[1] && apples[1] == apples[2])
        #expect(ids(apples[0]) == ["l1", "l2", "t1", "t5", "t7"])
        let t5 = try #require(apples[0].hits.first { $0.uniqueIdentifier == "t5" })
        #expect(t5.rank.proximity == 1 && t5.rank.exactWords == 0)
        // Each word at both ends of the phrase: a whole value the query is.
        var exactApple = apple
        exactApple.alternatives = [[WordAlternative(phrase: ["new", "york"])], [WordAlternative(phrase: ["new", "york"])]]
        let exact = try stores.map { try $0.search(exactApple) }
        #expect(exact[0] == exact[1] && exact[1] == exact[2])
        #expect(exact[0].hits.first?.uniqueIdentifier == "t5" && exact[0].hits.first?.rank.exactAttribute == 0)
        // Two values of a list are not one phrase.
        var list = SearchPlan(words: ["thing"], prefixLast: false, window: 20)
        list.alternatives = [[WordAlternative(phrase: ["big", "apple"])]]
        let lists = try stores.map { try $0.search(list) }
        #expect(lists.allSatisfy { ids($0) == ["l2", "t7"] })
    }

    /// An alternative correction (``WordAlternative/typos``) matches as the
    /// word with its typos: Algolia's example, "pants" with the
    /// `altcorrection2` "trousers" ranks "1. pants (0 typos) 2. panto (1
    /// typo) 3. trousers (2 typos)"; the three readers agree.
    @Test func anAlternativeCorrectionCountsAsTypos() throws {
        let dir = TempDir()
        let stores = try Self.readers(
            dir,
            [
                item("a", #"{"title": "trousers"}"#), item("b", #"{"title": "panto"}"#), item("c", #"{"title": "pants"}"#),
                item("d", #"{"title": "Grey slacks"}"#),
            ])
        defer { PostingIndexes.shared.forget(path: stores[0].path) }
        for typos in [1, 2] {
            var plan = SearchPlan(words: ["pants"], prefixLast: false, window: 10)
            plan.alternatives = [[WordAlternative("trousers", exact: false, typos: typos)]]
            let found = try stores.map { try $0.search(plan) }
            #expect(found[0] == found[1] && found[1] == found[2])
            #expect(found[0].hits.map(\.uniqueIdentifier) == (typos == 2 ? ["c", "b", "a"] : ["c", "a", "b"]))
            #expect(found[0].hits.map(\.rank.typos) == (typos == 2 ? [0, 1, 2] : [0, 1, 1]))
            #expect(found[0].hits.first { $0.uniqueIdentifier == "a" }?.rank.exactWords == 0)
            // As a phrase.
            var phrase = SearchPlan(words: ["pants"], prefixLast: false, window: 10)
            phrase.alternatives = [[WordAlternative(phrase: ["grey", "slacks"], exact: false, typos: typos)]]
            let slacks = try stores.map { try $0.search(phrase) }
            #expect(slacks[0] == slacks[1] && slacks[1] == slacks[2])
            #expect(slacks[0].hits.map(\.uniqueIdentifier).sorted() == ["b", "c", "d"])
            #expect(slacks[0].hits.first { $0.uniqueIdentifier == "d" }?.rank.typos == typos)
        }
    }
}
