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
        if publishes.count >= configuration.maxPendingWrites || !waitingWrites.isEmpty && !startingWaitingWrites {
            holdPublish(client: client, id: id, p, rejected: rejected, scope: scope)
            return
        }
        count("publish.batches")
        count("publish.items", by: p.items.count)
        let publishID = makeID("p")
        var pending = PendingPublish(client: client, requestID: id, batch: p.batch,
                                     identifiers: p.items.map { $0["uniqueIdentifier"]?.stringValue },
                                     results: Array(repeating: nil, count: p.items.count),
                                     outstanding: [], committed: [], shardOf: [:], started: .now, scope: scope)
        var byShard: [Int: [Int]] = [:]
        var allIDs: [String] = []
        for (i, item) in p.items.enumerated() {
            if let r = rejected[i] {
                pending.results[i] = r
                continue
            }
            guard case .object(let o) = item else {
                pending.results[i] = ItemResult(index: i, uniqueIdentifier: nil, status: .rejected,
                                                error: WireError(ItemError(.notAnObject, "an item must be a JSON object, found \(item.kindName)")))
                continue
            }
            guard let uid = o["uniqueIdentifier"]?.stringValue, !uid.isEmpty else {
                pending.results[i] = ItemResult(index: i, uniqueIdentifier: nil, status: .rejected,
                                                error: WireError(ItemError(.missingIdentifier, "uniqueIdentifier is missing or not text", field: "uniqueIdentifier")))
                continue
            }
            var domain = ""
            if let d = o["domainIdentifier"], d != .null {
                guard let s = d.stringValue, DomainIdentifier.isValid(s) else {
                    pending.results[i] = ItemResult(index: i, uniqueIdentifier: uid, status: .rejected,
                                                    error: WireError(ItemError(.invalidDomain, "domainIdentifier must be dot-separated names without spaces", field: "domainIdentifier")))
                    continue
                }
                domain = s
            }
            let shard = Sharding.shard(forDomain: domain, shardCount: configuration.shards)
            byShard[shard, default: []].append(i)
            allIDs.append(uid)
        }
        pending.shardOf = byShard
        for shard in 0..<configuration.shards {
            let indices = byShard[shard] ?? []
            // An item whose domain moved to another shard must leave its old one.
            var evict: [String] = []
            if configuration.shards > 1 {
                let here = Set(indices.compactMap { p.items[$0]["uniqueIdentifier"]?.stringValue })
                evict = allIDs.filter { !here.contains($0) }
            }
            if indices.isEmpty && evict.isEmpty { continue }
            let replicas = writeReplicas(shard: shard)
            if replicas.isEmpty {
                for i in indices {
                    pending.results[i] = ItemResult(index: i, uniqueIdentifier: p.items[i]["uniqueIdentifier"]?.stringValue, status: .rejected,
                                                    error: WireError(code: "shard_unavailable", message: unavailableReason(shard: shard) + "; nothing was stored, resend later"))
                }
                if !evict.isEmpty {
                    logger.warning("could not evict moved items from a shard with no live indexer", metadata: ["shard": "\(shard)"])
                }
                continue
            }
            let items = indices.map { p.items[$0] }
            let change = sequenced(shard: shard, .write(Body.Write(shard: shard, items: items, evict: evict)))
            for w in replicas {
                let writeID = makeID("w")
                shardWrites[writeID] = ShardWrite(publish: publishID, shard: shard, worker: w.id, indices: indices)
                pending.outstanding.insert(writeID)
                track(writeID, worker: w.id, shard: shard, sequence: change.sequence)
                send(.worker(w.route), writeID, change.body)
            }
        }
        publishes[publishID] = pending
        finishPublishIfDone(publishID)
    }

    func writeAcked(writeID: String, ack: Body.WriteAck?, error: WireError?) {
        guard let w = shardWrites.removeValue(forKey: writeID), var pending = publishes[w.publish] else { return }
        pending.outstanding.remove(writeID)
        if let ack {
            pending.committed.insert(w.shard)
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
        } else if var error {
            // One replica failed: the item is not stored on every replica, so
            // it is not acknowledged as stored, whatever the others said.
            if error.code == "out_of_sequence" {
                // The replica missed earlier changes and is being caught up:
                // nothing wrong with the items, so the producer sends them again.
                error = WireError(code: "shard_unavailable", message: "a replica of shard \(w.shard) is catching up (\(error.message)); resend")
            }
            for g in w.indices where pending.results[g]?.status != .rejected {
                pending.results[g] = ItemResult(index: g, uniqueIdentifier: pending.identifiers[g], status: .rejected, error: error)
            }
        }
        publishes[w.publish] = pending
        finishPublishIfDone(w.publish)
    }

    func finishPublishIfDone(_ publishID: String) {
        guard let pending = publishes[publishID], pending.outstanding.isEmpty else { return }
        publishes.removeValue(forKey: publishID)
        defer { startWaitingWrites() }
        var results: [ItemResult] = []
        results.reserveCapacity(pending.results.count)
        for (i, r) in pending.results.enumerated() {
            if var r {
                r.uniqueIdentifier = r.uniqueIdentifier.map { pending.scope.unqualify(uid: $0) }
                results.append(r)
                continue
            }
            // Every replica that was asked is gone without answering.
            results.append(ItemResult(index: i, uniqueIdentifier: pending.identifiers[i].map { pending.scope.unqualify(uid: $0) }, status: .rejected,
                                      error: WireError(code: "shard_unavailable", message: "the indexer stopped before committing; resend")))
        }
        let ack = Body.PublishAck(batch: pending.batch, results: results)
        metrics.publishDuration.record(duration: pending.started.duration(to: .now))
        count("publish.stored", by: ack.stored)
        count("publish.rejected", by: ack.rejected)
        send(.client(pending.client), pending.requestID, .publishAck(ack))
    }
}
