import Foundation
import Items
import QueryPlan

/// Algolia's search parameters as clients send them, made into the JSON
/// object the core's ``SearchRequest`` reads.
enum AlgoliaParams {
    /// Parameters whose values are text even when they read as numbers
    /// (`query=2024`), in the URL-encoded `params` form.
    static let textParameters: Set<String> = [
        "query", "filters", "highlightPreTag", "highlightPostTag", "snippetEllipsisText", "aroundLatLng", "facetQuery",
        "queryType", "userToken", "similarQuery", "cursor", "facetName", "indexName", "type", "analyticsTags",
    ]

    /// Accepted and without effect: switches of Algolia's that Limelight has
    /// no counterpart for, or that change nothing in its answers
    /// (docs/algolia.md says which). Dropped before the core reads the rest,
    /// which refuses any name it does not know.
    static let ignored: Set<String> = [
        "responseFields", "sumOrFiltersScores", "facetingAfterDistinct", "advancedSyntax", "advancedSyntaxFeatures",
        "naturalLanguages", "decompoundQuery", "enableReRanking",
        "percentileComputation", "attributeCriteriaComputedByMinProximity", "replaceSynonymsInHighlight",
        "minProximity", "explain", "exactOnSingleWordQuery", "removeWordsIfNoResults",
        "optionalWords", "disableTypoToleranceOnAttributes", "disableExactOnAttributes", "allowTyposOnNumericTokens",
        "restrictHighlightAndSnippetArrays", "getRankingInfo_", "personalizationImpact", "reRankingApplyFilter",
        "maxFacetHits", "sortFacetValuesBy", "renderingContent", "restrictIndices", "validUntil",
        "minimumAroundRadius", "aroundLatLngViaIP", "relevancyStrictness", "typoToleranceOnAttributes", "mode",
        "semanticSearch", "attributesToRetrieve_", "insidePolygon", "numericAttributesForFiltering", "x-algolia-agent",
    ]

    /// A `params` string (`query=a&hitsPerPage=2&facets=%5B%22brand%22%5D`):
    /// values that are JSON lists, objects, numbers or booleans as such, the
    /// rest (and every ``textParameters`` value) as text.
    static func decode(_ s: String) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for pair in s.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ x: Substring) -> String {
                String(x).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(x)
            }
            let name = decoded(kv[0])
            let text = kv.count > 1 ? decoded(kv[1]) : ""
            if textParameters.contains(name) {
                out[name] = .string(text)
            } else if let v = try? JSONValue.parse(text), v.stringValue == nil {
                out[name] = v
            } else {
                out[name] = .string(text)
            }
        }
        return out
    }

    /// A list of attribute names, given as a list or comma-separated; nil
    /// when absent or when it holds `*` (every attribute).
    static func names(_ v: JSONValue?) -> Set<String>? {
        guard let v else { return nil }
        let names =
            v.arrayValue?.compactMap(\.stringValue)
            ?? (v.stringValue ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
        return names.contains("*") ? nil : Set(names)
    }

    /// A request object's parameters, whichever form they came in: the v4
    /// `params` string, the v5 flattened members, or both (the members win).
    static func from(_ o: [String: JSONValue], dropping skip: Set<String> = []) -> [String: JSONValue] {
        var params: [String: JSONValue] = [:]
        if let s = o["params"]?.stringValue { params = decode(s) }
        for (k, v) in o where k != "params" { params[k] = v }
        for k in skip { params[k] = nil }
        return normalized(params)
    }

    /// Without the ignored names, and without empty filters (InstantSearch
    /// sends `tagFilters: ""` and `facetFilters: []`).
    static func normalized(_ p: [String: JSONValue]) -> [String: JSONValue] {
        var p = p
        for k in ignored { p[k] = nil }
        for k in ["filters", "tagFilters", "facetFilters", "numericFilters", "optionalFilters"] {
            if p[k]?.stringValue == "" || p[k]?.arrayValue?.isEmpty == true { p[k] = nil }
        }
        p["optionalFilters"] = nil
        if case .string(let s)? = p["facets"], s.hasPrefix("[") { p["facets"] = (try? JSONValue.parse(s)) ?? p["facets"] }
        return p
    }
}

/// An index's settings, as applied to its searches.
///
/// Stored as given (GET answers them back) and read here at each search:
/// a setting is the default of the search parameter of the same name
/// (`ranking`, `customRanking`, `distinct`, `attributeForDistinct` among
/// them: every shard ranks by the plan's ``QueryPlan/RankCriterion`` list,
/// Algolia's default formula when the index sets none), and
/// `searchableAttributes` of `restrictSearchableAttributes` (its entries as
/// written, equal-rank groups and `unordered()` included; a search's own
/// `restrictSearchableAttributes` keeps those of its names, in the
/// setting's order); `unretrievableAttributes` are never returned.
struct AlgoliaSettings: Sendable {
    var json: [String: JSONValue]

    /// The settings that are search parameters' defaults.
    static let defaults = [
        "hitsPerPage", "attributesToRetrieve", "attributesToHighlight", "attributesToSnippet", "highlightPreTag",
        "highlightPostTag", "snippetEllipsisText", "typoTolerance", "minWordSizefor1Typo", "minWordSizefor2Typos",
        "paginationLimitedTo", "maxValuesPerFacet", "queryType", "customRanking", "distinct", "attributeForDistinct",
        "ignorePlurals", "removeStopWords", "queryLanguages", "alternativesAsExact",
    ]

