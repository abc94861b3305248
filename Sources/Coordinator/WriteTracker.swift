import Foundation
import Items
import Tenancy
import WireProtocol

/// The writes in flight: publishes (one message per shard and replica),
/// deletes and entity operations (one per shard and replica), and
/// declarations (every indexer, in two rounds), with the rule for each of
/// when it is answered and what the client is told.
///
/// A value with no sockets: the core mints the message ids, sends, and
/// tells the tracker what it sent; the tracker's methods take an event (an
/// acknowledgement, an error, a lost worker) and return ``Action``s, the
/// replies the core must send. So the rules — every replica must commit an
/// item for it to be stored, one failing replica rejects it, a lost worker's
/// writes are rejected to be resent, a declaration is made only when every
/// indexer's check passed — are unit-tested without processes
/// (`WriteTrackerTests`).
struct WriteTracker: Sendable {
    /// One shard's part of a publish, sent to one replica.
    struct ShardWrite: Sendable, Equatable {
        var publish: String
        var shard: Int
        var worker: String
        /// Positions in the client's batch of the items sent in this write.
        var indices: [Int]
    }

    struct PendingPublish: Sendable {
        var client: [Data]
        var requestID: String
        var batch: String?
        /// Each item's identifier, for rejections the coordinator makes itself.
        var identifiers: [String?]
        var results: [ItemResult?]
        var outstanding: Set<String> = []
        /// Shards for which at least one replica committed.
        var committed: Set<Int> = []
        /// When the first replica of each shard committed (see ``laggards(at:limit:)``).
        var committedAt: [Int: ContinuousClock.Instant] = [:]
        var shardOf: [Int: [Int]] = [:]  // shard → item positions
        var started: ContinuousClock.Instant
        /// The app the items were published for (their names are qualified; see `TenantScope`).
        var scope: TenantScope = .unscoped
        /// What the acknowledgement waits for in the control plane (``InSyncWait``).
        var inSync = InSyncWait()
    }

    /// Per shard, the in-sync request (``InSyncReplicas/sent(_:sequence:to:)``)
    /// the control plane must hold before a change is acknowledged: the
    /// members the change did not go to are out of the set by then.
    struct InSyncWait: Sendable, Equatable {
        var tickets: [Int: Int] = [:]
        /// Per shard, the positions in the client's batch of its items (a
        /// publish's): rejected if the request cannot be written.
        var items: [Int: [Int]] = [:]
    }

    struct PendingDelete: Sendable {
        var client: [Data]
        var requestID: String
        var outstanding: [String: (worker: String, shard: Int)] = [:]
        var deletedByShard: [Int: Int] = [:]
        var failed: [ShardFailure] = []
        /// Set for entity deletes and associations, which answer `entity_ack`.
        var entity: EntityOperation? = nil
        /// What the answer waits for in the control plane (``InSyncWait``).
        var inSync = InSyncWait()
    }

    struct PendingDeclare: Sendable {
        var client: [Data]
        var requestID: String
        var declaration: Body.Declare
        /// Whose items a refusal may name (`Body.Declare.exampleTag`).
        var exampleTag: String
        /// Every indexer has checked the declaration; the second round declares it.
        var checked = false
        var outstanding: [String: String] = [:]  // message → worker
        var error: WireError?

        /// The first round's message: the declaration, to be checked only.
        var check: Body.Declare {
            var message = declaration
            message.check = true
            message.exampleTag = exampleTag
            return message
        }
    }

    /// What the core must do after an event.
    enum Action: Sendable {
        /// Every replica of a publish answered (or is gone): acknowledge it.
        /// `inSync`: what must be in the control plane before it is sent.
        case publishDone(client: [Data], requestID: String, ack: Body.PublishAck, started: ContinuousClock.Instant, inSync: InSyncWait)
        /// Every shard of a delete or entity operation answered (or is named failed).
        case deleteDone(PendingDelete)
        /// Send `message` to every live indexer (``declareSent(_:for:to:)``
        /// for each), then call ``roundSent(_:)``; `declaring` is the second
        /// round, which changes the shards.
        case declareRound(id: String, message: Body.Declare, declaring: Bool)
        /// A declaration is over: acknowledged, or refused with `error`.
        case declareDone(client: [Data], requestID: String, error: WireError?)
    }

    /// A publish that came while the most allowed were in flight, waiting its turn.
    struct WaitingPublish: Sendable {
        var client: [Data]
        var requestID: String
        var publish: Body.Publish
        /// Items refused before routing (see ``CoordinatorCore/publish(client:id:_:rejected:scope:)``).
        var rejected: [Int: ItemResult]
        var scope: TenantScope
    }

