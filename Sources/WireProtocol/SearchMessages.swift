import Foundation
import Items
import QueryPlan

/// The parameter search (Algolia's `SearchParameters` in, its response
/// out) and what rides on it: a typed query's suggestions
/// (`CSUserQuery`), Spotlight's grouped results and their continuations;
/// and the shards' part of each (`shard_search`, `shard_search_result`).
extension Body {
    /// A parameter search (Algolia's `SearchParameters` in `params`).
    public struct Search: Sendable, Hashable, Codable {
        public var params: JSONValue
        /// The search fails the shards that have not answered by then.
        public var deadlineMs: Int?
        public init(params: JSONValue, deadlineMs: Int? = nil) { self.params = params; self.deadlineMs = deadlineMs }
    }
    /// The answer to a `search`: Algolia's response object (`hits`, `nbHits`,
    /// `facets`, …), and the shards that could not answer, if any.
    public struct SearchResult: Sendable, Hashable, Codable {
        /// The response; null when ``written`` holds it.
        public var response: JSONValue
        public var failedShards: [ShardFailure]
        /// The response as the coordinator wrote it (`SearchResponseBuilder`
        /// writes its bytes directly), spliced into the frame as it is. Never
        /// read from a frame: a received response is always ``response``.
        public var written: RawJSON?
        public init(response: JSONValue, failedShards: [ShardFailure] = []) { self.response = response; self.failedShards = failedShards }
        /// A response already written as JSON (one object, ``JSONWriter``'s form).
        public static func written(_ response: RawJSON, failedShards: [ShardFailure] = []) -> SearchResult {
            var r = SearchResult(response: .null, failedShards: failedShards)
            r.written = response
            return r
        }
        enum CodingKeys: String, CodingKey { case response, failedShards }
    }
    /// Coordinator → query worker: one shard's part of a search.
    public struct ShardSearch: Sendable, Hashable, Codable {
        public var shard: Int
        /// A `SearchPlan` in its JSON form, as a frame carries it (the worker
        /// reads it, and answers `bad_plan` when it cannot).
        public var plan: JSONValue
        /// The plan itself, when the search is handed to a query worker in
        /// the coordinator's own process (``typed(shard:plan:deadlineMs:suggest:perDomain:)``):
        /// no JSON is written nor read for it. Never on the wire.
        public var typedPlan: SearchPlan?
        public var deadlineMs: Int?
        /// A typed query's suggestions: how many the client wants (the shard sends more, to be summed).
        public var suggest: Int?
        /// Spotlight's grouped results: the best this many per domain, and each domain's total.
        public var perDomain: Int?
        /// As ``ShardQuery/keepSlots``: the shard's slots under the map the
        /// search was routed by, while a split's switch is under way.
        public var keepSlots: KeepSlots?
        public init(
            shard: Int, plan: JSONValue, deadlineMs: Int? = nil, suggest: Int? = nil, perDomain: Int? = nil, keepSlots: KeepSlots? = nil
        ) {
            self.shard = shard; self.plan = plan; self.deadlineMs = deadlineMs; self.suggest = suggest; self.perDomain = perDomain
            self.keepSlots = keepSlots
        }
        /// A search for a worker in this process: the plan as it is, its
        /// JSON form left null.
        public static func typed(
            shard: Int, plan: SearchPlan, deadlineMs: Int? = nil, suggest: Int? = nil, perDomain: Int? = nil, keepSlots: KeepSlots? = nil
        ) -> ShardSearch {
            var s = ShardSearch(shard: shard, plan: .null, deadlineMs: deadlineMs, suggest: suggest, perDomain: perDomain, keepSlots: keepSlots)
            s.typedPlan = plan
            return s
        }
        enum CodingKeys: String, CodingKey { case shard, plan, deadlineMs, suggest, perDomain, keepSlots }
    }
    /// A completion of typed text and how many items it would find.
    public struct SuggestionCount: Sendable, Hashable, Codable {
        public var suggestion: String
        public var count: Int
        public init(suggestion: String, count: Int) { self.suggestion = suggestion; self.count = count }
    }
    /// One domain's best hits on a shard, and its exact total.
    public struct ShardGroup: Sendable, Hashable, Codable {
        public var domainIdentifier: String
        public var total: Int
        public var hits: [RankedHit]
        public init(domainIdentifier: String, total: Int, hits: [RankedHit]) {
            self.domainIdentifier = domainIdentifier; self.total = total; self.hits = hits
        }
    }
    /// One hit with the ranking criteria the coordinator merges by.
    ///
    /// The rank is typed: a shard searched in the coordinator's process
    /// (``LocalQueryWorker``) hands it over as it is, and only a frame on a
    /// socket carries its JSON form (``SearchRank/json``), read back when the
    /// frame is (a malformed one is then a protocol error naming the hit).
    public struct RankedHit: Sendable, Hashable, Codable {
        public var id: String
        /// The item; `null` when ``rawItem`` holds it.
        public var item: JSONValue
        public var rank: SearchRank
        /// The item as JSON text, when the shard's answer stays in the
        /// coordinator's process (its local query worker): the response
        /// writer copies it out without a tree (`SearchHit.rawItem` in
        /// ShardStore). Never read from a frame; written as ``item`` when
        /// a hit is encoded.
        public var rawItem: RawJSON?
        public init(id: String, item: JSONValue, rank: SearchRank, rawItem: RawJSON? = nil) {
            self.id = id; self.item = item; self.rank = rank; self.rawItem = rawItem
        }

        /// The item as a tree, whichever way it is held.
        public var tree: JSONValue {
            guard let rawItem else { return item }
            return (try? rawItem.decoded()) ?? item
        }

