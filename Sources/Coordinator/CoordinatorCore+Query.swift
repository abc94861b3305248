import Foundation
import Items
import Logging
import Planner
import QueryPlan
import Tenancy
import WireProtocol

/// Queries: scatter to a query worker per shard, forward or merge their batches, complete, cancel, deadlines.
extension CoordinatorCore {
    // MARK: Queries

    /// `scope`: the app whose items the query may see (``TenantScope/restrict(_:)-(Query)``).
    func startQuery(client: [Data], id: String, _ request: Body.QueryRequest, scope: TenantScope = .unscoped) {
        count(.queries)
        // A deadline of 0 or less is a mistake, not a request for no deadline:
        // a client that wants the server's default leaves the field out.
        if let d = request.deadlineMs, d <= 0 {
            sendError(
                .client(client), id,
                WireError(
                    code: "invalid_parameter",
                    message: "deadlineMs must be a positive number of milliseconds, found \(d)", field: "deadlineMs"))
            return
        }
        let query: Query
        do { query = scope.restrict(try planner.plan(request)) } catch {
            sendError(.client(client), id, error)
            return
        }
        let key = makeID("q")
        let deadline = request.deadlineMs ?? configuration.defaultDeadlineMs
        let routing = switchRouting
        let shards = planner.shards(for: query, shardCount: routing?.shards ?? shardCount)
        var rq = RunningQuery(
            key: key, client: client, requestID: id, query: query, planJSON: query.json,
            deadlineMs: deadline, started: .now)
        if !query.sort.isEmpty { rq.merger = ResultMerger(order: SortOrder(keys: query.sort), shards: shards) }
        rq.cursorFingerprint = QueryCursor.fingerprint(of: request)
        rq.scope = scope
        rq.routing = routing
        rq.completionInBatch = request.completionInBatch == true
        inFlight.begin(rq)
        for shard in shards { dispatch(key, shard: shard) }
        if deadline > 0, queries[key] != nil {
            let timer = atDeadline(deadline) { $0.deadlineReached(key) }
            inFlight.update(key) { $0.deadlineTimer = timer }
        }
        finishQueryIfDone(key)
    }

    /// Calls `reached` as the core after `milliseconds`, on the deadline
    /// thread (``Deadlines``), unless the token is cancelled first.
    func atDeadline(_ milliseconds: Int, _ reached: @escaping @Sendable (isolated CoordinatorCore) -> Void) -> Deadlines.Token {
        deadlines.schedule(afterMs: milliseconds) { [weak self] in
            guard let self else { return }
            self.executor.run { self.assumeIsolated { reached($0) } }
        }
    }

    /// The next live query worker of a shard not tried yet, round robin.
    /// Never a replica behind the shard's acknowledged changes: a fresh one
    /// (see ``ReplicationState``), else one that lacks only changes not yet
    /// acknowledged (``ReplicationState/lacksOnlyUnacknowledged(_:shard:)``).
    func nextQueryWorker(shard: Int, tried: Set<String>) -> WorkerRecord? {
        let replication = replication, inSync = keepsInSync ? inSync : nil
        let fresh = registry.nextQueryWorker(shard: shard, tried: tried) {
            Self.isFresh($0, shard: shard, replication: replication, inSync: inSync)
        }
        if let fresh { return fresh }
        return registry.nextQueryWorker(shard: shard, tried: tried) { replication.lacksOnlyUnacknowledged($0, shard: shard) }
    }

    func nextQueryWorkerExists(shard: Int, tried: Set<String>) -> Bool {
        registry.hasQueryWorker(shard: shard, tried: tried) { isFresh($0, shard: shard) || replication.lacksOnlyUnacknowledged($0, shard: shard) }
    }

    /// Picks the query worker for a shard's part of a query or search: a
    /// live, fresh one not yet tried for it, then assigned the shard. With
    /// none left the shard's failure is recorded, and nil returned.
    func assignQueryWorker(shard: Int, _ scatter: inout ShardScatter) -> WorkerRecord? {
        guard let w = nextQueryWorker(shard: shard, tried: scatter.tried(shard)) else {
            scatter.unassignable(shard)
            return nil
        }
        scatter.assign(shard, to: w.id)
        return w
    }

    /// What is left of a deadline of `deadlineMs` (none when 0) since `started`, at least 1 ms.
    func remainingMs(_ deadlineMs: Int, since started: ContinuousClock.Instant) -> Int? {
        deadlineMs > 0 ? max(1, deadlineMs - Int(started.duration(to: .now).milliseconds)) : nil
    }

    /// Sends a shard's part of a query to a live query worker not yet tried for it.
    func dispatch(_ key: String, shard: Int) {
        guard var rq = queries[key] else { return }
        let w = assignQueryWorker(shard: shard, &rq.scatter)
        if w == nil { rq.merger?.finish(shard: shard) }
        inFlight.store(rq)
        guard let w else { return }
        send(
            .worker(w.route), key,
            .shardQuery(
                Body.ShardQuery(
                    shard: shard, plan: rq.planJSON,
                    deadlineMs: remainingMs(rq.deadlineMs, since: rq.started), keepSlots: rq.routing?.keep(shard))))
    }

