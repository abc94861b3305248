import ControlPlane
import Foundation
import Testing
import WireProtocol

@testable import Coordinator

/// The in-sync sets on the write path, without a control plane: who must
/// leave before a change is acknowledged, when a change may not be made at
/// all, the transactions (compared on the set's revision and the epoch), and
/// rejoining once caught up.
@Suite("In-sync replicas")
struct InSyncReplicasTests {
    static let keys = ClusterKeys(cluster: "t")

    /// Shard 0 with members a and b, read at revision 7, for a coordinator of epoch 3.
    static func loaded() -> InSyncReplicas {
        var s = InSyncReplicas()
        s.load([0: (InSyncSet(replicas: ["a", "b"], epoch: 2), 7)], epoch: 3)
        return s
    }

    @Test func aChangeEveryMemberTookWaitsForNothing() {
        var s = Self.loaded()
        let ticket = s.sent(0, sequence: 1, to: ["a", "b", "c"])
        #expect(ticket == nil)
        let steps = s.next(keys: Self.keys)
        #expect(steps.isEmpty)
    }

    /// Elasticsearch's rule: b missed change 5, so its answer waits for a
    /// transaction that takes b out, compared on the set's revision and on
    /// the epoch still being this coordinator's.
    @Test func aMemberThatMissedAChangeLeavesBeforeItIsAcknowledged() {
        var s = Self.loaded()
        let ticket = s.sent(0, sequence: 5, to: ["a"])
        #expect(ticket == 1)
        #expect(s.isWritten(0, 1) == false)
        let steps = s.next(keys: Self.keys)
        let expected = InSyncSet(replicas: ["a"], epoch: 3)
        guard case .write(0, let set, let t)? = steps.first, steps.count == 1 else {
            Issue.record("expected one transaction, got \(steps)")
            return
        }
        #expect(set == expected)
        #expect(t.compares == [.unchanged(Self.keys.inSync(shard: 0), since: 7), Compare(Self.keys.epoch, .value(Data("3".utf8)))])
        #expect(t.success == [.put(Self.keys.inSync(shard: 0), expected.encoded())])
        // While it is on its way nothing else is written, and b still counts as a member.
        let whileWriting = s.next(keys: Self.keys)
        #expect(whileWriting.isEmpty)
        #expect(s.members(0) == ["a", "b"])
        s.wrote(0, succeeded: true, revision: 9)
        #expect(s.isWritten(0, 1))
        #expect(s.shard(0).stored == expected && s.shard(0).revision == 9)
        #expect(s.members(0) == ["a"])
    }

    /// What a replica change counts on: a replica the control plane holds in
    /// the set, with no transaction on its way that takes it out; a replica
    /// on its way in counts only once the set holding it is written; and
    /// joining counts for who a change's client waits for.
    @Test func aReplicaChangeCountsOnlyOnAMemberTheControlPlaneHolds() {
        var s = Self.loaded()
        #expect(s.holds(0, replica: "a") && s.holds(0, replica: "b"))
        #expect(!s.holds(0, replica: "c"))
        #expect(InSyncReplicas().holds(0, replica: "c"), "a shard with no set yet holds every replica")
        let joining = s.caughtUp(0, replica: "c", applied: 4)
        #expect(joining)
        #expect(!s.holds(0, replica: "c"))
        #expect(s.membersOrJoining(0) == ["a", "b", "c"])
        guard case .write(0, let set, _)? = s.next(keys: Self.keys).first else {
            Issue.record("expected c's transaction")
            return
        }
        #expect(set.replicas.contains("c"))
        #expect(!s.holds(0, replica: "c"), "written, not yet held")
        s.wrote(0, succeeded: true, revision: 9)
        #expect(s.holds(0, replica: "c"))
        // b missed a change: on its way out, it is no longer counted on.
        _ = s.sent(0, sequence: 5, to: ["a", "c"])
        #expect(!s.holds(0, replica: "b"))
        #expect(s.holds(0, replica: "a"))
    }

    /// A transaction that failed (the set changed, or the epoch moved on)
    /// releases nothing; after a fresh read it is made again against it.
    @Test func aFailedTransactionIsRetriedAgainstTheSetReadAgain() {
        var s = Self.loaded()
        _ = s.sent(0, sequence: 5, to: ["a"])
        _ = s.next(keys: Self.keys)
        s.wrote(0, succeeded: false, revision: 0)
        #expect(s.isWritten(0, 1) == false)
        s.reread(0, stored: InSyncSet(replicas: ["a", "b"], epoch: 2), revision: 8)
        guard case .write(0, _, let t)? = s.next(keys: Self.keys).first else {
            Issue.record("no retry")
            return
        }
        #expect(t.compares.first == .unchanged(Self.keys.inSync(shard: 0), since: 8))
    }

