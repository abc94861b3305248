import Foundation
import Items
import Testing
import WireProtocol

@testable import Coordinator

/// The write tracker's decisions, without processes: when a publish, a
/// delete or a declaration is answered, and what the client is told.
@Suite("Write tracker")
struct WriteTrackerTests {
    static let client = [Data("client".utf8)]

    /// A publish of `ids` (positions 0…), tracked as `p1`, with its items
    /// sent to `replicas` of shard 0 as writes `w-<replica>`.
    static func publishing(_ ids: [String], to replicas: [String]) -> WriteTracker {
        var t = WriteTracker()
        t.beginPublish(
            "p1",
            WriteTracker.PendingPublish(
                client: client, requestID: "r1", batch: "b", identifiers: ids,
                results: Array(repeating: nil, count: ids.count), started: .now))
        for r in replicas {
            t.writeSent("w-\(r)", WriteTracker.ShardWrite(publish: "p1", shard: 0, worker: r, indices: Array(ids.indices)))
        }
        #expect(t.publishRouted("p1").isEmpty)
        return t
    }

    static func stored(_ ids: [String]) -> Body.WriteAck {
        Body.WriteAck(shard: 0, results: ids.enumerated().map { ItemResult(index: $0.offset, uniqueIdentifier: $0.element, status: .stored) })
    }

    static func ack(_ actions: [WriteTracker.Action]) -> Body.PublishAck? {
        guard actions.count == 1, case .publishDone(let client, let requestID, let ack, _, _) = actions[0],
            client == Self.client, requestID == "r1"
        else { return nil }
        return ack
    }

    @Test func aPublishIsAcknowledgedOnlyWhenEveryReplicaCommitted() throws {
        var t = Self.publishing(["a", "b"], to: ["i1", "i2"])
        #expect(t.writeAcked("w-i1", Self.stored(["a", "b"])).isEmpty)
        #expect(t.publishes["p1"] != nil)
        let ack = try #require(Self.ack(t.writeAcked("w-i2", Self.stored(["a", "b"]))))
        #expect(ack.stored == 2 && ack.rejected == 0 && ack.batch == "b")
        #expect(t.publishes.isEmpty && t.shardWrites.isEmpty)
        // A late or repeated answer changes nothing.
        #expect(t.writeAcked("w-i2", Self.stored(["a", "b"])).isEmpty)
    }

    /// A replica lags once a write of its shard is unanswered the limit after
    /// another replica committed the same write; not before, not when no
    /// replica committed it (a slow shard is not a slow replica), and no
    /// longer once it answered.
    @Test func aReplicaLagsOnlyBehindAnotherThatCommittedTheSameWrite() {
        var t = Self.publishing(["a", "b"], to: ["i1", "i2", "i3"])
        let t0 = ContinuousClock.now
        #expect(t.laggards(at: t0 + .seconds(60), limit: .seconds(10)).isEmpty)
        _ = t.writeAcked("w-i1", Self.stored(["a", "b"]), at: t0)
        #expect(t.laggards(at: t0 + .seconds(9.9), limit: .seconds(10)).isEmpty)
        let late = t.laggards(at: t0 + .seconds(10), limit: .seconds(10))
        #expect(late.map(\.worker) == ["i2", "i3"] && late.allSatisfy { $0.shard == 0 })
        // A later commit of another replica does not restart the clock.
        _ = t.writeAcked("w-i2", Self.stored(["a", "b"]), at: t0 + .seconds(8))
        #expect(t.laggards(at: t0 + .seconds(10), limit: .seconds(10)).map(\.worker) == ["i3"])
        // Lost, the laggard's items come back to be resent, and nothing lags.
        let actions = t.workerLost("i3")
        #expect(Self.ack(actions)?.results.allSatisfy { $0.error?.code == "shard_unavailable" } == true)
        #expect(t.laggards(at: t0 + .seconds(60), limit: .seconds(10)).isEmpty)
    }

