import Foundation
import WireProtocol

/// A write the indexer has read and not yet answered.
struct WaitingWrite: Sendable {
    /// The request's id, which its answer carries.
    let id: String
    let write: Body.Write
}

/// The writes waiting for their shards, in arrival order, and which of them
/// go into the next transaction.
///
/// A group is the oldest waiting write and every later write of the same
/// shard waiting behind it, in their order, up to a bound: the changes of one
/// shard stay in the order they came (their sequence numbers say so), while
/// writes to other shards, independent of them, wait their turn.
struct WriteQueue: Sendable {
    private(set) var waiting: [WaitingWrite] = []

    var count: Int { waiting.count }
    var isEmpty: Bool { waiting.isEmpty }

    mutating func add(_ write: WaitingWrite) { waiting.append(write) }

    /// Takes the next group out of the queue: the oldest write, then the
    /// writes of its shard behind it while the group holds at most
    /// `maxWrites` writes and `maxItems` items (the oldest is taken whatever
    /// its size). Empty when nothing waits.
    mutating func takeGroup(maxWrites: Int, maxItems: Int) -> [WaitingWrite] {
        guard let first = waiting.first else { return [] }
        var group = [first]
        var items = first.write.items.count
        var kept: [WaitingWrite] = []
        kept.reserveCapacity(waiting.count)
        var full = false
        for w in waiting.dropFirst() {
            if !full, w.write.shard == first.write.shard {
                if group.count < maxWrites, items + w.write.items.count <= maxItems {
                    group.append(w)
                    items += w.write.items.count
                    continue
                }
                // A later write of the shard must not pass this one.
                full = true
            }
            kept.append(w)
        }
        waiting = kept
        return group
    }
}

/// What each write of a group is answered, once the group's transaction has
/// ended: each its own outcome when the group committed, every one refused
/// when it did not (nothing of the group is in the file then, whatever a
/// write's own outcome was).
enum GroupAnswers {
    static func answers(
        _ writes: [WaitingWrite], _ outcome: Result<[Result<Applied<[ItemResult]>, any Error>], any Error>
    ) -> [Body] {
        switch outcome {
        case .failure(let error):
            return writes.map { w in .error(WireError(code: "store_failed", message: "shard \(w.write.shard): \(error)")) }
        case .success(let results):
            return zip(writes, results).map { w, result in
                let shard = w.write.shard
                switch result {
                case .success(.done(let items)):
                    return .writeAck(Body.WriteAck(shard: shard, results: items))
                case .success(.skipped):
                    let items = w.write.items.enumerated().map { i, item in
                        ItemResult(index: i, uniqueIdentifier: item["uniqueIdentifier"]?.stringValue, status: .stored)
                    }
                    return .writeAck(Body.WriteAck(shard: shard, results: items))
                case .success(.gap(let have)):
                    return .error(IndexerService.outOfSequence(shard: shard, sequence: w.write.sequence ?? 0, have: have))
                case .success(.staleEpoch(let have)):
                    return .error(IndexerService.staleEpoch(shard: shard, epoch: w.write.epoch, have: have))
                case .success(.awaitingRegistration):
                    // Only when the worker stops: otherwise `applyGroup` applies the group again once the registration is answered.
                    return .error(WireError(code: "store_failed", message: "shard \(shard): the worker stopped while registering"))
                case .failure(let error):
                    return .error(WireError(code: "store_failed", message: "shard \(shard): \(error)"))
                }
            }
        }
    }
}

