import Foundation
import Items
import Testing
import WireProtocol

@testable import Coordinator

/// Replication's decisions, without processes: numbering and the log, a
/// replica that registers behind (caught up, or detached and copied), the
/// answers to numbered changes, freshness, and the sweep's repairs.
@Suite("Replication state")
struct ReplicationStateTests {
    static func write(_ n: Int) -> Body {
        .write(Body.Write(shard: 0, items: (0..<n).map { .object(["uniqueIdentifier": .string("i\($0)")]) }))
    }

    /// Replicas "a" (indexer "ia") and "b" (indexer "ib") of shard 0, both
    /// empty at first; then `changes` writes of one item each, applied by
    /// "a" only, with a log of `logLimit` items.
    static func numbered(_ changes: Int, logLimit: Int = 100) -> ReplicationState {
        var r = ReplicationState()
        _ = r.registered(indexer("ia", replica: "a", at: 0))
        _ = r.registered(indexer("ib", replica: "b", at: 0))
        for i in 1...changes {
            let (n, _) = r.number(write(1), shard: 0, logLimit: logLimit)
            r.track("w\(i)", worker: "ia", shard: 0, sequence: n)
            _ = r.answered("w\(i)", by: "ia", .writeAck(Body.WriteAck(shard: 0, results: [])))
        }
        return r
    }

    static func indexer(_ worker: String, replica: String, at sequence: Int?, shards: [Int] = [0]) -> Body.Register {
        var r = Body.Register(role: .indexer, worker: worker, shards: shards)
        r.replica = replica
        r.sequences = sequence.map { s in shards.map { ShardSequence(shard: $0, sequence: s) } }
        return r
    }

    @Test func changesAreNumberedInOrderAndTheLogKeepsTheNewest() {
        var r = ReplicationState()
        let (n1, b1) = r.number(Self.write(2), shard: 0, logLimit: 3)
        let (n2, _) = r.number(Self.write(2), shard: 0, logLimit: 3)
        let (m1, _) = r.number(Self.write(1), shard: 1, logLimit: 3)
        #expect(n1 == 1 && n2 == 2 && m1 == 1)
        guard case .write(let w) = b1 else { Issue.record("not a write"); return }
        #expect(w.sequence == 1)
        // Four items is over the limit of three: the oldest change is dropped.
        #expect(r.log[0]?.map(\.sequence) == [2])
        #expect(r.start(0) == 2)
        #expect(r.start(1) == 1)
    }

    /// While a copy of the shard runs, the log keeps every change after the
    /// copy's pin, up to ten times its limit, so that the copy is caught up
    /// once installed however long it took; past that the pin gives way.
    @Test func aRunningCopyKeepsTheLogFromItsPin() {
        var r = ReplicationState()
        for _ in 1...3 { _ = r.number(Self.write(1), shard: 0, logLimit: 2) }
        #expect(r.start(0) == 2)
        var copy = ShardCopies.Copy(id: "copy-1", shard: 0, source: "ia", target: "ib", replica: "b")
        copy.pin = 3
        r.copies.running[copy.id] = copy
        for _ in 4...10 { _ = r.number(Self.write(1), shard: 0, logLimit: 2) }
        #expect(r.start(0) == 4)
        #expect(r.copyInstalled(copy, sequence: 3) == [.catchUp(worker: "ib", shard: 0, after: 3)])
        r.copies.running[copy.id] = copy
        for _ in 11...40 { _ = r.number(Self.write(1), shard: 0, logLimit: 2) }
        #expect(r.log[0]?.count == 20)
        #expect(r.start(0) == 21)
        // With no copy running, the log is held to its limit again.
        r.copies.running = [:]
        _ = r.number(Self.write(1), shard: 0, logLimit: 2)
        #expect(r.log[0]?.map(\.sequence) == [40, 41])
    }

