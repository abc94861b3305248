import Foundation
import Items
import QueryPlan

/// Algolia's search parameters, read from the JSON a client sends: the plan
/// every shard evaluates, and what the coordinator needs to shape the answer
/// (the page, highlighting, snippets).
///
/// Readings where Algolia's documents leave room, chosen as a user would expect:
/// - `query` words must all match; the last also as a prefix unless the query
///   ends with a space (`queryType: prefixNone` turns prefixes off).
/// - `offset` and `length` take precedence over `page`; `page` is 0-based.
/// - `aroundLatLng` without `aroundRadius` orders by distance and filters
///   nothing (Algolia would pick a radius from the data's density).
/// - Geo parameters use the `latitude` and `longitude` attributes.
/// - Numeric filters on dates compare seconds since Apple's reference date (`timeIntervalSinceReferenceDate`), the unit
///   Core Spotlight's queries use for dates.
/// - `facetFilters`' negation is Algolia's `attr:-value` (and `attr:\-value`
///   for a value that starts with a minus).
package struct SearchRequest: Sendable {
    package var query: String
    package var plan: SearchPlan
    package var page: Int
    package var hitsPerPage: Int
    /// The first hit of the answer (from `offset`, or `page` × `hitsPerPage`).
    package var offset: Int
    package var length: Int
    /// Whether `offset`/`length` were given (the answer then echoes them).
    package var usesOffset: Bool
    package var attributesToRetrieve: [String]?
    package var attributesToHighlight: [String]?
    /// Attribute → words of context around the first match.
    package var attributesToSnippet: [(String, Int)] { zip(snippetNames, snippetWords).map { ($0, $1) } }
    var snippetNames: [String] = []
    var snippetWords: [Int] = []
    package var highlightPreTag: String
    package var highlightPostTag: String
    package var snippetEllipsisText: String
    package var getRankingInfo: Bool
    package var aroundRadius: Double?
    /// The parameters as received, for the answer's `params`.
    package var params: JSONValue
    /// Hits past this many are not served (Algolia's `paginationLimitedTo`).
    package var paginationLimitedTo: Int
    /// `semantic` or `hybrid`: the text to embed and its weight. The plan's
    /// ``SearchPlan/semantic`` is set once the text is embedded (by the coordinator).
    package var semantic: SemanticParameters?
    /// Hits as Algolia records, for the REST API (`AlgoliaREST`): each hit's
    /// `objectID` is its identifier without this prefix (the index's
    /// namespace in the app), and no `domainIdentifier` or `entity` is
    /// written. Nil for the ZeroMQ search, whose hits keep both.
    package var recordPrefix: String?
    /// The query's words as typed (folded), before ``expansion``.
    package var typedWords: [String] = []
    /// Stop words, plurals and synonyms (``QueryExpansion``): what makes
    /// the plan's words and their alternatives out of ``typedWords``.
    package var expansion = QueryExpansion()

    package static let knownParameters: Set<String> = [
        "query", "page", "hitsPerPage", "offset", "length", "attributesToRetrieve", "facets", "maxValuesPerFacet",
        "facetFilters", "numericFilters", "tagFilters", "filters", "disjunctiveFacets", "aroundLatLng", "aroundRadius",
        "aroundPrecision",
        "insideBoundingBox", "attributesToHighlight", "attributesToSnippet", "highlightPreTag", "highlightPostTag",
        "snippetEllipsisText", "getRankingInfo", "typoTolerance", "minWordSizefor1Typo", "minWordSizefor2Typos",
        "restrictSearchableAttributes", "customRanking", "queryType", "paginationLimitedTo", "semantic", "hybrid",
        "ranking", "distinct", "attributeForDistinct", "ignorePlurals", "removeStopWords", "queryLanguages",
        "alternativesAsExact", "synonyms",
        // Accepted and without effect here: analytics and personalization switches UI libraries send.
        "analytics", "clickAnalytics", "analyticsTags", "userToken", "enablePersonalization", "enableABTest",
        "enableRules", "ruleContexts",
    ]

    package init(params: JSONValue) throws(SearchParametersError) {
        guard case .object(let o) = params else {
            throw SearchParametersError(.invalidParameter, "the parameters must be a JSON object", parameter: "params")
        }
        // The first unknown name in order, when there is one (sorted only then).
        if o.keys.contains(where: { !Self.knownParameters.contains($0) }) {
            for key in o.keys.sorted() where !Self.knownParameters.contains(key) {
                throw SearchParametersError(.unknownParameter, "'\(key)' is not a search parameter Limelight knows", parameter: key)
            }
        }
        func invalid(_ p: String, _ m: String) -> SearchParametersError { SearchParametersError(.invalidParameter, m, parameter: p) }
        func int(_ k: String, _ d: Int, min lo: Int = 0, max hi: Int = .max) throws(SearchParametersError) -> Int {
            guard let v = o[k] else { return d }
            guard let n = v.intValue else { throw invalid(k, "expected a whole number") }
            guard n >= lo, n <= hi else { throw invalid(k, "must be between \(lo) and \(hi)") }
            return n
        }
        func bool(_ k: String, _ d: Bool) throws(SearchParametersError) -> Bool {
            guard let v = o[k] else { return d }
            guard let b = v.boolValue else { throw invalid(k, "expected true or false") }
            return b
        }
        func string(_ k: String, _ d: String) throws(SearchParametersError) -> String {
            guard let v = o[k] else { return d }
            guard let s = v.stringValue else { throw invalid(k, "expected text") }
            return s
        }
        func strings(_ k: String) throws(SearchParametersError) -> [String]? {
            guard let v = o[k] else { return nil }
            if let s = v.stringValue { return s.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            guard let a = v.arrayValue else { throw invalid(k, "expected a list of attribute names") }
            var out: [String] = []
            for (i, e) in a.enumerated() {
                guard let s = e.stringValue else { throw invalid("\(k)[\(i)]", "expected text") }
                out.append(s)
            }
            return out
        }

        self.params = params
        query = try string("query", "")
        semantic = try SemanticParameters.parse(o, query: query)
        highlightPreTag = try string("highlightPreTag", "<em>")
        highlightPostTag = try string("highlightPostTag", "</em>")
        snippetEllipsisText = try string("snippetEllipsisText", "…")
        getRankingInfo = try bool("getRankingInfo", false)
        paginationLimitedTo = try int("paginationLimitedTo", 1000, min: 0, max: 20_000)
        hitsPerPage = try int("hitsPerPage", 20, min: 0, max: 1000)
        page = try int("page", 0)
        usesOffset = o["offset"] != nil || o["length"] != nil
        if usesOffset {
            offset = try int("offset", 0)
            length = try int("length", hitsPerPage, min: 0, max: 1000)
        } else {
            offset = page * hitsPerPage
            length = hitsPerPage
        }
        attributesToRetrieve = try strings("attributesToRetrieve")
        if attributesToRetrieve?.contains("*") == true { attributesToRetrieve = nil }
        attributesToHighlight = try strings("attributesToHighlight")
        for (i, spec) in (try strings("attributesToSnippet") ?? []).enumerated() {
            let parts = spec.split(separator: ":", maxSplits: 1)
            let words = parts.count == 2 ? Int(parts[1]) : 10
            guard let words, words > 0 else {
                throw invalid("attributesToSnippet[\(i)]", "expected attribute or attribute:words, e.g. contentDescription:20")
            }
            snippetNames.append(String(parts[0]))
            snippetWords.append(words)
        }

        var plan = SearchPlan()
        plan.words = SearchTokens.queryWords(query)
        let queryType = try string("queryType", "prefixLast")
        switch queryType {
        case "prefixLast": plan.prefixLast = !(query.last?.isWhitespace ?? false)
        case "prefixNone": plan.prefixLast = false
        default: throw invalid("queryType", "'\(queryType)' is not supported: use prefixLast or prefixNone")
        }
        typedWords = plan.words
        expansion = try Self.expansion(o)
        (plan.words, plan.alternatives) = expansion.expand(typedWords, prefixLast: plan.prefixLast)
        if let t = o["typoTolerance"] {
            if let b = t.boolValue {
                plan.typos.enabled = b
            } else if t.stringValue == "true" || t.stringValue == "false" {
                plan.typos.enabled = t.stringValue == "true"
            } else {
                throw invalid("typoTolerance", "expected true or false")
            }
        }
        plan.typos.minWordSizeForOneTypo = try int("minWordSizefor1Typo", TypoPolicy.algolia.minWordSizeForOneTypo, min: 1, max: 100)
        plan.typos.minWordSizeForTwoTypos = try int(
            "minWordSizefor2Typos", TypoPolicy.algolia.minWordSizeForTwoTypos, min: plan.typos.minWordSizeForOneTypo, max: 100)
        plan.searchableAttributes = try strings("restrictSearchableAttributes") ?? []
        if let c = try strings("customRanking") {
            plan.customRanking = []
            for (i, spec) in c.enumerated() {
                let asc = spec.hasPrefix("asc(") && spec.hasSuffix(")")
                let desc = spec.hasPrefix("desc(") && spec.hasSuffix(")")
                guard asc || desc else { throw invalid("customRanking[\(i)]", "expected asc(attribute) or desc(attribute)") }
                plan.customRanking.append(CustomRank(attribute: String(spec.dropFirst(asc ? 4 : 5).dropLast()), ascending: asc))
            }
        }
        if let r = try strings("ranking") {
            var criteria: [RankCriterion] = []
            var unknown: [String] = []
            for name in r {
                if let c = RankCriterion(name: name) { criteria.append(c) } else { unknown.append(name) }
            }
            guard unknown.isEmpty else {
                throw invalid(
                    "ranking",
                    "unknown ranking criteria: \(unknown.map { "'\($0)'" }.joined(separator: ", ")) (expected typo, geo, words, "
                        + "filters, proximity, attribute, exact, custom, asc(attribute) or desc(attribute))")
            }
            plan.ranking = criteria
        }
        if let d = o["distinct"] {
            let n: Int
            if let b = d.boolValue {
                n = b ? 1 : 0
            } else if let i = d.intValue, (0...4).contains(i) {
                n = i
            } else {
                throw invalid("distinct", "expected true, false or a number of hits per group from 0 to 4")
            }
            // Without an attribute to group by, distinct is ignored (as Algolia does).
            let attribute = try string("attributeForDistinct", "")
            if n > 0, !attribute.isEmpty { plan.distinct = DistinctPlan(attribute: attribute, count: n) }
        } else if let a = o["attributeForDistinct"], a.stringValue == nil {
            throw invalid("attributeForDistinct", "expected an attribute name")
        }
        plan.facets = try strings("facets") ?? []
        // `*` is every facet attribute, as in Algolia: each shard counts
        // every attribute it holds that takes categories (see
        // `ShardStore.facetAttributes`), beside the facets named with it.
        if plan.facets.contains("*") { plan.facets = ["*"] + plan.facets.filter { $0 != "*" } }
        plan.maxValuesPerFacet = try int("maxValuesPerFacet", 100, min: 1, max: 1000)
        let disjunctive = try strings("disjunctiveFacets") ?? []
        for f in disjunctive where !plan.facets.contains(f) { plan.facets.append(f) }

        // Refinements: every parameter adds AND-ed groups.
        var groups: [FilterGroup] = []
        if let f = o["filters"] {
            guard let s = f.stringValue else { throw invalid("filters", "expected text") }
            var parser = FilterExpressionParser(s)
            groups += try parser.parse()
        }
        if let f = o["facetFilters"] { groups += try FilterLists.groups(f, parameter: "facetFilters", parseOne: FilterLists.facet) }
        if let f = o["numericFilters"] { groups += try FilterLists.groups(f, parameter: "numericFilters", parseOne: FilterLists.numeric) }
        if let f = o["tagFilters"] {
            groups += try FilterLists.groups(f, parameter: "tagFilters") { s, _ throws(SearchParametersError) in
                s.hasPrefix("-") ? (.tag(String(s.dropFirst())), true) : (.tag(s), false)
            }
        }

        // Geo.
        if let a = o["aroundLatLng"] {
            guard let s = a.stringValue, let p = Self.point(s) else {
                throw invalid("aroundLatLng", "expected \"latitude, longitude\", e.g. \"40.71, -74.01\"")
            }
            plan.around = p
            if let r = o["aroundRadius"] {
                if r.stringValue == "all" {
                } else {
                    guard let m = r.doubleValue, m > 0 else { throw invalid("aroundRadius", "expected metres (a positive number) or \"all\"") }
                    aroundRadius = m
                    plan.aroundRadius = m
                    groups.append(FilterGroup.raw(Self.boxPredicate(around: p, metres: m), attributes: ["latitude", "longitude"]))
                }
            }
        } else if o["aroundRadius"] != nil {
            throw invalid("aroundRadius", "needs aroundLatLng")
        }
        // Read with or without a point, as Algolia accepts it: without one
        // there are no distances and it changes nothing.
        if let p = o["aroundPrecision"], p != .null {
            switch GeoPrecision.parse(p) {
            case .success(let precision): plan.aroundPrecision = precision
            case .failure(let problem): throw invalid("aroundPrecision", problem.message)
            }
        }
        if let b = o["insideBoundingBox"] {
            var boxes: [[Double]] = []
            if let s = b.stringValue {
                let n = s.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
                boxes = stride(from: 0, to: n.count, by: 4).map { Array(n[$0..<min(n.count, $0 + 4)]) }
            } else if let a = b.arrayValue {
                boxes = a.map { $0.arrayValue?.compactMap(\.doubleValue) ?? [] }
            }
            guard !boxes.isEmpty, boxes.allSatisfy({ $0.count == 4 }) else {
                throw invalid("insideBoundingBox", "expected [[lat1, lng1, lat2, lng2], …] in degrees")
            }
            let ps = boxes.map { Self.boxPredicate(lat1: $0[0], lng1: $0[1], lat2: $0[2], lng2: $0[3]) }
            groups.append(FilterGroup.raw(ps.count == 1 ? ps[0] : .or(ps), attributes: ["latitude", "longitude"]))
        }

        plan.filter = QueryPlan.Predicate.and(groups.map(\.predicate)).simplified()
        for f in disjunctive {
            plan.disjunctiveFilters[f] = QueryPlan.Predicate.and(groups.filter { $0.attributes != [f] }.map(\.predicate)).simplified()
        }
        let end = offset + length
        plan.window = min(end, paginationLimitedTo)
        if let r = attributesToRetrieve {
            // Highlighted and snippeted attributes are fetched too; the answer
            // keeps only the retrieved ones (by default, those are what is highlighted).
            var fetch = r
            for a in (attributesToHighlight ?? []) + snippetNames where !fetch.contains(a) { fetch.append(a) }
            plan.fetchAttributes = fetch
        }
        self.plan = plan
    }

    /// Applies an index's synonyms (the REST API's, for the index searched)
    /// to the plan's words.
    package mutating func applySynonyms(_ synonyms: [QuerySynonym]) {
        guard !synonyms.isEmpty else { return }
        expansion.synonyms = synonyms
        (plan.words, plan.alternatives) = expansion.expand(typedWords, prefixLast: plan.prefixLast)
    }

    /// `removeStopWords`, `ignorePlurals` (English: `true`, or a list of
    /// languages holding `"en"`; `true` means `queryLanguages` when given),
    /// `alternativesAsExact` and `synonyms` (true unless false).
    static func expansion(_ o: [String: JSONValue]) throws(SearchParametersError) -> QueryExpansion {
        func invalid(_ p: String, _ m: String) -> SearchParametersError { SearchParametersError(.invalidParameter, m, parameter: p) }
        var english: Bool?
        if let q = o["queryLanguages"] {
            guard let en = QueryExpansion.english(q), q.boolValue == nil else {
                throw invalid("queryLanguages", "expected a list of languages (ISO codes, e.g. [\"en\"])")
            }
            english = en
        }
        func language(_ k: String) throws(SearchParametersError) -> Bool {
            guard let v = o[k] else { return false }
            guard let en = QueryExpansion.english(v) else {
                throw invalid(k, "expected true, false or a list of languages (ISO codes, e.g. [\"en\"]); English is the one supported")
            }
            let isTrue = v.boolValue == true || v.stringValue == "true"
            return isTrue ? (english ?? true) : en
        }
        var e = QueryExpansion(removeStopWords: try language("removeStopWords"), ignorePlurals: try language("ignorePlurals"))
        if let a = o["alternativesAsExact"] {
            let names = a.arrayValue?.compactMap(\.stringValue) ?? a.stringValue.map { $0.split(separator: ",").map(String.init) }
            let known: Set<String> = ["ignorePlurals", "singleWordSynonym", "multiWordsSynonym"]
            guard let names, names.allSatisfy(known.contains) else {
                throw invalid("alternativesAsExact", "expected a list of ignorePlurals, singleWordSynonym, multiWordsSynonym")
            }
            e.pluralsAsExact = names.contains("ignorePlurals")
            e.synonymsAsExact = names.contains("singleWordSynonym")
            e.multiWordSynonymsAsExact = names.contains("multiWordsSynonym")
        }
        if let v = o["synonyms"] {
            guard let b = v.boolValue ?? (v.stringValue == "true" ? true : v.stringValue == "false" ? false : nil) else {
                throw invalid("synonyms", "expected true or false")
            }
            e.useSynonyms = b
        }
        return e
    }

    static func point(_ s: String) -> Location? {
        let n = s.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard n.count == 2, abs(n[0]) <= 90, abs(n[1]) <= 180 else { return nil }
        return Location(latitude: n[0], longitude: n[1])
    }

    /// A latitude/longitude box holding every point within `metres` of `p`:
    /// the index-friendly part of a radius filter (the store measures the rest).
    static func boxPredicate(around p: Location, metres: Double) -> QueryPlan.Predicate {
        let dLat = metres / Geo.earthRadius * 180 / .pi
        let lat1 = max(-90, p.latitude - dLat), lat2 = min(90, p.latitude + dLat)
        let latRange = QueryPlan.Predicate.range(
            RangeTest(attribute: "latitude", lower: Bound(lat1, inclusive: true), upper: Bound(lat2, inclusive: true)))
        // Near a pole, or when the circle spans half the globe, every longitude.
        let maxLat = max(abs(lat1), abs(lat2))
        guard maxLat < 89.9 else { return latRange }
        let dLon = dLat / cos(maxLat * .pi / 180)
        guard dLon < 180 else { return latRange }
        return .and([latRange, longitudeRange(p.longitude - dLon, p.longitude + dLon)])
    }

    static func boxPredicate(lat1: Double, lng1: Double, lat2: Double, lng2: Double) -> QueryPlan.Predicate {
        let latRange = QueryPlan.Predicate.range(
            RangeTest(
                attribute: "latitude", lower: Bound(min(lat1, lat2), inclusive: true),
                upper: Bound(max(lat1, lat2), inclusive: true)))
        // Algolia's boxes run from the first corner's longitude eastwards to the second's.
        let lon: QueryPlan.Predicate =
            lng1 <= lng2
            ? longitudeRange(lng1, lng2)
            : .or([longitudeRange(lng1, 180), longitudeRange(-180, lng2)])
        return .and([latRange, lon])
    }

    /// Longitudes from `lo` to `hi`, wrapping at ±180.
    static func longitudeRange(_ lo: Double, _ hi: Double) -> QueryPlan.Predicate {
        func r(_ a: Double, _ b: Double) -> QueryPlan.Predicate {
            .range(RangeTest(attribute: "longitude", lower: Bound(a, inclusive: true), upper: Bound(b, inclusive: true)))
        }
        if lo < -180 { return .or([r(lo + 360, 180), r(-180, hi)]) }
        if hi > 180 { return .or([r(lo, 180), r(-180, hi - 360)]) }
        return r(lo, hi)
    }
}
