import Foundation
import Items
import QueryPlan
import SearchParameters

/// The parameter-search kinds the benchmark times (a two-word free
/// text query, a faceted query with three facets — one disjunctive — and one
/// refinement, and a 20-hit page 10), as Algolia parameter objects; the
/// faceted query of one word refined by each section in turn (what a person
/// clicking through a facet sends); and
/// the same two words as the peers take them (`typoTolerance: false`,
/// `queryType: prefixNone`: every word exact, no misspelt or prefix forms),
/// which says how much of the free-text query's time is those forms; and
/// the most frequent words alone (`common word`), each matching thousands
/// of items, which the random words rarely are; and the empty query with
/// the three facets (`empty query`), the first request of an InstantSearch
/// page, which matches every item; and one word alone (`search 1 word`),
/// what a search box sends once the first word is typed.
func searchKinds(_ w: QueryWords, count: Int) -> [(String, [JSONValue])] {
    let sections = ["utils", "libs", "python", "devel", "net", "doc", "misc", "admin"]
    let twoWords = w.twoWordSearches(seed: 13)
    let oneWord = (0..<count).map { i -> JSONValue in
        .object(["query": .string(w.words[i]), "attributesToRetrieve": .array([.string("title")])])
    }
    let faceted = (0..<count).map { i -> JSONValue in
        .object([
            "query": .string(w.words[i]), "attributesToRetrieve": .array([.string("title")]),
            "facets": .array([.string("section"), .string("architecture"), .string("priority")]),
            "disjunctiveFacets": .array([.string("section")]),
            "facetFilters": .array([.array([.string("section:\(sections[i % sections.count])")])]),
        ])
    }
    let page10 = (0..<count).map { i -> JSONValue in
        .object([
            "query": .string(w.words[i]), "page": .number(10), "hitsPerPage": .number(20),
            "attributesToRetrieve": .array([.string("title")]),
        ])
    }
    let literal = twoWords.map { q -> JSONValue in
        guard case .object(var o) = q else { return q }
        o["typoTolerance"] = .bool(false)
        o["queryType"] = .string("prefixNone")
        return .object(o)
    }
    // A person refining one query: the faceted query of each word with
    // every section refinement in turn (the words are searched again).
    let refinements = (0..<count).map { i -> JSONValue in
        .object([
            "query": .string(w.words[i / sections.count]), "attributesToRetrieve": .array([.string("title")]),
            "facets": .array([.string("section"), .string("architecture"), .string("priority")]),
            "disjunctiveFacets": .array([.string("section")]),
            "facetFilters": .array([.array([.string("section:\(sections[i % sections.count])")])]),
        ])
    }
    let empty = (0..<count).map { _ -> JSONValue in
        .object([
            "query": .string(""), "attributesToRetrieve": .array([.string("title")]),
            "facets": .array([.string("section"), .string("architecture"), .string("priority")]),
        ])
    }
    let common = (0..<count).map { i -> JSONValue in
        .object(["query": .string(w.common[i % w.common.count]), "attributesToRetrieve": .array([.string("title")])])
    }
    return [
        ("search 1 word", oneWord), ("search 2 words", twoWords), ("2 words strict", literal), ("faceted", faceted), ("refinements", refinements),
        ("page 10", page10), ("common word", common), ("empty query", empty),
    ]
}

/// Two made-up words, exact, that no item holds: a search's whole path
/// (the request read, planned, sent to the shards, searched, merged,
/// answered and read) with next to nothing for the store to do and an
/// empty response. With `ping` (the coordinator's answer to a request that
/// searches nothing), the floor under every search kind's p50: what the
/// message path and a search's bookkeeping cost whatever the words.
func noMatchSearches(count: Int) -> [JSONValue] {
    (0..<count).map { i -> JSONValue in
        .object([
            "query": .string("qzxv\(i) wqjk\(i)"), "attributesToRetrieve": .array([.string("title")]),
            "typoTolerance": .bool(false), "queryType": .string("prefixNone"),
        ])
    }
}