    /// An item one replica rejected is rejected, even though the other stored it.
    @Test func anItemOneReplicaRejectedIsRejected() throws {
        var t = Self.publishing(["a", "b"], to: ["i1", "i2"])
        _ = t.writeAcked("w-i1", Self.stored(["a", "b"]))
        let refusal = WireError(code: "invalid_value", message: "bad title")
        let partial = Body.WriteAck(
            shard: 0,
            results: [
                ItemResult(index: 0, uniqueIdentifier: "a", status: .stored),
                ItemResult(index: 1, uniqueIdentifier: "b", status: .rejected, error: refusal),
            ])
        let ack = try #require(Self.ack(t.writeAcked("w-i2", partial)))
        #expect(ack.results.map(\.status) == [.stored, .rejected])
        #expect(ack.results[1].error == refusal)
    }

    /// A replica that fails the write leaves none of its items stored,
    /// whatever the others said; one out of sequence asks for a resend.
    @Test func oneFailingReplicaMeansNothingOfItsWriteIsStored() throws {
        var t = Self.publishing(["a", "b"], to: ["i1", "i2"])
        _ = t.writeAcked("w-i1", Self.stored(["a", "b"]))
        let disk = WireError(code: "store_failed", message: "disk full")
        let ack = try #require(Self.ack(t.writeFailed("w-i2", disk)))
        #expect(ack.stored == 0 && ack.rejected == 2)
        #expect(ack.results.allSatisfy { $0.error == disk })

        var u = Self.publishing(["a"], to: ["i1", "i2"])
        _ = u.writeFailed("w-i1", WireError(code: "out_of_sequence", message: "expected 4, got 6"))
        let resend = try #require(Self.ack(u.writeAcked("w-i2", Self.stored(["a"]))))
        #expect(resend.results[0].status == .rejected)
        #expect(resend.results[0].error?.code == "shard_unavailable")
        #expect(resend.results[0].error?.message.contains("catching up") == true)
    }

    /// A replica lost before it committed: its items are rejected for a
    /// resend even where the other replica committed them.
    @Test func aReplicaLostBeforeCommittingRejectsItsItemsForResend() throws {
        var t = Self.publishing(["a"], to: ["i1", "i2"])
        _ = t.writeAcked("w-i1", Self.stored(["a"]))
        let ack = try #require(Self.ack(t.workerLost("i2")))
        #expect(ack.results[0].status == .rejected)
        #expect(ack.results[0].error?.code == "shard_unavailable")
        #expect(ack.results[0].error?.message == "replica i2 of shard 0 was lost before committing; resend")
        #expect(t.shardWrites.isEmpty)
        #expect(t.workerLost("i1").isEmpty)
    }

    /// A publish with nothing sent is answered at once; an item that no
    /// write answered for is rejected.
    @Test func aPublishWithNothingToSendIsAnsweredAtOnce() throws {
        var t = WriteTracker()
        let refused = ItemResult(index: 0, uniqueIdentifier: nil, status: .rejected, error: WireError(code: "missing_identifier", message: "no id"))
        t.beginPublish(
            "p1",
            WriteTracker.PendingPublish(
                client: Self.client, requestID: "r1", batch: nil, identifiers: [nil, "b"],
                results: [refused, nil], started: .now))
        let ack = try #require(Self.ack(t.publishRouted("p1")))
        #expect(ack.results[0] == refused)
        #expect(ack.results[1].uniqueIdentifier == "b" && ack.results[1].error?.code == "shard_unavailable")
    }

    // MARK: Deletes

    static func deleting() -> WriteTracker {
        var t = WriteTracker()
        t.beginDelete("d1", WriteTracker.PendingDelete(client: client, requestID: "r1"))
        t.deleteSent("x1", for: "d1", to: "i1", shard: 0)
        t.deleteSent("x2", for: "d1", to: "i2", shard: 0)
        t.deleteSent("x3", for: "d1", to: "i3", shard: 1)
        #expect(t.deleteRouted("d1").isEmpty)
        return t
    }

    static func done(_ actions: [WriteTracker.Action]) -> WriteTracker.PendingDelete? {
        guard actions.count == 1, case .deleteDone(let d) = actions[0] else { return nil }
        return d
    }

