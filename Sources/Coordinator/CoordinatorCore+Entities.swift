import Foundation
import Items
import QueryPlan
import SearchParameters
import Tenancy
import WireProtocol

/// What a scattered search answers: a parameter search's response, a typed
/// query's suggestions (and results), or Spotlight's groups.
enum SearchMode: Sendable {
    case search
    /// Suggestions wanted, and whether the response's results go with them.
    case suggest(limit: Int, withResults: Bool)
    /// Hits per group, and the parameters continuation tokens carry.
    case spotlight(perDomain: Int, text: String, params: [String: JSONValue])

    var suggestLimit: Int? { if case .suggest(let l, _) = self { l } else { nil } }
    var perDomain: Int? { if case .spotlight(let n, _, _) = self { n } else { nil } }
}

/// An entity operation broadcast to every shard's indexers.
enum EntityOperation: Sendable {
    case delete(type: String)
    case associate(uniqueIdentifier: String)
}

extension CoordinatorCore {
    // MARK: Entities

    /// `entity_donate`: each entity becomes its item (``AppEntity``) and the
    /// batch is published as any other; an entity that is not a valid
    /// donation is rejected in place, with its reason, and the rest stored.
    func donateEntities(client: [Data], id: String, _ d: Body.EntityDonate, scope: TenantScope = .unscoped) {
        count(.entitiesDonated, by: d.entities.count)
        var items: [JSONValue] = []
        var rejected: [Int: ItemResult] = [:]
        for (i, json) in d.entities.enumerated() {
            do throws(ItemError) {
                items.append(try AppEntity(json: json).itemJSON(priority: d.priority))
            } catch {
                let uid: String? = json["type"]?.stringValue.flatMap { t in
                    json["id"]?.stringValue.map { AppEntity.uniqueIdentifier(type: t, id: $0) }
                }
                rejected[i] = ItemResult(index: i, uniqueIdentifier: uid, status: .rejected, error: WireError(error))
                items.append(.null)
            }
        }
        publish(client: client, id: id, scope.qualify(publish: Body.Publish(items: items, batch: d.batch)), rejected: rejected, scope: scope)
    }

    func deleteEntities(client: [Data], id: String, _ d: Body.EntityDelete, scope: TenantScope = .unscoped) {
        do throws(ItemError) { try AppEntity.checkType(d.entityType, field: "entityType") } catch {
            sendError(.client(client), id, WireError(error))
            return
        }
        if let ids = d.ids, ids.isEmpty || ids.contains(where: \.isEmpty) {
            sendError(
                .client(client), id,
                WireError(code: "invalid_message", message: "'ids' must list non-empty entity ids (omit it to delete the whole type)", field: "ids"))
            return
        }
        broadcastEntityOperation(client: client, id: id, .delete(type: d.entityType)) { shard in
            .entityDelete(Body.EntityDelete(entityType: scope.qualify(entityType: d.entityType), ids: d.ids, shards: [shard]))
        }
    }

    /// The item's shard is not known here (its domain is only in the store),
    /// so every shard is asked, and the one that holds the item updates it.
    func associateEntity(client: [Data], id: String, _ a: Body.EntityAssociate, scope: TenantScope = .unscoped) {
        guard !a.uniqueIdentifier.isEmpty else {
            sendError(
                .client(client), id, WireError(code: "invalid_message", message: "uniqueIdentifier must not be empty", field: "uniqueIdentifier"))
            return
        }
        guard !a.entity.type.isEmpty, !a.entity.id.isEmpty else {
            sendError(.client(client), id, WireError(code: "invalid_entity", message: "the entity needs a non-empty type and id", field: "entity"))
            return
        }
        broadcastEntityOperation(client: client, id: id, .associate(uniqueIdentifier: a.uniqueIdentifier)) { shard in
            .entityAssociate(Body.EntityAssociate(uniqueIdentifier: scope.qualify(uid: a.uniqueIdentifier), entity: a.entity, shards: [shard]))
        }
    }

    /// Sends one operation per shard to each of its live indexers, tracked as
    /// a delete is (each replica answers; a shard counts once).
    func broadcastEntityOperation(client: [Data], id: String, _ op: EntityOperation, body: (Int) -> Body) {
        fanOut(
            WriteTracker.PendingDelete(client: client, requestID: id, entity: op),
            id: makeID("e"), to: Array(0..<shardCount), body)
    }

    func finishEntityOperation(_ op: EntityOperation, _ pending: WriteTracker.PendingDelete, total: Int) {
        if !pending.failed.isEmpty {
            let names = pending.failed.map { "shard \($0.shard) (\($0.reason))" }.joined(separator: ", ")
            sendError(
                .client(pending.client), pending.requestID,
                WireError(code: "shard_unavailable", message: "affected \(total) items, but could not reach \(names)"))
            return
        }
        if case .associate(let uid) = op, total == 0 {
            sendError(
                .client(pending.client), pending.requestID,
                WireError(code: "not_found", message: "no item has the uniqueIdentifier '\(uid)'", field: "uniqueIdentifier"))
            return
        }
        send(.client(pending.client), pending.requestID, .entityAck(Body.EntityAck(count: total)))
    }

    // MARK: Typed queries, Spotlight, continuation

    func searchRequest(client: [Data], id: String, _ build: () throws(SearchParametersError) -> SearchRequest) -> SearchRequest? {
        do throws(SearchParametersError) { return try build() } catch {
            sendError(
                .client(client), id,
                WireError(
                    code: error.code.description, message: error.message,
                    position: error.position, field: error.parameter))
            return nil
        }
    }

