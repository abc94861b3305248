import ControlPlane
import Foundation

/// A replica change this coordinator carries out: the one the control
/// plane holds at `shards/replica-change` (a ``ReplicaChange``, written by
/// `limelight shards add-replica`, `retire` or `move`).
///
/// 1. **Adding**: the new replica registers empty, is copied from an
///    in-sync replica and caught up from the log (the replication code does
///    that for any replica); meanwhile its query workers are read by no
///    query, even before its indexer has registered (a query worker whose
///    replica has no indexer is otherwise taken as fresh). Once its indexer
///    holds every committed change of each shard and a query worker of it
///    is live, an addition completes; a move goes on to retire.
/// 2. **Checking**: a retirement goes on only while each shard has another
///    replica in sync (indexer) with a live query worker; when a shard has
///    none for ``refuseAfter`` (a replica restarting may come back sooner),
///    the change is refused, with the shard named, and nothing is retired.
/// 3. **Draining**: the old replica is fenced from writes — no change is
///    sent to it from now on — and the changes sent to it before are
///    awaited. Every write acknowledged meanwhile reached the other in-sync
///    replicas (an acknowledgement needs every replica that was sent the
///    write but one being caught up, and an in-sync replica is not), so
///    none is lost. Queries may still read it while it is fresh
///    (the next committed change makes it stale, and the others fresh);
///    they move off it once the others have applied every committed change,
///    so that a shard is never left without a fresh replica to read, not
///    even while a change is on its way to the others.
/// 4. **Unquerying**: the old replica is fenced from queries too; the query
///    parts sent to it before are awaited. Should a shard lose its other
///    in-sync replica while the old one drains, the fences are lifted and
///    the check runs again.
/// 5. **Completing**: the record is deleted and the replica recorded as
///    retired, in one transaction; the core then tells its workers to stop.
///
/// A value: ``tick(_:keys:revision:retired:retiredRevision:)`` takes what
/// the coordinator observed and says what to write; `ReplicaRunTests` test
/// it without processes.
struct ReplicaRun: Sendable {
    enum Step: Sendable, Equatable {
        case adding
        case checking
        case draining
        case unquerying
        case completing
        /// Refused (stored once ``refusalStored``): the command deletes the record.
        case refused
        /// Completed.
        case done
    }

    enum Action: Sendable, Equatable {
        /// Write this record (its phase moved on); report to ``stored(_:)``.
        case store(Transaction)
        /// End the change; report to ``completed(_:)``.
        case complete(Transaction)
    }

    struct Observed: Sendable, Equatable {
        /// The added replica holds every committed change of each shard, and
        /// a query worker of it is live for each.
        var addedInSync: Bool
        /// The shards with no in-sync replica but the one retired (with a
        /// live query worker): retiring it would leave them none.
        var shardsWithoutAnother: [Int]
        /// Changes or copies sent to the retired replica's workers are still unanswered.
        var retiredChangesBusy: Bool
        /// Query parts sent to the retired replica's query workers are still unanswered.
        var retiredQueriesBusy: Bool
        /// On every shard some other replica has applied every committed change.
        var othersCaughtUp: Bool
    }

    private(set) var change: ReplicaChange
    private(set) var step: Step
    private(set) var refusalStored = false
    let started: ContinuousClock.Instant
    /// Since when the check has found a shard without another in-sync replica.
    private(set) var lackingSince: ContinuousClock.Instant?
    /// How long a shard may lack another in-sync replica before the retirement is refused.
    static let refuseAfter = Duration.seconds(3)

    init(change: ReplicaChange, now: ContinuousClock.Instant) {
        self.change = change
        started = now
        switch change.phase {
        case .adding: step = .adding
        case .retiring: step = .checking
        case .refused:
            step = .refused
            refusalStored = true
        }
    }

    /// Whether `stored` is the change this run carries out (a record the
    /// command replaced is another change, carried out anew).
    func carriesOut(_ stored: ReplicaChange) -> Bool {
        stored.kind == change.kind && stored.shards == change.shards && stored.add == change.add && stored.retire == change.retire
    }

    /// The replica no query reads while the change is under way: the one
    /// added until it is in sync, the one retired once fenced.
    var queryExcluded: String? {
        switch step {
        case .adding: change.add
        case .unquerying, .completing, .done: change.retire
        case .checking, .draining, .refused: nil
        }
    }

    /// The replica no write is sent to: the one retired, once fenced.
    var writeExcluded: String? {
        switch step {
        case .draining, .unquerying, .completing, .done: change.retire
        default: nil
        }
    }

    mutating func tick(
        _ seen: Observed, keys: ClusterKeys, revision: Int, retired: RetiredReplicas, retiredRevision: Int, now: ContinuousClock.Instant
    ) -> Action? {
        switch step {
        case .adding:
            guard seen.addedInSync else { return nil }
            guard change.retire != nil else {
                step = .completing
                return .complete(change.completing(keys: keys, readAt: revision, retired: retired, retiredRevision: retiredRevision))
            }
            change.phase = .retiring
            step = .checking
            return tick(seen, keys: keys, revision: revision, retired: retired, retiredRevision: retiredRevision, now: now)
        case .checking:
            if let shard = seen.shardsWithoutAnother.first {
                let since = lackingSince ?? now
                lackingSince = since
                guard since.duration(to: now) >= Self.refuseAfter else { return nil }
                step = .refused
                change.phase = .refused
                change.reason =
                    "shard \(shard) has no in-sync replica but \(change.retire ?? "?"): retiring it would leave the shard none "
                    + "(add one first: limelight shards add-replica, or limelight shards move)"
                return .store(change.storing(keys: keys, readAt: revision))
            }
            lackingSince = nil
            step = .draining
            return nil
        case .draining, .unquerying:
            guard seen.shardsWithoutAnother.isEmpty else {
                step = .checking
                return nil
            }
            if step == .draining {
                guard !seen.retiredChangesBusy, seen.othersCaughtUp else { return nil }
                step = .unquerying
            }
            guard !seen.retiredQueriesBusy else { return nil }
            step = .completing
            return .complete(change.completing(keys: keys, readAt: revision, retired: retired, retiredRevision: retiredRevision))
        case .completing:
            return .complete(change.completing(keys: keys, readAt: revision, retired: retired, retiredRevision: retiredRevision))
        case .refused:
            return refusalStored ? nil : .store(change.storing(keys: keys, readAt: revision))
        case .done:
            return nil
        }
    }

    /// The answer to ``Action/store(_:)``: a stored refusal is done (the
    /// command reads it); a refused store is tried again at the next tick.
    mutating func stored(_ succeeded: Bool) {
        if succeeded, step == .refused { refusalStored = true }
    }

    /// The answer to ``Action/complete(_:)``: true when the change is over
    /// (for a retirement: tell the replica's workers to stop). A refused
    /// transaction is tried again at the next tick, with the revisions read then.
    mutating func completed(_ succeeded: Bool) -> Bool {
        guard succeeded, step == .completing else { return false }
        step = .done
        return true
    }
}
