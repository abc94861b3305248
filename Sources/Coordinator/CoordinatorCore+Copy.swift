import Foundation
import Logging
import WireProtocol

/// Copies of a shard from a replica that has every change to a *detached*
/// one: a replica the log cannot catch up (it was away longer than the log
/// reaches, or this coordinator restarted and has no log of what it missed),
/// or one that holds other changes under the same numbers (see `lineage`).
/// Patching such a replica change by change is impossible or wrong; its
/// whole file is replaced by a snapshot of a fresh replica's, streamed
/// through the coordinator one chunk at a time (see `Body.CopyChunk`), and
/// then the log catches it up from the snapshot's number like any replica
/// that was away. Until then it takes no writes and serves no queries.
struct ShardCopies: Sendable {
    struct Copy: Sendable {
        var id: String
        var shard: Int
        var source: String
        var target: String
        var replica: String
        /// The shard the snapshot is read from: `shard`, or during a split
        /// the new shard's source (whose numbers `shard` shares).
        var sourceShard: Int? = nil
        var sequence = 0
        var size = 0
        var received = 0
        var started = ContinuousClock.now
        /// When a chunk was last sent or acknowledged (see ``stalled(at:limit:)``).
        var progressed = ContinuousClock.now
        /// The last chunk is on its way: its answer waits for the target to
        /// install the whole file, which takes time with its size.
        var installing = false
        /// The log of `shard` is kept from here on while the copy runs, so
        /// that the snapshot can be caught up however long the copy takes:
        /// the committed number when it starts (the snapshot holds at least
        /// that), then the snapshot's own number.
        var pin = 0
    }
    /// Copies under way, by copy id.
    var running: [String: Copy] = [:]
    /// The copy a message to a worker belongs to, by message id.
    var ofMessage: [String: String] = [:]

    func copying(replica: String, shard: Int) -> Bool {
        running.values.contains { $0.replica == replica && $0.shard == shard }
    }

    /// The copies that have moved no chunk for `limit`: a message lost on
    /// its way, or a worker that stopped answering while its heartbeats go
    /// on, leaves a copy waiting for an answer that never comes. A copy
    /// being installed gets a second more per 10 MB of its file (SQLite's
    /// backup writes it whole before the answer).
    func stalled(at now: ContinuousClock.Instant, limit: Duration) -> [String] {
        running.values.filter { c in
            c.progressed.duration(to: now) > limit + (c.installing ? .seconds(c.size / 10_000_000) : .zero)
        }.map(\.id).sorted()
    }
}

extension CoordinatorCore {
    /// Bytes of a shard file per `copy_chunk` (base64 makes the frame a third larger).
    static let copyChunkBytes = 1 << 20

    /// Starts copying `shard` to the replica of indexer `target` from a live
    /// replica that has every committed change and this coordinator's numbers.
    /// Does nothing while one is under way; when no replica can be the
    /// source yet, the sweep tries again. A source indexer keeps one
    /// snapshot of a shard at a time (a new copy replaces the one under
    /// way), so a replica that is already the source of a copy of the same
    /// shard is not picked: two new replicas copied at once (a split's new
    /// shard with two replicas) take one source each, or one after the other.
    func startCopy(to target: String, shard: Int) {
        guard let t = workers[target], t.role == .indexer else { return }
        let name = replicaName(t)
        guard replication.detached[name]?.contains(shard) ?? false,
            !replication.copies.copying(replica: name, shard: shard)
        else { return }
        // A split's new shard is copied from its source, which it mirrors.
        let from = splitRun?.source(of: shard) ?? shard
        let committed = replication.committed[from] ?? 0
        let busy = Set(replication.copies.running.values.filter { ($0.sourceShard ?? $0.shard) == from }.map(\.source))
        let source = writeReplicas(shard: from).first { w in
            let n = replicaName(w)
            return !busy.contains(w.id) && (n != name || from != shard) && (replication.lineage[from]?.contains(n) ?? false)
                && (replication.applied[n]?[from] ?? 0) >= committed && replication.catchingUp[w.id]?[from] == nil
        }
        guard let source else { return }
        var copy = ShardCopies.Copy(id: makeID("copy-"), shard: shard, source: source.id, target: target, replica: name, sourceShard: from)
        copy.pin = committed
        replication.copies.running[copy.id] = copy
        count(.copyStarted)
        logger.info(
            "copying a shard to a replica that cannot be caught up",
            metadata: [
                "copy": "\(copy.id)", "shard": "\(shard)", "replica": "\(name)", "worker": "\(target)",
                "source": "\(replicaName(source))", "source.worker": "\(source.id)",
                "replica.sequence": "\(replication.applied[name]?[shard] ?? 0)", "shard.sequence": "\(committed)",
            ])
        requestChunk(copy.id, offset: 0)
    }

