import ClusterAuth
import Foundation
import WireProtocol

/// Worker authentication's decisions: a worker registers only with proof
/// that it holds the cluster secret (docs/security-transport.md).
///
/// A connection has one nonce at a time, good for ``lifetime``: every
/// challenge it is sent in that time carries the same one, and every proof
/// made with it is judged. A worker told `unregistered` for each heartbeat
/// while the coordinator was slow sends several registrations at once; were
/// each answered with a nonce of its own, the answers could chase nonces
/// that later challenges had already replaced. Reuse within a connection is
/// harmless: the nonce is bound to the connection, and a proof to the exact
/// worker id, role and shards it claims. A wrong proof spends it.
///
/// A value type: ``admit(_:route:now:)`` takes a registration and says what
/// to do; the coordinator's actor counts, logs and sends.
struct WorkerChallenges: Sendable {
    /// The nonce a connection was challenged with, waiting for proofs.
    struct Pending: Sendable, Equatable {
        var nonce: String
        var issued: ContinuousClock.Instant
    }

    /// What a registration earns.
    enum Admission: Sendable, Equatable {
        /// Its proof is right (or the cluster has no secret): register it.
        case admit
        /// Send this nonce in a `challenge`: the registration had no proof,
        /// or one for a nonce this connection no longer holds.
        case challenge(nonce: String)
        /// Its proof is wrong: answer `unauthorized` (the nonce is spent).
        case refuse
    }

    /// How long a challenge's nonce is good for.
    static let lifetime = Duration.seconds(30)

    let secret: ClusterSecret?
    /// Connections with a nonce at once; past this the oldest are dropped, so
    /// a flood of registrations cannot grow the coordinator's memory.
    let capacity: Int
    /// Makes a connection's nonce (random; fixed in tests).
    let newNonce: @Sendable () -> String
    private(set) var pending: [[Data]: Pending] = [:]

    init(secret: ClusterSecret?, capacity: Int = 4096, newNonce: @escaping @Sendable () -> String = { ClusterSecret.newNonce() }) {
        self.secret = secret
        self.capacity = capacity
        self.newNonce = newNonce
    }

    /// Whether `r`, arriving on `route`, may register now. A registration
    /// without a valid proof goes no further than its answer: in particular
    /// it never evicts a live worker that has the same id.
    mutating func admit(_ r: Body.Register, route: [Data], now: ContinuousClock.Instant) -> Admission {
        guard let secret else { return .admit }
        if let p = pending[route], p.issued.duration(to: now) >= Self.lifetime {
            pending.removeValue(forKey: route)
        }
        // Only a proof for the nonce this connection holds is judged; one for
        // another (expired, or spent by a wrong proof) earns a challenge.
        if let proof = r.proof, let nonce = r.nonce, let p = pending[route], p.nonce == nonce {
            if secret.verify(proof: proof, nonce: nonce, worker: r.worker, role: r.role.rawValue, shards: r.shards) {
                return .admit
            }
            pending.removeValue(forKey: route)
            return .refuse
        }
        return .challenge(nonce: nonce(for: route, now: now))
    }

    /// The connection's nonce, minting one if it has none.
    private mutating func nonce(for route: [Data], now: ContinuousClock.Instant) -> String {
        if let p = pending[route] { return p.nonce }
        if pending.count >= capacity {
            pending = pending.filter { $0.value.issued.duration(to: now) < Self.lifetime }
            while pending.count >= capacity, let oldest = pending.min(by: { $0.value.issued < $1.value.issued })?.key {
                pending.removeValue(forKey: oldest)
            }
        }
        let p = Pending(nonce: newNonce(), issued: now)
        pending[route] = p
        return p.nonce
    }
}
