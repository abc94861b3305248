import Foundation
import Items
import Logging
import Planner
import QueryPlan
import Tenancy
import WireProtocol

/// Deletes and declarations: fanned out to the indexers, answered when every shard has.
extension CoordinatorCore {
    // MARK: Delete and declare

    /// `scope`: the app whose items may go; `all` is all of the app's.
    func delete(client: [Data], id: String, _ d: Body.Delete, scope: TenantScope = .unscoped) {
        count(.deletes)
        let hasIDs = !(d.ids ?? []).isEmpty, hasDomains = !(d.domains ?? []).isEmpty, all = d.all == true
        guard hasIDs || hasDomains || all else {
            sendError(.client(client), id, WireError(code: "invalid_message", message: "delete needs 'ids', 'domains' or 'all': true"))
            return
        }
        for domain in d.domains ?? [] where domain.isEmpty || !DomainIdentifier.isValid(domain) {
            sendError(.client(client), id, WireError(code: "invalid_domain", message: "'\(domain)' is not a domain identifier", field: "domains"))
            return
        }
        let d = scope.qualify(delete: d)
        // `shards` limits the delete to those shards (all of them when absent):
        // `{"all": true, "shards": [2]}` empties shard 2 only. A shard the
        // cluster does not have is an error, and nothing is deleted.
        var targets = Array(0..<shardCount)
        if let only = d.shards {
            let missing = only.filter { $0 < 0 || $0 >= shardCount }
            guard missing.isEmpty else {
                let names = missing.map(String.init).joined(separator: ", ")
                sendError(
                    .client(client), id,
                    WireError(
                        code: "bad_shard",
                        message: "the cluster has shards 0-\(shardCount - 1); "
                            + "no shard \(names); nothing was deleted", field: "shards"))
                return
            }
            guard !only.isEmpty else {
                sendError(
                    .client(client), id,
                    WireError(
                        code: "invalid_message", message: "'shards' is empty: name at least one shard, or leave it out for every shard",
                        field: "shards"))
                return
            }
            targets = Array(Set(only)).sorted()
        }
        fanOut(
            WriteTracker.PendingDelete(client: client, requestID: id), id: makeID("d"),
            to: targets
        ) { shard in .delete(Body.Delete(ids: d.ids, domains: d.domains, all: d.all, shards: [shard])) }
    }

    /// Sends one message per shard to each of its live indexers, tracked as
    /// `pending` under `pendingID`: each replica answers, a shard counts once,
    /// and a shard without a live indexer is named as failed.
    func fanOut(_ pending: WriteTracker.PendingDelete, id pendingID: String, to shards: [Int], _ body: (Int) -> Body) {
        writes.beginDelete(pendingID, pending)
        for shard in shards {
            let replicas = writeReplicas(shard: shard)
            if replicas.isEmpty {
                writes.deleteUnroutable(pendingID, shard: shard, reason: unavailableReason(shard: shard))
                continue
            }
            guard inSyncCovers(shard: shard, replicas: replicas) else {
                writes.deleteUnroutable(pendingID, shard: shard, reason: noMemberReason(shard: shard))
                continue
            }
            let change = sequenced(shard: shard, body(shard))
            if let ticket = inSyncSent(shard: shard, sequence: change.sequence, to: replicas) {
                writes.deleteWaits(pendingID, shard: shard, ticket: ticket)
            }
            let awaited = awaited(shard: shard, among: replicas)
            for w in replicas {
                let wid = makeID("x")
                if awaited.contains(w.id) { writes.deleteSent(wid, for: pendingID, to: w.id, shard: shard) }
                track(wid, worker: w.id, shard: shard, sequence: change.sequence, clientWaits: awaited.contains(w.id))
                send(.worker(w.route), wid, change.body)
            }
        }
        perform(writes.deleteRouted(pendingID))
    }

    func deleteAcked(workerMessageID: String, deleted: Int?, error: WireError?) {
        perform(writes.deleteAnswered(workerMessageID, deleted: deleted, error: error))
    }

    /// Answers a delete or entity operation every shard has answered.
    func finishDelete(_ pending: WriteTracker.PendingDelete) {
        let total = pending.deletedByShard.values.reduce(0, +)
        if let op = pending.entity {
            finishEntityOperation(op, pending, total: total)
            return
        }
        if !pending.failed.isEmpty {
            let names = pending.failed.map { "shard \($0.shard) (\($0.reason))" }.joined(separator: ", ")
            sendError(
                .client(pending.client), pending.requestID,
                WireError(code: "shard_unavailable", message: "deleted \(total) items, but not on \(names)"))
            return
        }
        send(.client(pending.client), pending.requestID, .deleteAck(Body.DeleteAck(deleted: total)))
    }

    /// Declares in two rounds: every indexer first checks the declaration
    /// against its shards (`check`), and only when none refused it is it
    /// declared; so a declaration that conflicts with the values of one shard
    /// changes no shard.
    func declare(client: [Data], id: String, _ d: Body.Declare, scope: TenantScope) {
        let missing = (0..<shardCount).filter { liveWorkers(.indexer, shard: $0).isEmpty }
        if !missing.isEmpty {
            sendError(
                .client(client), id,
                WireError(
                    code: "shard_unavailable",
                    message: "shards \(missing.map(String.init).joined(separator: ",")) have no live indexer; declare again when they do"))
            return
        }
        var declaration = d
        declaration.check = nil
        declaration.exampleTag = nil
        let declareID = makeID("k")
        // Declarations apply to every app; a refusal names only the
        // declaring app's own items (any item, unscoped).
        perform(
            writes.beginDeclare(
                declareID,
                WriteTracker.PendingDeclare(client: client, requestID: id, declaration: declaration, exampleTag: scope.qualify(uid: ""))))
    }

    /// Sends a declaration's round (the check, then the declaration itself)
    /// to every indexer.
    func sendDeclareRound(_ declareID: String, _ message: Body.Declare, declaring: Bool) {
        if declaring, !replication.declarations.contains(message) { replication.declarations.append(message) }
        for w in registry.indexers {
            let wid = makeID("k")
            writes.declareSent(wid, for: declareID, to: w.id)
            send(.worker(w.route), wid, .declare(message))
        }
        perform(writes.roundSent(declareID))
    }

    func declareAcked(workerMessageID: String, error: WireError?) {
        perform(writes.declareAnswered(workerMessageID, error: error))
    }
}
