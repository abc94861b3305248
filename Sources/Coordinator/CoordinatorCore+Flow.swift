import Foundation
import Tenancy
import WireProtocol

/// Write throttling that never stops the coordinator from reading.
///
/// At most `maxPendingWrites` publish batches are in flight. A batch that
/// comes past that waits in a queue of at most `maxWaitingWrites`, in order,
/// and starts when an acknowledgement frees room; past that it is answered
/// `busy` at once (producers send it again after a pause, see
/// `LimelightClient.publishUntilAcknowledged`). The coordinator keeps reading
/// its clients all the while, so a ping, a cancel or a query is answered
/// while writes are throttled — it used to stop reading every client until
/// the writes drained.
extension CoordinatorCore {
    func holdPublish(client: [Data], id: String, _ p: Body.Publish, rejected: [Int: ItemResult] = [:], scope: TenantScope = .unscoped) {
        guard waitingWrites.count < configuration.maxWaitingWrites else {
            count(.publishBusy)
            sendError(.client(client), id, WireError(code: "busy", message: "the coordinator has \(writes.publishes.count) publish batches in flight "
                + "and \(waitingWrites.count) waiting (the limits are \(configuration.maxPendingWrites) and \(configuration.maxWaitingWrites)); send this batch again later"))
            return
        }
        count(.publishThrottled)
        waitingWrites.append((client, id, p, rejected, scope))
    }

    /// Starts waiting publishes, oldest first, while there is room.
    func startWaitingWrites() {
        guard !startingWaitingWrites else { return }
        startingWaitingWrites = true
        defer { startingWaitingWrites = false }
        while writes.publishes.count < configuration.maxPendingWrites, !waitingWrites.isEmpty {
            let w = waitingWrites.removeFirst()
            publish(client: w.client, id: w.id, w.publish, rejected: w.rejected, scope: w.scope)
        }
    }
}