    func shardBatch(key: String, from worker: String, _ b: Body.ShardBatch) {
        if let raw = b.rawHits {
            // The local query worker's (LocalQueryWorker): handed over as the store wrote it.
            shardBatch(key: key, from: worker, RawShardBatch(id: key, shard: b.shard, seq: b.seq, hits: raw, doneCount: b.doneCount))
            return
        }
        shardBatch(key: key, from: worker, shard: b.shard, doneCount: b.doneCount, hits: .decoded(b.hits))
    }

    /// A batch read without decoding its items (``RawShardBatch``): an
    /// unsorted query of no app forwards them as they came; a sorted one
    /// (the merge) or an app's (its identifiers are unqualified) decodes them.
    func shardBatch(key: String, from worker: String, _ b: RawShardBatch) {
        guard let rq = queries[key], rq.scatter.isRunning(b.shard, on: worker) else { return }
        if rq.merger == nil, rq.scope.app == nil {
            shardBatch(key: key, from: worker, shard: b.shard, doneCount: b.doneCount, hits: .raw(b.hits.map(\.item)))
            return
        }
        do { shardBatch(key: key, from: worker, try b.decoded()) } catch {
            // Checked well-formed when read; kept as a failure of the shard, not a crash.
            shardDone(
                key: key, from: worker,
                Body.ShardDone(
                    shard: b.shard, count: 0,
                    error: WireError(code: "bad_batch", message: "an item of the shard's batch did not decode: \(error)")))
        }
    }

    func shardBatch(key: String, from worker: String, shard: Int, doneCount: Int?, hits: ShardHits) {
        guard var rq = queries[key], rq.scatter.isRunning(shard, on: worker) else { return }
        defer { flushHeldBatch(key) }
        switch hits {
        case .decoded(let hits) where rq.merger != nil:
            rq.merger!.add(shard: shard, hits: hits)
            inFlight.store(rq)
            releaseMerged(key)
        case .decoded(let hits):
            var items = hits.map(\.item)
            if let limit = rq.query.limit { items = Array(items.prefix(max(0, limit - rq.count))) }
            rq.scatter.delivered(items.count, of: shard)
            inFlight.store(rq)
            deliver(key, items)
        case .raw(var items):
            if let limit = rq.query.limit { items = Array(items.prefix(max(0, limit - rq.count))) }
            rq.scatter.delivered(items.count, of: shard)
            inFlight.store(rq)
            deliver(key, raw: items)
        }
        if let rq = queries[key], let limit = rq.query.limit, rq.count >= limit {
            // A last batch ended its shard: only the others need a cancel.
            if doneCount != nil { inFlight.update(key) { $0.scatter.ended(shard) } }
            stopShards(key, reason: nil)
            complete(key, cancelled: false)
            return
        }
        if let n = doneCount { shardDone(key: key, from: worker, Body.ShardDone(shard: shard, count: n)) }
    }

    func releaseMerged(_ key: String) {
        guard var rq = queries[key], rq.merger != nil else { return }
        let room = rq.query.limit.map { max(0, $0 - rq.count) } ?? .max
        let released = rq.merger!.drain(max: room)
        for r in released { rq.scatter.delivered(1, of: r.shard) }
        if let last = released.last { rq.lastSort = last.hit.sort }
        inFlight.store(rq)
        if !released.isEmpty { deliver(key, released.map(\.hit.item)) }
    }

    func deliver(_ key: String, _ items: [JSONValue]) {
        guard let rq = queries[key] else { return }
        let items = rq.scope.app == nil ? items : items.map { rq.scope.unqualify(item: $0) }
        deliver(key, count: items.count) { Body.ResultBatch(items: Array(items[$0]), seq: $1) }
    }

    /// Items of no app's query, as a query worker wrote them.
    func deliver(_ key: String, raw items: [RawJSON]) {
        deliver(key, count: items.count) { Body.ResultBatch(rawItems: Array(items[$0]), seq: $1) }
    }

    /// Sends `count` items in batches of the query's batch size; `batch`
    /// makes the one of a range of them with its sequence number.
    func deliver(_ key: String, count: Int, _ batch: (Range<Int>, Int) -> Body.ResultBatch) {
        guard var rq = queries[key], count > 0 else { return }
        var start = 0
        while start < count {
            let range = start..<min(count, start + rq.query.batchSize)
            start = range.upperBound
            rq.seq += 1
            rq.count += range.count
            if rq.completionInBatch {
                if let earlier = rq.held { send(.client(rq.client), rq.requestID, .resultBatch(earlier)) }
                rq.held = batch(range, rq.seq)
            } else {
                send(.client(rq.client), rq.requestID, .resultBatch(batch(range, rq.seq)))
            }
        }
        if inFlight.firstBatch(key) {
            record(&firstBatchLatenciesMs, rq.started.duration(to: .now).milliseconds)
            metrics.queryFirstBatch.record(duration: rq.started.duration(to: .now))
        }
        inFlight.store(rq)
    }

