import Foundation
import Items
import QueryPlan
import SearchParameters
import Tenancy
import WireProtocol

/// Requests made inside the coordinator's process — the REST API's — and
/// answered by the very handlers a ZeroMQ client's messages reach.
///
/// Each request gets a route of its own that no socket can give (ZeroMQ's
/// own routing ids are a zero byte and four more, and a peer cannot choose
/// one starting with a zero byte, see ``LocalQueryWorker/route``); ``CoordinatorCore/send(_:_:_:)`` hands what
/// is sent to such a route to its waiter instead of the client socket. The
/// waiter gathers the replies until the one that ends the request (every
/// reply but a `result_batch` without its completion) and resumes with all of
/// them. A value type kept by the actor: it needs no lock of its own.
struct LocalClients {
    struct Waiter {
        var continuation: CheckedContinuation<[Body], Never>
        var replies: [Body] = []
        /// A REST search's confinement to an index (``LocalSearchShape``).
        var searchShape: LocalSearchShape?
    }
    var waiters: [[Data]: Waiter] = [:]
    var next = 0

    static let marker = Data([0]) + Data("limelight-rest-".utf8)

    /// A fresh route for one request.
    mutating func route() -> [Data] {
        next += 1
        return [Self.marker + Data("\(next)".utf8)]
    }

    /// Whether a route is a local request's (never a socket's peer).
    static func isLocal(_ route: [Data]) -> Bool {
        route.count == 1 && route[0].count > marker.count && route[0].starts(with: marker)
    }

    /// Takes one reply; resumes the waiter when it ends the request.
    mutating func deliver(_ route: [Data], _ body: Body) {
        guard var w = waiters[route] else { return }
        w.replies.append(body)
        if case .resultBatch(let b) = body, b.completion == nil {
            waiters[route] = w
            return
        }
        waiters.removeValue(forKey: route)
        w.continuation.resume(returning: w.replies)
    }
}

extension CoordinatorCore {
    /// Runs `start` with a fresh local route and request id, and returns the
    /// replies sent to that route, the last one ending the request.
    ///
    /// `start` runs on the calling thread, as the actor (the lock the
    /// sockets' threads take, ``CoordinatorExecutor/run(_:)``), as a
    /// message from a socket is handled: a hop onto the actor would wake the
    /// executor's thread for each request, and on a busy machine waiting
    /// for that thread to be scheduled costs more than the handling. The
    /// caller is never the actor (a REST handler), which the lock needs: it
    /// is not re-entrant.
    nonisolated func local(_ start: @Sendable (isolated CoordinatorCore, _ route: [Data], _ id: String) -> Void) async -> [Body] {
        await withCheckedContinuation { c in
            executor.run {
                assumeIsolated { core in
                    let route = core.localClients.route()
                    let id = core.makeID("r")
                    core.localClients.waiters[route] = LocalClients.Waiter(continuation: c)
                    start(core, route, id)
                }
            }
        }
    }

    /// A client request as the client socket would hand it over, with its key.
    /// Made within a read-modify-write (``lockOwner``), it acts as its owner.
    nonisolated func localRequest(_ body: Body, key: String?) async -> [Body] {
        let owner = Self.lockOwner
        return await local { core, route, id in
            if let owner { core.localLockOwners[route] = owner }
            core.handleClient(route: route, envelope: Envelope(id: id, body: body, key: key))
        }
    }

    /// An Algolia search confined to `predicate` (an index's records) within
    /// the key's app: a `search` message as a client's socket hands it
    /// over, so it passes every check and hold one does (a standby's
    /// refusal, a split taken up, the keys of a coordinator that has just
    /// taken over), and its confinement is applied whenever it is handled
    /// (``CoordinatorCore/startSearch(client:id:_:scope:)``).
    /// `prepare` shapes the parsed request (hits as records, the index's settings).
    nonisolated func localSearch(
        params: JSONValue, key: String?, within predicate: QueryPlan.Predicate,
        prepare: @escaping @Sendable (inout SearchRequest) -> Void
    ) async -> [Body] {
        await local { core, route, id in
            core.localClients.waiters[route]?.searchShape = LocalSearchShape(predicate: predicate, prepare: prepare)
            core.handleClient(route: route, envelope: Envelope(id: id, body: .search(Body.Search(params: params)), key: key))
        }
    }
}

/// How a REST search is confined to an index's records: the index's
/// settings shape the parsed request, and its records' predicate is
/// and-ed into the filter and every disjunctive facet's filter.
struct LocalSearchShape: Sendable {
    var predicate: QueryPlan.Predicate
    var prepare: @Sendable (inout SearchRequest) -> Void

    func apply(to request: inout SearchRequest) {
        prepare(&request)
        request.plan.filter = QueryPlan.Predicate.and([predicate, request.plan.filter]).simplified()
        request.plan.disjunctiveFilters = request.plan.disjunctiveFilters.mapValues {
            QueryPlan.Predicate.and([predicate, $0]).simplified()
        }
    }
}

extension CoordinatorCore {
    /// The app a key belongs to; nil for no key, an unknown key, or a
    /// cluster without keys (the request itself then says what is wrong).
    func app(ofKey key: String?) -> String? {
        try? Access.resolve(key: key, store: keyStore, requireKeys: false).scope.app
    }

    /// The app of a key (as ``app(ofKey:)``) and, for a secured key, the
    /// domains it is restricted to: one resolution for both.
    func appAndDomains(ofKey key: String?) -> (app: String?, restrictDomains: [String]?) {
        guard let access = try? Access.resolve(key: key, store: keyStore, requireKeys: false) else { return (nil, nil) }
        return (access.scope.app, access.restrictDomains)
    }

    /// ``appAndDomains(ofKey:)`` on the calling thread, as the actor (see
    /// ``local(_:)``); never from the actor itself.
    nonisolated func appAndDomainsInPlace(ofKey key: String?) -> (app: String?, restrictDomains: [String]?) {
        executor.run { assumeIsolated { $0.appAndDomains(ofKey: key) } }
    }
}
