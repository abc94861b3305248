import Foundation
import Items
import LimelightConcurrency
import Logging
import QueryPlan
import ShardStore
import WireProtocol

/// Runs shards' parts of queries and searches on threads of its own: what a
/// query worker does with the `shard_query`, `shard_search` and `cancel`
/// messages it is sent, whoever carries them. `limelight-query` carries them
/// over its ``WorkerLink``; a coordinator with local shards
/// (`limelight-coordinator --local-data`) hands them over in its own process.
///
/// Each query runs on one of the runner's own threads, never on Swift's
/// cooperative pool nor GCD's.
package final class ShardQueryRunner: Sendable {
    package let workerID: String
    package let shards: [Int]
    let maxQueued: Int
    let logger: Logger
    let pool: ConnectionPool
    let running = RunningQueries()
    let threads: WorkThreads
    let tally = WorkerTally()
    /// Sends an answer from one of the runner's threads (blocking is fine there).
    let reply: @Sendable (String, Body) -> Void
    /// Sends an answer from ``take(_:)``'s caller's thread, which must not block nor re-enter the caller.
    let replyNow: @Sendable (String, Body) -> Void
    /// Offers a search to the thread that took it (``take(_:)``'s caller), to
    /// be run there once that thread has handled what it read: true when
    /// taken. The offer is called back with whether to run it there or hand
    /// it to the runner's threads after all (``AsyncSocket/deferUntilRead(_:)``:
    /// one request's last shard runs there, the others and those of requests
    /// that came together go to the threads). Asked only while every one of
    /// the runner's threads is idle.
    ///
    /// Why: a coordinator's local worker (``take(_:)`` on the client socket's
    /// thread) would hand every search to one of its threads and the answer
    /// back to the socket's: two thread wake-ups in a request that takes a
    /// few hundred microseconds in all (running it in place cuts the
    /// coordinator's CPU per search by about a quarter). A query worker
    /// process does the same on its socket's thread. The cost: a request that arrives while such a search runs is read after
    /// it (at most one search's time, and only while searches are quick:
    /// ``SearchPace``); requests that arrive together still run in parallel
    /// on the runner's threads.
    let inline: (@Sendable (@escaping @Sendable (_ here: Bool) -> Void) -> Bool)?
    /// How long each shard's searches have been taking: a search runs on the
    /// thread that took it only once its shard's are known to be short (see
    /// ``SearchPace``).
    let pace = SearchPace()

    /// `data`: the folder of the shard files, opened read-only (SQLite's WAL
    /// lets readers run while the indexer writes). `concurrency`: shard
    /// queries run at once; `maxQueued`: those that may wait for a thread,
    /// past which one is answered `busy`.
    package init(
        data: String, shards: [Int], workerID: String, concurrency: Int, maxQueued: Int, logger: Logger,
        reply: @escaping @Sendable (String, Body) -> Void, replyNow: @escaping @Sendable (String, Body) -> Void,
        inline: (@Sendable (@escaping @Sendable (_ here: Bool) -> Void) -> Bool)? = nil
    ) {
        self.workerID = workerID
        self.inline = inline
        self.shards = shards
        self.maxQueued = maxQueued
        self.logger = logger
        self.reply = reply
        self.replyNow = replyNow
        pool = ConnectionPool(data: data, logger: logger)
        threads = WorkThreads(name: "limelight.query", count: concurrency)
    }

    /// Lets the threads end once the queued work is done.
    package func stop() { threads.stop() }

    /// Takes a shard query, a shard search or a cancel without waiting: runs
    /// on the socket's thread (``WorkerLink/handleInline(_:)``), so it only
    /// decodes the plan and queues the work. False for any other message.
    package func take(_ envelope: Envelope) -> Bool {
        switch envelope.body {
        case .shardQuery(let q):
            let key = envelope.id
            guard
                let (query, flag) = accept(
                    key, shard: q.shard, deadlineMs: q.deadlineMs,
                    { () throws(PlanDecodingError) in
                        try Query(json: q.plan)
                    })
            else { return true }
            let routed = q.keepSlots.map(SlotFilter.init)
            if !threads.trySubmit(limit: maxQueued, { self.execute(key: key, shard: q.shard, query: query, routed: routed, flag: flag) }) {
                refuseBusy(key, shard: q.shard)
            }
            return true
        case .shardSearch(let q):
            let key = envelope.id
            guard
                let (plan, flag) = accept(
                    key, shard: q.shard, deadlineMs: q.deadlineMs,
                    { () throws(PlanDecodingError) in
                        if let typed = q.typedPlan { return typed }
                        return try SearchPlan(json: q.plan)
                    })
            else { return true }
            let extras = SearchExtras(suggest: q.suggest, perDomain: q.perDomain)
            let routed = q.keepSlots.map(SlotFilter.init)
            let job: @Sendable () -> Void = {
                self.executeSearch(key: key, shard: q.shard, plan: plan, extras: extras, routed: routed, flag: flag)
            }
            let queue: @Sendable () -> Void = {
                if !self.threads.trySubmit(limit: self.maxQueued, job) { self.refuseBusy(key, shard: q.shard) }
            }
            if let inline, pace.allowsInline(shard: q.shard), threads.isIdle,
                inline({ here in here ? job() : queue() })
            {
                return true
            }
            queue()
            return true
        case .cancel(let c):
            running.cancel(c.query)
            return true
        default:
            return false
        }
    }

    /// Checks a shard's part of a query or search before it is run: the shard
    /// must be this worker's and the plan must decode; otherwise the shard is
    /// answered as failed. Registers the cancel flag of an accepted one.
    func accept<Plan>(
        _ key: String, shard: Int, deadlineMs: Int?,
        _ decode: () throws(PlanDecodingError) -> Plan
    ) -> (Plan, CancelFlag)? {
        guard shards.contains(shard) else {
            replyNow(
                key,
                .shardDone(
                    Body.ShardDone(
                        shard: shard, count: 0,
                        error: WireError(code: "bad_shard", message: "this worker does not serve shard \(shard)"))))
            return nil
        }
        let plan: Plan
        do throws(PlanDecodingError) { plan = try decode() } catch {
            replyNow(key, .shardDone(Body.ShardDone(shard: shard, count: 0, error: WireError(code: "bad_plan", message: error.description))))
            return nil
        }
        let flag = CancelFlag(deadline: deadlineMs.map { Date().addingTimeInterval(Double($0) / 1000) })
        running.add(key, shard: shard, flag)
        return (plan, flag)
    }

    /// Runs on one of the worker's own threads: blocking is fine here.
    /// `routed`: the shard's slots under the map the query was routed by,
    /// while a split's switch is under way (``ShardStore/routedSlots``).
    func execute(key: String, shard: Int, query: Query, routed: SlotFilter? = nil, flag: CancelFlag) {
        defer { running.remove(key, shard: shard) }
        var seq = 0
        // Each batch waits for the next (or the end) before it is sent, so the
        // last one can carry the shard's count and stand for its `shard_done`:
        // a one-batch query is one message back instead of two.
        var held: Body.ShardBatch?
        do {
            let lent = try pool.checkout(shard)
            defer { pool.checkin(shard, lent) }
            let store = lent.value
            store.routedSlots = routed
            defer { store.routedSlots = nil }
            // An unsorted query's items go to the client as the store wrote
            // them (RawJSON): the coordinator forwards them without reading
            // them, so they are never built as trees. A sorted query's are
            // merged, which needs them decoded there anyway.
            let raw = query.sort.isEmpty
            let count = try store.run(query, rawItems: raw, isCancelled: { flag.isCancelled }) { results in
                seq += 1
                if let h = held { reply(key, .shardBatch(h)) }
                if raw {
                    let hits = results.map { r in
                        RawShardBatch.RawHit(item: r.rawItem.map { RawJSON(trusted: ArraySlice($0)) } ?? RawJSON(r.item), score: r.score)
                    }
                    held = Body.ShardBatch(shard: shard, seq: seq, rawHits: hits)
                } else {
                    let hits = results.map { Hit(item: $0.item, sort: $0.sortValues.isEmpty ? nil : $0.sortValues, score: $0.score) }
                    held = Body.ShardBatch(shard: shard, seq: seq, hits: hits)
                }
            }
            tally.finished()
            if flag.isCancelled {
                if let h = held { reply(key, .shardBatch(h)) }
                reply(
                    key,
                    .shardDone(
                        Body.ShardDone(
                            shard: shard, count: count,
                            error: WireError(code: "cancelled", message: "cancelled or past its deadline"))))
            } else if var last = held {
                last.doneCount = count
                reply(key, .shardBatch(last))
            } else {
                reply(key, .shardDone(Body.ShardDone(shard: shard, count: count)))
            }
        } catch {
            if let h = held { reply(key, .shardBatch(h)) }
            tally.finished(failed: !flag.isCancelled)
            logger.notice("query failed on a shard", metadata: ["query.id": "\(key)", "shard": "\(shard)", "error": "\(error)"])
            let message = flag.isCancelled ? "cancelled or past its deadline" : "\(error)"
            reply(
                key,
                .shardDone(
                    Body.ShardDone(shard: shard, count: 0, error: WireError(code: flag.isCancelled ? "cancelled" : "query_failed", message: message)))
            )
        }
    }

    /// Runs a shard's part of a parameter search on one of the worker's own
    /// threads, and sends its one answer.
    func executeSearch(
        key: String, shard: Int, plan: SearchPlan, extras: SearchExtras = SearchExtras(), routed: SlotFilter? = nil, flag: CancelFlag
    ) {
        let start = ContinuousClock.now
        defer {
            running.remove(key, shard: shard)
            pace.record(start.duration(to: .now), shard: shard)
        }
        do {
            let lent = try pool.checkout(shard)
            defer { pool.checkin(shard, lent) }
            let store = lent.value
            store.routedSlots = routed
            defer { store.routedSlots = nil }
            var answer = try extras.answer(store, plan: plan, isCancelled: { flag.isCancelled })
            answer.shard = shard
            reply(key, .shardSearchResult(answer))
        } catch {
            logger.notice("search failed on a shard", metadata: ["query.id": "\(key)", "shard": "\(shard)", "error": "\(error)"])
            let message = flag.isCancelled ? "cancelled or past its deadline" : "\(error)"
            reply(
                key,
                .shardDone(
                    Body.ShardDone(shard: shard, count: 0, error: WireError(code: flag.isCancelled ? "cancelled" : "search_failed", message: message))
                ))
        }
    }

    /// Answers a shard query that found the job queue full: `busy`, at once,
    /// so the coordinator can try another replica of the shard or name the
    /// shard in the completion, instead of the query waiting behind a queue
    /// that grows without bound.
    func refuseBusy(_ key: String, shard: Int) {
        running.remove(key, shard: shard)
        tally.finished(failed: true)
        logger.notice(
            "query refused: the job queue is full",
            metadata: [
                "query.id": "\(key)", "shard": "\(shard)",
                "queue.limit": "\(maxQueued)",
            ])
        replyNow(
            key,
            .shardDone(
                Body.ShardDone(
                    shard: shard, count: 0,
                    error: WireError(
                        code: "busy", message: "query worker \(workerID) is overloaded: \(maxQueued) shard queries already wait; try again later"))))
    }
}

extension SlotFilter {
    /// The slots a request carries (`keepSlots`).
    init(_ keep: Body.KeepSlots) { self.init(slots: keep.slots, shards: keep.shards, shard: keep.shard) }
}
