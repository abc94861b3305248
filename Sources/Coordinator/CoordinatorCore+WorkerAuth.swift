import ClusterAuth
import Foundation
import WireProtocol

/// A nonce sent to one connection, waiting for its proof.
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

    /// Whether `r` may register now. A registration without a valid proof is
    /// answered here — a `challenge`, or `unauthorized` for a wrong proof —
    /// and goes no further: in particular it never evicts a live worker that
    /// has the same id.
    func admitRegistration(route: [Data], id: String, _ r: Body.Register) -> Bool {
        guard let secret = configuration.clusterSecret else { return true }
        if let proof = r.proof, let pending = challenges.removeValue(forKey: route),
           pending.issued.duration(to: .now) < Self.challengeLifetime {
            if secret.verify(proof: proof, nonce: pending.nonce, worker: r.worker, role: r.role.rawValue, shards: r.shards) {
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
            challenges = challenges.filter { $0.value.issued.duration(to: now) < Self.challengeLifetime }
            while challenges.count >= Self.maxPendingChallenges,
                  let oldest = challenges.min(by: { $0.value.issued < $1.value.issued })?.key {
                challenges.removeValue(forKey: oldest)
            }
        }
        let nonce = ClusterSecret.newNonce()
        challenges[route] = PendingChallenge(nonce: nonce, issued: now)
        count("workers.challenged")
        send(.worker(route), id, .challenge(Body.Challenge(nonce: nonce)))
    }
}
