import Foundation
import Items
import Logging
import WireProtocol

/// What the coordinator knows of each shard's replicas: how far each has
/// applied the shard's changes, and the recent changes a replica that was
/// away needs to catch up.
///
/// Every change of a shard (write, delete, entity operation) gets the next
/// number of the shard's sequence (see `ShardSequence`), and each indexer
/// applies them strictly in order, recording the last one in the shard file.
/// A replica is *fresh* while it has applied every change some replica has
/// committed; queries go only to query workers of fresh replicas.
struct ReplicationState: Sendable {
    struct Entry: Sendable {
        var sequence: Int
        var body: Body
        var weight: Int
    }
    struct InFlight: Sendable {
        var worker: String
        var shard: Int
        var sequence: Int
        var catchUp: Bool
    }
    /// Per shard: the last sequence number given out.
    var issued: [Int: Int] = [:]
    /// Per shard: the highest sequence number a replica has committed.
    var committed: [Int: Int] = [:]
    /// Per shard: recent changes, oldest first, and their weight in items.
    var log: [Int: [Entry]] = [:]
    var logWeight: [Int: Int] = [:]
    /// Per shard: the first sequence number the log can send (`issued + 1`
    /// when it holds nothing).
    var logStart: [Int: Int] = [:]
    /// Per replica and shard: the last sequence number it has applied.
    var applied: [String: [Int: Int]] = [:]
    /// Replicas further behind than the log reaches, per shard: no writes,
    /// no queries, until they are copied.
    var detached: [String: Set<Int>] = [:]
    /// Worker → the replica it writes or reads. Query workers that name none
    /// are not tracked (always taken as fresh).
    var replicaOf: [String: String] = [:]
    /// Numbered messages awaiting their answer, by message id.
    var inFlight: [String: InFlight] = [:]
    /// Declarations seen: replayed (they are idempotent) before a catch-up.
    var declarations: [Body.Declare] = []
    /// Catch-ups under way: worker → shard → the sequence number it ends at.
    var catchingUp: [String: [Int: Int]] = [:]
    /// Per shard: the number this coordinator started numbering from (the
    /// shard's sequence when it numbered its first change of it). Numbers
    /// above it are this coordinator's.
    var base: [Int: Int] = [:]
    /// Per shard: the replicas that have this coordinator's numbers above
    /// `base` or none at all, so whose numbers mean the same changes as here.
    var lineage: [Int: Set<String>] = [:]
    /// Whole-shard copies to detached replicas (see `ShardCopies`).
    var copies = ShardCopies()

    func start(_ shard: Int) -> Int { logStart[shard] ?? (issued[shard] ?? 0) + 1 }
}

extension CoordinatorCore {
    // MARK: Sequence numbers

    /// Gives the next sequence number of `shard` to `body`, keeps the change
    /// for catch-ups (trimming the log to `catchUpLogItems`), and returns the
    /// numbered body to send to every replica.
    func sequenced(shard: Int, _ body: Body) -> (sequence: Int, body: Body) {
        let n = (replication.issued[shard] ?? 0) + 1
        replication.issued[shard] = n
        if replication.base[shard] == nil { replication.base[shard] = n - 1 }
        var numbered = body
        switch body {
        case .write(var w): w.sequence = n; numbered = .write(w)
        case .delete(var d): d.sequence = n; numbered = .delete(d)
        case .entityDelete(var d): d.sequence = n; numbered = .entityDelete(d)
        case .entityAssociate(var a): a.sequence = n; numbered = .entityAssociate(a)
        default: break
        }
        var weight = 1
        if case .write(let w) = body { weight = max(1, w.items.count + w.evict.count) }
        if replication.log[shard] == nil { replication.logStart[shard] = n }
        replication.log[shard, default: []].append(ReplicationState.Entry(sequence: n, body: numbered, weight: weight))
        replication.logWeight[shard, default: 0] += weight
        trimLog(shard)
        return (n, numbered)
    }