    /// What becomes of a publish that arrives (``admit(_:maxPending:maxWaiting:draining:)``).
    enum Admission: Equatable, Sendable {
        /// Route it now.
        case start
        /// It waits its turn, behind those already waiting.
        case held
        /// Too many are waiting: answer `busy`, and the producer sends it again later.
        case busy
    }

    /// What a worker's message id belongs to, for an `error` it answers.
    enum MessageKind: Sendable, Equatable {
        case write, delete, declare
    }

    private(set) var publishes: [String: PendingPublish] = [:]
    /// Publishes waiting for room, oldest first.
    private(set) var waiting: [WaitingPublish] = []
    private(set) var shardWrites: [String: ShardWrite] = [:]
    private(set) var deletes: [String: PendingDelete] = [:]
    private(set) var deleteOfMessage: [String: String] = [:]
    private(set) var declares: [String: PendingDeclare] = [:]
    private(set) var declareOfMessage: [String: String] = [:]

    func kind(ofMessage id: String) -> MessageKind? {
        if shardWrites[id] != nil { return .write }
        if deleteOfMessage[id] != nil { return .delete }
        if declareOfMessage[id] != nil { return .declare }
        return nil
    }

    /// Messages each worker has not answered yet, for the stats' queue depths.
    func outstanding(into depth: inout [String: Int]) {
        for w in shardWrites.values { depth[w.worker, default: 0] += 1 }
        for d in deletes.values { for e in d.outstanding.values { depth[e.worker, default: 0] += 1 } }
        for k in declares.values { for wid in k.outstanding.values { depth[wid, default: 0] += 1 } }
    }

    // MARK: Publishes

    /// Throttles publishes without ever stopping the coordinator from
    /// reading: at most `maxPending` are in flight, and one that comes past
    /// that waits, in order, in a queue of at most `maxWaiting`; past that it
    /// is refused as `busy`. While publishes wait, a new one waits behind
    /// them even if there is room, unless the core is starting the waiting
    /// ones (`draining`), so none overtakes another.
    mutating func admit(_ publish: @autoclosure () -> WaitingPublish, maxPending: Int, maxWaiting: Int, draining: Bool) -> Admission {
        if publishes.count < maxPending && (waiting.isEmpty || draining) { return .start }
        guard waiting.count < maxWaiting else { return .busy }
        waiting.append(publish())
        return .held
    }

    /// The oldest waiting publish, when there is room for it.
    mutating func nextWaiting(maxPending: Int) -> WaitingPublish? {
        guard publishes.count < maxPending, !waiting.isEmpty else { return nil }
        return waiting.removeFirst()
    }

    /// A change of `shard` for delete `id` waits for in-sync request `ticket`.
    mutating func deleteWaits(_ id: String, shard: Int, ticket: Int) {
        deletes[id]?.inSync.tickets[shard] = ticket
    }

    /// Starts tracking a publish; its writes follow (``writeSent(_:_:)``),
    /// then ``publishRouted(_:)``.
    mutating func beginPublish(_ id: String, _ pending: PendingPublish) {
        publishes[id] = pending
    }

    /// Write `writeID` of a publish went to a replica.
    mutating func writeSent(_ writeID: String, _ write: ShardWrite) {
        shardWrites[writeID] = write
        publishes[write.publish]?.outstanding.insert(writeID)
    }

    /// Every write of a publish is sent: one with nothing to send (every
    /// item rejected before routing) is answered at once.
    mutating func publishRouted(_ id: String) -> [Action] {
        finishPublishIfDone(id)
    }

    /// A replica committed a write: its items are stored unless it rejected
    /// them, or another replica does (a rejection wins over a commit).
    mutating func writeAcked(_ writeID: String, _ ack: Body.WriteAck, at now: ContinuousClock.Instant = .now) -> [Action] {
        guard let w = shardWrites.removeValue(forKey: writeID), var pending = publishes[w.publish] else { return [] }
        pending.outstanding.remove(writeID)
        pending.committed.insert(w.shard)
        if pending.committedAt[w.shard] == nil { pending.committedAt[w.shard] = now }
        for r in ack.results where r.index >= 0 && r.index < w.indices.count {
            let g = w.indices[r.index]
            if r.status == .rejected {
                var rr = r
                rr.index = g
                pending.results[g] = rr
            } else if pending.results[g] == nil {
                pending.results[g] = ItemResult(index: g, uniqueIdentifier: r.uniqueIdentifier, status: .stored)
            }
        }
        publishes[w.publish] = pending
        return finishPublishIfDone(w.publish)
    }