    /// Sends the batch a query held back for a completion that did not come
    /// in the same step (see ``RunningQuery/held``).
    func flushHeldBatch(_ key: String) {
        guard let rq = queries[key], let held = rq.held else { return }
        inFlight.update(key) { $0.held = nil }
        send(.client(rq.client), rq.requestID, .resultBatch(held))
    }

    func shardDone(key: String, from worker: String, _ d: Body.ShardDone) {
        guard var rq = queries[key], rq.scatter.isRunning(d.shard, on: worker) else { return }
        defer { flushHeldBatch(key) }
        // An overloaded worker ran nothing of the shard: another replica may have room.
        let outcome = rq.scatter.done(d.shard, by: worker, error: d.error) { nextQueryWorkerExists(shard: d.shard, tried: $0) }
        if outcome == .retry {
            count(.queriesBusyRetried)
            rq.merger?.reset(shard: d.shard)
            inFlight.store(rq)
            dispatch(key, shard: d.shard)
            releaseMerged(key)
            finishQueryIfDone(key)
            return
        }
        rq.merger?.finish(shard: d.shard)
        inFlight.store(rq)
        releaseMerged(key)
        finishQueryIfDone(key)
    }

    func finishQueryIfDone(_ key: String) {
        guard let rq = queries[key], rq.scatter.isDone else { return }
        releaseMerged(key)
        complete(key, cancelled: false)
    }

    func complete(_ key: String, cancelled: Bool) {
        guard let rq = inFlight.end(key) else { return }
        rq.deadlineTimer.map(deadlines.cancel)
        let elapsed = rq.started.duration(to: .now).milliseconds
        record(&queryLatenciesMs, elapsed)
        metrics.queryDuration.record(duration: rq.started.duration(to: .now))
        if !rq.scatter.failed.isEmpty { count(.queriesPartial) }
        let completion = rq.completion(cancelled: cancelled, elapsedMs: elapsed)
        if var last = rq.held {
            last.completion = completion
            send(.client(rq.client), rq.requestID, .resultBatch(last))
        } else {
            send(.client(rq.client), rq.requestID, .completion(completion))
        }
    }

    /// Tells the workers still running a query's shards to stop.
    func stopShards(_ key: String, reason: String?) {
        guard var rq = queries[key] else { return }
        for s in rq.scatter.stop(reason: reason) {
            if let w = workers[s.worker] { send(.worker(w.route), key, .cancel(Body.Cancel(query: key))) }
        }
        inFlight.store(rq)
    }

    func cancel(client: [Data], requestID: String) {
        guard let cancelled = inFlight.cancelled(client: client, requestID: requestID) else { return }
        guard case .query(let key) = cancelled else {
            if case .search(let key) = cancelled { cancelSearch(key) }
            return
        }
        count(.queriesCancelled)
        stopShards(key, reason: nil)
        complete(key, cancelled: true)
    }

    /// Stops every query of a client whose outbox overflowed.
    ///
    /// Its results are being dropped already, so the queries cannot be
    /// delivered whole; left running, their shards would keep the query
    /// workers streaming batches nobody reads, ahead of other clients'
    /// queries in the workers' queues (60,000 one-item batches of a stalled
    /// client held another client's query for its whole deadline). They end
    /// as cancelled, like a client's own cancel.
    func abandonQueries(of client: [Data]) {
        let keys = inFlight.queries(of: client)
        guard !keys.isEmpty else { return }
        for key in keys {
            count(.queriesAbandoned)
            stopShards(key, reason: nil)
            complete(key, cancelled: true)
        }
        logger.notice("stopped the queries of a client that does not read its results", metadata: ["queries": "\(keys.count)"])
    }

    func deadlineReached(_ key: String) {
        guard let rq = queries[key] else { return }
        count(.queriesTimedOut)
        stopShards(key, reason: "no answer within the deadline of \(rq.deadlineMs) ms")
        releaseMergedAfterStop(key)
        complete(key, cancelled: false)
    }

    func releaseMergedAfterStop(_ key: String) {
        guard var rq = queries[key], rq.merger != nil else { return }
        for s in rq.merger!.running { rq.merger!.finish(shard: s) }
        inFlight.store(rq)
        releaseMerged(key)
    }
}

/// A shard's batch of hits: decoded, or (an unsorted query's, from a query
/// worker's frame) as the worker wrote their items.
enum ShardHits {
    case decoded([Hit])
    case raw([RawJSON])
}
