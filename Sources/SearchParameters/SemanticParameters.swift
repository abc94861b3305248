import Items

/// The semantic part of a search request: the text whose meaning is looked
/// for, and its weight against the words.
///
/// Two spellings are accepted, since clients come from both worlds:
/// - `semantic: {"query": "draw vector graphics", "ratio": 0.5}` — Limelight's
///   own; `query` defaults to the request's `query`, `ratio` to 0.5.
/// - `hybrid: {"semanticRatio": 0.5, "embedder": "default"}` — Meilisearch's;
///   the text is the request's `query`. There is one embedder
///   (all-MiniLM-L6-v2), so `embedder` may be omitted or name `default`.
///
/// The ratio is Meilisearch's `semanticRatio`: 0 ranks by words alone (the
/// scores are still reported), 1 by meaning alone, between fuses both.
package struct SemanticParameters: Sendable, Hashable {
    /// The text that is embedded (once, by the coordinator).
    package var query: String
    package var ratio: Double

    package static let defaultRatio = 0.5

    /// Reads `semantic` or `hybrid` from the request's parameters; nil when neither is there.
    static func parse(_ o: [String: JSONValue], query: String) throws(SearchParametersError) -> SemanticParameters? {
        // Most searches ask for neither: no sets of known fields made for them.
        guard o["semantic"] != nil || o["hybrid"] != nil else { return nil }
        func invalid(_ p: String, _ m: String) -> SearchParametersError { SearchParametersError(.invalidParameter, m, parameter: p) }
        func ratio(_ v: JSONValue?, _ name: String) throws(SearchParametersError) -> Double {
            guard let v else { return defaultRatio }
            guard let r = v.doubleValue, r >= 0, r <= 1 else { throw invalid(name, "expected a number from 0 to 1") }
            return r
        }
        func object(_ name: String, known: Set<String>) throws(SearchParametersError) -> [String: JSONValue]? {
            guard let v = o[name] else { return nil }
            guard case .object(let fields) = v else {
                throw invalid(
                    name,
                    name == "semantic"
                        ? "expected an object: {\"query\": \"…\", \"ratio\": 0.5}"
                        : "expected an object: {\"semanticRatio\": 0.5}")
            }
            for key in fields.keys.sorted() where !known.contains(key) {
                throw SearchParametersError(
                    .unknownParameter, "'\(key)' is not a field of \(name) (known: \(known.sorted().joined(separator: ", ")))",
                    parameter: "\(name).\(key)")
            }
            return fields
        }
        let semantic = try object("semantic", known: ["query", "ratio"])
        let hybrid = try object("hybrid", known: ["semanticRatio", "embedder"])
        if semantic != nil, hybrid != nil { throw invalid("hybrid", "give semantic or hybrid, not both") }
        var text = query, r = defaultRatio, parameter = "hybrid"
        if let semantic {
            parameter = "semantic"
            if let q = semantic["query"] {
                guard let s = q.stringValue else { throw invalid("semantic.query", "expected text") }
                text = s
            }
            r = try ratio(semantic["ratio"], "semantic.ratio")
        } else if let hybrid {
            r = try ratio(hybrid["semanticRatio"], "hybrid.semanticRatio")
            if let e = hybrid["embedder"], e.stringValue != "default" {
                throw invalid("hybrid.embedder", "there is one embedder, 'default' (all-MiniLM-L6-v2)")
            }
        } else {
            return nil
        }
        guard !text.allSatisfy(\.isWhitespace) else {
            throw invalid(
                parameter == "semantic" ? "semantic.query" : "query",
                "a semantic search needs text: give semantic.query or query")
        }
        return SemanticParameters(query: text, ratio: r)
    }
}
