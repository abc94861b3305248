import Foundation
import Items
import Logging
import WireProtocol

/// Replication's side in the core: numbering changes, choosing the replicas
/// that take writes, and carrying out what ``ReplicationState`` decides
/// (catch-ups sent from the log, shard copies, their logs and counters).
extension CoordinatorCore {
    // MARK: Sequence numbers

    /// Numbers a change of `shard` and keeps it for catch-ups
    /// (``ReplicationState/number(_:shard:logLimit:)``).
    /// Notes that message `id` to `worker` carries change `sequence` of `shard`.
    func track(_ id: String, worker: String, shard: Int, sequence: Int, catchUp: Bool = false, clientWaits: Bool = true) {
        replication.track(id, worker: worker, shard: shard, sequence: sequence, catchUp: catchUp, clientWaits: clientWaits)
    }

    /// Of a shard's write replicas, the ids of those whose answers a change's
    /// client waits for: every one but those being caught up from the log
    /// that are not members of the shard's in-sync set (nor on their way back
    /// in). A replica being caught up — back from a restart, or just copied —
    /// takes the change, numbered, and replication follows its answer; but it
    /// applies it only after its catch-up (or refuses it as out of sequence),
    /// so awaiting it would hold every write of the shard behind the catch-up,
    /// and under a steady publish have it dropped for lagging and copied
    /// again. Elasticsearch fails a recovering replica, not the write. It
    /// becomes fresh, and rejoins its in-sync set, only once it has answered
    /// every such change (``ReplicationState/unawaitedInFlight(worker:shard:)``).
    /// When every replica is being caught up, every one is waited for.
    func awaited(shard: Int, among replicas: [WorkerRecord]) -> Set<String> {
        let members = keepsInSync ? inSync.membersOrJoining(shard) : []
        let awaited = replicas.filter { members.contains(replicaName($0)) || replication.catchingUp[$0.id]?[shard] == nil }
        return Set((awaited.isEmpty ? replicas : awaited).map(\.id))
    }

    /// The live indexers of a shard that take its writes: every replica but
    /// the detached ones (too far behind, or diverged, until copied); none
    /// while a just-started coordinator waits for a replica's indexer
    /// (`awaitedReplicas`).
    func writeReplicas(shard: Int) -> [WorkerRecord] {
        if !awaitedReplicas(shard: shard).isEmpty { return [] }
        return liveWorkers(.indexer, shard: shard).filter { w in
            let name = replicaName(w)
            return !(replication.detached[name]?.contains(shard) ?? false) && !(replication.fenced[name]?.contains(shard) ?? false)
        }
    }

    /// The replicas whose indexer a coordinator that has numbered no change
    /// of `shard` yet waits for. With in-sync sets (a control plane): a member
    /// of the shard's set, with no time limit (``awaitedMembers(shard:)``).
    /// Otherwise, or while the shard has no set yet (see `Configuration.replicaWaitMs`), while
    /// the shard has history (some indexer reports a number) and the wait has
    /// not run out: those known from a live query worker of the shard with no
    /// registered indexer of it, and, while fewer replicas than
    /// `Configuration.replicas` have reported the shard, the unnamed rest
    /// (a replica whose query workers have not registered again either is
    /// known to no one after a restart). Empty once the coordinator numbered
    /// a change.
    func awaitedReplicas(shard: Int) -> [String] {
        if let members = awaitedMembers(shard: shard) { return members }
        guard replication.base[shard] == nil, (replication.issued[shard] ?? 0) > 0,
            Date().timeIntervalSince(startedAt) * 1000 < Double(configuration.replicaWaitMs)
        else { return [] }
        let reported = Set(liveWorkers(.indexer, shard: shard).map(replicaName).filter { replication.applied[$0]?[shard] != nil })
        let known = Set(liveWorkers(.query, shard: shard).compactMap { replication.replicaOf[$0.id] })
        var awaited = known.subtracting(reported).sorted()
        let unnamed = configuration.replicas - reported.count - awaited.count
        if unnamed > 0 { awaited.append("\(unnamed) of \(configuration.replicas) not registered yet") }
        return awaited
    }

