import Foundation
import Synchronization
import WireProtocol
import ZeroMQ

extension LimelightClient {
    /// The coordinator endpoint the client's socket is connected to: the
    /// first of `endpoint`'s, until ``failOver(after:)`` moves it.
    public var connectedEndpoint: String { coordinators.withLock { $0.current } }

    /// Moves the client to another coordinator after `error`, when the client
    /// was given several (`endpoint` a comma-separated list): to the active
    /// one a standby named in `not_active`, or to the next after a timeout
    /// (silence). Requests in flight on the old connection are not answered
    /// (they time out); a producer resends them (``publishUntilAcknowledged(_:batch:retryFor:attemptTimeout:)``).
    /// - Returns: whether the client moved.
    @discardableResult
    public func failOver(after error: ClientError) async -> Bool {
        let move = coordinators.withLock { c -> CoordinatorEndpoints.Move? in
            if error.code == .server, let server = error.server, server.code == "not_active" {
                if let active = server.active { return c.redirected(to: active) }
                return c.silent()
            }
            return error.code == .timeout ? c.silent() : nil
        }
        guard let move else { return false }
        do { try await socket.reconnect(from: move.from, to: move.to) } catch { return false }
        return true
    }

    /// A client of the cluster's active coordinator among `endpoints` (a
    /// cluster with standby coordinators; docs/operations.md).
    ///
    /// Each endpoint is pinged in turn; a standby's `not_active` answer names
    /// the active coordinator, which is tried next; an endpoint that stays
    /// silent for `timeout` is passed over. The client stays connected to the
    /// first that answers, and can move on later (``failOver(after:)``).
    /// - Throws: the last endpoint's error when none answers.
    public static func connectActive(
        _ endpoints: [String], key: String? = nil, curve: CurveClientKeys? = nil, timeout: Duration = .seconds(3),
        placement: ThreadPlacement = .here
    ) async throws -> LimelightClient {
        let client = try LimelightClient(endpoint: endpoints.joined(separator: ","), key: key, curve: curve, placement: placement)
        var tried: Set<String> = []
        while true {
            let at = client.connectedEndpoint
            tried.insert(at)
            do {
                _ = try await client.ping(timeout: timeout)
                return client
            } catch let error as ClientError {
                let moved = await client.failOver(after: error)
                guard moved, !tried.contains(client.connectedEndpoint) else {
                    client.close()
                    throw error
                }
            } catch {
                client.close()
                throw error
            }
        }
    }
}
