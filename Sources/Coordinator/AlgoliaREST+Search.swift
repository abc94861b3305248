import Foundation
import Items
import QueryPlan
import SearchParameters

/// Searches: one index, several at once, facet values, browsing.
extension AlgoliaREST {
    /// One index's search with Algolia's parameters and the index's settings:
    /// the core's response with its hits as records.
    func searchIn(_ c: Call, _ index: String, _ params: [String: JSONValue], browse: Bool = false) async throws(RESTError) -> [String: JSONValue] {
        switch try await searchAnswer(c, index, params, browse: browse, asWritten: false) {
        case .object(let o): return o
        case .written(let bytes):
            guard case .object(let o)? = try? JSONValue.parse(Data(bytes)) else {
                throw RESTError(.internalError, "the search's response is not a JSON object")
            }
            return o
        }
    }

    /// A search's answer: as a JSON object, or as the bytes written.
    enum SearchAnswer {
        case object([String: JSONValue])
        case written([UInt8])
    }

    /// One index's search. `asWritten`: when the hits need no rebuilding (no
    /// record of the index had a nested object or `_geoloc`, nothing is
    /// unretrievable, no `attributesToRetrieve` left to apply here, no `renderingContent`),
    /// the core's bytes are answered as they are, with the index's name
    /// spliced in, rather than read into a tree and written again.
    /// `shape` adds to the parsed request's plan (``AlgoliaDisjunctivePage``'s facets).
    func searchAnswer(
        _ c: Call, _ index: String, _ params: [String: JSONValue], browse: Bool = false, asWritten: Bool,
        shape: (@Sendable (inout SearchRequest) -> Void)? = nil
    ) async throws(RESTError) -> SearchAnswer {
        guard let meta = try await loadMeta(c, index) else { throw RESTError(.notFound, "index '\(index)' does not exist") }
        let settings = meta.settings
        // A replica shows its primary's records with its own settings.
        let recordsOf = settings.primary ?? index
        var applied = settings.apply(to: params)
        // Browsing exports every record: distinct would hide some.
        if browse { applied["distinct"] = nil }
        let prefix = AlgoliaIndex.prefix(recordsOf)
        let hidden = settings.unretrievable
        let primaryFlattened = settings.primary == nil ? meta.flattened : (try await loadMeta(c, recordsOf))?.flattened ?? true
        let retrieve = Self.retrieval(&applied, flattened: primaryFlattened, hidden: hidden)
        let plain =
            asWritten && !browse && !primaryFlattened && hidden.isEmpty && retrieve == nil
            && settings.json["renderingContent"] == nil && applied["offset"] == nil && applied["length"] == nil
        let synonyms = try await matchingSynonyms(c, index)
        let bytes = try await searchBytes(applied, within: AlgoliaIndex.records(recordsOf), key: c.key) { request in
            request.recordPrefix = prefix
            request.applySynonyms(synonyms)
            if browse {
                // Browsing reads every record, past the search's pagination limit.
                request.paginationLimitedTo = Int.max / 2
                request.plan.window = request.offset + request.length
            }
            shape?(&request)
        }
        if plain, bytes.first == UInt8(ascii: "{"), bytes.count > 2 {
            var out: [UInt8] = Array("{\"index\":".utf8)
            out.reserveCapacity(bytes.count + index.utf8.count + 16)
            JSONWriter.writeString(index, into: &out)
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: bytes.dropFirst())
            return .written(out)
        }
        guard case .object(var response)? = try? JSONValue.parse(Data(bytes)) else {
            throw RESTError(.internalError, "the search's response is not a JSON object")
        }
        if let hits = response["hits"]?.arrayValue {
            response["hits"] = .array(hits.map { AlgoliaRecord.hit($0, hidden: hidden, retrieve: retrieve) })
        }
        response["index"] = .string(index)
        if response["page"] == nil { response["page"] = .number(0) }
        if response["nbPages"] == nil { response["nbPages"] = .number(1) }
        if let ordering = settings.json["renderingContent"] { response["renderingContent"] = ordering }
        return .object(response)
    }

    /// Who applies `attributesToRetrieve`: the names left for the REST API
    /// to cut the hits to after the search (nil: none), the parameter taken
    /// out of `applied` then. Retrieved here, on the records, when a nested
    /// object is stored as its dotted attributes (`flattened`), which the
    /// core would not match by the object's name, or when some attributes are
    /// unretrievable. Otherwise the core retrieves them, reading and sending
    /// only those attributes, unless that would change the highlights: the
    /// core highlights only the retrieved attributes by default, Algolia every
    /// searchable one, so only a request naming what to highlight qualifies.
    static func retrieval(_ applied: inout [String: JSONValue], flattened: Bool, hidden: Set<String>) -> Set<String>? {
        let names = AlgoliaParams.names(applied["attributesToRetrieve"])
        applied["attributesToRetrieve"] = nil
        guard let names else { return nil }
        guard !flattened, hidden.isEmpty, applied["attributesToHighlight"] != nil, !names.contains(where: { $0.contains(".") }) else {
            return names
        }
        applied["attributesToRetrieve"] = .array(names.sorted().map { .string($0) })
        return nil
    }

    func searchIndex(_ c: Call, _ index: String) async throws(RESTError) -> AlgoliaREST.Answer {
        var body = c.body.objectValue ?? [:]
        if c.method == .get { body = c.query.filter { !$0.key.hasPrefix("x-algolia") }.mapValues { .string($0) } }
        switch try await searchAnswer(c, index, AlgoliaParams.from(body), asWritten: true) {
        case .object(let o): return .json(.object(o))
        case .written(let bytes): return .bytes(bytes)
        }
    }

    /// `POST /1/indexes/*/queries`: each request answered in its place, a
    /// facet search for `type: "facet"`. With the default strategy (`none`)
    /// the requests run at once, as one page of InstantSearch sends them (the
    /// refined search and each refined disjunctive facet's counts), so the
    /// page costs about its slowest search rather than their sum;
    /// `stopIfEnoughMatches` runs them in order and stops after the first
    /// with at least `hitsPerPage` hits.
    func multipleQueries(_ c: Call) async throws(RESTError) -> AlgoliaREST.Answer {
        guard let requests = c.body["requests"]?.arrayValue else {
            throw RESTError(.badRequest, "the body needs 'requests': a list of {indexName, params or parameters}")
        }
        let strategy = c.body["strategy"]?.stringValue ?? "none"
        guard strategy == "none" || strategy == "stopIfEnoughMatches" else {
            throw RESTError(.badRequest, "strategy '\(strategy)' is not one of none, stopIfEnoughMatches")
        }
        var parts: [(index: String, facet: String?, params: [String: JSONValue])] = []
        for (i, r) in requests.enumerated() {
            guard let o = r.objectValue, let index = o["indexName"]?.stringValue, !index.isEmpty else {
                throw RESTError(.badRequest, "requests[\(i)] needs an indexName")
            }
            try checkIndex(c, index)
            let params = AlgoliaParams.from(o, dropping: ["indexName", "type"])
            var facet: String?
            if o["type"]?.stringValue == "facet" {
                guard let f = params["facet"]?.stringValue else { throw RESTError(.badRequest, "requests[\(i)] has type facet but names no facet") }
                facet = f
            }
            parts.append((index, facet, params))
        }
        if strategy == "none", let page = AlgoliaDisjunctivePage(parts), let merged = try await disjunctivePage(c, page) {
            return .bytes(merged)
        }
        var answers: [Result<[UInt8], RESTError>]
        if strategy == "none" {
            answers = Array(repeating: .success([]), count: parts.count)
            await withTaskGroup(of: (Int, Result<[UInt8], RESTError>).self) { group in
                for (i, part) in parts.enumerated() {
                    group.addTask { (i, await self.queryPart(c, part.index, part.facet, part.params)) }
                }
                for await (i, answer) in group { answers[i] = answer }
            }
        } else {
            answers = []
            var enough = false
            for part in parts {
                if enough, part.facet == nil {
                    // Not run: an empty answer marked so, with the fields clients read.
                    let skipped = JSONValue.object([
                        "hits": .array([]), "nbHits": .number(0), "page": .number(0), "nbPages": .number(0),
                        "hitsPerPage": part.params["hitsPerPage"] ?? .number(20), "processingTimeMS": .number(0),
                        "query": part.params["query"] ?? .string(""), "params": .string(""), "exhaustiveNbHits": .bool(true),
                        "index": .string(part.index), "processed": .bool(false),
                    ])
                    answers.append(.success(JSONWriter.bytes(skipped)))
                    continue
                }
                if let facet = part.facet {
                    answers.append(await queryPart(c, part.index, facet, part.params))
                    continue
                }
                let response = try await searchIn(c, part.index, part.params)
                if let n = response["nbHits"]?.intValue, let per = response["hitsPerPage"]?.intValue, n >= per { enough = true }
                answers.append(.success(JSONWriter.bytes(.object(response))))
            }
        }
        var out: [UInt8] = Array("{\"results\":[".utf8)
        for (i, answer) in answers.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: try answer.get())
        }
        out.append(contentsOf: Array("]}".utf8))
        return .bytes(out)
    }

    /// One request of `/queries`, written.
    func queryPart(_ c: Call, _ index: String, _ facet: String?, _ params: [String: JSONValue]) async -> Result<[UInt8], RESTError> {
        do throws(RESTError) {
            if let facet { return .success(JSONWriter.bytes(try await facetValues(c, index, facet, params))) }
            switch try await searchAnswer(c, index, params, asWritten: true) {
            case .written(let bytes): return .success(bytes)
            case .object(let o): return .success(JSONWriter.bytes(.object(o)))
            }
        } catch {
            return .failure(error)
        }
    }

    /// `POST /1/indexes/{index}/facets/{facet}/query`.
    func searchFacetValues(_ c: Call, _ index: String, _ facet: String) async throws(RESTError) -> JSONValue {
        try await facetValues(c, index, facet, AlgoliaParams.from(c.body.objectValue ?? [:]))
    }

    /// Facet values whose words start with `facetQuery`'s, among the records
    /// the other parameters find, most frequent first (at most `maxFacetHits`,
    /// 10 by default, 100 at most): counted by the core's facet counts over
    /// up to 1000 values of the facet, then matched here.
    func facetValues(_ c: Call, _ index: String, _ facet: String, _ given: [String: JSONValue]) async throws(RESTError) -> JSONValue {
        var params = given
        let facetQuery = params["facetQuery"]?.stringValue ?? ""
        let maxHits = max(1, min(100, params["maxFacetHits"]?.intValue ?? 10))
        for k in ["facetQuery", "maxFacetHits", "facet", "facetName"] { params[k] = nil }
        params["facets"] = .array([.string(facet)])
        params["maxValuesPerFacet"] = .number(1000)
        params["hitsPerPage"] = .number(0)
        params["page"] = nil
        let started = Date()
        let response = try await searchIn(c, index, params)
        let counts = response["facets"]?[facet]?.objectValue ?? [:]
        let pre = params["highlightPreTag"]?.stringValue ?? "<em>"
        let post = params["highlightPostTag"]?.stringValue ?? "</em>"
        let words = SearchTokens.queryWords(facetQuery).map { $0.lowercased() }
        var hits: [(value: String, count: Int, highlighted: String)] = []
        for (value, n) in counts {
            guard let count = n.intValue, let h = Self.highlightPrefixes(value, words, pre, post) else { continue }
            hits.append((value, count, h))
        }
        hits.sort { $0.count != $1.count ? $0.count > $1.count : $0.value < $1.value }
        return .object([
            "facetHits": .array(
                hits.prefix(maxHits).map {
                    .object(["value": .string($0.value), "highlighted": .string($0.highlighted), "count": .number(Double($0.count))])
                }),
            "exhaustiveFacetsCount": .bool(response["exhaustiveFacetsCount"]?.boolValue ?? true && counts.count < 1000),
            "processingTimeMS": .number((Date().timeIntervalSince(started) * 1000).rounded()),
        ])
    }

    /// The value with each query word's prefix highlighted at the start of
    /// a word of it, or nil when some query word starts none of its words
    /// (case and diacritics folded).
    static func highlightPrefixes(_ value: String, _ words: [String], _ pre: String, _ post: String) -> String? {
        if words.isEmpty { return value }
        let fold: (Substring) -> String = { $0.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
        var marks: [Range<String.Index>] = []
        var index = value.startIndex
        var starts: [String.Index] = []
        var inWord = false
        while index < value.endIndex {
            let isWord = value[index].isLetter || value[index].isNumber
            if isWord && !inWord { starts.append(index) }
            inWord = isWord
            index = value.index(after: index)
        }
        for w in words {
            var found = false
            for s in starts {
                guard let end = value.index(s, offsetBy: w.count, limitedBy: value.endIndex) else { continue }
                if fold(value[s..<end]) == fold(w[...]) {
                    marks.append(s..<end)
                    found = true
                    break
                }
            }
            if !found { return nil }
        }
        var out = ""
        var at = value.startIndex
        for m in marks.sorted(by: { $0.lowerBound < $1.lowerBound }) where m.lowerBound >= at {
            out += value[at..<m.lowerBound] + pre + value[m] + post
            at = m.upperBound
        }
        return out + value[at...]
    }

    /// `browse`: pages of up to 1000 records (`hitsPerPage`, 1000 by default)
    /// and a `cursor` for the next, absent on the last. The cursor is the
    /// next offset and the parameters, so a browse may resume on any coordinator.
    func browse(_ c: Call, _ index: String) async throws(RESTError) -> JSONValue {
        var body = c.body.objectValue ?? [:]
        if c.method == .get { body = c.query.filter { !$0.key.hasPrefix("x-algolia") }.mapValues { .string($0) } }
        var params: [String: JSONValue]
        var offset = 0
        if let cursor = body["cursor"]?.stringValue, !cursor.isEmpty {
            guard let data = Data(base64Encoded: cursor), let state = try? JSONValue.parse(data).objectValue,
                let at = state["offset"]?.intValue, let p = state["params"]?.objectValue
            else { throw RESTError(.badRequest, "the cursor is not one this API gave") }
            params = p
            offset = at
        } else {
            params = AlgoliaParams.from(body, dropping: ["cursor"])
        }
        let per = max(1, min(1000, params["hitsPerPage"]?.intValue ?? 1000))
        var run = params
        for k in ["hitsPerPage", "page", "offset", "length"] { run[k] = nil }
        run["offset"] = .number(Double(offset))
        run["length"] = .number(Double(per))
        var response = try await searchIn(c, index, run, browse: true)
        let total = response["nbHits"]?.intValue ?? 0
        response["offset"] = nil
        response["length"] = nil
        response["page"] = .number(Double(offset / per))
        response["hitsPerPage"] = .number(Double(per))
        response["nbPages"] = .number(Double((total + per - 1) / per))
        if offset + per < total {
            let state = JSONValue.object(["offset": .number(Double(offset + per)), "params": .object(params)])
            response["cursor"] = .string(Data(JSONWriter.bytes(state)).base64EncodedString())
        }
        return .object(response)
    }
}
