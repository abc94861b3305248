import Foundation
import WireProtocol
import ZeroMQ

extension LimelightClient {
    /// A client of the cluster's active coordinator, among `endpoints` (a
    /// cluster with standby coordinators; docs/operations.md).
    ///
    /// Each endpoint is pinged in turn; a standby's `not_active` answer names
    /// the active coordinator, which is tried next; an endpoint that stays
    /// silent for `timeout` is passed over. The first that answers a ping is
    /// the one returned. One endpoint alone is simply pinged.
    /// - Throws: the last endpoint's error when none answers.
    public static func connectActive(
        _ endpoints: [String], key: String? = nil, curve: CurveClientKeys? = nil, timeout: Duration = .seconds(3),
        placement: ThreadPlacement = .here
    ) async throws -> LimelightClient {
        var queue = endpoints
        var tried: Set<String> = []
        var last: any Error = ClientError(.closed, "no coordinator endpoint given")
        while !queue.isEmpty {
            let endpoint = queue.removeFirst()
            guard tried.insert(endpoint).inserted else { continue }
            let client = try LimelightClient(endpoint: endpoint, key: key, curve: curve, placement: placement)
            do {
                _ = try await client.ping(timeout: timeout)
                return client
            } catch {
                client.close()
                last = error
                if let server = (error as? ClientError)?.server, server.code == "not_active", let active = server.active, !tried.contains(active) {
                    queue.insert(active, at: 0)
                }
            }
        }
        throw last
    }
}