    func requestChunk(_ copyID: String, offset: Int) {
        guard let c = replication.copies.running[copyID], let source = workers[c.source] else {
            return abandonCopy(copyID, reason: "its source is gone")
        }
        let id = makeID("y")
        replication.copies.ofMessage[id] = copyID
        send(
            .worker(source.route), id,
            .copyRequest(Body.CopyRequest(shard: c.sourceShard ?? c.shard, copy: c.id, offset: offset, maxBytes: Self.copyChunkBytes)))
    }

    /// Follows an answer to a copy message. Returns false when `id` is not one.
    func copyReply(id: String, from worker: String, _ body: Body) -> Bool {
        guard let copyID = replication.copies.ofMessage.removeValue(forKey: id) else { return false }
        guard var c = replication.copies.running[copyID] else { return true }
        switch body {
        case .copyChunk(var chunk) where worker == c.source:
            guard let target = workers[c.target] else {
                abandonCopy(copyID, reason: "its target is gone")
                return true
            }
            c.sequence = chunk.sequence
            c.pin = max(c.pin, chunk.sequence)
            c.size = chunk.size
            c.progressed = .now
            c.installing = chunk.offset + Self.copyChunkBytes >= chunk.size
            replication.copies.running[copyID] = c
            let next = makeID("y")
            replication.copies.ofMessage[next] = copyID
            count(.copyBytes, by: chunk.size == 0 ? 0 : (chunk.data.utf8.count * 3) / 4)
            chunk.shard = c.shard
            send(.worker(target.route), next, .copyChunk(chunk))
        case .copyAck(let ack) where worker == c.target:
            c.received = ack.received
            c.progressed = .now
            replication.copies.running[copyID] = c
            if ack.installed == true {
                copyInstalled(c, sequence: ack.sequence ?? c.sequence)
            } else {
                requestChunk(copyID, offset: ack.received)
            }
        case .error(let e):
            abandonCopy(copyID, reason: "\(worker) answered \(e.code): \(e.message)")
        default:
            abandonCopy(copyID, reason: "\(worker) answered '\(body.type.rawValue)'")
        }
        return true
    }

    /// The target holds the snapshot: changes 1…`sequence` of this
    /// coordinator's numbering. It rejoins, and the log sends what came since
    /// (``ReplicationState/copyInstalled(_:sequence:)``).
    func copyInstalled(_ c: ShardCopies.Copy, sequence: Int) {
        let ms = Int(c.started.duration(to: .now) / .milliseconds(1))
        count(.copyFinished)
        count(.copyMs, by: ms)
        logger.info(
            "shard copied",
            metadata: [
                "copy": "\(c.id)", "shard": "\(c.shard)", "replica": "\(c.replica)",
                "replica.sequence": "\(sequence)", "copy.bytes": "\(c.received)", "copy.ms": "\(ms)",
            ])
        perform(replication.copyInstalled(c, sequence: sequence))
    }

    func abandonCopy(_ copyID: String, reason: String) {
        guard let c = replication.copies.running.removeValue(forKey: copyID) else { return }
        for (id, owner) in replication.copies.ofMessage where owner == copyID { replication.copies.ofMessage.removeValue(forKey: id) }
        count(.copyAbandoned)
        logger.warning(
            "shard copy abandoned; it starts again when a source and the target are live",
            metadata: [
                "copy": "\(c.id)", "shard": "\(c.shard)", "replica": "\(c.replica)", "reason": "\(reason)",
            ])
    }

    /// A lost worker's copies stop (the sweep starts them again).
    func copiesLost(_ workerID: String) {
        for c in replication.copies.running.values where c.source == workerID || c.target == workerID {
            abandonCopy(c.id, reason: "worker \(workerID) was lost")
        }
    }

    /// Run by the sweep: detached replicas get a copy, and replicas behind
    /// with nothing on the way to them are caught up or copied
    /// (``ReplicationState/repairs(indexers:)``).
    func repairReplicas() {
        let limit = Duration.milliseconds(configuration.copyStallMs)
        for id in replication.copies.stalled(at: .now, limit: limit) {
            count(.copyStalled)
            abandonCopy(id, reason: "no chunk moved for \(configuration.copyStallMs) ms")
        }
        let indexers = workers.values.filter { $0.role == .indexer }.map { (id: $0.id, shards: $0.shards) }
        perform(replication.repairs(indexers: indexers))
    }
}

extension CoordinatorCore {
    /// Why a shard takes no change now, for the producer.
    func unavailableReason(shard: Int) -> String {
        let awaited = awaitedReplicas(shard: shard)
        guard !awaited.isEmpty else { return "no live indexer serves shard \(shard)" }
        return "shard \(shard) waits for the indexer of replica \(awaited.joined(separator: ", ")) "
            + "(the coordinator started \(Int(Date().timeIntervalSince(startedAt))) s ago and may not number changes without it)"
    }
}