    func trimLog(_ shard: Int) {
        guard var entries = replication.log[shard], var weight = replication.logWeight[shard],
              weight > configuration.catchUpLogItems else { return }
        var drop = 0
        while drop < entries.count - 1, weight > configuration.catchUpLogItems {
            weight -= entries[drop].weight
            drop += 1
        }
        entries.removeFirst(drop)
        replication.log[shard] = entries
        replication.logWeight[shard] = weight
        replication.logStart[shard] = entries.first?.sequence
    }

    /// Notes that message `id` to `worker` carries change `sequence` of `shard`.
    func track(_ id: String, worker: String, shard: Int, sequence: Int, catchUp: Bool = false) {
        replication.inFlight[id] = ReplicationState.InFlight(worker: worker, shard: shard, sequence: sequence, catchUp: catchUp)
    }

    /// The live indexers of a shard that take its writes: every replica but
    /// the detached ones (too far behind, or diverged, until copied); none
    /// while a just-started coordinator waits for a replica's indexer
    /// (`awaitedReplicas`).
    func writeReplicas(shard: Int) -> [WorkerRecord] {
        if !awaitedReplicas(shard: shard).isEmpty { return [] }
        return liveWorkers(.indexer, shard: shard).filter { w in
            !(replication.detached[replicaName(w)]?.contains(shard) ?? false)
        }
    }

    /// The replicas whose indexer a coordinator that has numbered no change
    /// of `shard` yet waits for (see `Configuration.replicaWaitMs`), while
    /// the shard has history (some indexer reports a number) and the wait has
    /// not run out: those known from a live query worker of the shard with no
    /// registered indexer of it, and, while fewer replicas than
    /// `Configuration.replicas` have reported the shard, the unnamed rest
    /// (a replica whose query workers have not registered again either is
    /// known to no one after a restart). Empty once the coordinator numbered
    /// a change.
    func awaitedReplicas(shard: Int) -> [String] {
        guard replication.base[shard] == nil, (replication.issued[shard] ?? 0) > 0,
              Date().timeIntervalSince(startedAt) * 1000 < Double(configuration.replicaWaitMs) else { return [] }
        let reported = Set(liveWorkers(.indexer, shard: shard).map(replicaName).filter { replication.applied[$0]?[shard] != nil })
        let known = Set(liveWorkers(.query, shard: shard).compactMap { replication.replicaOf[$0.id] })
        var awaited = known.subtracting(reported).sorted()
        let unnamed = configuration.replicas - reported.count - awaited.count
        if unnamed > 0 { awaited.append("\(unnamed) of \(configuration.replicas) not registered yet") }
        return awaited
    }

    func replicaName(_ w: WorkerRecord) -> String { replication.replicaOf[w.id] ?? w.id }

    /// Whether a query worker reads a replica that has every change of the
    /// shard that any replica committed. A query worker whose replica has no
    /// indexer the coordinator has heard of is taken as fresh: nothing says otherwise.
    func isFresh(_ w: WorkerRecord, shard: Int) -> Bool { isFresh(w.id, shard: shard) }

    func isFresh(_ id: String, shard: Int) -> Bool { Self.isFresh(id, shard: shard, replication) }

    static func isFresh(_ id: String, shard: Int, _ replication: ReplicationState) -> Bool {
        guard let name = replication.replicaOf[id] else { return true }
        if replication.detached[name]?.contains(shard) ?? false { return false }
        guard let have = replication.applied[name]?[shard] else { return true }
        return have >= (replication.committed[shard] ?? 0)
    }

    // MARK: Registration and answers

