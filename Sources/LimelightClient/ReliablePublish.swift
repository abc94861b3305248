import Foundation
import Items
import WireProtocol

/// What became of a batch published with ``LimelightClient/publishUntilAcknowledged(_:batch:retryFor:attemptTimeout:)``.
public struct PublishOutcome: Sendable {
    /// One result per item of the batch, by its index in the batch: `stored`,
    /// or `rejected` for a reason resending cannot change (a bad item).
    /// Nil for an item that was never acknowledged (see ``unacknowledged``).
    public var results: [ItemResult?]
    /// Why the items still unacknowledged were not, from the last attempt
    /// (`timeout`, `shard_unavailable` ...); nil when every item was acknowledged.
    public var lastFailure: String?
    /// How many times the batch (or what was left of it) was sent.
    public var attempts: Int
    /// Items sent again, summed over the attempts after the first.
    public var resentItems = 0

    public var stored: Int { results.filter { $0?.status == .stored }.count }
    public var rejected: [ItemResult] { results.compactMap { $0?.status == .rejected ? $0 : nil } }
    /// Indices of the items no attempt got acknowledged within the time limit.
    public var unacknowledged: [Int] { results.indices.filter { results[$0] == nil } }
}

extension LimelightClient {
    /// Error codes that mean "not stored this time, try again": the shard had
    /// no live indexer, or its indexer went away before committing, or the
    /// coordinator is a standby (`not_active`: the client moves on, see
    /// ``failOver(after:)``).
    public static let retryableCodes: Set<String> = ["shard_unavailable", "unavailable", "busy", "timeout", "not_active"]

    /// Publishes a batch at least once: items that were not acknowledged —
    /// the reply did not come within `attemptTimeout` (a lost coordinator, a
    /// reconnect), or it said `shard_unavailable` / `unavailable` / `busy` —
    /// are sent again, with a backoff (0.2 s doubling to 5 s), until every item
    /// is acknowledged or `retryFor` has passed since the first attempt
    /// (`retryFor` of zero: one attempt, no resend).
    ///
    /// Upserts are idempotent (an item replaces the one with its
    /// `uniqueIdentifier`), so an item stored by an attempt whose reply was
    /// lost, and stored again by the next, is present once. Items rejected for
    /// their content are not resent: the answer would be the same. Throws
    /// for a reply that is neither a `publish_ack` nor a retryable error, and
    /// when the client is closed.
    public func publishUntilAcknowledged(
        _ items: [JSONValue], batch: String? = nil, retryFor: Duration = .seconds(300),
        attemptTimeout: Duration = .seconds(30)
    ) async throws -> PublishOutcome {
        let clock = ContinuousClock()
        let deadline = clock.now + retryFor
        var outcome = PublishOutcome(results: Array(repeating: nil, count: items.count), lastFailure: nil, attempts: 0)
        var backoff = Duration.milliseconds(200)
        while true {
            let open = outcome.unacknowledged
            if open.isEmpty { outcome.lastFailure = nil; return outcome }
            // The first attempt always goes, with its full timeout; resends
            // only within the time limit, and none outlives it.
            let left = deadline - clock.now
            if outcome.attempts > 0 {
                if left <= .zero { return outcome }
                outcome.resentItems += open.count
            }
            outcome.attempts += 1
            do {
                let ack = try await publish(
                    open.map { items[$0] }, batch: batch,
                    timeout: outcome.attempts == 1 ? attemptTimeout : min(attemptTimeout, left))
                var retry: [String] = []
                for r in ack.results where r.index >= 0 && r.index < open.count {
                    let original = open[r.index]
                    if r.status == .rejected, let code = r.error?.code, Self.retryableCodes.contains(code) {
                        retry.append(code)
                        continue
                    }
                    var result = r
                    result.index = original
                    outcome.results[original] = result
                }
                if retry.isEmpty { continue }
                outcome.lastFailure = "\(retry.count) item\(retry.count == 1 ? "" : "s") \(retry[0])"
            } catch let error as ClientError
                where error.code == .timeout
                || (error.code == .server && Self.retryableCodes.contains(error.server?.code ?? ""))
            {
                outcome.lastFailure = error.server?.code ?? "\(error.code): \(error.message)"
                // With standby coordinators: silence or `not_active` moves to another.
                if await failOver(after: error) { backoff = .milliseconds(200) }
            }
            let pause = min(backoff, max(.zero, deadline - clock.now))
            try? await Task.sleep(for: pause)
            backoff = min(backoff * 2, .seconds(5))
        }
    }
}
