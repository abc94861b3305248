import ClusterAuth
import Foundation
import WireProtocol

/// The nonce a connection was challenged with, waiting for proofs.
struct PendingChallenge: Sendable {
    var nonce: String
    var issued: ContinuousClock.Instant
}

/// Worker authentication: a worker registers only with proof that it holds
/// the cluster secret (docs/security-transport.md).
///
/// A connection has one nonce at a time, good for 30 seconds: every
/// challenge it is sent in that time carries the same one, and every proof
/// made with it is judged. A worker told `unregistered` for each heartbeat
/// while the coordinator was slow sends several registrations at once; were
/// each answered with a nonce of its own, the answers could chase nonces
/// that later challenges had already replaced. Reuse within a connection is
/// harmless: the nonce is bound to the connection, and a proof to the exact
/// worker id, role and shards it claims. A wrong proof spends it.
extension CoordinatorCore {
    /// How long a challenge's nonce is good for.
    static let challengeLifetime = Duration.seconds(30)
    /// Connections with a nonce at once; past this the oldest are dropped, so
    /// a flood of registrations cannot grow the coordinator's memory.
    static let maxPendingChallenges = 4096

    /// Whether `r` may register now. A registration without a valid proof is
    /// answered here — a `challenge`, or `unauthorized` for a wrong proof —
    /// and goes no further: in particular it never evicts a live worker that
    /// has the same id.
    func admitRegistration(route: [Data], id: String, _ r: Body.Register) -> Bool {
        guard let secret = configuration.clusterSecret else { return true }
        let now = ContinuousClock.now
        if let pending = challenges[route], pending.issued.duration(to: now) >= Self.challengeLifetime {
            challenges.removeValue(forKey: route)
        }
        // Only a proof for the nonce this connection holds is judged; one for
        // another (expired, or spent by a wrong proof) earns a challenge.
        if let proof = r.proof, let nonce = r.nonce, let pending = challenges[route], pending.nonce == nonce {
            if secret.verify(proof: proof, nonce: nonce, worker: r.worker, role: r.role.rawValue, shards: r.shards) {
                return true
            }
            challenges.removeValue(forKey: route)
            count(.workersRefused)
            logger.warning(
                "refused a worker registration: its proof does not match the cluster secret",
                metadata: [
                    "worker": "\(r.worker)", "worker.role": "\(r.role.rawValue)", "worker.host": "\(r.host ?? "-")",
                ])
            sendError(
                .worker(route), id,
                WireError(
                    code: "unauthorized",
                    message:
                        "the registration's proof does not match this cluster's secret: start the worker with the coordinator's --cluster-secret-file"
                ))
            return false
        }
        issueChallenge(route: route, id: id, now: now)
        return false
    }

    /// Sends the connection's nonce, minting one if it has none.
    func issueChallenge(route: [Data], id: String, now: ContinuousClock.Instant) {
        if challenges[route] == nil {
            if challenges.count >= Self.maxPendingChallenges {
                challenges = challenges.filter { $0.value.issued.duration(to: now) < Self.challengeLifetime }
                while challenges.count >= Self.maxPendingChallenges,
                    let oldest = challenges.min(by: { $0.value.issued < $1.value.issued })?.key
                {
                    challenges.removeValue(forKey: oldest)
                }
            }
            challenges[route] = PendingChallenge(nonce: ClusterSecret.newNonce(), issued: now)
        }
        count(.workersChallenged)
        send(.worker(route), id, .challenge(Body.Challenge(nonce: challenges[route]!.nonce)))
    }
}