    /// Records a worker's replica and, for an indexer, how far each of its
    /// shards is; sends it the changes it missed. Call after answering
    /// `registered`, so the catch-up follows it on the same connection, and
    /// before any new change reaches the worker, so changes arrive in order.
    func replicaRegistered(_ r: Body.Register) {
        replication.catchingUp.removeValue(forKey: r.worker)
        copiesLost(r.worker)
        // Answers still due from before are not needed: the registration
        // says how far the replica is, and the catch-up starts from there.
        for (id, f) in replication.inFlight where f.worker == r.worker { replication.inFlight.removeValue(forKey: id) }
        guard r.role == .indexer else {
            if let name = r.replica { replication.replicaOf[r.worker] = name } else { replication.replicaOf.removeValue(forKey: r.worker) }
            return
        }
        let name = r.replica ?? r.worker
        replication.replicaOf[r.worker] = name
        // A worker that reports no sequence numbers predates them: it is
        // taken as it is, and tracked from its answers on.
        guard let reported = r.sequences else { return }
        var declared = false
        for shard in r.shards {
            let have = reported.first { $0.shard == shard }?.sequence ?? 0
            let issued = replication.issued[shard] ?? 0
            replication.applied[name, default: [:]][shard] = have
            replication.detached[name]?.remove(shard)
            if let base = replication.base[shard], have > base, !(replication.lineage[shard]?.contains(name) ?? false) {
                // This coordinator (restarted) has numbered changes from a
                // lower number than this replica reports, and the replica got
                // none of them: the same numbers name different changes here
                // and there. It is left out until it is copied.
                replication.detached[name, default: []].insert(shard)
                count(.catchUpDetached)
                logger.warning("replica ahead of the numbers given since a restart; left out of writes and queries", metadata: [
                    "replica": "\(name)", "worker": "\(r.worker)", "shard": "\(shard)",
                    "replica.sequence": "\(have)", "shard.sequence": "\(issued)",
                ])
                startCopy(to: r.worker, shard: shard)
                continue
            }
            replication.lineage[shard, default: []].insert(name)
            if have > issued {
                // The coordinator knows less than the replica (it restarted
                // and has numbered nothing of the shard yet): continue the
                // sequence from the replica's number.
                replication.issued[shard] = have
                replication.committed[shard] = max(replication.committed[shard] ?? 0, have)
                replication.log.removeValue(forKey: shard)
                replication.logWeight.removeValue(forKey: shard)
                replication.logStart[shard] = have + 1
                continue
            }
            guard have < issued else { continue }
            guard have + 1 >= replication.start(shard) else {
                replication.detached[name, default: []].insert(shard)
                count(.catchUpDetached)
                logger.warning("replica too far behind to catch up; left out of writes and queries", metadata: [
                    "replica": "\(name)", "worker": "\(r.worker)", "shard": "\(shard)",
                    "replica.sequence": "\(have)", "shard.sequence": "\(issued)", "log.start": "\(replication.start(shard))",
                ])
                startCopy(to: r.worker, shard: shard)
                continue
            }
            if !declared, let w = workers[r.worker] {
                declared = true
                for d in replication.declarations { send(.worker(w.route), makeID("c"), .declare(d)) }
            }
            catchUp(worker: r.worker, shard: shard, after: have)
        }
    }

    /// Sends `worker` the logged changes of `shard` after sequence number `after`, in order.
    func catchUp(worker: String, shard: Int, after: Int) {
        guard let w = workers[worker] else { return }
        let entries = (replication.log[shard] ?? []).filter { $0.sequence > after }
        guard let last = entries.last?.sequence else { return }
        replication.catchingUp[worker, default: [:]][shard] = last
        count(.catchUpStarted)
        count(.catchUpMessages, by: entries.count)
        logger.info("catching up a replica", metadata: ["worker": "\(worker)", "replica": "\(replicaName(w))", "shard": "\(shard)",
                                                        "replica.sequence": "\(after)", "shard.sequence": "\(last)", "changes": "\(entries.count)"])
        for e in entries {
            let id = makeID("c")
            track(id, worker: worker, shard: shard, sequence: e.sequence, catchUp: true)
            send(.worker(w.route), id, e.body)
        }
    }