    /// A shard counts once (its largest replica's count), and the delete is
    /// answered when every replica of every shard has answered.
    @Test func aDeleteCountsEachShardOnceAndWaitsForEveryReplica() throws {
        var t = Self.deleting()
        #expect(t.kind(ofMessage: "x1") == .delete)
        #expect(t.deleteAnswered("x1", deleted: 3, error: nil).isEmpty)
        #expect(t.deleteAnswered("x3", deleted: 2, error: nil).isEmpty)
        let d = try #require(Self.done(t.deleteAnswered("x2", deleted: 3, error: nil)))
        #expect(d.deletedByShard == [0: 3, 1: 2] && d.failed.isEmpty)
        #expect(t.deletes.isEmpty && t.kind(ofMessage: "x1") == nil)
    }

    /// A replica's error names its shard failed; a lost indexer names its
    /// shard failed only if no other replica of it answered.
    @Test func aDeleteNamesTheShardsThatFailedOrLostEveryReplica() throws {
        var t = Self.deleting()
        _ = t.deleteAnswered("x1", deleted: 1, error: nil)
        _ = t.deleteAnswered("x3", deleted: nil, error: WireError(code: "store_failed", message: "locked"))
        let d = try #require(Self.done(t.workerLost("i2")))
        #expect(d.failed == [ShardFailure(shard: 1, reason: "locked")])

        var u = Self.deleting()
        _ = u.deleteAnswered("x1", deleted: 1, error: nil)
        _ = u.deleteAnswered("x2", deleted: 1, error: nil)
        let lost = try #require(Self.done(u.workerLost("i3")))
        #expect(lost.failed == [ShardFailure(shard: 1, reason: "indexer lost")])
        #expect(lost.deletedByShard == [0: 1])
    }

    // MARK: Declarations

    static func declaring() -> (WriteTracker, Body.Declare, Body.Declare) {
        var declaration = Body.Declare(attributes: [])
        declaration.exampleTag = nil
        var check = declaration
        check.check = true
        check.exampleTag = "@app/"
        var t = WriteTracker()
        let first = t.beginDeclare(
            "k1", WriteTracker.PendingDeclare(client: client, requestID: "r1", declaration: declaration, exampleTag: "@app/"))
        guard first.count == 1, case .declareRound("k1", let message, false) = first[0] else {
            Issue.record("a declaration did not start with its check: \(first)")
            return (t, declaration, check)
        }
        #expect(message == check)
        t.declareSent("k2", for: "k1", to: "i1")
        t.declareSent("k3", for: "k1", to: "i2")
        #expect(t.roundSent("k1").isEmpty)
        return (t, declaration, check)
    }

    /// Declared only once every indexer's check passed, then answered once
    /// every indexer declared it.
    @Test func aDeclarationIsMadeOnlyAfterEveryIndexerChecksIt() {
        var (t, declaration, _) = Self.declaring()
        #expect(t.kind(ofMessage: "k2") == .declare)
        #expect(t.declareAnswered("k2", error: nil).isEmpty)
        let second = t.declareAnswered("k3", error: nil)
        guard second.count == 1, case .declareRound("k1", let message, true) = second[0] else {
            Issue.record("the check passed but no declaration followed: \(second)")
            return
        }
        #expect(message == declaration)
        t.declareSent("k4", for: "k1", to: "i1")
        #expect(t.roundSent("k1").isEmpty)
        let done = t.declareAnswered("k4", error: nil)
        guard done.count == 1, case .declareDone(_, "r1", nil) = done[0] else {
            Issue.record("the declaration was not acknowledged: \(done)")
            return
        }
        #expect(t.declares.isEmpty)
    }

    /// One indexer's refusal in the check ends the declaration: no shard is changed.
    @Test func aRefusedCheckDeclaresNothing() {
        var (t, _, _) = Self.declaring()
        let conflict = WireError(code: "declaration_conflict", message: "price holds text in item x")
        #expect(t.declareAnswered("k2", error: conflict).isEmpty)
        let done = t.declareAnswered("k3", error: nil)
        guard done.count == 1, case .declareDone(_, "r1", let error) = done[0] else {
            Issue.record("a refused check went on: \(done)")
            return
        }
        #expect(error == conflict)
    }

