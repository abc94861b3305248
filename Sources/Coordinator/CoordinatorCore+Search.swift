import Foundation
import Items
import QueryPlan
import SearchParameters
import Tenancy
import WireProtocol

/// A parameter search in flight: one `shard_search` per shard, gathered
/// whole, then merged into one Algolia-shaped response.
///
/// A class, kept by the core's `searches` and changed in place: as a struct
/// (its request, plan and builder inside) every step of a search would copy
/// it out of the dictionary and back.
final class RunningSearch {
    var key: String
    var client: [Data]
    var requestID: String
    var request: SearchRequest
    /// The plan's JSON form, written when a worker on a socket first needs
    /// it (a worker in this process takes the plan itself).
    var planJSON: JSONValue?
    var deadlineMs: Int
    /// Its shards: who runs each, who was tried, which failed.
    var scatter = ShardScatter()
    var builder: SearchResponseBuilder
    var started: ContinuousClock.Instant
    var deadlineTimer: Deadlines.Token?
    /// What the client asked for, and so what it is answered (see ``SearchMode``).
    var mode: SearchMode = .search
    /// Typed queries: each suggestion's count, summed over the shards.
    var suggestions: [String: Int] = [:]
    /// Spotlight: every shard's domain groups.
    var groups: [Body.ShardGroup] = []
    /// Whose search it is: hits are given back the names the app published.
    var scope: TenantScope = .unscoped
    /// As ``RunningQuery/routing``.
    var routing: SwitchRouting?

    init(
        key: String, client: [Data], requestID: String, request: SearchRequest, planJSON: JSONValue?,
        deadlineMs: Int, builder: SearchResponseBuilder, started: ContinuousClock.Instant
    ) {
        self.key = key
        self.client = client
        self.requestID = requestID
        self.request = request
        self.planJSON = planJSON
        self.deadlineMs = deadlineMs
        self.builder = builder
        self.started = started
    }
}

extension CoordinatorCore {
    /// A REST search (``localSearch(params:key:within:prepare:)``) is
    /// confined to its index here, once parsed.
    func startSearch(client: [Data], id: String, _ s: Body.Search, scope: TenantScope = .unscoped) {
        count(.searches)
        var request: SearchRequest
        do throws(SearchParametersError) { request = try SearchRequest(params: s.params) } catch {
            sendError(
                .client(client), id,
                WireError(
                    code: error.code.description, message: error.message,
                    position: error.position, field: error.parameter))
            return
        }
        if LocalClients.isLocal(client), let shape = localClients.waiters[client]?.searchShape { shape.apply(to: &request) }
        if let d = s.deadlineMs, d <= 0 {
            sendError(.client(client), id, WireError(code: "invalid_parameter", message: "deadlineMs must be positive", field: "deadlineMs"))
            return
        }
        if let semantic = request.semantic {
            startSemanticSearch(client: client, id: id, request: request, semantic: semantic, deadlineMs: s.deadlineMs, scope: scope)
            return
        }
        launchSearch(client: client, id: id, request: request, deadlineMs: s.deadlineMs, mode: .search, scope: scope)
    }

    /// Embeds a semantic search's text once, here, then scatters the plan
    /// with the vector in it (see ``QueryEmbedder``). Without a model the
    /// search is refused, naming the parameter; everything else still works.
    func startSemanticSearch(
        client: [Data], id: String, request: SearchRequest, semantic: SemanticParameters, deadlineMs: Int?,
        scope: TenantScope = .unscoped
    ) {
        let parameter = request.params["hybrid"] != nil ? "hybrid" : "semantic"
        guard queryEmbedder.isAvailable else {
            sendError(
                .client(client), id,
                WireError(
                    code: "semantic_unavailable",
                    message:
                        "semantic search needs the all-MiniLM-L6-v2 model: start the coordinator (or limelight up) with --model DIR or LIMELIGHT_MODEL (scripts/install-model prints the folder)",
                    field: parameter))
            return
        }
        count(.searchesSemantic)
        launchEmbedded(
            client: client, id: id, request: request, text: semantic.query, ratio: semantic.ratio,
            deadlineMs: deadlineMs, mode: .search, scope: scope, ifEmbeddingFails: .refuse(field: parameter))
    }

    /// What a search does when its text cannot be embedded.
    enum EmbeddingFailure {
        /// Refuse it, naming the parameter that asked for meaning.
        case refuse(field: String)
        /// Go on by words alone (a typed query, which asked for nothing).
        case lexical
    }

    /// Embeds `text` once, here (off the actor, see ``QueryEmbedder``), puts
    /// the vector in the plan with `ratio`, then scatters it as ``launchSearch``
    /// does: the one way semantic searches and typed queries get their vector.
    func launchEmbedded(
        client: [Data], id: String, request: SearchRequest, text: String, ratio: Double, deadlineMs: Int?,
        mode: SearchMode, scope: TenantScope, ifEmbeddingFails failure: EmbeddingFailure
    ) {
        let embedder = queryEmbedder
        Task {
            var request = request
            do {
                request.plan.semantic = SemanticPlan(vector: try await embedder.embed(text), ratio: ratio)
            } catch {
                switch failure {
                case .refuse(let field):
                    self.logger.error("cannot embed a query", metadata: ["error": "\(error)"])
                    self.sendError(
                        .client(client), id, WireError(code: "semantic_unavailable", message: "cannot embed the query: \(error)", field: field))
                    return
                case .lexical:
                    self.logger.warning("cannot embed a typed query; its results are lexical", metadata: ["error": "\(error)"])
                }
            }
            self.launchSearch(client: client, id: id, request: request, deadlineMs: deadlineMs, mode: mode, scope: scope)
        }
    }