    /// Follows the answer to a numbered message: a commit moves the replica's
    /// sequence on; `out_of_sequence` (it missed changes while it stayed
    /// connected, e.g. a message lost on the way) starts a catch-up. Returns
    /// true when the message was a catch-up's, which nothing else awaits.
    func sequencedReply(id: String, from worker: String, _ body: Body) -> Bool {
        guard let f = replication.inFlight.removeValue(forKey: id) else { return id.hasPrefix("c") && body.isDeclareAck }
        let name = replication.replicaOf[worker] ?? worker
        switch body {
        case .writeAck, .deleteAck, .entityAck:
            replication.applied[name, default: [:]][f.shard] = max(replication.applied[name]?[f.shard] ?? 0, f.sequence)
            replication.committed[f.shard] = max(replication.committed[f.shard] ?? 0, f.sequence)
            if let end = replication.catchingUp[worker]?[f.shard], f.sequence >= end {
                replication.catchingUp[worker]?.removeValue(forKey: f.shard)
                logger.info("replica caught up", metadata: ["worker": "\(worker)", "replica": "\(name)", "shard": "\(f.shard)",
                                                            "replica.sequence": "\(f.sequence)"])
            }
        case .error(let e) where e.code == "out_of_sequence":
            if replication.catchingUp[worker]?[f.shard] == nil {
                let have = replication.applied[name]?[f.shard] ?? 0
                if have + 1 >= replication.start(f.shard) {
                    catchUp(worker: worker, shard: f.shard, after: have)
                } else {
                    replication.detached[name, default: []].insert(f.shard)
                    count(.catchUpDetached)
                    startCopy(to: worker, shard: f.shard)
                }
            }
        case .error(let e):
            // The replica did not apply it; its later changes will be refused
            // as out of sequence, which starts a new catch-up.
            replication.catchingUp[worker]?.removeValue(forKey: f.shard)
            if f.catchUp {
                logger.warning("a catch-up change failed", metadata: ["worker": "\(worker)", "shard": "\(f.shard)",
                                                                      "sequence": "\(f.sequence)", "error": "\(e.message)"])
            }
        default: break
        }
        return f.catchUp
    }

    /// A lost worker's numbered messages will not be answered.
    func replicaLost(_ workerID: String) {
        copiesLost(workerID)
        for (id, f) in replication.inFlight where f.worker == workerID { replication.inFlight.removeValue(forKey: id) }
        replication.catchingUp.removeValue(forKey: workerID)
    }

    // MARK: Stats

    /// The `replication` object of the stats: per shard its sequence, what
    /// the log holds, and each replica's position.
    func replicationJSON() -> JSONValue {
        func int(_ i: Int) -> JSONValue { .number(Double(i)) }
        let indexerOf = Dictionary(workers.values.filter { $0.role == .indexer }.map { (replicaName($0), $0.id) }, uniquingKeysWith: { a, _ in a })
        let shards: [JSONValue] = (0..<configuration.shards).map { s in
            let committed = replication.committed[s] ?? 0
            let replicas: [JSONValue] = replication.applied.keys.sorted().compactMap { name in
                guard let have = replication.applied[name]?[s] else { return nil }
                let detached = replication.detached[name]?.contains(s) ?? false
                var o: [String: JSONValue] = ["replica": .string(name), "sequence": int(have),
                                              "fresh": .bool(!detached && have >= committed), "detached": .bool(detached),
                                              "live": .bool(indexerOf[name] != nil)]
                if let w = indexerOf[name], let end = replication.catchingUp[w]?[s] { o["catchingUpTo"] = int(end) }
                if let c = replication.copies.running.values.first(where: { $0.replica == name && $0.shard == s }) {
                    o["copying"] = .object(["copy": .string(c.id), "from": .string(c.source), "received": int(c.received), "size": int(c.size)])
                }
                return .object(o)
            }
            return .object(["shard": int(s), "issued": int(replication.issued[s] ?? 0), "committed": int(committed),
                            "logStart": int(replication.start(s)), "logEntries": int(replication.log[s]?.count ?? 0),
                            "replicas": .array(replicas)])
        }
        return .object(["shards": .array(shards)])
    }
}

extension Body {
    var isDeclareAck: Bool { if case .declareAck = self { true } else { false } }
}