/// The indexer's waiting writes, applied by one task a group at a time
/// (``WriteQueue``), so that a shard's writes that wait together commit
/// together (``ShardStore/group(_:)``).
///
/// The link's loop hands each write over (``add(_:)``) and reads on; it
/// waits only when `maxWaiting` writes wait already (``waitForRoom()``), as
/// it waited for each write before. Any other message first waits until no
/// write waits or is being applied (``idle()``), so it comes after every
/// write read before it. One group at a time, as one write at a time before:
/// the indexers (two by default) are what keeps the cores busy.
actor WriteGroups {
    private var queue = WriteQueue()
    private var applying = false
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []
    let maxWaiting: Int
    let maxWrites: Int
    let maxItems: Int

    init(maxWaiting: Int, maxWrites: Int, maxItems: Int) {
        self.maxWaiting = max(1, maxWaiting)
        self.maxWrites = max(1, maxWrites)
        self.maxItems = max(1, maxItems)
    }

    /// Queues a write. True when no task is applying groups: the caller
    /// starts one, which takes ``next()`` until it is empty.
    func add(_ write: WaitingWrite) -> Bool {
        queue.add(write)
        if applying { return false }
        applying = true
        return true
    }

    /// Returns once fewer than `maxWaiting` writes wait.
    func waitForRoom() async {
        guard queue.count >= maxWaiting else { return }
        await withCheckedContinuation { roomWaiters.append($0) }
    }

    /// The next group to apply; empty when none waits, and the applying
    /// task ends (a later ``add(_:)`` asks for another).
    func next() -> [WaitingWrite] {
        let group = queue.takeGroup(maxWrites: maxWrites, maxItems: maxItems)
        if queue.count < maxWaiting {
            for w in roomWaiters { w.resume() }
            roomWaiters.removeAll()
        }
        if group.isEmpty {
            applying = false
            for w in idleWaiters { w.resume() }
            idleWaiters.removeAll()
        }
        return group
    }

    /// Returns once every write queued so far has been applied and answered.
    func idle() async {
        guard applying || !queue.isEmpty else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }
}

extension IndexerService {
    static func awaitsRegistration(_ result: Result<Applied<[ItemResult]>, any Error>) -> Bool {
        if case .success(.awaitingRegistration) = result { return true }
        return false
    }

    /// Applies the waiting writes a group at a time until none waits.
    func applyWaitingWrites() async {
        while true {
            let group = await groups.next()
            guard let first = group.first else { return }
            await applyGroup(group, shard: first.write.shard)
        }
    }

    /// Applies a group of one shard's writes in one transaction, each write
    /// in a savepoint with its own sequence check and outcome, and answers
    /// each once the transaction has ended: acknowledgements only after the
    /// commit. `send` is how an answer leaves (the link, but for tests).
    func applyGroup(_ writes: [WaitingWrite], shard: Int, send: ((String, Body) async -> Void)? = nil) async {
        guard let (box, exec) = stores[shard] else { return }
        let embedding = self.embedding
        let registrations = link.registrations
        var outcome: Result<[Result<Applied<[ItemResult]>, any Error>], any Error>
        repeat {
            do {
                outcome = .success(
                    try await exec.run {
                        // One reading for the group: while a registration is
                        // unanswered the whole group waits, none of it applied.
                        let fence = registrations.fence
                        if fence.registering { return writes.map { _ in .success(.awaitingRegistration) } }
                        return try box.value.group(
                            writes.map { waiting in
                                let w = waiting.write
                                return { store in
                                    try Self.sequenced(store, sequence: w.sequence, epoch: w.epoch, fence: fence) { store in
                                        let vectors = try embedding.vectors(for: w.items, in: store)
                                        return try store.write(w.items, evicting: w.evict, vectors: vectors).enumerated().map { i, outcome in
                                            Self.result(i, outcome)
                                        }
                                    }
                                }
                            })
                    })
            } catch {
                outcome = .failure(error)
            }
            if case .success(let results) = outcome, results.contains(where: Self.awaitsRegistration) {
                await registrations.settled()
                if !Task.isCancelled { continue }
            }
            break
        } while true
        switch outcome {
        case .failure(let error):
            logger.error("a group of writes failed", metadata: ["shard": "\(shard)", "writes": "\(writes.count)", "error": "\(error)"])
            for _ in writes { tally.finished(failed: true) }
        case .success(let results):
            for result in results {
                switch result {
                case .success(.done):
                    tally.changed(shard: shard, wrote: true)
                    tally.finished()
                case .success(.staleEpoch): tally.refusedStaleEpoch()
                case .success(.skipped), .success(.gap), .success(.awaitingRegistration): break
                case .failure(let error):
                    tally.finished(failed: true)
                    logger.error("write failed", metadata: ["shard": "\(shard)", "error": "\(error)"])
                }
            }
        }
        for (w, answer) in zip(writes, GroupAnswers.answers(writes, outcome)) {
            if let send { await send(w.id, answer) } else { await link.send(w.id, answer) }
        }
    }
}
