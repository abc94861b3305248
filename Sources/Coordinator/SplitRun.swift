import ControlPlane
import Foundation
import WireProtocol

/// A split this coordinator carries out: the one the control plane holds at
/// `shards/split` (a ``ShardSplit``, written by `limelight shards split`).
///
/// Each new shard j starts as a mirror of its source i = j mod N: every
/// change numbered for i is numbered for j too, with the same number (the
/// two sequences move in step from the moment the split is taken up), and
/// sent to j's indexers, which no query reads. A j replica registering
/// empty is further behind than the log reaches, so it is copied — from a
/// replica of i, the snapshot's number meaning the same changes on j — and
/// the log catches it up. Then:
///
/// 1. every live replica of every new shard is fresh (one read by a live
///    query worker, when its source is): client writes are held
///    (``Step/draining``) until every replica of the new shards has applied
///    its last change, and the mirroring stops;
/// 2. the purge phase is stored, so that a successor does not copy the new
///    shards again once they have dropped their sources' rows;
/// 3. queries are routed by the new map from then on, each shard's part
///    carrying its slots under that map (``SwitchRouting``): the worker
///    leaves out the rows of slots another shard owns, so a source and its
///    new shard, which still hold the same rows, answer each for its own;
/// 4. once the queries routed by the old map have finished, every shard
///    marks, all at once, the rows of the slots it does not own under the
///    new map — each new shard those its source keeps, each source those
///    its new shards took — in one small SQLite transaction
///    (`ShardStore.markMoved(keeping:)`): from then on every read of the
///    shard leaves them out, and its indexer deletes them in the background,
///    a small transaction at a time;
/// 5. the new map is committed, deleting the split in the same transaction;
///    the coordinator routes by it and releases the writes it held, in order.
///
/// Every query is answered by one map, whole: one routed by the old map
/// reads shards none of which has marked yet, one routed by the new map
/// reads each shard's rows of that map alone. Queries are never held; the
/// write pause lasts the drain, the old map's queries and the marks
/// (milliseconds), not the purges.
/// A value: its methods take what the coordinator observed or was answered
/// and say what to do (``Action``); `SplitRunTests` test them without processes.
struct SplitRun: Sendable {
    enum Step: Sendable, Equatable {
        case copying
        case draining
        case storing
        /// Queries go by the new map; the old map's are finishing.
        case switching
        case purging
        case committing
        /// The new map is in force: the run is over.
        case committed
    }

    /// What the coordinator must do.
    enum Action: Sendable, Equatable {
        /// Send each shard its purge (a numbered delete keeping its own slots,
        /// which marks the others' rows left out and purged in the background);
        /// report each answer to ``purgeSent(_:shard:)`` / ``purgeAnswered(_:succeeded:)``.
        case purge([Int])
        /// Write this to the control plane; report to ``stored(_:now:)``.
        case store(Transaction)
        /// Commit this (the new map); report to ``committed(_:)``.
        case commit(Transaction, ShardMap)
    }

    /// What the coordinator sees at a tick.
    struct Observed: Sendable, Equatable {
        /// Every live replica of every new shard has every committed change,
        /// none copying or catching up (and one has a live query worker, when
        /// the source has one).
        var targetsFresh: Bool
        /// Every live replica of every new shard has applied its last numbered change.
        var targetsDrained: Bool
        /// Queries or searches routed by the old map (``routedByOldMap``) are running.
        var queriesRunning: Bool
    }

    var split: ShardSplit
    private(set) var step: Step
    /// Source shard → the new shards that mirror it (none once they drained).
    private(set) var mirrors: [Int: [Int]] = [:]
    /// Mirrored changes awaiting their answer, which nobody else awaits.
    var mirrorIDs: Set<String> = []
    /// Purges awaiting their answer: message id → shard.
    private(set) var purges: [String: Int] = [:]
    /// The worker each purge went to, by message id.
    private(set) var purgeWorkers: [String: String] = [:]
    /// The shards a replica has answered a purge of (marked).
    private(set) var purged: Set<Int> = []
    /// Client changes held while writes wait, in arrival order.
    var held: [HeldRequest] = []
    /// Queries are routed by the new map (``SwitchRouting``), from the
    /// stored purge phase until the map is committed (then the map itself routes).
    var routesByNewMap: Bool { step == .switching || step == .purging || step == .committing }
    /// The queries and searches (the core's keys) routed by the old map and
    /// running when queries went over to the new one: the marks wait for them.
    private(set) var routedByOldMap: Set<String> = []
    let started: ContinuousClock.Instant
    private(set) var pausedAt: ContinuousClock.Instant?
    private(set) var switchedAt: ContinuousClock.Instant?

    /// Takes up `split` as the control plane holds it. One in its purge
    /// phase was left by a predecessor after the new shards were purged:
    /// it goes on from the sources' purge, writes held and queries routed
    /// by the new map (a copy now would bring back the rows the new shards
    /// dropped).
    init(split: ShardSplit, now: ContinuousClock.Instant) {
        self.split = split
        started = now
        if split.phase == .purging {
            step = .switching
            pausedAt = now
            switchedAt = now
        } else {
            step = .copying
            for t in split.targets { mirrors[t.source, default: []].append(t.shard) }
        }
    }

