import Foundation
import Items
import Logging
import Planner
import QueryPlan
import Tenancy
import WireProtocol

/// Publishing: routing a batch's items to every live replica of their shards, and acknowledging them.
extension CoordinatorCore {
    // MARK: Publish

    /// `rejected`: items already refused before routing (entities that are
    /// not valid donations), answered in place with their reason.
    /// `scope`: the app the items are for; they arrive with their names qualified already.
    func publish(client: [Data], id: String, _ p: Body.Publish, rejected: [Int: ItemResult] = [:], scope: TenantScope = .unscoped) {
        switch writes.admit(
            WriteTracker.WaitingPublish(client: client, requestID: id, publish: p, rejected: rejected, scope: scope),
            maxPending: configuration.maxPendingWrites, maxWaiting: configuration.maxWaitingWrites, draining: startingWaitingWrites)
        {
        case .start:
            break
        case .held:
            count(.publishThrottled)
            return
        case .busy:
            count(.publishBusy)
            sendError(
                .client(client), id,
                WireError(
                    code: "busy",
                    message: "the coordinator has \(writes.publishes.count) publish batches in flight "
                        + "and \(writes.waiting.count) waiting (the limits are \(configuration.maxPendingWrites) and \(configuration.maxWaitingWrites)); send this batch again later"
                ))
            return
        }
        count(.publishBatches)
        count(.publishItems, by: p.items.count)
        let publishID = makeID("p")
        var pending = WriteTracker.PendingPublish(
            client: client, requestID: id, batch: p.batch,
            identifiers: p.items.map { $0["uniqueIdentifier"]?.stringValue },
            results: Array(repeating: nil, count: p.items.count),
            started: .now, scope: scope)
        var byShard: [Int: [Int]] = [:]
        var allIDs: [String] = []
        for (i, item) in p.items.enumerated() {
            if let r = rejected[i] {
                pending.results[i] = r
                continue
            }
            guard case .object(let o) = item else {
                pending.results[i] = ItemResult(
                    index: i, uniqueIdentifier: nil, status: .rejected,
                    error: WireError(ItemError(.notAnObject, "an item must be a JSON object, found \(item.kindName)")))
                continue
            }
            guard let uid = o["uniqueIdentifier"]?.stringValue, !uid.isEmpty else {
                pending.results[i] = ItemResult(
                    index: i, uniqueIdentifier: nil, status: .rejected,
                    error: WireError(ItemError(.missingIdentifier, "uniqueIdentifier is missing or not text", field: "uniqueIdentifier")))
                continue
            }
            var domain = ""
            if let d = o["domainIdentifier"], d != .null {
                guard let s = d.stringValue, DomainIdentifier.isValid(s) else {
                    pending.results[i] = ItemResult(
                        index: i, uniqueIdentifier: uid, status: .rejected,
                        error: WireError(
                            ItemError(.invalidDomain, "domainIdentifier must be dot-separated names without spaces", field: "domainIdentifier")))
                    continue
                }
                domain = s
            }
            let shard = Sharding.shard(forDomain: domain, shardCount: shardCount)
            byShard[shard, default: []].append(i)
            allIDs.append(uid)
        }
        pending.shardOf = byShard
        var sends: [(id: String, write: WriteTracker.ShardWrite, route: [Data], body: Body, sequence: Int, awaited: Bool)] = []
        for shard in 0..<shardCount {
            let indices = byShard[shard] ?? []
            // An item whose domain moved to another shard must leave its old one.
            var evict: [String] = []
            if shardCount > 1 {
                let here = Set(indices.compactMap { p.items[$0]["uniqueIdentifier"]?.stringValue })
                evict = allIDs.filter { !here.contains($0) }
            }
            if indices.isEmpty && evict.isEmpty { continue }
            let replicas = writeReplicas(shard: shard)
            if replicas.isEmpty {
                for i in indices {
                    pending.results[i] = ItemResult(
                        index: i, uniqueIdentifier: p.items[i]["uniqueIdentifier"]?.stringValue, status: .rejected,
                        error: WireError(code: "shard_unavailable", message: unavailableReason(shard: shard) + "; nothing was stored, resend later"))
                }
                if !evict.isEmpty {
                    logger.warning("could not evict moved items from a shard with no live indexer", metadata: ["shard": "\(shard)"])
                }
                continue
            }
            guard inSyncCovers(shard: shard, replicas: replicas) else {
                for i in indices {
                    pending.results[i] = ItemResult(
                        index: i, uniqueIdentifier: p.items[i]["uniqueIdentifier"]?.stringValue, status: .rejected,
                        error: WireError(code: "shard_unavailable", message: noMemberReason(shard: shard) + "; nothing was stored, resend later"))
                }
                continue
            }
            let items = indices.map { p.items[$0] }
            let change = sequenced(shard: shard, .write(Body.Write(shard: shard, items: items, evict: evict)))
            if let ticket = inSyncSent(shard: shard, sequence: change.sequence, to: replicas) {
                pending.inSync.tickets[shard] = ticket
                pending.inSync.items[shard] = indices
            }
            let awaited = awaited(shard: shard, among: replicas)
            for w in replicas {
                sends.append(
                    (
                        makeID("w"), WriteTracker.ShardWrite(publish: publishID, shard: shard, worker: w.id, indices: indices),
                        w.route, change.body, change.sequence, awaited.contains(w.id)
                    ))
            }
        }
        writes.beginPublish(publishID, pending)
        for s in sends {
            if s.awaited { writes.writeSent(s.id, s.write) }
            track(s.id, worker: s.write.worker, shard: s.write.shard, sequence: s.sequence, clientWaits: s.awaited)
            send(.worker(s.route), s.id, s.body)
        }
        perform(writes.publishRouted(publishID))
    }

    func writeAcked(writeID: String, ack: Body.WriteAck?, error: WireError?) {
        if let ack { perform(writes.writeAcked(writeID, ack)) } else if let error { perform(writes.writeFailed(writeID, error)) }
    }

    /// Sends what the write tracker decided (``WriteTracker/Action``).
    func perform(_ actions: [WriteTracker.Action]) {
        for action in actions {
            switch action {
            case .publishDone(let client, let requestID, let ack, let started, let inSync):
                answerWhenInSync(HeldAnswer(wait: inSync, answer: .publish(client: client, requestID: requestID, ack: ack, started: started)))
            case .deleteDone(let pending):
                answerWhenInSync(HeldAnswer(wait: pending.inSync, answer: .delete(pending)))
            case .declareRound(let id, let message, let declaring):
                sendDeclareRound(id, message, declaring: declaring)
            case .declareDone(let client, let requestID, let error):
                if let error { sendError(.client(client), requestID, error) } else { send(.client(client), requestID, .declareAck(Body.Empty())) }
            }
        }
    }
}
