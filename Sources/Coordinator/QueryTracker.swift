import Foundation
import Items
import QueryPlan
import Tenancy
import WireProtocol

/// The queries and parameter searches in flight: each by its key, each
/// client's requests by their ids (for `cancel`, and to stop a client's
/// queries when it stops reading), and each one's shards (``ShardScatter``).
///
/// The core starts and ends them here and carries out what their scatters
/// decide; a lost worker's shards, cancels and deadlines are decided here
/// and in ``ShardScatter`` without sockets (`QueryTrackerTests`).
struct QueryTracker {
    private(set) var queries: [String: RunningQuery] = [:]
    private(set) var queryOfRequest: [[Data]: [String: String]] = [:]
    /// Searches are classes changed in place (see ``RunningSearch``).
    private(set) var searches: [String: RunningSearch] = [:]
    private(set) var searchOfRequest: [[Data]: [String: String]] = [:]
    /// Queries whose first batch went out (its latency is recorded once).
    private(set) var firstBatchSent: Set<String> = []

    /// What a client's `cancel` names.
    enum Cancelled: Equatable {
        case query(String)
        case search(String)
    }

    // MARK: Queries

    mutating func begin(_ rq: RunningQuery) {
        queries[rq.key] = rq
        queryOfRequest[rq.client, default: [:]][rq.requestID] = rq.key
    }

    /// Changes a running query in place; nothing when it has ended.
    mutating func update(_ key: String, _ change: (inout RunningQuery) -> Void) {
        guard queries[key] != nil else { return }
        change(&queries[key]!)
    }

    /// Stores a query's changed copy back, unless it ended meanwhile.
    mutating func store(_ rq: RunningQuery) {
        guard queries[rq.key] != nil else { return }
        queries[rq.key] = rq
    }

    /// Ends a query: it is forgotten, with its request; nil when it had ended.
    mutating func end(_ key: String) -> RunningQuery? {
        guard let rq = queries.removeValue(forKey: key) else { return nil }
        queryOfRequest[rq.client]?.removeValue(forKey: rq.requestID)
        if queryOfRequest[rq.client]?.isEmpty == true { queryOfRequest.removeValue(forKey: rq.client) }
        firstBatchSent.remove(key)
        return rq
    }

    /// True the first time it is asked for a query: its first batch is going out.
    mutating func firstBatch(_ key: String) -> Bool {
        firstBatchSent.insert(key).inserted
    }

    /// The queries of `client` still running.
    func queries(of client: [Data]) -> [String] {
        (queryOfRequest[client]?.values).map { Array($0).sorted() } ?? []
    }

    // MARK: Searches

    mutating func begin(_ rs: RunningSearch) {
        searches[rs.key] = rs
        searchOfRequest[rs.client, default: [:]][rs.requestID] = rs.key
    }

    mutating func endSearch(_ key: String) -> RunningSearch? {
        guard let rs = searches.removeValue(forKey: key) else { return nil }
        searchOfRequest[rs.client]?.removeValue(forKey: rs.requestID)
        if searchOfRequest[rs.client]?.isEmpty == true { searchOfRequest.removeValue(forKey: rs.client) }
        return rs
    }

    // MARK: Events

    /// What a client's `cancel` of request `requestID` stops: a search
    /// first (a client's ids name one request each), then a query; nil for
    /// a request that is over or never was.
    func cancelled(client: [Data], requestID: String) -> Cancelled? {
        if let key = searchOfRequest[client]?[requestID], searches[key] != nil { return .search(key) }
        if let key = queryOfRequest[client]?[requestID] { return .query(key) }
        return nil
    }

    /// `worker` is gone: per query, the shards it ran and what becomes of
    /// each (``ShardScatter/lost(_:)``).
    mutating func queriesLost(_ worker: String) -> [(key: String, shards: [(shard: Int, outcome: ShardScatter.Outcome)])] {
        var lost: [(key: String, shards: [(shard: Int, outcome: ShardScatter.Outcome)])] = []
        for key in queries.keys.sorted() where queries[key]!.scatter.workers.contains(worker) {
            lost.append((key, queries[key]!.scatter.lost(worker)))
        }
        return lost
    }

    /// The searches `worker` was running shards of, and those shards.
    func searchesRunning(on worker: String) -> [(key: String, shard: Int)] {
        searches.keys.sorted().flatMap { key in
            searches[key]!.scatter.outstanding.filter { $0.value == worker }.keys.sorted().map { (key, $0) }
        }
    }

    /// The workers each running query or search waits for, for the stats' queue depths.
    func outstanding(into depth: inout [String: Int]) {
        for q in queries.values { for wid in q.scatter.workers { depth[wid, default: 0] += 1 } }
    }

    /// What a query leaves behind until it completes (`queryState` in the
    /// stats): all zero when idle.
    var state: (running: Int, searches: Int, clients: Int, firstBatchPending: Int) {
        (queries.count, searches.count, queryOfRequest.count + searchOfRequest.count, firstBatchSent.count)
    }
}

/// A query in flight: its plan, its shards (``ShardScatter``), the merge
/// of a sorted query, and what was sent to its client.
struct RunningQuery: Sendable {
    var key: String
    var client: [Data]
    var requestID: String
    var query: Query
    var planJSON: JSONValue
    var deadlineMs: Int
    var scatter = ShardScatter()
    var count = 0
    var seq = 0
    var merger: ResultMerger?
    var started: ContinuousClock.Instant
    /// Fires the deadline; cancelled when the query completes first.
    var deadlineTimer: Deadlines.Token?
    /// Predicate queries: which query a cursor belongs to, and the sort
    /// values of the last result released (see `QueryCursor`).
    var cursorFingerprint: String?
    var lastSort: [JSONValue]?
    /// Whose query it is: results are given back the names the app published.
    var scope: TenantScope = .unscoped
    /// The split's new map it was routed by, before that map's commit (see
    /// ``SwitchRouting``): each shard's part carries its slots under it.
    var routing: SwitchRouting?
    /// The client reads the completion inside the last batch
    /// (``Body/QueryRequest/completionInBatch``).
    var completionInBatch = false
    /// Such a client's latest batch, held back while the coordinator
    /// handles the message that produced it, in case the query ends in
    /// the same step: ``CoordinatorCore/complete(_:cancelled:)`` then
    /// sends it with the completion inside, and otherwise
    /// ``CoordinatorCore/flushHeldBatch(_:)`` sends it before the step
    /// ends, so no batch waits for a later message (streaming is kept).
    var held: Body.ResultBatch?

    init(
        key: String, client: [Data], requestID: String, query: Query, planJSON: JSONValue, deadlineMs: Int,
        started: ContinuousClock.Instant
    ) {
        self.key = key
        self.client = client
        self.requestID = requestID
        self.query = query
        self.planJSON = planJSON
        self.deadlineMs = deadlineMs
        self.started = started
    }
}