    /// A replica that registers behind, within the log, is sent the
    /// declarations and then the changes it missed.
    @Test func aReplicaBehindWithinTheLogIsCaughtUp() {
        var r = Self.numbered(5)
        let actions = r.registered(Self.indexer("ib", replica: "b", at: 3))
        #expect(actions == [.replayDeclarations(worker: "ib"), .catchUp(worker: "ib", shard: 0, after: 3)])
        let entries = r.beginCatchUp(worker: "ib", shard: 0, after: 3)
        #expect(entries.map(\.sequence) == [4, 5])
        #expect(r.catchingUp["ib"] == [0: 5])
        #expect(!r.isFresh("ib", shard: 0))

        r.track("c1", worker: "ib", shard: 0, sequence: 4, catchUp: true)
        r.track("c2", worker: "ib", shard: 0, sequence: 5, catchUp: true)
        let ack = Body.writeAck(Body.WriteAck(shard: 0, results: []))
        #expect(r.answered("c1", by: "ib", ack) == ReplicationState.Answer(consumed: true))
        #expect(r.answered("c2", by: "ib", ack) == ReplicationState.Answer(consumed: true, actions: [.caughtUp(worker: "ib", shard: 0, sequence: 5)]))
        #expect(r.catchingUp["ib"]?[0] == nil)
        #expect(r.isFresh("ib", shard: 0))
    }

    /// A live change sent to a replica being caught up is tracked for
    /// replication but awaited by no client: its answer is replication's
    /// alone, it counts for no freshness of a replica kept from queries,
    /// and until it is answered the replica may not rejoin its in-sync set.
    @Test func aLiveChangeNoClientWaitsForIsReplicationsAlone() {
        var r = Self.numbered(5)
        _ = r.registered(Self.indexer("ib", replica: "b", at: 3))
        r.track("w6", worker: "ib", shard: 0, sequence: 6, clientWaits: false)
        r.track("w7", worker: "ib", shard: 0, sequence: 7)
        #expect(r.unawaitedInFlight(worker: "ib", shard: 0))
        #expect(!r.unawaitedInFlight(worker: "ib", shard: 1))
        #expect(!r.awaitsOnly("b", shard: 0, after: 5, through: 7), "change 6 is on its way, but no client waits for it")
        let ack = Body.writeAck(Body.WriteAck(shard: 0, results: []))
        #expect(r.answered("w6", by: "ib", ack).consumed, "no client waits for it: nothing else is told")
        #expect(!r.unawaitedInFlight(worker: "ib", shard: 0))
        #expect(!r.answered("w7", by: "ib", ack).consumed)
        #expect(r.applied["b"]?[0] == 7)
        // A catch-up's change is never one a client waits for, whatever the caller says.
        r.track("c8", worker: "ib", shard: 0, sequence: 8, catchUp: true, clientWaits: true)
        #expect(r.inFlight["c8"]?.clientWaits == false)
    }

    /// A replica one change behind another, that change on its way to it
    /// and awaited by its client, is not fresh but holds every acknowledged
    /// change: a query may read it when no replica is fresh. Not once the
    /// change is one no client waits for, nor once its indexer is lost.
    @Test func aReplicaLackingOnlyChangesNotYetAcknowledgedMayBeRead() {
        var r = Self.numbered(2)
        _ = r.registered(Self.indexer("ib", replica: "b", at: 2))
        var q = Body.Register(role: .query, worker: "qb", shards: [0])
        q.replica = "b"
        _ = r.registered(q)
        #expect(r.isFresh("qb", shard: 0))
        let (n, _) = r.number(Self.write(1), shard: 0, logLimit: 100)
        r.track("w3a", worker: "ia", shard: 0, sequence: n)
        r.track("w3b", worker: "ib", shard: 0, sequence: n)
        let ack = Body.writeAck(Body.WriteAck(shard: 0, results: []))
        _ = r.answered("w3a", by: "ia", ack)
        #expect(!r.isFresh("qb", shard: 0), "a has change 3, b not yet")
        #expect(r.lacksOnlyUnacknowledged("qb", shard: 0), "change 3 waits for b's answer: not acknowledged")
        #expect(!r.lacksOnlyUnacknowledged("qa", shard: 0), "a query worker of no known replica")
        // A change to b no client waits for (b was behind when it was sent).
        let (m, _) = r.number(Self.write(1), shard: 0, logLimit: 100)
        r.track("w4a", worker: "ia", shard: 0, sequence: m)
        r.track("w4b", worker: "ib", shard: 0, sequence: m, clientWaits: false)
        _ = r.answered("w4a", by: "ia", ack)
        #expect(!r.lacksOnlyUnacknowledged("qb", shard: 0), "change 4 may be acknowledged without b")
        _ = r.answered("w3b", by: "ib", ack)
        _ = r.answered("w4b", by: "ib", ack)
        #expect(r.isFresh("qb", shard: 0))
        // b's indexer lost with a change on its way: what it lacks is no longer awaited from it.
        let (k, _) = r.number(Self.write(1), shard: 0, logLimit: 100)
        r.track("w5a", worker: "ia", shard: 0, sequence: k)
        r.track("w5b", worker: "ib", shard: 0, sequence: k)
        _ = r.answered("w5a", by: "ia", ack)
        #expect(r.lacksOnlyUnacknowledged("qb", shard: 0))
        r.lost("ib")
        #expect(!r.lacksOnlyUnacknowledged("qb", shard: 0))
    }

