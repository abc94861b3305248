import Foundation
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
///
/// A value: its methods take an event (a registration, an answer to a
/// numbered message, a lost worker, the sweep, an installed copy) and return
/// ``Action``s — catch a replica up, copy a shard to it — that the core
/// carries out (`CoordinatorCore+CatchUp.swift`), so the catch-up rules are
/// unit-tested without processes (`ReplicationStateTests`).
struct ReplicationState: Sendable {
    struct Entry: Sendable {
        var sequence: Int
        var body: Body
        var weight: Int
    }
    struct InFlight: Sendable, Equatable {
        var worker: String
        var shard: Int
        var sequence: Int
        var catchUp: Bool
        /// Whether a client waits for this answer: false for a live change
        /// sent to a replica being caught up (`CoordinatorCore.awaited(shard:among:)`),
        /// whose answer, like a catch-up's, only replication follows.
        var clientWaits = true
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
    /// Replicas no query reads, per shard: one being added until it is in
    /// sync, one retired or being retired (see `ReplicaRun`).
    var unqueried: [String: Set<Int>] = [:]
    /// Replicas no change is sent to, per shard, nor a catch-up or a copy:
    /// one being retired, once fenced, or retired.
    var fenced: [String: Set<Int>] = [:]

    /// What the core must do for a replica.
    enum Action: Equatable, Sendable {
        /// Send the worker every declaration seen, before its catch-up.
        case replayDeclarations(worker: String)
        /// Send the worker the logged changes of the shard after `after`
        /// (``beginCatchUp(worker:shard:after:)``).
        case catchUp(worker: String, shard: Int, after: Int)
        /// The worker's replica of the shard is now detached: count it, say
        /// why, and copy the shard to it.
        case detached(worker: String, shard: Int, Detachment)
        /// Copy the shard to the worker's replica, detached already.
        case copy(worker: String, shard: Int)
        /// A catch-up ended: the replica has every change it was sent.
        case caughtUp(worker: String, shard: Int, sequence: Int)
        /// A change sent to catch a replica up failed on it.
        case catchUpChangeFailed(worker: String, shard: Int, sequence: Int, error: String)
    }

    /// Why a replica was detached.
    enum Detachment: Equatable, Sendable {
        /// It reports numbers above this coordinator's first, and got none
        /// of this coordinator's: the same numbers name other changes.
        case diverged(have: Int, issued: Int)
        /// It registered further behind than the log reaches.
        case tooFarBehind(have: Int, issued: Int, logStart: Int)
        /// It fell behind the log while connected.
        case fellBehind
        /// It is not in the shard's in-sync set and reports numbers this
        /// coordinator has not given out: changes no one acknowledged, or
        /// ones numbered before the shard continued from an in-sync member.
        case notInSync(have: Int, issued: Int)
    }

    func start(_ shard: Int) -> Int { logStart[shard] ?? (issued[shard] ?? 0) + 1 }

    /// The replica a worker writes or reads: the one it names, or itself.
    func name(of worker: String) -> String { replicaOf[worker] ?? worker }

    // MARK: Numbering

    /// Gives the next sequence number of `shard` to `body`, keeps the change
    /// for catch-ups (trimming the log to `logLimit` items), and returns the
    /// numbered body to send to every replica, stamped with the coordinator
    /// `epoch` when there is one (a cluster with a control plane).
    mutating func number(_ body: Body, shard: Int, logLimit: Int, epoch: Int? = nil) -> (sequence: Int, body: Body) {
        let n = (issued[shard] ?? 0) + 1
        issued[shard] = n
        if base[shard] == nil { base[shard] = n - 1 }
        var numbered = body
        switch body {
        case .write(var w): w.sequence = n; w.epoch = epoch; numbered = .write(w)
        case .delete(var d): d.sequence = n; d.epoch = epoch; numbered = .delete(d)
        case .entityDelete(var d): d.sequence = n; d.epoch = epoch; numbered = .entityDelete(d)
        case .entityAssociate(var a): a.sequence = n; a.epoch = epoch; numbered = .entityAssociate(a)
        default: break
        }
        var weight = 1
        if case .write(let w) = body { weight = max(1, w.items.count + w.evict.count) }
        if log[shard] == nil { logStart[shard] = n }
        log[shard, default: []].append(Entry(sequence: n, body: numbered, weight: weight))
        logWeight[shard, default: 0] += weight
        trimLog(shard, limit: logLimit)
        return (n, numbered)
    }

