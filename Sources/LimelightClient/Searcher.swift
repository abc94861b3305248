import Foundation
import Items
import WireProtocol

/// One answer a ``Searcher`` delivers.
public struct SearchResults: Sendable {
    /// The response object as the server sent it (Algolia's shape).
    public var response: JSONValue
    /// Every hit loaded so far: the first page's, then each `loadMore()`'s.
    public var hits: [JSONValue]
    public var nbHits: Int { response["nbHits"]?.intValue ?? 0 }
    public var page: Int { response["page"]?.intValue ?? 0 }
    public var nbPages: Int { response["nbPages"]?.intValue ?? 0 }
    /// Facet counts: facet → value → count.
    public var facets: [String: [String: Int]] {
        var out: [String: [String: Int]] = [:]
        for (f, vs) in response["facets"]?.objectValue ?? [:] {
            out[f] = (vs.objectValue ?? [:]).compactMapValues(\.intValue)
        }
        return out
    }
    /// Shards that could not answer (the counts then leave their items out).
    public var failedShards: [ShardFailure]
    /// Whether another page can be loaded.
    public var hasMore: Bool { page + 1 < nbPages }
}

/// What a ``Searcher`` does, in order, for UIs and logs.
public enum SearcherEvent: Sendable {
    case searchFired(requestID: Int, params: JSONValue, userInfo: [String: String])
    case result(SearchResults, userInfo: [String: String])
    case error(String, userInfo: [String: String])
    /// An answer that came after a newer request's answer, and was dropped.
    case staleDropped(requestID: Int)
    case refinementChanged(SearchParams)
}

