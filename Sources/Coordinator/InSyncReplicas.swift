import ControlPlane
import Foundation

/// Each shard's in-sync replica set as the active coordinator keeps it in the
/// control plane (`shards/<n>/in-sync`, an ``InSyncSet``), and the rule that
/// puts it on the write path (Elasticsearch's): a replica that an in-sync
/// member's change was not sent to leaves the set through a control-plane
/// transaction made *before* that change is acknowledged, and rejoins (by
/// transaction again) once it has applied every change it missed. So every
/// member holds every acknowledged change, and a coordinator that takes over
/// continues each shard from a member.
///
/// A value: the core asks it, when it sends a change, whether the change may
/// be sent at all (``covers(_:replicas:)``: some member takes it) and what the
/// change's acknowledgement must wait for (``sent(_:sequence:to:)``, a
/// request number); it hands out the transactions to make (``next()``), and
/// is told how each went (``wrote(_:succeeded:revision:)``). The service's
/// loop does the I/O (`CoordinatorService.followInSync`); the rules are
/// unit-tested without it (`InSyncReplicasTests`).
struct InSyncReplicas: Sendable {
    struct Shard: Sendable, Equatable {
        /// The set the control plane holds (nil: none yet) and its key's mod revision (0: absent).
        var stored: InSyncSet?
        var revision = 0
        /// Replicas to take out, and to put back, by the next transaction.
        var out: Set<String> = []
        var into: Set<String> = []
        /// Per replica left out: the highest change it missed. It rejoins
        /// only once it has applied it.
        var missedUpTo: [String: Int] = [:]
        /// Requests are numbered; the control plane holds every one up to
        /// `written`. A request that could not be written (it would have
        /// emptied the set) is failed: up to `failed`.
        var requested = 0
        var written = 0
        var failed = 0
        /// The transaction on its way: the set it writes and the request it covers.
        var writing: InSyncSet?
        var writingCovers = 0
    }

    /// Whether the sets were read from the control plane (until then no
    /// shard takes writes: a member may hold changes this coordinator does not know).
    private(set) var loaded = false
    private(set) var shards: [Int: Shard] = [:]
    /// The epoch this coordinator writes the sets with.
    private(set) var epoch = 0

    /// What the control plane holds, read when this coordinator starts to serve.
    mutating func load(_ sets: [Int: (set: InSyncSet?, revision: Int)], epoch: Int) {
        self.epoch = epoch
        for (shard, s) in sets {
            shards[shard, default: Shard()].stored = s.set
            shards[shard, default: Shard()].revision = s.revision
        }
        loaded = true
    }

    func shard(_ n: Int) -> Shard { shards[n] ?? Shard() }

    /// The replicas that may be members: those the control plane holds, and
    /// those a transaction on its way writes.
    func members(_ shard: Int) -> Set<String> {
        let s = self.shard(shard)
        return Set(s.stored?.replicas ?? []).union(s.writing?.replicas ?? [])
    }

    /// Whether the control plane holds `replica` in the shard's set, and
    /// no transaction on its way takes it out: what a replica change waits
    /// for before it counts on the replica (true when the shard has no set).
    func holds(_ shard: Int, replica: String) -> Bool {
        let s = self.shard(shard)
        guard let stored = s.stored, !stored.replicas.isEmpty else { return members(shard).isEmpty }
        return stored.replicas.contains(replica) && !s.out.contains(replica)
            && (s.writing.map { $0.replicas.contains(replica) } ?? true)
    }

    /// The members, and the replicas on their way back in: a change's
    /// client waits for each of these, since any may hold the set's place.
    func membersOrJoining(_ shard: Int) -> Set<String> {
        members(shard).union(self.shard(shard).into)
    }

    /// Whether a change sent to `replicas` may be acknowledged at all: the
    /// shard has no set yet, or a member takes it. When none does, the
    /// change must not be made (taking every member out would leave no
    /// replica that holds every acknowledged change).
    func covers(_ shard: Int, replicas: Set<String>) -> Bool {
        let members = members(shard)
        return members.isEmpty || !members.isDisjoint(with: replicas)
    }

    /// Change `sequence` of `shard` went to `replicas`: the members it did not
    /// go to must leave the set before it is acknowledged. Returns the request
    /// number the control plane must hold first (``isWritten(_:_:)``), or nil
    /// when every member took it.
    mutating func sent(_ shard: Int, sequence: Int, to replicas: Set<String>) -> Int? {
        let missed = members(shard).subtracting(replicas)
        guard !missed.isEmpty else { return nil }
        var s = self.shard(shard)
        for r in missed {
            s.out.insert(r)
            s.into.remove(r)
            s.missedUpTo[r] = max(s.missedUpTo[r] ?? 0, sequence)
        }
        s.requested += 1
        shards[shard] = s
        return s.requested
    }