    /// How far past its limit a shard's log may grow while a copy of the
    /// shard runs (``ShardCopies/Copy/pin``): under a write load heavy
    /// enough to pass that before a copy ends, the copy is caught up by
    /// another copy, as without the pin, rather than the log growing unbounded.
    static let pinnedLogFactor = 10

    /// Drops the oldest changes while the log holds more than `limit` items
    /// (always keeping the newest), but none after a running copy's pin
    /// while the log holds at most ``pinnedLogFactor`` times `limit`: a copy
    /// that takes longer than the log lasts would otherwise be detached
    /// again the moment it is installed, and under a steady load copied
    /// over and over.
    mutating func trimLog(_ shard: Int, limit: Int) {
        guard var entries = log[shard], var weight = logWeight[shard], weight > limit else { return }
        let pin = copies.running.values.filter { $0.shard == shard }.map(\.pin).min()
        var drop = 0
        while drop < entries.count - 1, weight > limit {
            if let pin, entries[drop].sequence > pin, weight <= limit * Self.pinnedLogFactor { break }
            weight -= entries[drop].weight
            drop += 1
        }
        entries.removeFirst(drop)
        log[shard] = entries
        logWeight[shard] = weight
        logStart[shard] = entries.first?.sequence
    }

    /// Notes that message `id` to `worker` carries change `sequence` of `shard`.
    mutating func track(_ id: String, worker: String, shard: Int, sequence: Int, catchUp: Bool = false, clientWaits: Bool = true) {
        inFlight[id] = InFlight(worker: worker, shard: shard, sequence: sequence, catchUp: catchUp, clientWaits: clientWaits && !catchUp)
    }

    /// Whether a live change no client waits for is on its way to `worker`'s
    /// `shard`: the replica may not rejoin its in-sync set until it has
    /// answered, since a client may have been told that change is stored.
    func unawaitedInFlight(worker: String, shard: Int) -> Bool {
        inFlight.values.contains { $0.worker == worker && $0.shard == shard && !$0.catchUp && !$0.clientWaits }
    }

    /// Whether a query worker reads a replica that has every change of the
    /// shard that any replica committed. A query worker whose replica has no
    /// indexer the coordinator has heard of is taken as fresh: nothing says otherwise.
    func isFresh(_ worker: String, shard: Int) -> Bool {
        guard let name = replicaOf[worker] else { return true }
        guard mayServeQueries(name, shard: shard) else { return false }
        guard let have = applied[name]?[shard] else { return true }
        let committed = committed[shard] ?? 0
        if have >= committed { return true }
        // While a replica of the shard is kept from queries (being added or
        // retired), it may commit a change before the replicas that are read
        // do: they are read still when all they lack is on its way to them as
        // live changes, which no client has been told are stored (a write is
        // acknowledged once every replica whose answer it awaits has answered).
        guard unqueried.values.contains(where: { $0.contains(shard) }) else { return false }
        return awaitsOnly(name, shard: shard, after: have, through: committed)
    }