    func replicaName(_ w: WorkerRecord) -> String { replication.name(of: w.id) }

    func isFresh(_ w: WorkerRecord, shard: Int) -> Bool { isFresh(w.id, shard: shard) }

    func isFresh(_ id: String, shard: Int) -> Bool {
        Self.isFresh(id, shard: shard, replication: replication, inSync: keepsInSync ? inSync : nil)
    }

    /// ``ReplicationState/isFresh(_:shard:)``, but with in-sync sets a query
    /// worker whose replica's indexer this coordinator has not heard from is
    /// fresh only while the replica is a member of the shard's set and this
    /// coordinator has numbered no change of the shard (a member holds every
    /// acknowledged change until then).
    static func isFresh(_ id: String, shard: Int, replication: ReplicationState, inSync: InSyncReplicas?) -> Bool {
        guard let inSync, let name = replication.replicaOf[id], replication.applied[name]?[shard] == nil else {
            return replication.isFresh(id, shard: shard)
        }
        let members = inSync.members(shard)
        guard inSync.loaded, !members.isEmpty else { return replication.isFresh(id, shard: shard) }
        return members.contains(name) && replication.base[shard] == nil
    }

    // MARK: Registration and answers

    /// Records a worker's replica and, for an indexer, how far each of its
    /// shards is; sends it the changes it missed. Call after answering
    /// `registered`, so the catch-up follows it on the same connection, and
    /// before any new change reaches the worker, so changes arrive in order.
    func replicaRegistered(_ r: Body.Register) {
        copiesLost(r.worker)
        perform(replication.registered(r, notInSync: notInSync(r)))
    }

    /// Carries out what the replication state decided (``ReplicationState/Action``).
    func perform(_ actions: [ReplicationState.Action]) {
        for action in actions {
            switch action {
            case .replayDeclarations(let worker):
                guard let w = workers[worker] else { continue }
                for d in replication.declarations { send(.worker(w.route), makeID("c"), .declare(d)) }
            case .catchUp(let worker, let shard, let after):
                catchUp(worker: worker, shard: shard, after: after)
            case .detached(let worker, let shard, let why):
                count(.catchUpDetached)
                let name = replication.name(of: worker)
                switch why {
                case .diverged(let have, let issued):
                    logger.warning(
                        "replica ahead of the numbers given since a restart; left out of writes and queries",
                        metadata: [
                            "replica": "\(name)", "worker": "\(worker)", "shard": "\(shard)",
                            "replica.sequence": "\(have)", "shard.sequence": "\(issued)",
                        ])
                case .tooFarBehind(let have, let issued, let logStart):
                    logger.warning(
                        "replica too far behind to catch up; left out of writes and queries",
                        metadata: [
                            "replica": "\(name)", "worker": "\(worker)", "shard": "\(shard)",
                            "replica.sequence": "\(have)", "shard.sequence": "\(issued)", "log.start": "\(logStart)",
                        ])
                case .fellBehind:
                    break
                case .notInSync(let have, let issued):
                    logger.warning(
                        "replica out of the in-sync set reports changes this coordinator has not numbered; copied from an in-sync member",
                        metadata: [
                            "replica": "\(name)", "worker": "\(worker)", "shard": "\(shard)",
                            "replica.sequence": "\(have)", "shard.sequence": "\(issued)",
                        ])
                }
                startCopy(to: worker, shard: shard)
            case .copy(let worker, let shard):
                startCopy(to: worker, shard: shard)
            case .caughtUp(let worker, let shard, let sequence):
                logger.info(
                    "replica caught up",
                    metadata: [
                        "worker": "\(worker)", "replica": "\(replication.name(of: worker))", "shard": "\(shard)",
                        "replica.sequence": "\(sequence)",
                    ])
            case .catchUpChangeFailed(let worker, let shard, let sequence, let error):
                logger.warning(
                    "a catch-up change failed",
                    metadata: [
                        "worker": "\(worker)", "shard": "\(shard)",
                        "sequence": "\(sequence)", "error": "\(error)",
                    ])
            }
        }
    }