    /// The typed text and the caller's other parameters as one parameter object.
    func params(text: String, _ extra: JSONValue?, client: [Data], id: String) -> [String: JSONValue]? {
        var p: [String: JSONValue] = [:]
        if let extra, extra != .null {
            guard case .object(let o) = extra else {
                sendError(
                    .client(client), id,
                    WireError(code: "invalid_parameter", message: "params must be an object of search parameters", field: "params"))
                return nil
            }
            p = o
        }
        p["query"] = .string(text)
        return p
    }

    func startSuggest(client: [Data], id: String, _ s: Body.Suggest, scope: TenantScope = .unscoped) {
        count(.suggests)
        let limit = s.limit ?? 10
        let hits = s.hitsPerPage ?? 0
        guard (1...1000).contains(limit) else {
            sendError(.client(client), id, WireError(code: "invalid_parameter", message: "limit must be between 1 and 1000", field: "limit"))
            return
        }
        guard var p = params(text: s.text, s.params, client: client, id: id) else { return }
        p["hitsPerPage"] = .number(Double(hits))
        guard let request = searchRequest(client: client, id: id, { () throws(SearchParametersError) in try SearchRequest(params: .object(p)) })
        else { return }
        let mode = SearchMode.suggest(limit: limit, withResults: hits > 0)
        // Since iOS 18 a typed query's results are semantic: with a model, the
        // text is embedded (once, here) and its results fuse words and meaning
        // as a hybrid search at ratio 0.5 does. Suggestions stay completions of
        // the words typed. Without a model, or if embedding fails, the results
        // are the lexical ones, as before. (A `semantic` or `hybrid` in the
        // typed query's params is not embedded: the results are then lexical.)
        if hits > 0, request.semantic == nil, queryEmbedder.isAvailable,
            !s.text.allSatisfy({ $0.isWhitespace || $0.isPunctuation })
        {
            count(.suggestsSemantic)
            launchEmbedded(
                client: client, id: id, request: request, text: s.text, ratio: Self.typedQuerySemanticRatio,
                deadlineMs: s.deadlineMs, mode: mode, scope: scope, ifEmbeddingFails: .lexical)
            return
        }
        launchSearch(client: client, id: id, request: request, deadlineMs: s.deadlineMs, mode: mode, scope: scope)
    }

    /// The semantic share of a typed query's results when a model is present.
    static let typedQuerySemanticRatio = 0.5

    func startSpotlight(client: [Data], id: String, _ s: Body.Spotlight, scope: TenantScope = .unscoped) {
        count(.spotlights)
        let perDomain = s.perDomain ?? 3
        guard (1...1000).contains(perDomain) else {
            sendError(.client(client), id, WireError(code: "invalid_parameter", message: "perDomain must be between 1 and 1000", field: "perDomain"))
            return
        }
        guard let p = params(text: s.text, s.params, client: client, id: id) else { return }
        guard let request = searchRequest(client: client, id: id, { () throws(SearchParametersError) in try SearchRequest(params: .object(p)) })
        else { return }
        var carried = p
        carried.removeValue(forKey: "query")
        launchSearch(
            client: client, id: id, request: request, deadlineMs: s.deadlineMs,
            mode: .spotlight(perDomain: perDomain, text: s.text, params: carried), scope: scope)
    }

    func startContinue(client: [Data], id: String, _ c: Body.Continue, scope: TenantScope = .unscoped) {
        count(.continuations)
        guard
            let request = searchRequest(
                client: client, id: id,
                { () throws(SearchParametersError) in
                    try ContinuationToken(token: c.token).request(page: c.page ?? 0, hitsPerPage: c.hitsPerPage ?? 20)
                })
        else { return }
        launchSearch(client: client, id: id, request: request, deadlineMs: c.deadlineMs, mode: .search, scope: scope)
    }

    /// The answer to a search, a typed query or a Spotlight search. A
    /// search's response (and a typed query's results) go as the builder
    /// wrote them, spliced into the frame.
    func answer(_ rs: RunningSearch, elapsedMs: Double, failed: [ShardFailure]) -> Body {
        func written() -> RawJSON { RawJSON(trusted: ArraySlice(rs.builder.responseBytes(processingTimeMS: Int(elapsedMs.rounded())))) }
        switch rs.mode {
        case .suggest(let limit, let withResults):
            var all = rs.suggestions.map { Body.SuggestionCount(suggestion: $0.key, count: $0.value) }
            all.sort { $0.count != $1.count ? $0.count > $1.count : $0.suggestion < $1.suggestion }
            let suggestions = Array(all.prefix(limit))
            guard withResults else { return .suggestResult(Body.SuggestResult(suggestions: suggestions, failedShards: failed)) }
            return .suggestResult(.written(suggestions: suggestions, response: written(), failedShards: failed))
        case .spotlight(_, let text, let params):
            let ordered = rs.groups.sorted { rs.builder.groupPrecedes($0, $1) }
            let groups = ordered.map { g in
                Body.SpotlightGroup(
                    domainIdentifier: g.domainIdentifier, total: g.total, items: rs.builder.render(g.hits),
                    continuation: ContinuationToken(text: text, domain: g.domainIdentifier, params: params).encoded)
            }
            return .spotlightResult(Body.SpotlightResult(groups: groups, failedShards: failed))
        case .search:
            return .searchResult(.written(written(), failedShards: failed))
        }
    }
}