    /// A replica failed a write: its items are not on every replica, so they
    /// are not stored, whatever the other replicas said.
    mutating func writeFailed(_ writeID: String, _ error: WireError) -> [Action] {
        guard let w = shardWrites.removeValue(forKey: writeID), var pending = publishes[w.publish] else { return [] }
        pending.outstanding.remove(writeID)
        var error = error
        if error.code == "out_of_sequence" {
            // The replica missed earlier changes and is being caught up:
            // nothing wrong with the items, so the producer sends them again.
            error = WireError(code: "shard_unavailable", message: "a replica of shard \(w.shard) is catching up (\(error.message)); resend")
        }
        for g in w.indices where pending.results[g]?.status != .rejected {
            pending.results[g] = ItemResult(index: g, uniqueIdentifier: pending.identifiers[g], status: .rejected, error: error)
        }
        publishes[w.publish] = pending
        return finishPublishIfDone(w.publish)
    }

    /// The replicas that lag: a write of theirs is unanswered `limit` after
    /// another replica of the same shard committed the same write. A
    /// replica whose disk or process stalls while its heartbeats go on is
    /// alive to the liveness rule, yet every publish to its shard would wait
    /// for it; the core takes such a replica for lost (its writes in flight
    /// are then resent, and it leaves the shard's in-sync set before any
    /// later change is acknowledged) rather than hold every write of the
    /// shard behind it, as Elasticsearch fails a replica that does not answer.
    /// Sorted by worker, then shard.
    func laggards(at now: ContinuousClock.Instant, limit: Duration) -> [(worker: String, shard: Int)] {
        var found: Set<String> = []
        var out: [(worker: String, shard: Int)] = []
        for w in shardWrites.values {
            guard let first = publishes[w.publish]?.committedAt[w.shard], first.duration(to: now) >= limit else { continue }
            if found.insert("\(w.worker)\u{0}\(w.shard)").inserted { out.append((w.worker, w.shard)) }
        }
        return out.sorted { ($0.worker, $0.shard) < ($1.worker, $1.shard) }
    }

    private mutating func finishPublishIfDone(_ id: String) -> [Action] {
        guard let pending = publishes[id], pending.outstanding.isEmpty else { return [] }
        publishes.removeValue(forKey: id)
        var results: [ItemResult] = []
        results.reserveCapacity(pending.results.count)
        for (i, r) in pending.results.enumerated() {
            if var r {
                r.uniqueIdentifier = r.uniqueIdentifier.map { pending.scope.unqualify(uid: $0) }
                results.append(r)
                continue
            }
            // Every replica that was asked is gone without answering.
            results.append(
                ItemResult(
                    index: i, uniqueIdentifier: pending.identifiers[i].map { pending.scope.unqualify(uid: $0) }, status: .rejected,
                    error: WireError(code: "shard_unavailable", message: "the indexer stopped before committing; resend")))
        }
        return [
            .publishDone(
                client: pending.client, requestID: pending.requestID,
                ack: Body.PublishAck(batch: pending.batch, results: results), started: pending.started, inSync: pending.inSync)
        ]
    }

    // MARK: Deletes and entity operations

    /// Starts tracking a delete; its messages follow (``deleteSent(_:for:to:shard:)``),
    /// then ``deleteRouted(_:)``.
    mutating func beginDelete(_ id: String, _ pending: PendingDelete) {
        deletes[id] = pending
    }

    /// A delete's shard has no indexer to take it.
    mutating func deleteUnroutable(_ id: String, shard: Int, reason: String) {
        deletes[id]?.failed.append(ShardFailure(shard: shard, reason: reason))
    }

    mutating func deleteSent(_ messageID: String, for id: String, to worker: String, shard: Int) {
        deletes[id]?.outstanding[messageID] = (worker, shard)
        deleteOfMessage[messageID] = id
    }

    mutating func deleteRouted(_ id: String) -> [Action] {
        finishDeleteIfDone(id)
    }

    /// A replica answered a delete: a shard's count is its largest replica's
    /// (they hold the same items); an error names the shard as failed.
    mutating func deleteAnswered(_ messageID: String, deleted: Int?, error: WireError?) -> [Action] {
        guard let id = deleteOfMessage.removeValue(forKey: messageID), var pending = deletes[id],
            let (_, shard) = pending.outstanding.removeValue(forKey: messageID)
        else { return [] }
        if let deleted {
            pending.deletedByShard[shard] = max(pending.deletedByShard[shard] ?? 0, deleted)
        } else if let error {
            pending.failed.append(ShardFailure(shard: shard, reason: error.message))
        }
        deletes[id] = pending
        return finishDeleteIfDone(id)
    }

    private mutating func finishDeleteIfDone(_ id: String) -> [Action] {
        guard let pending = deletes[id], pending.outstanding.isEmpty else { return [] }
        deletes.removeValue(forKey: id)
        return [.deleteDone(pending)]
    }

