import ClusterAuth
import Foundation
import Synchronization
import Testing
import WireProtocol

@testable import Coordinator

/// Worker authentication's decisions, without processes: who is challenged,
/// with which nonce, and whose proof admits or refuses it.
@Suite("Worker challenges")
struct WorkerChallengesTests {
    static let t0 = ContinuousClock.now
    static let secret = try! ClusterSecret(text: "a cluster secret of some length")

    static func route(_ name: String) -> [Data] { [Data(name.utf8)] }

    final class Minted: Sendable { let count = Atomic<Int>(0) }

    /// Nonces "n1", "n2", … in the order they are minted.
    static func challenges(secret: ClusterSecret? = secret, capacity: Int = 4096) -> WorkerChallenges {
        let minted = Minted()
        return WorkerChallenges(secret: secret, capacity: capacity) { "n\(minted.count.add(1, ordering: .relaxed).newValue)" }
    }

    static func register(
        _ worker: String = "q1", shards: [Int] = [0, 1], proofWith secret: ClusterSecret? = nil, nonce: String? = nil
    )
        -> Body.Register
    {
        var r = Body.Register(role: .query, worker: worker, shards: shards)
        if let secret, let nonce {
            r.nonce = nonce
            r.proof = secret.proof(nonce: nonce, worker: worker, role: "query", shards: shards)
        }
        return r
    }

    @Test func withoutASecretEveryRegistrationIsAdmitted() {
        var c = Self.challenges(secret: nil)
        #expect(c.admit(Self.register(), route: Self.route("a"), now: Self.t0) == .admit)
    }

    /// A registration without a proof is challenged, and again with the same
    /// nonce while it lasts; a proof for that nonce admits it.
    @Test func aConnectionKeepsOneNonceAndARightProofIsAdmitted() {
        var c = Self.challenges()
        let a = Self.route("a")
        #expect(c.admit(Self.register(), route: a, now: Self.t0) == .challenge(nonce: "n1"))
        #expect(c.admit(Self.register(), route: a, now: Self.t0 + .seconds(5)) == .challenge(nonce: "n1"))
        #expect(c.admit(Self.register(), route: Self.route("b"), now: Self.t0) == .challenge(nonce: "n2"))
        #expect(c.admit(Self.register(proofWith: Self.secret, nonce: "n1"), route: a, now: Self.t0 + .seconds(6)) == .admit)
    }

    /// A proof is bound to its connection, to the worker and shards it
    /// claims, and to the secret.
    @Test func aProofForAnotherConnectionClaimOrSecretIsNotAdmitted() throws {
        var c = Self.challenges()
        let (a, b) = (Self.route("a"), Self.route("b"))
        #expect(c.admit(Self.register(), route: a, now: Self.t0) == .challenge(nonce: "n1"))
        // n1 is a's nonce: on b it is only answered with b's own challenge.
        #expect(c.admit(Self.register(proofWith: Self.secret, nonce: "n1"), route: b, now: Self.t0) == .challenge(nonce: "n2"))
        // Made for shards [0, 1], claimed for [0, 1, 2].
        var widened = Self.register(proofWith: Self.secret, nonce: "n1")
        widened.shards = [0, 1, 2]
        #expect(c.admit(widened, route: a, now: Self.t0) == .refuse)
        let other = try ClusterSecret(text: "another secret of some length")
        #expect(c.admit(Self.register(), route: a, now: Self.t0) == .challenge(nonce: "n3"))
        #expect(c.admit(Self.register(proofWith: other, nonce: "n3"), route: a, now: Self.t0) == .refuse)
    }

    /// A wrong proof spends the nonce: even the right proof for it is then
    /// only answered with a new challenge.
    @Test func aWrongProofSpendsTheNonce() {
        var c = Self.challenges()
        let a = Self.route("a")
        #expect(c.admit(Self.register(), route: a, now: Self.t0) == .challenge(nonce: "n1"))
        var wrong = Self.register(proofWith: Self.secret, nonce: "n1")
        wrong.proof = String(repeating: "0", count: 64)
        #expect(c.admit(wrong, route: a, now: Self.t0) == .refuse)
        #expect(c.admit(Self.register(proofWith: Self.secret, nonce: "n1"), route: a, now: Self.t0) == .challenge(nonce: "n2"))
        #expect(c.admit(Self.register(proofWith: Self.secret, nonce: "n2"), route: a, now: Self.t0) == .admit)
    }

    @Test func aNonceExpiresAfterThirtySeconds() {
        var c = Self.challenges()
        let a = Self.route("a")
        #expect(c.admit(Self.register(), route: a, now: Self.t0) == .challenge(nonce: "n1"))
        let late = Self.t0 + WorkerChallenges.lifetime
        #expect(c.admit(Self.register(proofWith: Self.secret, nonce: "n1"), route: a, now: late) == .challenge(nonce: "n2"))
        #expect(c.admit(Self.register(proofWith: Self.secret, nonce: "n2"), route: a, now: late) == .admit)
    }

    /// Past its capacity, expired nonces go first, then the oldest, so a
    /// flood of connections cannot grow the coordinator's memory.
    @Test func pendingNoncesAreBounded() {
        var c = Self.challenges(capacity: 2)
        _ = c.admit(Self.register(), route: Self.route("a"), now: Self.t0)
        _ = c.admit(Self.register(), route: Self.route("b"), now: Self.t0 + .seconds(1))
        _ = c.admit(Self.register(), route: Self.route("c"), now: Self.t0 + .seconds(2))
        #expect(c.pending.count == 2)
        #expect(c.pending[Self.route("a")] == nil)
        #expect(c.pending[Self.route("b")]?.nonce == "n2")
        _ = c.admit(Self.register(), route: Self.route("d"), now: Self.t0 + .seconds(31.5))
        #expect(Set(c.pending.keys) == [Self.route("c"), Self.route("d")])
    }
}
