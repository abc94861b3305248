import Foundation
import Items
import Logging
import Planner
import QueryPlan
import WireProtocol

/// Who a message is for: a client or a worker, by its ZeroMQ routing frames.
enum Peer: Sendable, Hashable {
    case client([Data])
    case worker([Data])
}

struct Outgoing: Sendable {
    var to: Peer
    var envelope: Envelope
}

extension Peer {
    var kind: String {
        switch self {
        case .client: "client"
        case .worker: "worker"
        }
    }
}

/// A registered indexer or query worker.
struct WorkerRecord: Sendable {
    var id: String
    var role: Body.Register.Role
    var shards: [Int]
    var route: [Data]
    var lastSeen: ContinuousClock.Instant
    var host: String?
    var pid: Int?
    var registeredAt: Date
    /// What its last heartbeat reported, if it reports (see `WorkerStatus`).
    var status: WorkerStatus?
}

/// The coordinator's state machine: everything it knows and decides.
///
/// Handlers never await; they append replies to ordered outboxes that one
/// sender task per socket drains. That keeps every decision atomic inside the
/// actor, and keeps a query's batches and its completion in order even when a
/// deadline fires in the middle of a stream.
actor CoordinatorCore {
    let configuration: CoordinatorConfiguration
    let logger: Logger
    let planner: Planner
    let clientOutbox: AsyncStream<Outgoing>.Continuation
    let workerOutbox: AsyncStream<Outgoing>.Continuation
    let startedAt = Date()

    var workers: [String: WorkerRecord] = [:]
    var workerByRoute: [[Data]: String] = [:]
    var roundRobin = 0
    var nextID = 0

    // Writes in flight.
    struct ShardWrite: Sendable {
        var publish: String
        var shard: Int
        var worker: String
        /// Positions in the client's batch of the items sent in this write.
        var indices: [Int]
    }
    struct PendingPublish: Sendable {
        var client: [Data]
        var requestID: String
        var batch: String?
        /// Each item's identifier, for rejections the coordinator makes itself.
        var identifiers: [String?]
        var results: [ItemResult?]
        var outstanding: Set<String>
        /// Shards for which at least one replica committed.
        var committed: Set<Int>
        var shardOf: [Int: [Int]] // shard → item positions
        var started: ContinuousClock.Instant
    }
    var publishes: [String: PendingPublish] = [:]
    /// Publishes that came while `maxPendingWrites` were in flight, in order
    /// (at most `maxWaitingWrites`; see ``holdPublish``).
    var waitingWrites: [(client: [Data], id: String, publish: Body.Publish, rejected: [Int: ItemResult])] = []
    var startingWaitingWrites = false
    var shardWrites: [String: ShardWrite] = [:]

    // Deletes in flight.
    struct PendingDelete: Sendable {
        var client: [Data]
        var requestID: String
        var outstanding: [String: (worker: String, shard: Int)]
        var deletedByShard: [Int: Int]
        var failed: [ShardFailure]
        /// Set for entity deletes and associations, which answer `entity_ack`.
        var entity: EntityOperation? = nil
    }
    var deletes: [String: PendingDelete] = [:]
    var deleteOfRequest: [String: String] = [:]

    // Declarations in flight.
    struct PendingDeclare: Sendable {
        var client: [Data]
        var requestID: String
        var outstanding: [String: String] // message → worker
        var error: WireError?
    }
    var declares: [String: PendingDeclare] = [:]
    var declareOfRequest: [String: String] = [:]

    // Queries in flight.
    struct RunningQuery: Sendable {
        var key: String
        var client: [Data]
        var requestID: String
        var query: Query
        var planJSON: JSONValue
        var deadlineMs: Int
        var outstanding: [Int: String]       // shard → worker
        var delivered: [Int: Int] = [:]      // shard → hits released to the client
        var tried: [Int: Set<String>] = [:]  // shard → workers tried
        var failed: [ShardFailure] = []
        var count = 0
        var seq = 0
        var merger: ResultMerger?
        var started: ContinuousClock.Instant
        /// Fires the deadline; cancelled when the query completes first.
        var deadlineTimer: Task<Void, Never>?
        /// Predicate queries: which query a cursor belongs to, and the sort
        /// values of the last result released (see `QueryCursor`).
        var cursorFingerprint: String?
        var lastSort: [JSONValue]?
    }
    var queries: [String: RunningQuery] = [:]
    var queryOfRequest: [[Data]: [String: String]] = [:]
    // Parameter searches in flight (CoordinatorCore+Search.swift).
    var searches: [String: RunningSearch] = [:]
    var searchOfRequest: [[Data]: [String: String]] = [:]

    // Counters for the stats endpoint.
    var counters: [String: Int] = [:]
    var queryLatenciesMs: [Double] = []
    var firstBatchLatenciesMs: [Double] = []
    var firstBatchSent: Set<String> = []
    /// Workers declared dead, kept for the stats and metrics (see ClusterStats.swift).
    var lostWorkers: [String: LostWorker] = [:]
    var rates = RateWindow()
    /// Prometheus figures (GET /metrics); the HTTP endpoint renders them.
    nonisolated let metrics = CoordinatorMetrics()

    init(configuration: CoordinatorConfiguration, logger: Logger, planner: Planner,
         clientOutbox: AsyncStream<Outgoing>.Continuation, workerOutbox: AsyncStream<Outgoing>.Continuation) {
        self.configuration = configuration
        self.logger = logger
        self.planner = planner
        self.clientOutbox = clientOutbox
        self.workerOutbox = workerOutbox
    }

    func makeID(_ prefix: String) -> String {
        nextID += 1
        return "\(prefix)\(nextID)"
    }

    func count(_ key: String, by n: Int = 1) { counters[key, default: 0] += n }

    func send(_ to: Peer, _ id: String, _ body: Body) {
        let o = Outgoing(to: to, envelope: Envelope(id: id, body: body))
        switch to {
        case .client: clientOutbox.yield(o)
        case .worker: workerOutbox.yield(o)
        }
    }

    func sendError(_ to: Peer, _ id: String, _ error: WireError) {
        count("errors")
        send(to, id, .error(error))
    }

    // MARK: - Client messages

    func handleClient(route: [Data], payload: Data) {
        let envelope: Envelope
        do { envelope = try Envelope.decode(payload, maxBytes: configuration.maxFrameBytes) } catch {
            logger.notice("rejected a client frame", metadata: ["error.code": "\(error.code)", "error": "\(error.message)"])
            sendError(.client(route), error.id ?? "", error.wire)
            return
        }
        switch envelope.body {
        case .publish(let p): publish(client: route, id: envelope.id, p)
        case .query(let q): startQuery(client: route, id: envelope.id, q)
        case .search(let q): startSearch(client: route, id: envelope.id, q)
        case .cancel(let c): cancel(client: route, requestID: c.query)
        case .delete(let d): delete(client: route, id: envelope.id, d)
        case .entityDonate(let d): donateEntities(client: route, id: envelope.id, d)
        case .entityDelete(let d): deleteEntities(client: route, id: envelope.id, d)
        case .entityAssociate(let a): associateEntity(client: route, id: envelope.id, a)
        case .suggest(let s): startSuggest(client: route, id: envelope.id, s)
        case .spotlight(let s): startSpotlight(client: route, id: envelope.id, s)
        case .continueSearch(let c): startContinue(client: route, id: envelope.id, c)
        case .declare(let d): declare(client: route, id: envelope.id, d)
        case .ping: send(.client(route), envelope.id, .pong(pong()))
        case .stats: send(.client(route), envelope.id, .statsReply(Body.Stats(stats: stats())))
        default:
            sendError(.client(route), envelope.id,
                      WireError(code: "unexpected_type", message: "'\(envelope.type.rawValue)' is not a request a client can send"))
        }
    }

    func pong() -> Body.Pong {
        Body.Pong(shardCount: configuration.shards, servedShards: servedShards())
    }

    func servedShards() -> [Int] {
        (0..<configuration.shards).filter { !liveWorkers(.indexer, shard: $0).isEmpty && !liveWorkers(.query, shard: $0).isEmpty }
    }

    func liveWorkers(_ role: Body.Register.Role, shard: Int) -> [WorkerRecord] {
        workers.values.filter { $0.role == role && $0.shards.contains(shard) }.sorted { $0.id < $1.id }
    }

    // MARK: Publish

    /// `rejected`: items already refused before routing (entities that are
    /// not valid donations), answered in place with their reason.
    func publish(client: [Data], id: String, _ p: Body.Publish, rejected: [Int: ItemResult] = [:]) {
        if publishes.count >= configuration.maxPendingWrites || !waitingWrites.isEmpty && !startingWaitingWrites {
            holdPublish(client: client, id: id, p, rejected: rejected)
            return
        }
        count("publish.batches")
        count("publish.items", by: p.items.count)
        let publishID = makeID("p")
        var pending = PendingPublish(client: client, requestID: id, batch: p.batch,
                                     identifiers: p.items.map { $0["uniqueIdentifier"]?.stringValue },
                                     results: Array(repeating: nil, count: p.items.count),
                                     outstanding: [], committed: [], shardOf: [:], started: .now)
        var byShard: [Int: [Int]] = [:]
        var allIDs: [String] = []
        for (i, item) in p.items.enumerated() {
            if let r = rejected[i] {
                pending.results[i] = r
                continue
            }
            guard case .object(let o) = item else {
                pending.results[i] = ItemResult(index: i, uniqueIdentifier: nil, status: .rejected,
                                                error: WireError(ItemError(.notAnObject, "an item must be a JSON object, found \(item.kindName)")))
                continue
            }
            guard let uid = o["uniqueIdentifier"]?.stringValue, !uid.isEmpty else {
                pending.results[i] = ItemResult(index: i, uniqueIdentifier: nil, status: .rejected,
                                                error: WireError(ItemError(.missingIdentifier, "uniqueIdentifier is missing or not text", field: "uniqueIdentifier")))
                continue
            }
            var domain = ""
            if let d = o["domainIdentifier"], d != .null {
                guard let s = d.stringValue, DomainIdentifier.isValid(s) else {
                    pending.results[i] = ItemResult(index: i, uniqueIdentifier: uid, status: .rejected,
                                                    error: WireError(ItemError(.invalidDomain, "domainIdentifier must be dot-separated names without spaces", field: "domainIdentifier")))
                    continue
                }
                domain = s
            }
            let shard = Sharding.shard(forDomain: domain, shardCount: configuration.shards)
            byShard[shard, default: []].append(i)
            allIDs.append(uid)
        }
        pending.shardOf = byShard
        for shard in 0..<configuration.shards {
            let indices = byShard[shard] ?? []
            // An item whose domain moved to another shard must leave its old one.
            var evict: [String] = []
            if configuration.shards > 1 {
                let here = Set(indices.compactMap { p.items[$0]["uniqueIdentifier"]?.stringValue })
                evict = allIDs.filter { !here.contains($0) }
            }
            if indices.isEmpty && evict.isEmpty { continue }
            let replicas = liveWorkers(.indexer, shard: shard)
            if replicas.isEmpty {
                for i in indices {
                    pending.results[i] = ItemResult(index: i, uniqueIdentifier: p.items[i]["uniqueIdentifier"]?.stringValue, status: .rejected,
                                                    error: WireError(code: "shard_unavailable", message: "no live indexer serves shard \(shard); nothing was stored, resend later"))
                }
                if !evict.isEmpty {
                    logger.warning("could not evict moved items from a shard with no live indexer", metadata: ["shard": "\(shard)"])
                }
                continue
            }
            let items = indices.map { p.items[$0] }
            for w in replicas {
                let writeID = makeID("w")
                shardWrites[writeID] = ShardWrite(publish: publishID, shard: shard, worker: w.id, indices: indices)
                pending.outstanding.insert(writeID)
                send(.worker(w.route), writeID, .write(Body.Write(shard: shard, items: items, evict: evict)))
            }
        }
        publishes[publishID] = pending
        finishPublishIfDone(publishID)
    }

    func writeAcked(writeID: String, ack: Body.WriteAck?, error: WireError?) {
        guard let w = shardWrites.removeValue(forKey: writeID), var pending = publishes[w.publish] else { return }
        pending.outstanding.remove(writeID)
        if let ack {
            pending.committed.insert(w.shard)
            for r in ack.results where r.index >= 0 && r.index < w.indices.count {
                let g = w.indices[r.index]
                if r.status == .rejected {
                    var rr = r
                    rr.index = g
                    pending.results[g] = rr
                } else if pending.results[g] == nil {
                    pending.results[g] = ItemResult(index: g, uniqueIdentifier: r.uniqueIdentifier, status: .stored)
                }
            }
        } else if let error {
            // One replica failed: the item is not stored on every replica, so
            // it is not acknowledged as stored, whatever the others said.
            for g in w.indices where pending.results[g]?.status != .rejected {
                pending.results[g] = ItemResult(index: g, uniqueIdentifier: pending.identifiers[g], status: .rejected, error: error)
            }
        }
        publishes[w.publish] = pending
        finishPublishIfDone(w.publish)
    }

    func finishPublishIfDone(_ publishID: String) {
        guard let pending = publishes[publishID], pending.outstanding.isEmpty else { return }
        publishes.removeValue(forKey: publishID)
        defer { startWaitingWrites() }
        var results: [ItemResult] = []
        results.reserveCapacity(pending.results.count)
        for (i, r) in pending.results.enumerated() {
            if let r { results.append(r); continue }
            // Every replica that was asked is gone without answering.
            results.append(ItemResult(index: i, uniqueIdentifier: pending.identifiers[i], status: .rejected,
                                      error: WireError(code: "shard_unavailable", message: "the indexer stopped before committing; resend")))
        }
        let ack = Body.PublishAck(batch: pending.batch, results: results)
        metrics.publishDuration.record(duration: pending.started.duration(to: .now))
        count("publish.stored", by: ack.stored)
        count("publish.rejected", by: ack.rejected)
        send(.client(pending.client), pending.requestID, .publishAck(ack))
    }

    // MARK: Delete and declare

    func delete(client: [Data], id: String, _ d: Body.Delete) {
        count("deletes")
        let hasIDs = !(d.ids ?? []).isEmpty, hasDomains = !(d.domains ?? []).isEmpty, all = d.all == true
        guard hasIDs || hasDomains || all else {
            sendError(.client(client), id, WireError(code: "invalid_message", message: "delete needs 'ids', 'domains' or 'all': true"))
            return
        }
        for domain in d.domains ?? [] where domain.isEmpty || !DomainIdentifier.isValid(domain) {
            sendError(.client(client), id, WireError(code: "invalid_domain", message: "'\(domain)' is not a domain identifier", field: "domains"))
            return
        }
        // `shards` limits the delete to those shards (all of them when absent):
        // `{"all": true, "shards": [2]}` empties shard 2 only. A shard the
        // cluster does not have is an error, and nothing is deleted.
        var targets = Array(0..<configuration.shards)
        if let only = d.shards {
            let missing = only.filter { $0 < 0 || $0 >= configuration.shards }
            guard missing.isEmpty else {
                let names = missing.map(String.init).joined(separator: ", ")
                sendError(.client(client), id, WireError(code: "bad_shard", message: "the cluster has shards 0-\(configuration.shards - 1); "
                    + "no shard \(names); nothing was deleted", field: "shards"))
                return
            }
            guard !only.isEmpty else {
                sendError(.client(client), id, WireError(code: "invalid_message", message: "'shards' is empty: name at least one shard, or leave it out for every shard", field: "shards"))
                return
            }
            targets = Array(Set(only)).sorted()
        }
        let deleteID = makeID("d")
        var pending = PendingDelete(client: client, requestID: id, outstanding: [:], deletedByShard: [:], failed: [])
        for shard in targets {
            let replicas = liveWorkers(.indexer, shard: shard)
            if replicas.isEmpty {
                pending.failed.append(ShardFailure(shard: shard, reason: "no live indexer"))
                continue
            }
            for w in replicas {
                let wid = makeID("x")
                pending.outstanding[wid] = (w.id, shard)
                deleteOfRequest[wid] = deleteID
                send(.worker(w.route), wid, .delete(Body.Delete(ids: d.ids, domains: d.domains, all: d.all, shards: [shard])))
            }
        }
        deletes[deleteID] = pending
        finishDeleteIfDone(deleteID)
    }

    func deleteAcked(workerMessageID: String, deleted: Int?, error: WireError?) {
        guard let deleteID = deleteOfRequest.removeValue(forKey: workerMessageID), var pending = deletes[deleteID],
              let (_, shard) = pending.outstanding.removeValue(forKey: workerMessageID) else { return }
        if let deleted {
            pending.deletedByShard[shard] = max(pending.deletedByShard[shard] ?? 0, deleted)
        } else if let error {
            pending.failed.append(ShardFailure(shard: shard, reason: error.message))
        }
        deletes[deleteID] = pending
        finishDeleteIfDone(deleteID)
    }

    func finishDeleteIfDone(_ deleteID: String) {
        guard let pending = deletes[deleteID], pending.outstanding.isEmpty else { return }
        deletes.removeValue(forKey: deleteID)
        let total = pending.deletedByShard.values.reduce(0, +)
        if let op = pending.entity {
            finishEntityOperation(op, pending, total: total)
            return
        }
        if !pending.failed.isEmpty {
            let names = pending.failed.map { "shard \($0.shard) (\($0.reason))" }.joined(separator: ", ")
            sendError(.client(pending.client), pending.requestID,
                      WireError(code: "shard_unavailable", message: "deleted \(total) items, but not on \(names)"))
            return
        }
        send(.client(pending.client), pending.requestID, .deleteAck(Body.DeleteAck(deleted: total)))
    }

    func declare(client: [Data], id: String, _ d: Body.Declare) {
        let declareID = makeID("k")
        var pending = PendingDeclare(client: client, requestID: id, outstanding: [:])
        let indexers = workers.values.filter { $0.role == .indexer }
        let missing = (0..<configuration.shards).filter { liveWorkers(.indexer, shard: $0).isEmpty }
        if !missing.isEmpty {
            sendError(.client(client), id, WireError(code: "shard_unavailable",
                                                      message: "shards \(missing.map(String.init).joined(separator: ",")) have no live indexer; declare again when they do"))
            return
        }
        for w in indexers {
            let wid = makeID("k")
            pending.outstanding[wid] = w.id
            declareOfRequest[wid] = declareID
            send(.worker(w.route), wid, .declare(d))
        }
        declares[declareID] = pending
        finishDeclareIfDone(declareID)
    }

    func declareAcked(workerMessageID: String, error: WireError?) {
        guard let declareID = declareOfRequest.removeValue(forKey: workerMessageID), var pending = declares[declareID] else { return }
        pending.outstanding.removeValue(forKey: workerMessageID)
        if let error { pending.error = error }
        declares[declareID] = pending
        finishDeclareIfDone(declareID)
    }

    func finishDeclareIfDone(_ declareID: String) {
        guard let pending = declares[declareID], pending.outstanding.isEmpty else { return }
        declares.removeValue(forKey: declareID)
        if let e = pending.error { sendError(.client(pending.client), pending.requestID, e) }
        else { send(.client(pending.client), pending.requestID, .declareAck(Body.Empty())) }
    }

    // MARK: Queries

    func startQuery(client: [Data], id: String, _ request: Body.QueryRequest) {
        count("queries")
        // A deadline of 0 or less is a mistake, not a request for no deadline:
        // a client that wants the server's default leaves the field out.
        if let d = request.deadlineMs, d <= 0 {
            sendError(.client(client), id, WireError(code: "invalid_parameter",
                                                     message: "deadlineMs must be a positive number of milliseconds, found \(d)", field: "deadlineMs"))
            return
        }
        let query: Query
        do { query = try planner.plan(request) } catch {
            sendError(.client(client), id, error)
            return
        }
        let key = makeID("q")
        let deadline = request.deadlineMs ?? configuration.defaultDeadlineMs
        let shards = planner.shards(for: query, shardCount: configuration.shards)
        var rq = RunningQuery(key: key, client: client, requestID: id, query: query, planJSON: query.json,
                              deadlineMs: deadline, outstanding: [:], started: .now)
        if !query.sort.isEmpty { rq.merger = ResultMerger(order: SortOrder(keys: query.sort), shards: shards) }
        rq.cursorFingerprint = QueryCursor.fingerprint(of: request)
        queries[key] = rq
        queryOfRequest[client, default: [:]][id] = key
        for shard in shards { dispatch(key, shard: shard) }
        if deadline > 0 {
            queries[key]?.deadlineTimer = Task { [weak self] in
                guard (try? await Task.sleep(for: .milliseconds(deadline))) != nil else { return }
                await self?.deadlineReached(key)
            }
        }
        finishQueryIfDone(key)
    }

    /// The next live query worker of a shard not tried yet, round robin.
    func nextQueryWorker(shard: Int, tried: Set<String>) -> WorkerRecord? {
        let candidates = liveWorkers(.query, shard: shard).filter { !tried.contains($0.id) }
        guard !candidates.isEmpty else { return nil }
        roundRobin &+= 1
        return candidates[roundRobin % candidates.count]
    }

    /// Sends a shard's part of a query to a live query worker not yet tried for it.
    func dispatch(_ key: String, shard: Int) {
        guard var rq = queries[key] else { return }
        let tried = rq.tried[shard] ?? []
        guard let w = nextQueryWorker(shard: shard, tried: tried) else {
            rq.failed.append(ShardFailure(shard: shard, reason: tried.isEmpty ? "no live query worker" : "every query worker for the shard failed"))
            rq.merger?.finish(shard: shard)
            queries[key] = rq
            return
        }
        rq.tried[shard, default: []].insert(w.id)
        rq.outstanding[shard] = w.id
        queries[key] = rq
        let elapsed = Int(rq.started.duration(to: .now).milliseconds)
        send(.worker(w.route), key, .shardQuery(Body.ShardQuery(shard: shard, plan: rq.planJSON,
                                                               deadlineMs: rq.deadlineMs > 0 ? max(1, rq.deadlineMs - elapsed) : nil)))
    }

    func shardBatch(key: String, from worker: String, _ b: Body.ShardBatch) {
        guard var rq = queries[key], rq.outstanding[b.shard] == worker else { return }
        if rq.merger != nil {
            rq.merger!.add(shard: b.shard, hits: b.hits)
            queries[key] = rq
            releaseMerged(key)
        } else {
            var items = b.hits.map(\.item)
            if let limit = rq.query.limit { items = Array(items.prefix(max(0, limit - rq.count))) }
            rq.delivered[b.shard, default: 0] += items.count
            queries[key] = rq
            deliver(key, items)
        }
        if let rq = queries[key], let limit = rq.query.limit, rq.count >= limit {
            stopShards(key, reason: nil)
            complete(key, cancelled: false)
        }
    }

    func releaseMerged(_ key: String) {
        guard var rq = queries[key], rq.merger != nil else { return }
        let room = rq.query.limit.map { max(0, $0 - rq.count) } ?? .max
        let released = rq.merger!.drain(max: room)
        for r in released { rq.delivered[r.shard, default: 0] += 1 }
        if let last = released.last { rq.lastSort = last.hit.sort }
        queries[key] = rq
        if !released.isEmpty { deliver(key, released.map(\.hit.item)) }
    }

    func deliver(_ key: String, _ items: [JSONValue]) {
        guard var rq = queries[key], !items.isEmpty else { return }
        var start = 0
        while start < items.count {
            let chunk = Array(items[start..<min(items.count, start + rq.query.batchSize)])
            start += chunk.count
            rq.seq += 1
            rq.count += chunk.count
            send(.client(rq.client), rq.requestID, .resultBatch(Body.ResultBatch(items: chunk, seq: rq.seq)))
        }
        if !firstBatchSent.contains(key) {
            firstBatchSent.insert(key)
            record(&firstBatchLatenciesMs, rq.started.duration(to: .now).milliseconds)
            metrics.queryFirstBatch.record(duration: rq.started.duration(to: .now))
        }
        queries[key] = rq
    }

    func shardDone(key: String, from worker: String, _ d: Body.ShardDone) {
        guard var rq = queries[key], rq.outstanding[d.shard] == worker else { return }
        rq.outstanding.removeValue(forKey: d.shard)
        if let e = d.error {
            rq.failed.append(ShardFailure(shard: d.shard, reason: e.message))
        }
        rq.merger?.finish(shard: d.shard)
        queries[key] = rq
        releaseMerged(key)
        finishQueryIfDone(key)
    }

    func finishQueryIfDone(_ key: String) {
        guard let rq = queries[key], rq.outstanding.isEmpty else { return }
        releaseMerged(key)
        complete(key, cancelled: false)
    }

    func complete(_ key: String, cancelled: Bool) {
        guard let rq = queries.removeValue(forKey: key) else { return }
        rq.deadlineTimer?.cancel()
        queryOfRequest[rq.client]?.removeValue(forKey: rq.requestID)
        if queryOfRequest[rq.client]?.isEmpty == true { queryOfRequest.removeValue(forKey: rq.client) }
        firstBatchSent.remove(key)
        let elapsed = rq.started.duration(to: .now).milliseconds
        record(&queryLatenciesMs, elapsed)
        metrics.queryDuration.record(duration: rq.started.duration(to: .now))
        if !rq.failed.isEmpty { count("queries.partial") }
        send(.client(rq.client), rq.requestID,
             .completion(Body.Completion(count: rq.count, failedShards: rq.failed.sorted { $0.shard < $1.shard },
                                         cancelled: cancelled, elapsedMs: (elapsed * 1000).rounded() / 1000,
                                         cursor: cancelled ? nil : nextCursor(rq))))
    }

    /// Tells the workers still running a query's shards to stop.
    func stopShards(_ key: String, reason: String?) {
        guard var rq = queries[key] else { return }
        for (shard, wid) in rq.outstanding {
            if let w = workers[wid] { send(.worker(w.route), key, .cancel(Body.Cancel(query: key))) }
            if let reason { rq.failed.append(ShardFailure(shard: shard, reason: reason)) }
        }
        rq.outstanding.removeAll()
        queries[key] = rq
    }

    func cancel(client: [Data], requestID: String) {
        if cancelSearch(client: client, requestID: requestID) { return }
        guard let key = queryOfRequest[client]?[requestID] else { return }
        count("queries.cancelled")
        stopShards(key, reason: nil)
        complete(key, cancelled: true)
    }

    func deadlineReached(_ key: String) {
        guard let rq = queries[key] else { return }
        count("queries.timedOut")
        stopShards(key, reason: "no answer within the deadline of \(rq.deadlineMs) ms")
        releaseMergedAfterStop(key)
        complete(key, cancelled: false)
    }

    func releaseMergedAfterStop(_ key: String) {
        guard var rq = queries[key], rq.merger != nil else { return }
        for s in rq.merger!.running { rq.merger!.finish(shard: s) }
        queries[key] = rq
        releaseMerged(key)
    }

    // MARK: - Worker messages

    func handleWorker(route: [Data], payload: Data) {
        let envelope: Envelope
        do { envelope = try Envelope.decode(payload, maxBytes: configuration.maxFrameBytes) } catch {
            logger.notice("rejected a worker frame", metadata: ["error": "\(error)"])
            sendError(.worker(route), error.id ?? "", error.wire)
            return
        }
        if case .register(let r) = envelope.body {
            register(route: route, id: envelope.id, r)
            return
        }
        guard let wid = workerByRoute[route], var w = workers[wid] else {
            // A worker we have forgotten (we restarted, or declared it dead): ask it to register again.
            sendError(.worker(route), envelope.id, WireError(code: "unregistered", message: "register before sending \(envelope.type.rawValue)"))
            return
        }
        w.lastSeen = .now
        workers[wid] = w
        switch envelope.body {
        case .heartbeat(let h):
            if let status = h.status { workers[wid]?.status = status }
            send(.worker(route), envelope.id, .heartbeat(Body.Heartbeat()))
        case .writeAck(let a): writeAcked(writeID: envelope.id, ack: a, error: nil)
        case .deleteAck(let a): deleteAcked(workerMessageID: envelope.id, deleted: a.deleted, error: nil)
        case .entityAck(let a): deleteAcked(workerMessageID: envelope.id, deleted: a.count, error: nil)
        case .declareAck: declareAcked(workerMessageID: envelope.id, error: nil)
        case .shardBatch(let b): shardBatch(key: envelope.id, from: wid, b)
        case .shardDone(let d) where searches[envelope.id] != nil:
            searchShardFailed(key: envelope.id, from: wid, shard: d.shard, reason: d.error?.message ?? "the shard answered no search result")
        case .shardDone(let d): shardDone(key: envelope.id, from: wid, d)
        case .shardSearchResult(let r): shardSearchAnswered(key: envelope.id, from: wid, r)
        case .error(let e):
            if searches[envelope.id] != nil { searchShardFailed(key: envelope.id, from: wid, shard: nil, reason: e.message) }
            else if shardWrites[envelope.id] != nil { writeAcked(writeID: envelope.id, ack: nil, error: e) }
            else if deleteOfRequest[envelope.id] != nil { deleteAcked(workerMessageID: envelope.id, deleted: nil, error: e) }
            else if declareOfRequest[envelope.id] != nil { declareAcked(workerMessageID: envelope.id, error: e) }
            else if let rq = queries[envelope.id], let shard = rq.outstanding.first(where: { $0.value == wid })?.key {
                shardDone(key: envelope.id, from: wid, Body.ShardDone(shard: shard, count: 0, error: e))
            } else {
                logger.notice("worker reported an error", metadata: ["worker": "\(wid)", "error": "\(e)"])
            }
        default:
            sendError(.worker(route), envelope.id, WireError(code: "unexpected_type", message: "'\(envelope.type.rawValue)' is not a message a worker sends"))
        }
    }

    func register(route: [Data], id: String, _ r: Body.Register) {
        let bad = r.shards.filter { $0 < 0 || $0 >= configuration.shards }
        guard !bad.isEmpty || !r.shards.isEmpty else {
            sendError(.worker(route), id, WireError(code: "invalid_message", message: "a worker must serve at least one shard"))
            return
        }
        guard bad.isEmpty else {
            sendError(.worker(route), id, WireError(code: "bad_shard",
                                                     message: "shards \(bad.map(String.init).joined(separator: ",")) do not exist: this cluster has \(configuration.shards) (0-\(configuration.shards - 1))"))
            return
        }
        if let old = workers[r.worker], old.route != route { forget(old.id, reason: "re-registered from a new connection") }
        workers[r.worker] = WorkerRecord(id: r.worker, role: r.role, shards: r.shards, route: route, lastSeen: .now,
                                         host: r.host, pid: r.pid, registeredAt: Date())
        workerByRoute[route] = r.worker
        lostWorkers.removeValue(forKey: r.worker)
        logger.info("worker registered", metadata: ["worker": "\(r.worker)", "worker.role": "\(r.role.rawValue)",
                                                    "shards": "\(r.shards.map(String.init).joined(separator: ","))"])
        send(.worker(route), id, .registered(Body.Registered(shardCount: configuration.shards, heartbeatMs: configuration.heartbeatMs)))
    }

    /// Declares silent workers dead, and routes their work elsewhere.
    func sweep() {
        let limit = Duration.milliseconds(configuration.livenessMs)
        let now = ContinuousClock.now
        for w in workers.values where w.lastSeen.duration(to: now) > limit {
            forget(w.id, reason: "no heartbeat for \(configuration.livenessMs) ms")
        }
        rates.sample(counters)
    }

    func workerUnreachable(route: [Data]) {
        guard let wid = workerByRoute[route] else { return }
        forget(wid, reason: "its connection is gone")
    }

    func forget(_ workerID: String, reason: String) {
        guard let w = workers.removeValue(forKey: workerID) else { return }
        workerByRoute.removeValue(forKey: w.route)
        count("workers.lost")
        lostWorkers[w.id] = LostWorker(record: w, lostAt: Date(), reason: reason)
        pruneLostWorkers()
        logger.warning("worker lost", metadata: ["worker": "\(w.id)", "worker.role": "\(w.role.rawValue)", "reason": "\(reason)"])
        // Writes it had not acknowledged are not acknowledged as stored, even
        // where another replica committed them: the item is not on every
        // replica it was sent to. The producer resends it (`shard_unavailable`),
        // and the upsert is idempotent on the replicas that have it.
        for (wid, sw) in shardWrites where sw.worker == w.id {
            shardWrites.removeValue(forKey: wid)
            guard var p = publishes[sw.publish] else { continue }
            p.outstanding.remove(wid)
            for g in sw.indices where p.results[g]?.status != .rejected {
                p.results[g] = ItemResult(index: g, uniqueIdentifier: p.identifiers[g], status: .rejected,
                                          error: WireError(code: "shard_unavailable", message: "replica \(w.id) of shard \(sw.shard) was lost before committing; resend"))
            }
            publishes[sw.publish] = p
            finishPublishIfDone(sw.publish)
        }
        for (did, var d) in deletes {
            for (mid, entry) in d.outstanding where entry.worker == w.id {
                d.outstanding.removeValue(forKey: mid)
                deleteOfRequest.removeValue(forKey: mid)
                if d.deletedByShard[entry.shard] == nil { d.failed.append(ShardFailure(shard: entry.shard, reason: "indexer lost")) }
            }
            deletes[did] = d
            finishDeleteIfDone(did)
        }
        for (kid, var k) in declares {
            for (mid, wid) in k.outstanding where wid == w.id {
                k.outstanding.removeValue(forKey: mid)
                declareOfRequest.removeValue(forKey: mid)
                k.error = WireError(code: "shard_unavailable", message: "indexer \(w.id) was lost before declaring; declare again")
            }
            declares[kid] = k
            finishDeclareIfDone(kid)
        }
        searchesLost(worker: w.id)
        // Queries: retry a shard elsewhere if nothing of it reached the client yet.
        for (key, rq) in queries {
            for (shard, wid) in rq.outstanding where wid == w.id {
                var q = rq
                q.outstanding.removeValue(forKey: shard)
                // Nothing of the shard reached the client yet: start it over elsewhere.
                if (q.delivered[shard] ?? 0) == 0 {
                    q.merger?.reset(shard: shard)
                    queries[key] = q
                    dispatch(key, shard: shard)
                } else {
                    q.failed.append(ShardFailure(shard: shard, reason: "query worker \(w.id) was lost mid-stream"))
                    q.merger?.finish(shard: shard)
                    queries[key] = q
                }
                releaseMerged(key)
                finishQueryIfDone(key)
            }
        }
    }
}

extension Duration {
    var milliseconds: Double {
        let c = components
        return Double(c.seconds) * 1000 + Double(c.attoseconds) / 1e15
    }
}