    /// Sends `worker` the logged changes of `shard` after sequence number `after`, in order.
    func catchUp(worker: String, shard: Int, after: Int) {
        guard let w = workers[worker] else { return }
        let entries = replication.beginCatchUp(worker: worker, shard: shard, after: after)
        guard let last = entries.last?.sequence else { return }
        count(.catchUpStarted)
        count(.catchUpMessages, by: entries.count)
        logger.info(
            "catching up a replica",
            metadata: [
                "worker": "\(worker)", "replica": "\(replicaName(w))", "shard": "\(shard)",
                "replica.sequence": "\(after)", "shard.sequence": "\(last)", "changes": "\(entries.count)",
            ])
        for e in entries {
            let id = makeID("c")
            track(id, worker: worker, shard: shard, sequence: e.sequence, catchUp: true)
            send(.worker(w.route), id, e.body)
        }
    }

    /// Follows the answer to a numbered message (``ReplicationState/answered(_:by:_:)``).
    /// Returns true when the message was a catch-up's, which nothing else awaits.
    func sequencedReply(id: String, from worker: String, _ body: Body) -> Bool {
        let answer = replication.answered(id, by: worker, body)
        perform(answer.actions)
        return answer.consumed
    }

    /// A lost worker's numbered messages will not be answered.
    func replicaLost(_ workerID: String) {
        copiesLost(workerID)
        replication.lost(workerID)
    }

    // MARK: Stats

    /// The `replication` object of the stats: per shard its sequence, what
    /// the log holds, and each replica's position.
    func replicationJSON() -> JSONValue {
        func int(_ i: Int) -> JSONValue { .number(Double(i)) }
        let indexerOf = Dictionary(workers.values.filter { $0.role == .indexer }.map { (replicaName($0), $0.id) }, uniquingKeysWith: { a, _ in a })
        let shards: [JSONValue] = (0..<admittedShardCount).map { s in
            let committed = replication.committed[s] ?? 0
            let replicas: [JSONValue] = replication.applied.keys.sorted().compactMap { name in
                guard let have = replication.applied[name]?[s] else { return nil }
                let detached = replication.detached[name]?.contains(s) ?? false
                var o: [String: JSONValue] = [
                    "replica": .string(name), "sequence": int(have),
                    "fresh": .bool(!detached && have >= committed), "detached": .bool(detached),
                    "live": .bool(indexerOf[name] != nil),
                ]
                if let w = indexerOf[name], let end = replication.catchingUp[w]?[s] { o["catchingUpTo"] = int(end) }
                // A replica change under way: one being retired takes no
                // writes; one being added is read by no query yet.
                if replication.fenced[name]?.contains(s) ?? false {
                    o["retiring"] = .bool(true)
                } else if replication.unqueried[name]?.contains(s) ?? false {
                    o["joining"] = .bool(true)
                }
                if let c = replication.copies.running.values.first(where: { $0.replica == name && $0.shard == s }) {
                    o["copying"] = .object(["copy": .string(c.id), "from": .string(c.source), "received": int(c.received), "size": int(c.size)])
                }
                return .object(o)
            }
            var o: [String: JSONValue] = [
                "shard": int(s), "issued": int(replication.issued[s] ?? 0), "committed": int(committed),
                "logStart": int(replication.start(s)), "logEntries": int(replication.log[s]?.count ?? 0),
                "replicas": .array(replicas),
            ]
            if let set = inSyncJSON(shard: s) { o["inSync"] = set }
            return .object(o)
        }
        return .object(["shards": .array(shards)])
    }
}
