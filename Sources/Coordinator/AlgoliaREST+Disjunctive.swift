import Foundation
import Items
import QueryPlan
import SearchParameters

/// InstantSearch's page with refined disjunctive facets, as one `/queries`
/// call sends it: the refined search first, then for each refined
/// disjunctive facet F a request that asks F's counts (`facets: [F]`,
/// `hitsPerPage: 0`) under the filters without F's own refinements.
///
/// The core counts a disjunctive facet in the same pass as the search
/// (``SearchPlan/disjunctiveFilters``), so such a call is answered with one
/// search: each extra request's facet is counted under an alias
/// (``SearchPlan/facetAliases``) over that request's own filter, and the
/// size of that filter's matches (``SearchPlan/disjunctiveSetSizes``) is its
/// `nbHits`. Every request is answered as it would be alone.
///
/// The pattern is recognised exactly, else the call runs request by
/// request: every request of the same index and not a facet search; each
/// extra asks no hits (`hitsPerPage: 0`, first page) and one facet, and
/// differs from the first request only in its filters and in what it
/// returns (``mayDiffer``), so that the words, typos, searchable attributes
/// and geo parameters, which decide the matches, are the same. Its filter is
/// taken whole from its own parameters (not guessed from the first
/// request's), so a numeric refinement dropped beside a facet's is exact too.
struct AlgoliaDisjunctivePage: Sendable {
    struct Extra: Sendable {
        var facet: String
        var params: [String: JSONValue]
    }
    var index: String
    var main: [String: JSONValue]
    var extras: [Extra]

    /// What an extra request may set otherwise than the first: its filters,
    /// and what it returns (no hits, so no page of attributes either).
    static let mayDiffer: Set<String> = [
        "facets", "facetFilters", "numericFilters", "tagFilters", "filters", "hitsPerPage", "page",
        "attributesToRetrieve", "attributesToHighlight", "attributesToSnippet", "analytics", "clickAnalytics",
    ]

    /// The page, or nil when the requests are not exactly InstantSearch's pattern.
    init?(_ parts: [(index: String, facet: String?, params: [String: JSONValue])]) {
        guard parts.count >= 2, let first = parts.first, first.facet == nil else { return nil }
        let main = first.params
        // Pages by offset, and a disjunctive facet the request itself asks, run as they are.
        guard main["offset"] == nil, main["length"] == nil, main["disjunctiveFacets"] == nil else { return nil }
        var extras: [Extra] = []
        for part in parts.dropFirst() {
            let p = part.params
            guard part.facet == nil, part.index == first.index else { return nil }
            guard p["hitsPerPage"]?.intValue == 0, (p["page"]?.intValue ?? 0) == 0 else { return nil }
            guard let facet = Self.single(p["facets"]), facet != "*" else { return nil }
            for k in Set(main.keys).union(p.keys) where !Self.mayDiffer.contains(k) {
                if main[k] != p[k] { return nil }
            }
            extras.append(Extra(facet: facet, params: p))
        }
        self.index = first.index
        self.main = main
        self.extras = extras
    }

    /// The one facet a request asks, as a one-element list or a name.
    static func single(_ v: JSONValue?) -> String? {
        if let a = v?.arrayValue { return a.count == 1 ? a[0].stringValue : nil }
        guard let s = v?.stringValue, !s.isEmpty, !s.contains(",") else { return nil }
        return s.trimmingCharacters(in: .whitespaces)
    }

    /// The name an extra request's facet is counted under in the merged search.
    static func alias(_ i: Int) -> String { "\u{1}disjunctive.\(i)" }
}

extension AlgoliaREST {
    /// The `/queries` answer for InstantSearch's page, from one search; nil
    /// when the call must run request by request after all (an unknown
    /// index or a parameter the core refuses: answered as they are today).
    func disjunctivePage(_ c: Call, _ page: AlgoliaDisjunctivePage) async throws(RESTError) -> [UInt8]? {
        guard let meta = try await loadMeta(c, page.index) else { return nil }
        var filters: [QueryPlan.Predicate] = []
        var echoed: [String] = []
        // Each extra's filter and `params` as its own search would have them
        // (the settings filled in, `attributesToRetrieve` applied here, as ``searchAnswer``).
        for extra in page.extras {
            var applied = meta.settings.apply(to: extra.params)
            applied["attributesToRetrieve"] = nil
            guard let request = try? SearchRequest(params: .object(applied)) else { return nil }
            filters.append(request.plan.filter)
            echoed.append(SearchResponseBuilder.urlEncoded(request.params))
        }
        var mainApplied = meta.settings.apply(to: page.main)
        mainApplied["attributesToRetrieve"] = nil
        guard let mainRequest = try? SearchRequest(params: .object(mainApplied)) else { return nil }
        // The sizes travel as one facet's values, cut to maxValuesPerFacet.
        guard page.extras.count <= mainRequest.plan.maxValuesPerFacet else { return nil }
        let mainFacets = !mainRequest.plan.facets.isEmpty
        let extras = page.extras
        let aliasFilters = filters
        let answer = try await searchAnswer(c, page.index, page.main, asWritten: true) { request in
            for (i, extra) in extras.enumerated() {
                let alias = AlgoliaDisjunctivePage.alias(i)
                request.plan.facets.append(alias)
                request.plan.facetAliases[alias] = extra.facet
                request.plan.disjunctiveFilters[alias] = aliasFilters[i]
            }
            request.plan.facets.append(SearchPlan.disjunctiveSetSizes)
        }
        var main: [String: JSONValue]
        switch answer {
        case .object(let o): main = o
        case .written(let bytes):
            guard case .object(let o)? = try? JSONValue.parse(Data(bytes)) else {
                throw RESTError(.internalError, "the search's response is not a JSON object")
            }
            main = o
        }
        var facets = main["facets"]?.objectValue ?? [:]
        var stats = main["facets_stats"]?.objectValue ?? [:]
        let sizes = facets.removeValue(forKey: SearchPlan.disjunctiveSetSizes)?.objectValue ?? [:]
        var results: [JSONValue] = []
        for (i, extra) in extras.enumerated() {
            let alias = AlgoliaDisjunctivePage.alias(i)
            let counts = facets.removeValue(forKey: alias) ?? .object([:])
            let stat = stats.removeValue(forKey: alias)
            var o: [String: JSONValue] = [
                "hits": .array([]), "nbHits": sizes[alias] ?? .number(0), "hitsPerPage": .number(0),
                "page": .number(0), "nbPages": .number(0), "query": main["query"] ?? .string(""),
                "exhaustiveNbHits": main["exhaustiveNbHits"] ?? .bool(true),
                "exhaustiveFacetsCount": main["exhaustiveFacetsCount"] ?? .bool(true),
                "params": .string(echoed[i]), "processingTimeMS": main["processingTimeMS"] ?? .number(0),
                "index": .string(page.index), "facets": .object([extra.facet: counts]),
                "facets_stats": .object(stat.map { [extra.facet: $0] } ?? [:]),
            ]
            for k in ["aroundLatLng", "renderingContent"] { o[k] = main[k] }
            results.append(.object(o))
        }
        main["facets"] = mainFacets ? .object(facets) : nil
        main["facets_stats"] = mainFacets ? .object(stats) : nil
        return JSONWriter.bytes(.object(["results": .array([.object(main)] + results)]))
    }
}