    /// `replica` has applied every change of the shard up to `applied`, and
    /// every change committed: it rejoins when it is out and has applied
    /// every change it missed. True when that needs a transaction.
    mutating func caughtUp(_ shard: Int, replica: String, applied: Int) -> Bool {
        var s = self.shard(shard)
        let isIn = (s.stored?.replicas.contains(replica) ?? false) && !s.out.contains(replica)
        guard loaded, !isIn, !s.into.contains(replica), applied >= (s.missedUpTo[replica] ?? 0) else { return false }
        if s.writing?.replicas.contains(replica) ?? false, !s.out.contains(replica) { return false }
        s.into.insert(replica)
        s.out.remove(replica)
        s.requested += 1
        shards[shard] = s
        return true
    }

    /// Whether the control plane holds request `ticket` of `shard`: the change
    /// that waited for it may be acknowledged.
    func isWritten(_ shard: Int, _ ticket: Int) -> Bool { self.shard(shard).written >= ticket }

    /// Whether request `ticket` could not be written: the change that waited
    /// for it must not be acknowledged.
    func isFailed(_ shard: Int, _ ticket: Int) -> Bool {
        let s = self.shard(shard)
        return s.written < ticket && s.failed >= ticket
    }

    /// What to do for a shard.
    enum Step: Sendable, Equatable {
        /// Commit this transaction (it writes `set`), then call ``wrote(_:succeeded:revision:)``.
        case write(shard: Int, set: InSyncSet, Transaction)
        /// The requests up to `upTo` would leave no member: the changes that
        /// waited for them are not acknowledged.
        case failed(shard: Int, upTo: Int)
    }

    /// The transactions to make now: one per shard with requests the control
    /// plane does not hold and none on its way.
    mutating func next(keys: ClusterKeys) -> [Step] {
        guard loaded else { return [] }
        var steps: [Step] = []
        for (n, var s) in shards.sorted(by: { $0.key < $1.key }) where s.writing == nil && s.requested > max(s.written, s.failed) {
            let base = Set(s.stored?.replicas ?? [])
            let next = base.union(s.into).subtracting(s.out)
            if next.isEmpty {
                // Only changes that went to no member ask for this, and those
                // are refused before they are sent (``covers(_:replicas:)``);
                // kept as a rule all the same.
                s.failed = s.requested
                s.out.removeAll()
                shards[n] = s
                steps.append(.failed(shard: n, upTo: s.requested))
                continue
            }
            if next == base {
                s.written = s.requested
                s.out.removeAll()
                s.into.removeAll()
                shards[n] = s
                continue
            }
            let set = InSyncSet(replicas: Array(next), epoch: epoch)
            s.writing = set
            s.writingCovers = s.requested
            shards[n] = s
            // Only while the epoch is still this coordinator's: a zombie
            // (paused past its lease) must not take out a member its
            // successor continues from.
            var t = set.replacing(key: keys.inSync(shard: n), readAt: s.revision)
            t.compares.append(Compare(keys.epoch, .value(Data(String(epoch).utf8))))
            steps.append(.write(shard: n, set: set, t))
        }
        return steps
    }

    /// How the transaction on its way for `shard` went: written (at
    /// `revision`), or not (the set changed meanwhile, or the answer was
    /// lost): then the set is read again (``reread(_:stored:revision:)``)
    /// before the next try.
    mutating func wrote(_ shard: Int, succeeded: Bool, revision: Int) {
        guard var s = shards[shard], let set = s.writing else { return }
        s.writing = nil
        if succeeded {
            s.stored = set
            s.revision = revision
            s.written = max(s.written, s.writingCovers)
            s.out = s.out.filter { set.replicas.contains($0) }
            s.into = s.into.filter { !set.replicas.contains($0) }
        }
        shards[shard] = s
    }

    /// What the control plane holds for `shard`, read again after a
    /// transaction that did not succeed.
    mutating func reread(_ shard: Int, stored: InSyncSet?, revision: Int) {
        shards[shard, default: Shard()].stored = stored
        shards[shard, default: Shard()].revision = revision
    }

    /// Whether a shard waits for the control plane (a request not written yet).
    func pending(_ shard: Int) -> Bool {
        let s = self.shard(shard)
        return s.requested > max(s.written, s.failed)
    }
}