    /// A change that no member takes may not be made: acknowledging it would
    /// leave no replica holding every acknowledged change.
    @Test func aChangeNoMemberTakesIsRefused() {
        let s = Self.loaded()
        #expect(s.covers(0, replicas: ["c"]) == false)
        #expect(s.covers(0, replicas: []) == false)
        #expect(s.covers(0, replicas: ["b", "c"]))
        // A shard with no set yet takes any change.
        #expect(s.covers(1, replicas: ["c"]))
    }

    /// b rejoins only once it has applied the last change it missed.
    @Test func aReplicaRejoinsOnceItHasEveryChangeItMissed() {
        var s = Self.loaded()
        _ = s.sent(0, sequence: 5, to: ["a"])
        _ = s.sent(0, sequence: 6, to: ["a"])
        _ = s.next(keys: Self.keys)
        s.wrote(0, succeeded: true, revision: 9)
        let tooEarly = s.caughtUp(0, replica: "b", applied: 5)
        #expect(tooEarly == false)
        let rejoins = s.caughtUp(0, replica: "b", applied: 6)
        #expect(rejoins)
        guard case .write(0, let set, _)? = s.next(keys: Self.keys).first else {
            Issue.record("no transaction")
            return
        }
        #expect(set.replicas == ["a", "b"])
        s.wrote(0, succeeded: true, revision: 10)
        #expect(s.members(0) == ["a", "b"])
        // A member is not put in again.
        let memberAgain = s.caughtUp(0, replica: "a", applied: 6)
        #expect(memberAgain == false)
    }

    /// A replica that caught up before its removal was written stays in: it
    /// has the change it missed, so the change may be acknowledged with it in.
    @Test func catchingUpBeforeTheRemovalIsWrittenCancelsIt() {
        var s = Self.loaded()
        let ticket = s.sent(0, sequence: 5, to: ["a"])!
        let rejoins = s.caughtUp(0, replica: "b", applied: 5)
        #expect(rejoins)
        let steps = s.next(keys: Self.keys)
        #expect(steps.isEmpty)
        #expect(s.isWritten(0, ticket))
        #expect(s.members(0) == ["a", "b"])
    }

    /// A shard with no set gets one, made absent-only, from its first replicas that caught up.
    @Test func aShardWithoutASetGetsOneFromItsFreshReplicas() {
        var s = InSyncReplicas()
        let beforeRead = s.caughtUp(0, replica: "a", applied: 0)
        #expect(beforeRead == false)  // not read yet
        s.load([:], epoch: 1)
        let afterRead = s.caughtUp(0, replica: "a", applied: 0)
        #expect(afterRead)
        guard case .write(0, let set, let t)? = s.next(keys: Self.keys).first else {
            Issue.record("no transaction")
            return
        }
        #expect(set.replicas == ["a"])
        #expect(t.compares.first == .unchanged(Self.keys.inSync(shard: 0), since: 0))
    }

    /// The rule that registration follows: a replica out of the set that is
    /// ahead of the numbers holds only unacknowledged changes, and is detached
    /// (then copied from a member) rather than setting the shard's numbering.
    @Test func aReplicaOutOfTheSetAheadOfTheNumbersIsDetached() {
        var r = ReplicationState()
        _ = r.registered(ReplicationStateTests.indexer("ia", replica: "a", at: 4))
        let actions = r.registered(ReplicationStateTests.indexer("ib", replica: "b", at: 6), notInSync: [0])
        #expect(actions == [.detached(worker: "ib", shard: 0, .notInSync(have: 6, issued: 4))])
        #expect(r.issued[0] == 4)
        #expect(r.detached["b"] == [0])
        // One behind or level is caught up as usual.
        var q = ReplicationState()
        _ = q.registered(ReplicationStateTests.indexer("ia", replica: "a", at: 4))
        let levelReplica = q.registered(ReplicationStateTests.indexer("ib", replica: "b", at: 4), notInSync: [0])
        #expect(levelReplica == [])
    }
}