    // MARK: Declarations

    /// Starts a declaration with its first round, the check.
    mutating func beginDeclare(_ id: String, _ pending: PendingDeclare) -> [Action] {
        declares[id] = pending
        return [.declareRound(id: id, message: pending.checked ? pending.declaration : pending.check, declaring: pending.checked)]
    }

    mutating func declareSent(_ messageID: String, for id: String, to worker: String) {
        declares[id]?.outstanding[messageID] = worker
        declareOfMessage[messageID] = id
    }

    /// Every indexer was sent the round.
    mutating func roundSent(_ id: String) -> [Action] {
        finishDeclareIfDone(id)
    }

    /// An indexer answered a round; an error refuses the declaration.
    mutating func declareAnswered(_ messageID: String, error: WireError?) -> [Action] {
        guard let id = declareOfMessage.removeValue(forKey: messageID), var pending = declares[id] else { return [] }
        pending.outstanding.removeValue(forKey: messageID)
        if let error { pending.error = error }
        declares[id] = pending
        return finishDeclareIfDone(id)
    }

    /// A round every indexer answered: a check that none refused starts the
    /// declaration; a refusal, or the declaration's own round, ends it.
    private mutating func finishDeclareIfDone(_ id: String) -> [Action] {
        guard var pending = declares[id], pending.outstanding.isEmpty else { return [] }
        if pending.error == nil, !pending.checked {
            pending.checked = true
            declares[id] = pending
            return [.declareRound(id: id, message: pending.declaration, declaring: true)]
        }
        declares.removeValue(forKey: id)
        return [.declareDone(client: pending.client, requestID: pending.requestID, error: pending.error)]
    }

    // MARK: Lost workers

    /// Forgets every change in flight and waiting, and returns whom to
    /// answer, oldest request id first: a deposed coordinator finishes none
    /// of them (a successor numbers the changes now), so each producer is
    /// told at once and resends to the active coordinator rather than wait
    /// out its timeout. What the indexers committed meanwhile is idempotent
    /// to resend.
    mutating func abandonAll() -> [(client: [Data], requestID: String)] {
        var out = publishes.values.map { ($0.client, $0.requestID) } + waiting.map { ($0.client, $0.requestID) }
        out += deletes.values.map { ($0.client, $0.requestID) } + declares.values.map { ($0.client, $0.requestID) }
        self = WriteTracker()
        return out.sorted { $0.1 < $1.1 }.map { (client: $0.0, requestID: $0.1) }
    }

    /// A worker is gone: what it had not answered will not be.
    ///
    /// Writes it had not acknowledged are not acknowledged as stored, even
    /// where another replica committed them: the item is not on every
    /// replica it was sent to. The producer resends it (`shard_unavailable`),
    /// and the upsert is idempotent on the replicas that have it. A delete's
    /// shard that no other replica answered is named failed; a declaration
    /// fails and is to be made again.
    mutating func workerLost(_ worker: String) -> [Action] {
        var actions: [Action] = []
        for (writeID, sw) in shardWrites.sorted(by: { $0.key < $1.key }) where sw.worker == worker {
            shardWrites.removeValue(forKey: writeID)
            guard var p = publishes[sw.publish] else { continue }
            p.outstanding.remove(writeID)
            for g in sw.indices where p.results[g]?.status != .rejected {
                p.results[g] = ItemResult(
                    index: g, uniqueIdentifier: p.identifiers[g], status: .rejected,
                    error: WireError(code: "shard_unavailable", message: "replica \(worker) of shard \(sw.shard) was lost before committing; resend"))
            }
            publishes[sw.publish] = p
            actions += finishPublishIfDone(sw.publish)
        }
        for (id, var d) in deletes.sorted(by: { $0.key < $1.key }) {
            for (mid, entry) in d.outstanding where entry.worker == worker {
                d.outstanding.removeValue(forKey: mid)
                deleteOfMessage.removeValue(forKey: mid)
                if d.deletedByShard[entry.shard] == nil { d.failed.append(ShardFailure(shard: entry.shard, reason: "indexer lost")) }
            }
            deletes[id] = d
            actions += finishDeleteIfDone(id)
        }
        for (id, var k) in declares.sorted(by: { $0.key < $1.key }) {
            for (mid, wid) in k.outstanding where wid == worker {
                k.outstanding.removeValue(forKey: mid)
                declareOfMessage.removeValue(forKey: mid)
                k.error = WireError(code: "shard_unavailable", message: "indexer \(worker) was lost before declaring; declare again")
            }
            declares[id] = k
            actions += finishDeclareIfDone(id)
        }
        return actions
    }
}