    /// Whether a query worker's replica that is not fresh lacks only changes
    /// on their way to it whose clients wait for its answer: none of them is
    /// acknowledged yet, so it answers as of every acknowledged write. What a
    /// shard's part of a query falls back to when no replica is fresh: with
    /// two replicas and one live query worker, the other replica's indexer
    /// answering a change first would otherwise leave the shard unread until
    /// this one has answered too.
    func lacksOnlyUnacknowledged(_ worker: String, shard: Int) -> Bool {
        guard let name = replicaOf[worker], let have = applied[name]?[shard], mayServeQueries(name, shard: shard) else { return false }
        return awaitsOnly(name, shard: shard, after: have, through: committed[shard] ?? 0)
    }

    /// Whether replica `name`'s copy of `shard` may be read at all: it is
    /// not detached (waiting for a copy) nor kept from queries (being added
    /// or retired).
    func mayServeQueries(_ name: String, shard: Int) -> Bool {
        !(detached[name]?.contains(shard) ?? false) && !(unqueried[name]?.contains(shard) ?? false)
    }

    /// Whether every change of `shard` after `have` through `committed` is in
    /// flight to replica `name` as a live change its client waits for (not a
    /// catch-up's, nor one sent while it was behind), and no
    /// catch-up of the shard is under way to it.
    func awaitsOnly(_ name: String, shard: Int, after have: Int, through committed: Int) -> Bool {
        guard committed - have <= 1024 else { return false }
        if catchingUp.contains(where: { $0.value[shard] != nil && self.name(of: $0.key) == name }) { return false }
        var sent = Set<Int>()
        for f in inFlight.values where f.shard == shard && f.clientWaits && f.sequence > have && f.sequence <= committed {
            if self.name(of: f.worker) == name { sent.insert(f.sequence) }
        }
        return sent.count == committed - have
    }

    // MARK: Events

    /// A worker registered: records its replica and, for an indexer, how far
    /// each of its shards is, and says which shards to catch up (after
    /// replaying the declarations, once) and which to detach and copy.
    /// Answers still due from before are dropped: the registration says how
    /// far the replica is, and the catch-up starts from there.
    ///
    /// `notInSync`: the shards whose in-sync set (``InSyncReplicas``) does not
    /// name this replica. Such a replica never sets a shard's numbering: one
    /// ahead of this coordinator's numbers holds only unacknowledged changes
    /// (every acknowledged one is on each member), so it is detached and
    /// copied from a member.
    mutating func registered(_ r: Body.Register, notInSync: Set<Int> = []) -> [Action] {
        catchingUp.removeValue(forKey: r.worker)
        for (id, f) in inFlight where f.worker == r.worker { inFlight.removeValue(forKey: id) }
        guard r.role == .indexer else {
            if let name = r.replica { replicaOf[r.worker] = name } else { replicaOf.removeValue(forKey: r.worker) }
            return []
        }
        let name = r.replica ?? r.worker
        replicaOf[r.worker] = name
        // A worker that reports no sequence numbers predates them: it is
        // taken as it is, and tracked from its answers on.
        guard let reported = r.sequences else { return [] }
        var actions: [Action] = []
        for shard in r.shards {
            let have = reported.first { $0.shard == shard }?.sequence ?? 0
            let issued = issued[shard] ?? 0
            applied[name, default: [:]][shard] = have
            detached[name]?.remove(shard)
            if notInSync.contains(shard), have > issued {
                detached[name, default: []].insert(shard)
                actions.append(.detached(worker: r.worker, shard: shard, .notInSync(have: have, issued: issued)))
                continue
            }
            if let base = base[shard], have > base, !(lineage[shard]?.contains(name) ?? false) {
                // This coordinator (restarted) has numbered changes from a
                // lower number than this replica reports, and the replica got
                // none of them: it is left out until it is copied.
                detached[name, default: []].insert(shard)
                actions.append(.detached(worker: r.worker, shard: shard, .diverged(have: have, issued: issued)))
                continue
            }
            lineage[shard, default: []].insert(name)
            if have > issued {
                // The coordinator knows less than the replica (it restarted
                // and has numbered nothing of the shard yet): continue the
                // sequence from the replica's number.
                self.issued[shard] = have
                committed[shard] = max(committed[shard] ?? 0, have)
                log.removeValue(forKey: shard)
                logWeight.removeValue(forKey: shard)
                logStart[shard] = have + 1
                continue
            }
            guard have < issued else { continue }
            guard have + 1 >= start(shard) else {
                detached[name, default: []].insert(shard)
                actions.append(.detached(worker: r.worker, shard: shard, .tooFarBehind(have: have, issued: issued, logStart: start(shard))))
                continue
            }
            if !actions.contains(.replayDeclarations(worker: r.worker)) { actions.append(.replayDeclarations(worker: r.worker)) }
            actions.append(.catchUp(worker: r.worker, shard: shard, after: have))
        }
        return actions
    }