    /// Further behind than the log reaches: detached (no writes, no
    /// queries) until a copy; a replica that is current needs nothing.
    @Test func aReplicaBehindTheLogIsDetachedAndCopied() {
        var r = Self.numbered(5, logLimit: 2)
        #expect(r.start(0) == 4)
        #expect(
            r.registered(Self.indexer("ib", replica: "b", at: 2))
                == [.detached(worker: "ib", shard: 0, .tooFarBehind(have: 2, issued: 5, logStart: 4))])
        #expect(r.detached["b"] == [0])
        #expect(!r.isFresh("ib", shard: 0))
        #expect(r.registered(Self.indexer("ia", replica: "a", at: 5)).isEmpty)
    }

    /// A coordinator that restarted continues the sequence from a
    /// replica's number; a replica that reports numbers above the ones this
    /// coordinator gave, without having any of them, is detached.
    @Test func aRestartedCoordinatorContinuesFromTheReplicasNumber() {
        var r = ReplicationState()
        #expect(r.registered(Self.indexer("ia", replica: "a", at: 7)).isEmpty)
        #expect(r.issued[0] == 7 && r.committed[0] == 7 && r.start(0) == 8)
        #expect(r.number(Self.write(1), shard: 0, logLimit: 10).sequence == 8)

        var fresh = ReplicationState()
        _ = fresh.registered(Self.indexer("ia", replica: "a", at: 0))
        _ = fresh.number(Self.write(1), shard: 0, logLimit: 10)
        #expect(
            fresh.registered(Self.indexer("ib", replica: "b", at: 4))
                == [.detached(worker: "ib", shard: 0, .diverged(have: 4, issued: 1))])
    }

    /// A coordinator taking up a split after a takeover: replicas of the new
    /// shard 1 registered before, as any shard's (the sequence continued
    /// from the first, the others caught up or detached by it). Once the new
    /// shard mirrors its source (shard 0, at 24): one at 24 goes on; one at
    /// 25 holds a mirrored change the source never got and is detached (the
    /// next change, numbered 25, would be skipped there); one detached before
    /// is copied (from the source, now); one registering later at 25 is
    /// detached too.
    @Test func aNewShardsReplicasAreJudgedAgainWhenTheSplitIsTakenUp() {
        var r = ReplicationState()
        _ = r.registered(Self.indexer("ia", replica: "a", at: 24, shards: [0]))
        #expect(r.registered(Self.indexer("t1", replica: "t", at: 24, shards: [1])).isEmpty)
        #expect(r.registered(Self.indexer("s1", replica: "s", at: 25, shards: [1])).isEmpty)
        #expect(r.issued[1] == 25)
        #expect(
            r.registered(Self.indexer("v1", replica: "v", at: 10, shards: [1]))
                == [.detached(worker: "v1", shard: 1, .tooFarBehind(have: 10, issued: 25, logStart: 26))])

        #expect(
            r.mirror(1, from: r.issued[0] ?? 0, indexers: ["t1", "s1", "v1"])
                == [.detached(worker: "s1", shard: 1, .diverged(have: 25, issued: 24)), .copy(worker: "v1", shard: 1)])
        #expect(r.issued[1] == 24 && r.committed[1] == 24 && r.start(1) == 25)
        #expect(r.detached["s"] == [1] && r.detached["v"] == [1] && r.lineage[1] == ["t"])
        #expect(!r.isFresh("s1", shard: 1) && !r.isFresh("v1", shard: 1) && r.isFresh("t1", shard: 1))
        #expect(r.number(Self.write(1), shard: 1, logLimit: 10).sequence == 25)
        #expect(
            r.registered(Self.indexer("u1", replica: "u", at: 25, shards: [1]))
                == [.detached(worker: "u1", shard: 1, .diverged(have: 25, issued: 25))])
    }

    /// An indexer that missed a change while connected answers
    /// `out_of_sequence`: caught up from the log, or copied when the log no
    /// longer reaches; another error ends its catch-up.
    @Test func outOfSequenceStartsACatchUpAndOtherErrorsEndIt() {
        var r = Self.numbered(3)
        _ = r.registered(Self.indexer("ib", replica: "b", at: 3))
        let (n, _) = r.number(Self.write(1), shard: 0, logLimit: 100)
        r.track("w9", worker: "ib", shard: 0, sequence: n)
        let refused = Body.error(WireError(code: "out_of_sequence", message: "expected 4"))
        #expect(
            r.answered("w9", by: "ib", refused) == ReplicationState.Answer(consumed: false, actions: [.catchUp(worker: "ib", shard: 0, after: 3)]))

        _ = r.beginCatchUp(worker: "ib", shard: 0, after: 3)
        r.track("c1", worker: "ib", shard: 0, sequence: 4, catchUp: true)
        #expect(
            r.answered("c1", by: "ib", .error(WireError(code: "store_failed", message: "disk")))
                == ReplicationState.Answer(consumed: true, actions: [.catchUpChangeFailed(worker: "ib", shard: 0, sequence: 4, error: "disk")]))
        #expect(r.catchingUp["ib"]?[0] == nil)

        var short = Self.numbered(5, logLimit: 1)
        _ = short.registered(Self.indexer("ib", replica: "b", at: 5))
        short.applied["b"]?[0] = 2
        short.track("w9", worker: "ib", shard: 0, sequence: 6)
        #expect(short.answered("w9", by: "ib", refused).actions == [.detached(worker: "ib", shard: 0, .fellBehind)])
        // An answer to no numbered message is only a catch-up's declaration.
        #expect(short.answered("c77", by: "ib", .declareAck(Body.Empty())).consumed)
        #expect(!short.answered("w77", by: "ib", .declareAck(Body.Empty())).consumed)
    }

    /// The sweep catches up a replica that is behind with nothing on its
    /// way, copies a detached one, and leaves one with changes in flight.
    @Test func theSweepRepairsReplicasLeftBehind() {
        var r = Self.numbered(4)
        _ = r.registered(Self.indexer("ib", replica: "b", at: 4))
        r.applied["b"]?[0] = 2
        r.detached["c"] = [0]
        r.replicaOf["ic"] = "c"
        #expect(
            r.repairs(indexers: [("ib", [0]), ("ic", [0]), ("ia", [0])])
                == [.catchUp(worker: "ib", shard: 0, after: 2), .copy(worker: "ic", shard: 0)])
        r.track("x", worker: "ib", shard: 0, sequence: 5)
        #expect(r.repairs(indexers: [("ib", [0])]).isEmpty)
        // A lost worker's messages are forgotten: the sweep sees it behind again.
        r.lost("ib")
        #expect(r.inFlight.isEmpty)
        #expect(r.repairs(indexers: [("ib", [0])]) == [.catchUp(worker: "ib", shard: 0, after: 2)])
    }

    /// A copy that installed rejoins its replica and catches up from the
    /// snapshot; if the log moved past the snapshot meanwhile, it copies again.
    @Test func anInstalledCopyCatchesUpOrCopiesAgain() {
        var r = Self.numbered(6, logLimit: 2)
        let copy = ShardCopies.Copy(id: "copy-1", shard: 0, source: "ia", target: "ib", replica: "b")
        r.detached["b"] = [0]
        r.copies.running[copy.id] = copy
        #expect(r.copyInstalled(copy, sequence: 5) == [.catchUp(worker: "ib", shard: 0, after: 5)])
        #expect(r.detached["b"] == [] && r.lineage[0]?.contains("b") == true && r.copies.running.isEmpty)
        #expect(r.copyInstalled(copy, sequence: 6).isEmpty)
        #expect(r.copyInstalled(copy, sequence: 1) == [.copy(worker: "ib", shard: 0)])
        #expect(r.detached["b"] == [0])
    }

    /// Query workers naming no replica are taken as fresh; one whose replica
    /// lacks a committed change is not.
    @Test func freshnessFollowsTheCommittedChanges() {
        var r = Self.numbered(2)
        var q = Body.Register(role: .query, worker: "qb", shards: [0])
        q.replica = "b"
        _ = r.registered(q)
        var z = Body.Register(role: .query, worker: "qz", shards: [0])
        z.replica = "z"
        _ = r.registered(z)
        #expect(r.isFresh("nobody", shard: 0))
        #expect(r.isFresh("qz", shard: 0))
        #expect(!r.isFresh("qb", shard: 0))
        _ = r.registered(Self.indexer("ib", replica: "b", at: 2))
        #expect(r.isFresh("qb", shard: 0))
        #expect(r.isFresh("ia", shard: 0))
    }
}