    /// Scatters a parsed search (of any ``SearchMode``) to every shard.
    ///
    /// Every search, typed query, Spotlight group and continuation passes
    /// here, and here its plan is confined to `scope`'s app (``TenantScope``).
    func launchSearch(
        client: [Data], id: String, request: SearchRequest, deadlineMs: Int?, mode: SearchMode,
        scope: TenantScope = .unscoped
    ) {
        var request = request
        request.plan = scope.restrict(request.plan)
        let key = makeID("s")
        let deadline = deadlineMs ?? configuration.defaultDeadlineMs
        let rs = RunningSearch(
            key: key, client: client, requestID: id, request: request, planJSON: nil,
            deadlineMs: deadline, builder: SearchResponseBuilder(request: request, itemTransform: scope.itemNames), started: .now)
        rs.mode = mode
        rs.scope = scope
        rs.routing = switchRouting
        if deadline > 0 {
            rs.deadlineTimer = atDeadline(deadline) { $0.searchDeadlineReached(key) }
        }
        inFlight.begin(rs)
        let shards = request.plan.filter == .none ? [] : Array(0..<(rs.routing?.shards ?? shardCount))
        for shard in shards { dispatchSearch(key, shard: shard) }
        finishSearchIfDone(key)
    }

    /// Sends a shard's part of a search to a live query worker not yet tried for it.
    func dispatchSearch(_ key: String, shard: Int) {
        guard let rs = searches[key] else { return }
        let w = assignQueryWorker(shard: shard, &rs.scatter)
        guard let w else {
            rs.builder.shardFailed()
            return
        }
        let deadline = remainingMs(rs.deadlineMs, since: rs.started)
        let message: Body.ShardSearch
        if w.route == LocalQueryWorker.route {
            message = .typed(
                shard: shard, plan: rs.request.plan, deadlineMs: deadline, suggest: rs.mode.suggestLimit, perDomain: rs.mode.perDomain,
                keepSlots: rs.routing?.keep(shard))
        } else {
            if rs.planJSON == nil { rs.planJSON = rs.request.plan.json }
            message = Body.ShardSearch(
                shard: shard, plan: rs.planJSON!, deadlineMs: deadline,
                suggest: rs.mode.suggestLimit, perDomain: rs.mode.perDomain, keepSlots: rs.routing?.keep(shard))
        }
        send(.worker(w.route), key, .shardSearch(message))
    }

    func shardSearchAnswered(key: String, from worker: String, _ r: Body.ShardSearchResult) {
        guard let rs = searches[key], rs.scatter.isRunning(r.shard, on: worker) else { return }
        let r = rs.scope.unqualify(r)
        rs.scatter.ended(r.shard)
        rs.builder.add(r)
        for s in r.suggestions ?? [] { rs.suggestions[s.suggestion, default: 0] += s.count }
        if let groups = r.groups { rs.groups += groups }
        finishSearchIfDone(key)
    }

    /// A shard's search failed on its worker: try another replica, or name it.
    func searchShardFailed(key: String, from worker: String, shard: Int?, reason: String) {
        guard let rs = searches[key] else { return }
        guard let shard = shard ?? rs.scatter.shard(runBy: worker) else { return }
        switch rs.scatter.shardFailed(shard, by: worker, reason: reason, another: { nextQueryWorkerExists(shard: shard, tried: $0) }) {
        case .ignored: return
        case .retry: dispatchSearch(key, shard: shard)
        case .finished: rs.builder.shardFailed()
        }
        finishSearchIfDone(key)
    }

    /// Retries, elsewhere, the shards a lost worker was searching.
    func searchesLost(worker: String) {
        for (key, shard) in inFlight.searchesRunning(on: worker) {
            searchShardFailed(key: key, from: worker, shard: shard, reason: "query worker \(worker) was lost")
        }
    }

    func finishSearchIfDone(_ key: String) {
        guard searches[key]?.scatter.isDone == true else { return }
        completeSearch(key)
    }

    func completeSearch(_ key: String) {
        guard let rs = inFlight.endSearch(key) else { return }
        rs.deadlineTimer.map(deadlines.cancel)
        let elapsed = rs.started.duration(to: .now).milliseconds
        record(&queryLatenciesMs, elapsed)
        if !rs.scatter.failed.isEmpty { count(.searchesPartial) }
        let failed = rs.scatter.failed.sorted { $0.shard < $1.shard }
        send(.client(rs.client), rs.requestID, answer(rs, elapsedMs: elapsed, failed: failed))
    }

    func searchDeadlineReached(_ key: String) {
        guard let rs = searches[key] else { return }
        count(.searchesTimedOut)
        for s in rs.scatter.stop(reason: "no answer within the deadline of \(rs.deadlineMs) ms") {
            if let w = workers[s.worker] { send(.worker(w.route), key, .cancel(Body.Cancel(query: key))) }
            rs.builder.shardFailed()
        }
        completeSearch(key)
    }

    /// A client's `cancel` of a search: the workers stop, and no answer is sent.
    func cancelSearch(_ key: String) {
        guard let rs = searches[key] else { return }
        count(.searchesCancelled)
        for s in rs.scatter.stop(reason: nil) {
            if let w = workers[s.worker] { send(.worker(w.route), key, .cancel(Body.Cancel(query: key))) }
        }
        rs.deadlineTimer.map(deadlines.cancel)
        _ = inFlight.endSearch(key)
    }
}
