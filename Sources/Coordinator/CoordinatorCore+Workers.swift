import Foundation
import Items
import Logging
import Planner
import QueryPlan
import WireProtocol

/// Worker messages: registration, heartbeats, acknowledgements and results, and losing a worker.
extension CoordinatorCore {
    // MARK: - Worker messages

    func handleWorker(route: [Data], payload: Data) {
        // The one message of every query's path, read without decoding its
        // items (RawShardBatch); anything else, or a batch that does not
        // read so, takes the ordinary decode below.
        if let raw = RawShardBatch.read(payload, maxBytes: configuration.maxFrameBytes),
           let wid = workerByRoute[route], workers[wid] != nil {
            workers[wid]?.lastSeen = .now
            shardBatch(key: raw.id, from: wid, raw)
            return
        }
        let envelope: Envelope
        do { envelope = try Envelope.decode(payload, maxBytes: configuration.maxFrameBytes) } catch {
            logger.notice("rejected a worker frame", metadata: ["error": "\(error)"])
            sendError(.worker(route), error.id ?? "", error.wire)
            return
        }
        handleWorker(route: route, envelope: envelope)
    }

    func handleWorker(route: [Data], envelope: Envelope) {
        if case .register(let r) = envelope.body {
            register(route: route, id: envelope.id, r)
            return
        }
        // The record's `lastSeen` set in place: copied out and stored back,
        // every field was retained and released at every message.
        guard let wid = workerByRoute[route], workers[wid] != nil else {
            // A worker we have forgotten (we restarted, or declared it dead): ask it to register again.
            sendError(.worker(route), envelope.id, WireError(code: "unregistered", message: "register before sending \(envelope.type.rawValue)"))
            return
        }
        workers[wid]?.lastSeen = .now
        if copyReply(id: envelope.id, from: wid, envelope.body) { return }
        if sequencedReply(id: envelope.id, from: wid, envelope.body) { return }
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
        guard admitRegistration(route: route, id: id, r) else { return }
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
        // The same id from a new process (restarted at once, before it was
        // missed): what was in flight to the old one will not be answered.
        else if let old = workers[r.worker], let pid = r.pid, let was = old.pid, pid != was { forget(old.id, reason: "restarted (pid \(was) → \(pid))") }
        workers[r.worker] = WorkerRecord(id: r.worker, role: r.role, shards: r.shards, route: route, lastSeen: .now,
                                         host: r.host, pid: r.pid, registeredAt: Date())
        workersChanged()
        workerByRoute[route] = r.worker
        lostWorkers.removeValue(forKey: r.worker)
        logger.info("worker registered", metadata: ["worker": "\(r.worker)", "worker.role": "\(r.role.rawValue)",
                                                    "shards": "\(r.shards.map(String.init).joined(separator: ","))"])
        send(.worker(route), id, .registered(Body.Registered(shardCount: configuration.shards, heartbeatMs: configuration.heartbeatMs)))
        replicaRegistered(r)
    }

    /// Declares silent workers dead, and routes their work elsewhere.
    func sweep() {
        let limit = Duration.milliseconds(configuration.livenessMs)
        let now = ContinuousClock.now
        for w in workers.values where w.lastSeen.duration(to: now) > limit && w.route != LocalQueryWorker.route {
            forget(w.id, reason: "no heartbeat for \(configuration.livenessMs) ms")
        }
        repairReplicas()
        rates.sample(counters)
    }

    func workerUnreachable(route: [Data]) {
        guard let wid = workerByRoute[route] else { return }
        forget(wid, reason: "its connection is gone")
    }

    func forget(_ workerID: String, reason: String) {
        guard let w = workers.removeValue(forKey: workerID) else { return }
        workersChanged()
        workerByRoute.removeValue(forKey: w.route)
        replicaLost(w.id)
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
                flushHeldBatch(key)
            }
        }
    }
}