    /// The shard new shard `shard` is copied from, while it may be copied.
    func source(of shard: Int) -> Int? {
        guard step == .copying || step == .draining else { return nil }
        return split.targets.first { $0.shard == shard }?.source
    }

    /// Whether a client request waits while the control plane holds a split
    /// the coordinator has not taken up yet: every change and every read.
    static func heldUntilTakenUp(_ body: Body) -> Bool {
        switch body {
        case .publish, .delete, .entityDonate, .entityDelete, .entityAssociate, .declare: true
        case .query, .search, .suggest, .spotlight, .continueSearch: true
        default: false
        }
    }

    /// Whether a client request waits now: changes from the write pause on.
    /// Reads never wait: they go by the old map or by the new one.
    func holds(_ body: Body) -> Bool {
        switch body {
        case .publish, .delete, .entityDonate, .entityDelete, .entityAssociate, .declare: step != .copying && step != .committed
        default: false
        }
    }

    /// A tick: moves on when what it waits for is there. `revision` and
    /// `mapRevision` are the control plane's, for the transactions.
    mutating func tick(_ seen: Observed, keys: ClusterKeys, revision: Int, mapRevision: Int, now: ContinuousClock.Instant) -> Action? {
        switch step {
        case .copying:
            guard seen.targetsFresh else { return nil }
            step = .draining
            pausedAt = now
            return tick(seen, keys: keys, revision: revision, mapRevision: mapRevision, now: now)
        case .draining:
            guard seen.targetsDrained else { return nil }
            mirrors = [:]
            step = .storing
            return .store(split.storingPurge(keys: keys, readAt: revision))
        case .storing:
            return .store(split.storingPurge(keys: keys, readAt: revision))
        case .purging:
            // A shard whose purges were all lost with their workers (none
            // answered) is sent one again once it has a live indexer: the
            // core sends nothing while it has none.
            let lacking = split.sources + split.targets.map(\.shard)
            let unsent = lacking.filter { !purged.contains($0) && !purges.values.contains($0) }
            return unsent.isEmpty ? nil : .purge(unsent)
        case .switching:
            guard !seen.queriesRunning else { return nil }
            routedByOldMap = []
            step = .purging
            return .purge(split.sources + split.targets.map(\.shard))
        case .committing:
            return .commit(split.committing(keys: keys, readAt: revision, mapRevision: mapRevision), split.after)
        case .committed:
            return nil
        }
    }

    /// Purge message `id` went to `worker`, a replica of `shard`.
    mutating func purgeSent(_ id: String, shard: Int, worker: String) {
        purges[id] = shard
        purgeWorkers[id] = worker
    }

    /// `worker` is lost: its purges will not be answered. Its replica
    /// serves no query until it has caught up, which brings it the mark
    /// (a numbered change); the shard needs another replica's answer, or
    /// a purge sent again (``tick(_:keys:revision:mapRevision:now:)``).
    mutating func workerLost(_ worker: String) {
        for (id, w) in purgeWorkers where w == worker {
            purgeWorkers.removeValue(forKey: id)
            purges.removeValue(forKey: id)
        }
        moveOnIfPurged()
    }

    /// What an answer to a message means for the split.
    enum PurgeAnswer: Sendable, Equatable {
        /// The message was not a purge.
        case notAPurge
        /// Counted; when it was the last, the split has moved on.
        case counted
        /// The purge failed: send `shard` its purge again (a purge is idempotent).
        case resend(shard: Int)
    }

    /// The answer to purge message `id`.
    mutating func purgeAnswered(_ id: String, succeeded: Bool) -> PurgeAnswer {
        guard let shard = purges.removeValue(forKey: id) else { return .notAPurge }
        purgeWorkers.removeValue(forKey: id)
        if !succeeded { return .resend(shard: shard) }
        purged.insert(shard)
        moveOnIfPurged()
        return .counted
    }

    /// Every purge sent was answered, and every shard was marked by one.
    private mutating func moveOnIfPurged() {
        guard step == .purging, purges.isEmpty, (split.sources + split.targets.map(\.shard)).allSatisfy(purged.contains) else { return }
        step = .committing
    }

    /// The answer to ``Action/store(_:)``: queries are routed by the new map
    /// from now on, and the shards purge once `running` (the queries and
    /// searches routed by the old map) have finished. A refused store is
    /// tried again at the next tick.
    mutating func stored(_ succeeded: Bool, running: Set<String>, now: ContinuousClock.Instant) {
        guard succeeded, step == .storing else { return }
        split.phase = .purging
        step = .switching
        routedByOldMap = running
        switchedAt = now
    }

    /// The answer to ``Action/commit(_:_:)``: true when the new map is in
    /// force (route by it, release what was held). A refused commit is tried
    /// again at the next tick, with the revisions read then.
    mutating func committed(_ succeeded: Bool) -> Bool {
        guard succeeded, step == .committing else { return false }
        step = .committed
        return true
    }
}

/// The map queries are routed by from a split's switch until its commit:
/// each shard's part carries its slots under it (`keepSlots`), since a
/// shard has not yet marked the rows that map gives another.
struct SwitchRouting: Sendable, Equatable {
    var slots: Int
    var shards: Int

    init(_ map: ShardMap) {
        slots = map.slots
        shards = map.shards
    }

    func keep(_ shard: Int) -> Body.KeepSlots { Body.KeepSlots(slots: slots, shards: shards, shard: shard) }
}