    @Test func anIndexerLostMidDeclarationFailsIt() {
        var (t, _, _) = Self.declaring()
        _ = t.declareAnswered("k2", error: nil)
        let done = t.workerLost("i2")
        guard done.count == 1, case .declareDone(_, "r1", let error) = done[0] else {
            Issue.record("a lost indexer's declaration went on: \(done)")
            return
        }
        #expect(error?.code == "shard_unavailable")
        #expect(t.declares.isEmpty && t.kind(ofMessage: "k3") == nil)
    }

    // MARK: Throttling

    static func waiting(_ id: String) -> WriteTracker.WaitingPublish {
        WriteTracker.WaitingPublish(client: client, requestID: id, publish: Body.Publish(items: []), rejected: [:], scope: .unscoped)
    }

    /// Past the publishes allowed in flight a publish waits its turn, and
    /// past the queue's length it is refused as busy; while some wait, a new
    /// one queues behind them even with room, and they start oldest first.
    @Test func publishesPastTheLimitWaitInOrderThenAreRefused() {
        var t = Self.publishing(["a"], to: ["i1"])
        #expect(t.admit(Self.waiting("r2"), maxPending: 2, maxWaiting: 2, draining: false) == .start)
        t.beginPublish(
            "p2", WriteTracker.PendingPublish(client: Self.client, requestID: "r2", batch: nil, identifiers: ["b"], results: [nil], started: .now))
        t.writeSent("w-p2", WriteTracker.ShardWrite(publish: "p2", shard: 0, worker: "i1", indices: [0]))
        #expect(t.admit(Self.waiting("r3"), maxPending: 2, maxWaiting: 2, draining: false) == .held)
        #expect(t.admit(Self.waiting("r4"), maxPending: 2, maxWaiting: 2, draining: false) == .held)
        #expect(t.admit(Self.waiting("r5"), maxPending: 2, maxWaiting: 2, draining: false) == .busy)
        #expect(t.waiting.map(\.requestID) == ["r3", "r4"])
        #expect(t.nextWaiting(maxPending: 2) == nil)

        _ = t.writeAcked("w-i1", Self.stored(["a"]))
        // Room for one, but two wait: a newcomer queues behind them.
        #expect(t.admit(Self.waiting("r6"), maxPending: 2, maxWaiting: 3, draining: false) == .held)
        #expect(t.nextWaiting(maxPending: 2)?.requestID == "r3")
        // The core starts it as it drains the queue; it passes the queue.
        #expect(t.admit(Self.waiting("r3"), maxPending: 2, maxWaiting: 3, draining: true) == .start)
        #expect(t.waiting.map(\.requestID) == ["r4", "r6"])
    }

    /// A deposed coordinator answers every change it carries, in flight or
    /// waiting, once each, and then tracks nothing: a late acknowledgement
    /// answers no one a second time.
    @Test func abandoningAnswersEveryChangeInFlightOnce() {
        var t = Self.publishing(["a"], to: ["i1", "i2"])
        t.beginDelete("d1", WriteTracker.PendingDelete(client: Self.client, requestID: "r2"))
        t.deleteSent("x1", for: "d1", to: "i1", shard: 0)
        #expect(t.admit(Self.waiting("r3"), maxPending: 1, maxWaiting: 2, draining: false) == .held)
        #expect(t.abandonAll().map(\.requestID) == ["r1", "r2", "r3"])
        #expect(t.abandonAll().isEmpty)
        #expect(t.writeAcked("w-i1", Self.stored(["a"])).isEmpty)
        #expect(t.kind(ofMessage: "x1") == nil)
    }

    /// The stats' queue depths count every message a worker has not answered.
    @Test func outstandingMessagesArePerWorker() {
        var t = Self.publishing(["a"], to: ["i1", "i2"])
        t.beginDelete("d1", WriteTracker.PendingDelete(client: Self.client, requestID: "r2"))
        t.deleteSent("x1", for: "d1", to: "i1", shard: 0)
        var depth: [String: Int] = [:]
        t.outstanding(into: &depth)
        #expect(depth == ["i1": 2, "i2": 1])
        #expect(t.kind(ofMessage: "w-i1") == .write)
    }
}