    /// A split's new shard `shard` is numbered as its source from now on,
    /// whose last number is `issued`: the two sequences move in step, each
    /// number naming the same change on both. The replicas of `shard` that
    /// registered before (`indexers`: its live indexers) were judged by
    /// numbers that no longer hold, and are judged again:
    /// - one at `issued` has the source's changes and goes on;
    /// - one ahead holds mirrored changes its source never got (the
    ///   coordinator that numbered them stopped between sending the mirror
    ///   and the source's own): never acknowledged, their numbers will name
    ///   other changes here, which it would skip as applied (a split's mark
    ///   among them, and it would go on answering rows its source keeps).
    ///   It is detached and copied;
    /// - one behind, or detached already (its copy came from another
    ///   replica of the new shard, which may be one ahead), is copied from
    ///   the source: the log holds nothing of the new numbering yet.
    mutating func mirror(_ shard: Int, from issued: Int, indexers: [String]) -> [Action] {
        self.issued[shard] = issued
        committed[shard] = issued
        base[shard] = issued
        log.removeValue(forKey: shard)
        logWeight.removeValue(forKey: shard)
        logStart[shard] = issued + 1
        lineage[shard] = []
        var actions: [Action] = []
        for worker in indexers {
            let name = name(of: worker)
            guard let have = applied[name]?[shard] else { continue }
            if have > issued {
                detached[name, default: []].insert(shard)
                actions.append(.detached(worker: worker, shard: shard, .diverged(have: have, issued: issued)))
            } else if detached[name]?.contains(shard) ?? false {
                actions.append(.copy(worker: worker, shard: shard))
            } else if have < issued {
                detached[name, default: []].insert(shard)
                actions.append(.detached(worker: worker, shard: shard, .tooFarBehind(have: have, issued: issued, logStart: issued + 1)))
            } else {
                lineage[shard, default: []].insert(name)
            }
        }
        return actions
    }

    /// The logged changes of `shard` after `after` that a catch-up sends,
    /// oldest first; the catch-up is under way until the last is committed.
    mutating func beginCatchUp(worker: String, shard: Int, after: Int) -> [Entry] {
        let entries = (log[shard] ?? []).filter { $0.sequence > after }
        guard let last = entries.last?.sequence else { return [] }
        catchingUp[worker, default: [:]][shard] = last
        return entries
    }

    /// What an answer to message `id` means for replication.
    struct Answer: Sendable, Equatable {
        /// The message was a catch-up's (or its declarations'), which
        /// nothing else awaits.
        var consumed: Bool
        var actions: [Action] = []
    }