    /// The search's parameters with the settings' defaults filled in.
    func apply(to params: [String: JSONValue]) -> [String: JSONValue] {
        var p = params
        for name in Self.defaults where p[name] == nil {
            if let v = json[name], v != .null { p[name] = v }
        }
        if let entries = json["searchableAttributes"]?.arrayValue?.compactMap(\.stringValue), !entries.isEmpty {
            if let asked = AlgoliaParams.names(p["restrictSearchableAttributes"]) {
                // The setting's entries narrowed to the names asked, each keeping its rank.
                let kept = entries.map { entry in
                    entry.split(separator: ",").filter { part in
                        SearchableAttribute.parse([String(part)]).contains { asked.contains($0.name) }
                    }.joined(separator: ",")
                }
                p["restrictSearchableAttributes"] = .array(kept.filter { !$0.isEmpty }.map { .string($0) })
            } else if p["restrictSearchableAttributes"] == nil {
                p["restrictSearchableAttributes"] = .array(entries.map { .string($0) })
            }
        }
        if p["ranking"] == nil {
            p["ranking"] = json["ranking"].flatMap { $0 == .null ? nil : $0 } ?? .array(Self.defaultRanking.map { .string($0) })
        }
        return p
    }

    /// Refuses ranking settings no search could apply (so that a mistake is
    /// answered by `set_settings`, not by every search after it): names the
    /// unknown criteria, or the value that is not of the setting's type.
    static func check(_ given: [String: JSONValue]) throws(RESTError) {
        if let r = given["ranking"], r != .null {
            guard let list = r.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                throw RESTError(.badRequest, "ranking: expected a list of ranking criteria")
            }
            let unknown = list.compactMap(\.stringValue).filter { RankCriterion(name: $0) == nil }
            guard unknown.isEmpty else {
                throw RESTError(
                    .badRequest,
                    "ranking: unknown ranking criteria \(unknown.map { "'\($0)'" }.joined(separator: ", ")) (expected typo, geo, "
                        + "words, filters, proximity, attribute, exact, custom, asc(attribute) or desc(attribute))")
            }
        }
        if let d = given["distinct"], d != .null, d.boolValue == nil, !(d.intValue.map { (0...4).contains($0) } ?? false) {
            throw RESTError(.badRequest, "distinct: expected true, false or a number of hits per group from 0 to 4")
        }
        if let a = given["attributeForDistinct"], a != .null, a.stringValue == nil {
            throw RESTError(.badRequest, "attributeForDistinct: expected an attribute name")
        }
    }

    /// Algolia's default `ranking`, an index's unless its settings say otherwise.
    static let defaultRanking = RankCriterion.algolia.map(\.name)

    var unretrievable: Set<String> { Set((json["unretrievableAttributes"]?.arrayValue ?? []).compactMap(\.stringValue)) }
    var replicas: [String] {
        (json["replicas"]?.arrayValue ?? []).compactMap(\.stringValue).map { r in
            r.hasPrefix("virtual(") && r.hasSuffix(")") ? String(r.dropFirst(8).dropLast()) : r
        }
    }
    /// The index whose records a replica shows.
    var primary: String? { json["primary"]?.stringValue }
}

/// An index's settings and dates, kept as one item of the index's meta
/// domain (``AlgoliaIndex/metaDomain(_:)``): durable and replicated as every
/// record is, deleted with the index.
struct AlgoliaIndexMeta: Sendable {
    var name: String
    var settings: AlgoliaSettings
    var createdAt: Date
    var updatedAt: Date
    /// Whether some record of the index was stored flattened (a nested
    /// object, `_geoloc`): its search hits must then be rebuilt as records.
    var flattened = false

    init(name: String, settings: [String: JSONValue] = [:], createdAt: Date = Date(), updatedAt: Date = Date()) {
        self.name = name
        self.settings = AlgoliaSettings(json: settings)
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    var item: JSONValue {
        .object([
            "uniqueIdentifier": .string(AlgoliaIndex.metaUID(name)),
            "domainIdentifier": .string(AlgoliaIndex.metaDomain(name)),
            "attributes": .object([
                AlgoliaIndex.metaAttribute: .string(name),
                "algoliaSettings": .string(JSONWriter.string(.object(settings.json))),
                "algoliaCreated": .number(createdAt.timeIntervalSince1970),
                "algoliaUpdated": .number(updatedAt.timeIntervalSince1970),
                "algoliaFlattened": .bool(flattened),
            ]),
        ])
    }

    init?(item: JSONValue) {
        guard let a = item["attributes"]?.objectValue, let name = a[AlgoliaIndex.metaAttribute]?.stringValue else { return nil }
        let settings = a["algoliaSettings"]?.stringValue.flatMap { try? JSONValue.parse($0) }?.objectValue ?? [:]
        self.init(
            name: name, settings: settings,
            createdAt: Date(timeIntervalSince1970: a["algoliaCreated"]?.doubleValue ?? 0),
            updatedAt: Date(timeIntervalSince1970: a["algoliaUpdated"]?.doubleValue ?? 0))
        flattened = a["algoliaFlattened"]?.boolValue ?? true
    }
}
