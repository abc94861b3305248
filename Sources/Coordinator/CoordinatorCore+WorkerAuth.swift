import ClusterAuth
import Foundation
import WireProtocol

/// A nonce sent to a connection, waiting for its proof.
struct PendingChallenge: Sendable {
    var nonce: String
    var issued: ContinuousClock.Instant
}

/// Worker authentication: a worker registers only with proof that it holds
/// the cluster secret (docs/security-transport.md).
extension CoordinatorCore {
    /// How long a challenge's nonce is good for.
    static let challengeLifetime = Duration.seconds(30)
    /// Challenges kept at once; past this the oldest are dropped, so a flood
    /// of registrations cannot grow the coordinator's memory.
    static let maxPendingChallenges = 4096
    /// Nonces kept per connection (the newest).
    static let noncesPerConnection = 4

    /// Whether `r` may register now. A registration without a valid proof is
    /// answered here — a `challenge`, or `unauthorized` for a wrong proof —
    /// and goes no further: in particular it never evicts a live worker that
    /// has the same id.
    func admitRegistration(route: [Data], id: String, _ r: Body.Register) -> Bool {
        guard let secret = configuration.clusterSecret else { return true }
        let now = ContinuousClock.now
        let pending = (challenges[route] ?? []).filter { $0.issued.duration(to: now) < Self.challengeLifetime }
        if let proof = r.proof, !pending.isEmpty {
            // Any of the connection's recent nonces will do: a worker that
            // registered twice in quick succession (a liveness timeout beside
            // a reply) answers the first challenge after the second was sent.
            // Used or not, they are spent.
            challenges.removeValue(forKey: route)
            if pending.contains(where: { secret.verify(proof: proof, nonce: $0.nonce, worker: r.worker, role: r.role.rawValue, shards: r.shards) }) {
                return true
            }
            count("workers.refused")
            logger.warning("refused a worker registration: its proof does not match the cluster secret", metadata: [
                "worker": "\(r.worker)", "worker.role": "\(r.role.rawValue)", "worker.host": "\(r.host ?? "-")",
            ])
            sendError(.worker(route), id, WireError(code: "unauthorized",
                message: "the registration's proof does not match this cluster's secret: start the worker with the coordinator's --cluster-secret-file"))
            return false
        }
        // No proof, or one for a nonce this connection was not given (or that
        // expired): ask for one.
        issueChallenge(route: route, id: id)
        return false
    }

    func issueChallenge(route: [Data], id: String) {
        let now = ContinuousClock.now
        if challenges.count >= Self.maxPendingChallenges {
            challenges = challenges.filter { $0.value.contains { $0.issued.duration(to: now) < Self.challengeLifetime } }
            while challenges.count >= Self.maxPendingChallenges,
                  let oldest = challenges.min(by: { ($0.value.last?.issued ?? now) < ($1.value.last?.issued ?? now) })?.key {
                challenges.removeValue(forKey: oldest)
            }
        }
        let nonce = ClusterSecret.newNonce()
        challenges[route, default: []].append(PendingChallenge(nonce: nonce, issued: now))
        // A few per connection: enough for registrations that cross, no more.
        if challenges[route]!.count > Self.noncesPerConnection { challenges[route]!.removeFirst() }
        count("workers.challenged")
        send(.worker(route), id, .challenge(Body.Challenge(nonce: nonce)))
    }
}