    /// Follows the answer to a numbered message: a commit moves the replica's
    /// sequence on; `out_of_sequence` (it missed changes while it stayed
    /// connected, e.g. a message lost on the way) starts a catch-up, or a
    /// copy when the log no longer reaches back; any other error ends the
    /// catch-up (its later changes will be refused as out of sequence,
    /// which starts a new one).
    mutating func answered(_ id: String, by worker: String, _ body: Body) -> Answer {
        guard let f = inFlight.removeValue(forKey: id) else { return Answer(consumed: id.hasPrefix("c") && body.isDeclareAck) }
        // An answer no client waits for is replication's alone.
        let consumed = !f.clientWaits
        let name = name(of: worker)
        var actions: [Action] = []
        switch body {
        case .writeAck, .deleteAck, .entityAck:
            applied[name, default: [:]][f.shard] = max(applied[name]?[f.shard] ?? 0, f.sequence)
            committed[f.shard] = max(committed[f.shard] ?? 0, f.sequence)
            if let end = catchingUp[worker]?[f.shard], f.sequence >= end {
                catchingUp[worker]?.removeValue(forKey: f.shard)
                actions.append(.caughtUp(worker: worker, shard: f.shard, sequence: f.sequence))
            }
        case .error(let e) where e.code == "out_of_sequence":
            if catchingUp[worker]?[f.shard] == nil {
                let have = applied[name]?[f.shard] ?? 0
                if have + 1 >= start(f.shard) {
                    actions.append(.catchUp(worker: worker, shard: f.shard, after: have))
                } else {
                    detached[name, default: []].insert(f.shard)
                    actions.append(.detached(worker: worker, shard: f.shard, .fellBehind))
                }
            }
        case .error(let e):
            catchingUp[worker]?.removeValue(forKey: f.shard)
            if f.catchUp { actions.append(.catchUpChangeFailed(worker: worker, shard: f.shard, sequence: f.sequence, error: e.message)) }
        default: break
        }
        return Answer(consumed: consumed, actions: actions)
    }

    /// A lost worker's numbered messages will not be answered, nor its catch-up finished.
    mutating func lost(_ worker: String) {
        for (id, f) in inFlight where f.worker == worker { inFlight.removeValue(forKey: id) }
        catchingUp.removeValue(forKey: worker)
    }

    /// Run by the sweep over the live indexers: a detached replica gets a
    /// copy, and one that is behind with nothing on the way to it (no change
    /// in flight, no catch-up: a catch-up that failed, or numbers that moved
    /// on since it registered) is caught up, or detached and copied when the
    /// log does not reach back far enough.
    mutating func repairs(indexers: [(id: String, shards: [Int])]) -> [Action] {
        var actions: [Action] = []
        for w in indexers {
            let name = name(of: w.id)
            for shard in w.shards {
                if fenced[name]?.contains(shard) ?? false { continue }
                if detached[name]?.contains(shard) ?? false {
                    actions.append(.copy(worker: w.id, shard: shard))
                    continue
                }
                guard let have = applied[name]?[shard], have < (committed[shard] ?? 0),
                    catchingUp[w.id]?[shard] == nil,
                    !inFlight.values.contains(where: { $0.worker == w.id && $0.shard == shard })
                else { continue }
                if have + 1 >= start(shard) {
                    actions.append(.catchUp(worker: w.id, shard: shard, after: have))
                } else {
                    detached[name, default: []].insert(shard)
                    actions.append(.detached(worker: w.id, shard: shard, .fellBehind))
                }
            }
        }
        return actions
    }

    /// A copy's target installed the snapshot, changes 1…`sequence` of this
    /// coordinator's numbering: it rejoins, and the log sends what came
    /// since, or, when more came while copying than the log keeps, it is
    /// copied again.
    mutating func copyInstalled(_ c: ShardCopies.Copy, sequence: Int) -> [Action] {
        copies.running.removeValue(forKey: c.id)
        applied[c.replica, default: [:]][c.shard] = sequence
        lineage[c.shard, default: []].insert(c.replica)
        detached[c.replica]?.remove(c.shard)
        guard sequence < (issued[c.shard] ?? 0) else { return [] }
        if sequence + 1 >= start(c.shard) {
            return [.catchUp(worker: c.target, shard: c.shard, after: sequence)]
        }
        detached[c.replica, default: []].insert(c.shard)
        return [.copy(worker: c.target, shard: c.shard)]
    }
}

extension Body {
    var isDeclareAck: Bool { if case .declareAck = self { true } else { false } }
}
