import Foundation
import WireProtocol

/// A query worker inside the coordinator's process: `limelight-coordinator
/// --local-data DIR` (and `limelight up --local-queries`) answers the shards
/// of one data folder itself, beside (or instead of) `limelight-query`
/// processes.
///
/// Why: on one host, a word query through separate query workers costs two
/// more messages per shard, each encoded, decoded and handed between four
/// threads in two processes; that is most of a query's time (see
/// `limelight-bench path`). Here the coordinator hands a shard's part to
/// the runner as a value on the thread that holds the core, and the runner's
/// thread takes the core back to merge what it found, with no socket, no
/// message encoding and no other process in between. An unsorted query's
/// items come as the bytes the store copied out of its stored JSON
/// (`RawJSON`), which the coordinator splices into the client's batches.
///
/// Everything else stays as for a remote query worker: it is registered as
/// one (the stats list it, with `host` "local"), it reads the replica its
/// folder holds and is used only while that replica is fresh, and retries,
/// deadlines, `busy` and cancels go through the same code. It never misses a
/// heartbeat, so it is never declared dead.
package struct LocalQueryWorker: Sendable {
    package var workerID: String
    package var shards: [Int]
    /// The replica its folder holds (`Body.Register.replica`): the name the
    /// folder's indexer registers with.
    package var replica: String
    /// Takes a `shard_query`, `shard_search` or `cancel` without blocking or
    /// calling back into the coordinator (it queues the work); false for
    /// any other message.
    package var take: @Sendable (Envelope) -> Bool

    package init(workerID: String, shards: [Int], replica: String, take: @escaping @Sendable (Envelope) -> Bool) {
        self.workerID = workerID
        self.shards = shards
        self.replica = replica
        self.take = take
    }

    /// The route it is known by: ZeroMQ never gives or accepts a routing id
    /// that starts with a zero byte, so no remote worker can have it.
    static let route = [Data([0]) + Data("limelight-local-query".utf8)]
}

extension CoordinatorService {
    /// Registers a query worker in this process (see ``LocalQueryWorker``).
    package func attach(_ local: LocalQueryWorker) {
        let core = self.core
        core.executor.run { core.assumeIsolated { $0.attachLocal(local) } }
    }

    /// How the local worker answers from its own threads: the core is taken
    /// on the calling thread, as the sockets' threads take it.
    package func localReply(_ id: String, _ body: Body) {
        let core = self.core
        core.executor.run { core.assumeIsolated { $0.handleWorker(route: LocalQueryWorker.route, envelope: Envelope(id: id, body: body)) } }
    }

    /// Leaves `job` for the client socket's thread, to run once the
    /// messages it read are handled (``AsyncSocket/deferUntilRead(_:)``):
    /// the local worker's way to run a search on the thread that read it
    /// (see ``ShardQueryRunner``'s `inline`). False on any other thread.
    package func deferUntilClientsRead(_ job: @escaping @Sendable (_ here: Bool) -> Void) -> Bool {
        clients.deferUntilRead(job)
    }

    /// How the local worker answers from the thread that handed it a message
    /// (which holds the core): later, in a task, never re-entering the core
    /// in the middle of a handler.
    package func localReplyLater(_ id: String, _ body: Body) {
        let core = self.core
        Task { await core.handleWorker(route: LocalQueryWorker.route, envelope: Envelope(id: id, body: body)) }
    }
}

extension CoordinatorCore {
    func attachLocal(_ local: LocalQueryWorker) {
        localWorker = local
        var r = Body.Register(role: .query, worker: local.workerID, shards: local.shards, host: "local", pid: Int(getpid()))
        r.replica = local.replica
        registry.register(
            WorkerRecord(
                id: local.workerID, role: .query, shards: local.shards, route: LocalQueryWorker.route,
                lastSeen: .now, host: "local", pid: r.pid, registeredAt: Date()))
        logger.info(
            "local query worker attached",
            metadata: [
                "worker": "\(local.workerID)", "replica": "\(local.replica)",
                "shards": "\(local.shards.map(String.init).joined(separator: ","))",
            ])
        replicaRegistered(r)
    }

    /// Hands a message for the local worker over; true when it was for it.
    func sendLocal(_ to: Peer, _ id: String, _ body: Body) -> Bool {
        guard let localWorker, case .worker(let route) = to, route == LocalQueryWorker.route else { return false }
        _ = localWorker.take(Envelope(id: id, body: body))
        return true
    }
}
