import Foundation
import WireProtocol

/// Worker authentication's I/O: ``WorkerChallenges`` decides, this sends.
extension CoordinatorCore {
    /// Whether `r` may register now. A registration without a valid proof is
    /// answered here — a `challenge`, or `unauthorized` for a wrong proof —
    /// and goes no further.
    func admitRegistration(route: [Data], id: String, _ r: Body.Register) -> Bool {
        switch challenges.admit(r, route: route, now: .now) {
        case .admit:
            return true
        case .challenge(let nonce):
            count(.workersChallenged)
            send(.worker(route), id, .challenge(Body.Challenge(nonce: nonce)))
            return false
        case .refuse:
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
    }
}