        enum CodingKeys: String, CodingKey { case id, item, rank }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try c.decode(String.self, forKey: .id)
            item = try c.decode(JSONValue.self, forKey: .item)
            let json = try c.decode(JSONValue.self, forKey: .rank)
            do { rank = try SearchRank(json: json) } catch {
                throw DecodingError.dataCorruptedError(forKey: .rank, in: c, debugDescription: "\(error)")
            }
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(tree, forKey: .item)
            try c.encode(rank.json, forKey: .rank)
        }
    }
    /// Query worker → coordinator: a shard's best hits, its exact match count,
    /// and its facet counts and sums (so that the coordinator's sums are exact).
    public struct ShardSearchResult: Sendable, Hashable, Codable {
        public var shard: Int
        public var hits: [RankedHit]
        public var nbHits: Int
        public var facets: [String: [String: Int]]
        /// Per numeric facet: `[min, max, sum, count]`.
        public var facetStats: [String: [Double]]
        public var exhaustiveFacetsCount: Bool
        /// Asked for with `suggest`: the shard's completions, best first.
        public var suggestions: [SuggestionCount]?
        /// Asked for with `perDomain`: the shard's domain groups.
        public var groups: [ShardGroup]?
        public init(
            shard: Int, hits: [RankedHit], nbHits: Int, facets: [String: [String: Int]],
            facetStats: [String: [Double]], exhaustiveFacetsCount: Bool,
            suggestions: [SuggestionCount]? = nil, groups: [ShardGroup]? = nil
        ) {
            self.shard = shard; self.hits = hits; self.nbHits = nbHits; self.facets = facets
            self.facetStats = facetStats; self.exhaustiveFacetsCount = exhaustiveFacetsCount
            self.suggestions = suggestions; self.groups = groups
        }
    }

    /// A typed query (`CSUserQuery`): a person's text, searched as a query
    /// whose last word is a prefix, with completions of the text.
    public struct Suggest: Sendable, Hashable, Codable {
        public var text: String
        /// Suggestions wanted (default 10).
        public var limit: Int?
        /// Ranked results wanted beside them (default 0: suggestions only).
        public var hitsPerPage: Int?
        /// More of Algolia's parameters for the results (`aroundLatLng`, `filters`, …).
        public var params: JSONValue?
        public var deadlineMs: Int?
        public init(text: String, limit: Int? = nil, hitsPerPage: Int? = nil, params: JSONValue? = nil, deadlineMs: Int? = nil) {
            self.text = text; self.limit = limit; self.hitsPerPage = hitsPerPage; self.params = params; self.deadlineMs = deadlineMs
        }
    }
    public struct SuggestResult: Sendable, Hashable, Codable {
        public var suggestions: [SuggestionCount]
        /// The search response (Algolia's shape) when results were asked for;
        /// nil too when ``written`` holds it.
        public var response: JSONValue?
        public var failedShards: [ShardFailure]
        /// The response as the coordinator wrote it, spliced into the frame
        /// as it is (as ``SearchResult/written``): a typed query with results
        /// is sent at every keystroke, and reading the written response back
        /// into a tree only to write it again cost a parse each time. Never
        /// read from a frame: a received response is always ``response``.
        public var written: RawJSON?
        public init(suggestions: [SuggestionCount], response: JSONValue? = nil, failedShards: [ShardFailure] = []) {
            self.suggestions = suggestions; self.response = response; self.failedShards = failedShards
        }
        /// Suggestions with a response already written as JSON (one object, ``JSONWriter``'s form).
        public static func written(suggestions: [SuggestionCount], response: RawJSON, failedShards: [ShardFailure] = []) -> SuggestResult {
            var r = SuggestResult(suggestions: suggestions, failedShards: failedShards)
            r.written = response
            return r
        }
        enum CodingKeys: String, CodingKey { case suggestions, response, failedShards }
    }
    /// Spotlight's grouped view of typed text.
    public struct Spotlight: Sendable, Hashable, Codable {
        public var text: String
        /// Results per group (default 3).
        public var perDomain: Int?
        /// More of Algolia's parameters (`aroundLatLng`, `aroundRadius`, `insideBoundingBox`, `filters`, …).
        public var params: JSONValue?
        public var deadlineMs: Int?
        public init(text: String, perDomain: Int? = nil, params: JSONValue? = nil, deadlineMs: Int? = nil) {
            self.text = text; self.perDomain = perDomain; self.params = params; self.deadlineMs = deadlineMs
        }
    }
    /// One group: a domain, its total, its best items (as search hits) and
    /// the token that resumes the domain's full list.
    public struct SpotlightGroup: Sendable, Hashable, Codable {
        public var domainIdentifier: String
        public var total: Int
        public var items: [JSONValue]
        public var continuation: String
        public init(domainIdentifier: String, total: Int, items: [JSONValue], continuation: String) {
            self.domainIdentifier = domainIdentifier; self.total = total; self.items = items; self.continuation = continuation
        }
    }
    public struct SpotlightResult: Sendable, Hashable, Codable {
        public var groups: [SpotlightGroup]
        public var failedShards: [ShardFailure]
        public init(groups: [SpotlightGroup], failedShards: [ShardFailure] = []) { self.groups = groups; self.failedShards = failedShards }
    }
    /// Resumes a group's full list (`CSQueryContinuationActionType`): a page
    /// of the domain's results for the text; the answer is a `search_result`.
    public struct Continue: Sendable, Hashable, Codable {
        public var token: String
        public var page: Int?
        public var hitsPerPage: Int?
        public var deadlineMs: Int?
        public init(token: String, page: Int? = nil, hitsPerPage: Int? = nil, deadlineMs: Int? = nil) {
            self.token = token; self.page = page; self.hitsPerPage = hitsPerPage; self.deadlineMs = deadlineMs
        }
    }
}