/// The search-box state machine of InstantSearch, against a Limelight cluster:
/// it holds the parameters and refinements, fires searches, keeps the hits
/// of every page loaded, and hands results to handlers and to an
/// `AsyncSequence`.
///
/// - Requests are numbered; an answer is shown only if no newer request has
///   been answered already, so a slow old answer never replaces a newer one.
/// - `loadMore()` fetches the next page and appends its hits; a call while
///   one is loading, or when there is no next page, does nothing.
/// - A new `search()` starts again from page 0.
public actor Searcher {
    public let client: LimelightClient
    public private(set) var params: SearchParams
    public private(set) var results: SearchResults?
    public private(set) var isLoadingMore = false
    /// Answers dropped because a newer request had been answered first.
    public private(set) var staleAnswersDropped = 0

    var nextRequest = 0
    /// The newest request whose answer was delivered.
    var lastAnswered = -1
    /// The request the shown hits belong to (load-more continues it).
    var shownRequest = -1
    var resultHandlers: [@Sendable (SearchResults, [String: String]) -> Void] = []
    var errorHandlers: [@Sendable (String, [String: String]) -> Void] = []
    var eventContinuations: [UUID: AsyncStream<SearcherEvent>.Continuation] = [:]
    var resultContinuations: [UUID: AsyncStream<SearchResults>.Continuation] = [:]

    public init(client: LimelightClient, params: SearchParams = SearchParams()) {
        self.client = client
        self.params = params
    }

    // MARK: Handlers and streams

    public func addResultHandler(_ h: @escaping @Sendable (SearchResults, [String: String]) -> Void) { resultHandlers.append(h) }
    public func addErrorHandler(_ h: @escaping @Sendable (String, [String: String]) -> Void) { errorHandlers.append(h) }

    /// Every event from now on.
    public func events() -> AsyncStream<SearcherEvent> {
        let (stream, cont) = AsyncStream<SearcherEvent>.makeStream()
        let id = UUID()
        eventContinuations[id] = cont
        cont.onTermination = { [weak self] _ in Task { await self?.dropEvents(id) } }
        return stream
    }

    /// Every result delivered from now on (stale answers never appear).
    public func resultStream() -> AsyncStream<SearchResults> {
        let (stream, cont) = AsyncStream<SearchResults>.makeStream()
        let id = UUID()
        resultContinuations[id] = cont
        cont.onTermination = { [weak self] _ in Task { await self?.dropResults(id) } }
        return stream
    }

    func dropEvents(_ id: UUID) { eventContinuations.removeValue(forKey: id) }
    func dropResults(_ id: UUID) { resultContinuations.removeValue(forKey: id) }

    func emit(_ e: SearcherEvent) { for c in eventContinuations.values { c.yield(e) } }

    // MARK: Parameters

    /// Changes the parameters (query text, hits per page, …).
    public func update(_ change: (inout SearchParams) -> Void) {
        change(&params)
    }

    public func addFacetRefinement(name: String, value: String, inclusive: Bool = true) {
        params.addFacetRefinement(name: name, value: value, inclusive: inclusive)
        emit(.refinementChanged(params))
    }

    public func removeFacetRefinement(name: String, value: String) {
        params.removeFacetRefinement(name: name, value: value)
        emit(.refinementChanged(params))
    }

    public func toggleFacetRefinement(name: String, value: String) {
        params.toggleFacetRefinement(name: name, value: value)
        emit(.refinementChanged(params))
    }

    public func setFacet(withName name: String, disjunctive: Bool) {
        params.setFacet(withName: name, disjunctive: disjunctive)
        emit(.refinementChanged(params))
    }

    public func addNumericRefinement(_ r: NumericRefinement) {
        params.addNumericRefinement(r)
        emit(.refinementChanged(params))
    }

    public func removeNumericRefinement(name: String, op: NumericRefinement.Operator? = nil, value: Double? = nil) {
        params.removeNumericRefinement(name: name, op: op, value: value)
        emit(.refinementChanged(params))
    }

    public func setNumeric(withName name: String, disjunctive: Bool) {
        params.setNumeric(withName: name, disjunctive: disjunctive)
        emit(.refinementChanged(params))
    }

    // MARK: Searching

    /// Searches with the current parameters from page 0. Returns when this
    /// request's answer came (or was dropped as stale, or failed).
    public func search(userInfo: [String: String] = [:]) async {
        params.page = 0
        await fire(params, loadMore: false, userInfo: userInfo)
    }

    /// Loads the next page of the shown results and appends its hits.
    public func loadMore(userInfo: [String: String] = [:]) async {
        guard !isLoadingMore, let r = results, r.hasMore else { return }
        isLoadingMore = true
        defer { isLoadingMore = false }
        var p = params
        p.page = r.page + 1
        await fire(p, loadMore: true, userInfo: userInfo)
    }

    func fire(_ p: SearchParams, loadMore: Bool, userInfo: [String: String]) async {
        let id = nextRequest
        nextRequest += 1
        let built = p.build()
        emit(.searchFired(requestID: id, params: built, userInfo: userInfo))
        let base = shownRequest
        do {
            let answer = try await client.search(built)
            // Something newer has been shown since this request left: drop it.
            if id < lastAnswered || (loadMore && shownRequest != base) {
                staleAnswersDropped += 1
                emit(.staleDropped(requestID: id))
                return
            }
            lastAnswered = id
            let pageHits = answer.response["hits"]?.arrayValue ?? []
            var r = SearchResults(response: answer.response, hits: pageHits, failedShards: answer.failedShards)
            if loadMore, let shown = results { r.hits = shown.hits + pageHits } else { shownRequest = id }
            if loadMore { params.page = p.page }
            results = r
            for h in resultHandlers { h(r, userInfo) }
            for c in resultContinuations.values { c.yield(r) }
            emit(.result(r, userInfo: userInfo))
        } catch {
            let message = (error as? ClientError)?.message ?? "\(error)"
            if id < lastAnswered { staleAnswersDropped += 1; emit(.staleDropped(requestID: id)); return }
            for h in errorHandlers { h(message, userInfo) }
            emit(.error(message, userInfo: userInfo))
        }
    }
}
