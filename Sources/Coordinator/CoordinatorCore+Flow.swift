import Foundation
import Tenancy
import WireProtocol

/// Write throttling that never stops the coordinator from reading (the
/// decisions are ``WriteTracker/admit(_:maxPending:maxWaiting:draining:)``'s).
///
/// At most `maxPendingWrites` publish batches are in flight. A batch that
/// comes past that waits in a queue of at most `maxWaitingWrites`, in order,
/// and starts when an acknowledgement frees room; past that it is answered
/// `busy` at once (producers send it again after a pause, see
/// `LimelightClient.publishUntilAcknowledged`). The coordinator keeps reading
/// its clients all the while, so a ping, a cancel or a query is answered
/// while writes are throttled, rather than waiting for the writes to
/// drain.
extension CoordinatorCore {
    /// Starts waiting publishes, oldest first, while there is room
    /// (``WriteTracker/nextWaiting(maxPending:)``). `startingWaitingWrites`
    /// keeps a publish that finishes at once from starting the queue again
    /// inside this loop, and lets the publishes started here pass the queue.
    func startWaitingWrites() {
        guard !startingWaitingWrites else { return }
        startingWaitingWrites = true
        defer { startingWaitingWrites = false }
        while let w = writes.nextWaiting(maxPending: configuration.maxPendingWrites) {
            publish(client: w.client, id: w.requestID, w.publish, rejected: w.rejected, scope: w.scope)
        }
    }
}
