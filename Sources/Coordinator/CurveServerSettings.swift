import Foundation
import Logging
import Synchronization
import ZeroMQ

/// CURVE on the coordinator's sockets: its key pair, and which peers' keys it accepts.
///
/// Both ROUTER sockets become CURVE servers: every connection is encrypted
/// and every peer proves it holds the secret half of the package key it
/// presents. The ZAP handler then checks that key against the socket's
/// allow-list — `clientKeys` for the client socket, `workerKeys` for the worker
/// socket — and refuses the connection of a key not on it. A nil list accepts
/// any key (encryption without key checks: clients are then told apart by
/// other means, and workers by the cluster secret).
package struct CurveServerSettings: Sendable {
    package var keyPair: CurveKeyPair
    /// Client package keys allowed, by Z85 text; nil accepts any.
    package var clientKeys: [String: CurveKey]?
    /// Worker package keys allowed, by Z85 text; nil accepts any.
    package var workerKeys: [String: CurveKey]?

    package init(keyPair: CurveKeyPair, clientKeys: [String: CurveKey]? = nil, workerKeys: [String: CurveKey]? = nil) {
        self.keyPair = keyPair
        self.clientKeys = clientKeys
        self.workerKeys = workerKeys
    }

    /// The ZAP domains of the two sockets.
    static let clientDomain = "limelight-clients"
    static let workerDomain = "limelight-workers"

    /// What makes a ROUTER socket this server, in `domain`.
    func socketOptions(domain: String) -> [SocketOption] {
        [.zapDomain(domain), .curveServer(true), .curveSecretKey(keyPair.secretKey), .curvePublicKey(keyPair.publicKey)]
    }

    /// The ZAP handler's answer to one handshake.
    func decide(_ request: ZAPRequest) -> ZAPDecision {
        let list: [String: CurveKey]?
        switch request.domain {
        case Self.clientDomain: list = clientKeys
        case Self.workerDomain: list = workerKeys
        default: return .deny(reason: "unknown ZAP domain '\(request.domain)'")
        }
        guard request.mechanism == "CURVE", let key = request.curveKey else {
            return .deny(reason: "CURVE is required")
        }
        guard let list else { return .allow(userID: key.z85) }
        return list[key.z85] != nil ? .allow(userID: key.z85) : .deny(reason: "unknown key")
    }
}

/// Counts the ZAP handler's refusals in the core's counters
/// (`connections.refused.clients`, `connections.refused.workers` in /stats),
/// and logs them: a refused peer's socket reconnects on its own every few
/// hundred milliseconds, so each key is logged on its 1st, 100th, 200th …
/// refusal rather than every time. The handler runs before the core exists,
/// so the core is set afterwards.
final class RefusalCounter: Sendable {
    private struct State {
        var core: CoordinatorCore?
        var byKey: [String: Int] = [:]
    }
    private let state = Mutex(State())
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    var core: CoordinatorCore? {
        get { state.withLock { $0.core } }
        set { state.withLock { $0.core = newValue } }
    }

    func refused(_ request: ZAPRequest, reason: String) {
        let isWorker = request.domain == CurveServerSettings.workerDomain
        let kind = isWorker ? "workers" : "clients"
        let key = request.curveKey?.z85 ?? "-"
        let (core, n) = state.withLock { state -> (CoordinatorCore?, Int) in
            if state.byKey.count > 10_000 { state.byKey.removeAll() }
            state.byKey[kind + key, default: 0] += 1
            return (state.core, state.byKey[kind + key]!)
        }
        if n == 1 || n % 100 == 0 {
            logger.warning(
                "refused a connection: its CURVE key is not allowed",
                metadata: [
                    "peer.kind": "\(kind)", "peer.address": "\(request.address)", "peer.key": "\(key)",
                    "reason": "\(reason)", "refusals": "\(n)",
                ])
        }
        let counter: CoordinatorCounter = isWorker ? .connectionsRefusedWorkers : .connectionsRefusedClients
        if let core { Task { await core.count(counter) } }
    }
}
