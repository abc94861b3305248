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
        let flattened =
            meta.settings.primary == nil ? meta.flattened : (try await loadMeta(c, meta.settings.primary!))?.flattened ?? true
        let hidden = meta.settings.unretrievable
        var filters: [QueryPlan.Predicate] = []
        var echoed: [String] = []
        // Each extra's filter and `params` as its own search would have them
        // (the settings filled in, `attributesToRetrieve` where ``searchAnswer`` applies it).
        for extra in page.extras {
            var applied = meta.settings.apply(to: extra.params)
            _ = Self.retrieval(&applied, flattened: flattened, hidden: hidden)
            guard let request = try? SearchRequest(params: .object(applied)) else { return nil }
            filters.append(request.plan.filter)
            echoed.append(SearchResponseBuilder.urlEncoded(request.params))
        }
        var mainApplied = meta.settings.apply(to: page.main)
        _ = Self.retrieval(&mainApplied, flattened: flattened, hidden: hidden)
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
        // The first request's answer: as written, its hits not read into a
        // tree (they are most of its bytes), only its facets rewritten
        // without the extra requests'; or, when the hits needed rebuilding,
        // the object it already is.
        var fields: [String: JSONValue] = [:]
        var written: (bytes: [UInt8], members: [String: Range<Int>])?
        switch answer {
        case .object(let o): fields = o
        case .written(let bytes):
            guard let members = JSONMembers.scan(bytes) else {
                throw RESTError(.internalError, "the search's response is not a JSON object")
            }
            written = (bytes, members)
            for k in ["facets", "facets_stats", "query", "exhaustiveNbHits", "exhaustiveFacetsCount", "processingTimeMS", "aroundLatLng"] {
                if let r = members[k] { fields[k] = try? JSONValue.parse(Data(bytes[r])) }
            }
        }
        var facets = fields["facets"]?.objectValue ?? [:]
        var stats = fields["facets_stats"]?.objectValue ?? [:]
        let sizes = facets.removeValue(forKey: SearchPlan.disjunctiveSetSizes)?.objectValue ?? [:]
        var results: [[UInt8]] = []
        for (i, extra) in extras.enumerated() {
            let alias = AlgoliaDisjunctivePage.alias(i)
            let counts = facets.removeValue(forKey: alias) ?? .object([:])
            let stat = stats.removeValue(forKey: alias)
            var o: [String: JSONValue] = [
                "hits": .array([]), "nbHits": sizes[alias] ?? .number(0), "hitsPerPage": .number(0),
                "page": .number(0), "nbPages": .number(0), "query": fields["query"] ?? .string(""),
                "exhaustiveNbHits": fields["exhaustiveNbHits"] ?? .bool(true),
                "exhaustiveFacetsCount": fields["exhaustiveFacetsCount"] ?? .bool(true),
                "params": .string(echoed[i]), "processingTimeMS": fields["processingTimeMS"] ?? .number(0),
                "index": .string(page.index), "facets": .object([extra.facet: counts]),
                "facets_stats": .object(stat.map { [extra.facet: $0] } ?? [:]),
            ]
            for k in ["aroundLatLng", "renderingContent"] { o[k] = fields[k] }
            results.append(JSONWriter.bytes(.object(o)))
        }
        var first: [UInt8]
        if let written {
            first = JSONMembers.replacing(
                written.bytes, written.members,
                ["facets": mainFacets ? JSONWriter.bytes(.object(facets)) : nil, "facets_stats": mainFacets ? JSONWriter.bytes(.object(stats)) : nil])
        } else {
            fields["facets"] = mainFacets ? .object(facets) : nil
            fields["facets_stats"] = mainFacets ? .object(stats) : nil
            first = JSONWriter.bytes(.object(fields))
        }
        var out: [UInt8] = Array("{\"results\":[".utf8)
        out.reserveCapacity(first.count + 1024)
        out += first
        for r in results {
            out.append(UInt8(ascii: ","))
            out += r
        }
        out += Array("]}".utf8)
        return out

    }
}

/// The members of a JSON object's text found without reading their values
/// into a tree: a search's response is mostly its hits, which the page's
/// answer passes on as they were written.
enum JSONMembers {
    /// Each top-level key and the byte range of its value; nil when the
    /// bytes are not one JSON object.
    static func scan(_ b: [UInt8]) -> [String: Range<Int>]? {
        var i = 0
        func space() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        func string() -> Bool {
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { return false }
            i += 1
            while i < b.count, b[i] != UInt8(ascii: "\"") { i += b[i] == UInt8(ascii: "\\") ? 2 : 1 }
            guard i < b.count else { return false }
            i += 1
            return true
        }
        func value() -> Bool {
            guard i < b.count else { return false }
            switch b[i] {
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while i < b.count {
                    switch b[i] {
                    case UInt8(ascii: "\""): if !string() { return false }; continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 { i += 1; return true }
                    default: break
                    }
                    i += 1
                }
                return false
            default:
                while i < b.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09].contains(b[i]) { i += 1 }
                return true
            }
        }
        var out: [String: Range<Int>] = [:]
        space()
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        while true {
            space()
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: "}") { return out }
            let keyStart = i
            guard string(), let key = (try? JSONValue.parse(Data(b[keyStart..<i])))?.stringValue else { return nil }
            space()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            space()
            let start = i
            guard value() else { return nil }
            out[key] = start..<i
            space()
            if i < b.count, b[i] == UInt8(ascii: ",") { i += 1 }
        }
    }

    /// The object with these members' values replaced (nil: the member left
    /// out), the others' bytes as they were.
    static func replacing(_ b: [UInt8], _ members: [String: Range<Int>], _ values: [String: [UInt8]?]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(b.count)
        for (key, range) in members.sorted(by: { $0.value.lowerBound < $1.value.lowerBound }) {
            let bytes: ArraySlice<UInt8>
            if let replaced = values[key] {
                guard let r = replaced else { continue }
                bytes = r[...]
            } else {
                bytes = b[range]
            }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(key, into: &out)
            out.append(UInt8(ascii: ":"))
            out += bytes
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
