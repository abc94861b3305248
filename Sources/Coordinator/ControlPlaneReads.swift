/// Registrations that wait for the coordinator to read the control plane.
///
/// `limelight shards add-replica` records its change in the control plane,
/// which the coordinator's loop reads (`CoordinatorService.followSplits`);
/// the new replica's workers may register before that read. A query worker
/// of a replica the coordinator has never heard of would otherwise be read
/// at once (nothing says its replica is behind), and a worker of a retired
/// replica being added again would be refused as retired. So, in a cluster
/// with a control plane:
///
/// - a worker whose replica is unknown — in no in-sync set, no indexer of it
///   ever registered, named by no change read — keeps its replica from
///   queries until a read that *began after* its registration has completed
///   (the change it belongs to, if any, then keeps it off until it is in
///   sync; a replica no change names is an ordinary one from then on);
/// - a worker that would be refused on what was read so far — of a retired
///   replica, or naming shards beyond the map (a new shard's indexer that
///   `limelight up` starts as soon as a split is recorded) — is asked to
///   register again (`not_active`) until such a read has completed, and
///   refused only then, if the read did not change the answer.
///
/// Each such registration wakes the loop, so the wait is one read. A read
/// that completes began after a registration when at least two reads have
/// completed since (the first may have been under way already).
/// A value; `ControlPlaneReadsTests` test it.
struct ControlPlaneReads: Sendable, Equatable {
    struct Waiting: Sendable, Equatable {
        var shards: Set<Int>
        /// Reads completed when the replica's latest worker registered.
        var after: Int
    }

    /// Reads completed.
    private(set) var completed = 0
    /// Replicas a read has answered for.
    private(set) var known: Set<String> = []
    /// Unknown replicas waiting for a read, with the shards their workers serve.
    private(set) var waiting: [String: Waiting] = [:]
    /// Workers asked to register again until a read, with the reads completed then.
    private(set) var askedAgain: [String: Int] = [:]

    /// A worker of replica `name` registers for `shards`; `knownOtherwise`:
    /// the coordinator knows the replica from elsewhere (an in-sync set, an
    /// indexer of it, a change it read). Returns true when a read is wanted.
    mutating func registered(_ name: String, shards: [Int], knownOtherwise: Bool) -> Bool {
        // A replica waiting is known only through a read: its own indexer's
        // registration tells nothing of the change it belongs to.
        if knownOtherwise, waiting[name] == nil { known.insert(name) }
        guard !known.contains(name) else { return false }
        var w = waiting[name] ?? Waiting(shards: [], after: completed)
        w.shards.formUnion(shards)
        w.after = completed
        waiting[name] = w
        return true
    }

    /// Some replica waits: another read is wanted (the one under way may
    /// have begun before its registration).
    var wantsRead: Bool { !waiting.isEmpty }

    /// The shards each waiting replica is kept from queries on.
    var unqueried: [String: Set<Int>] { waiting.mapValues(\.shards) }

    /// A worker that what was read so far refuses registers: true when it
    /// is to be refused now, false when it is to register again after a
    /// read (one is wanted: wake the loop).
    mutating func refuseAfterRead(worker: String) -> Bool {
        guard let at = askedAgain[worker] else {
            askedAgain[worker] = completed
            return false
        }
        guard completed >= at + 2 else { return false }
        askedAgain.removeValue(forKey: worker)
        return true
    }

    /// A worker registered and was admitted: nothing of it waits.
    mutating func admitted(worker: String) { askedAgain.removeValue(forKey: worker) }

    /// A read of the control plane completed.
    mutating func read() {
        completed += 1
        for (name, w) in waiting where completed >= w.after + 2 {
            waiting.removeValue(forKey: name)
            known.insert(name)
        }
    }
}
