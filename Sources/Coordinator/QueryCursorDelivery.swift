import Items
import Planner
import QueryPlan
import WireProtocol

/// What a query's completion tells its client: decided from the query's
/// state alone, so that the cursor's rules are unit-tested without processes.
extension RunningQuery {
    /// The cursor a predicate query's completion carries: the last result's
    /// sort values, when the page is full. A full page always has one (a shard
    /// that stopped at the limit may hold more, which the coordinator cannot
    /// tell from here), so the page after it may be empty; a page that is not
    /// full is the last and has none.
    var nextCursor: String? {
        guard let fingerprint = cursorFingerprint, let limit = query.limit, limit > 0, count >= limit, let last = lastSort else {
            return nil
        }
        return QueryCursor.encode(after: last, fingerprint: fingerprint)
    }

    /// The completion: the count, the shards that failed (by shard), and a
    /// cursor unless the query was cancelled (a cancelled page may stop short
    /// of results a cursor would then skip).
    func completion(cancelled: Bool, elapsedMs: Double) -> Body.Completion {
        Body.Completion(
            count: count, failedShards: scatter.failed.sorted { $0.shard < $1.shard },
            cancelled: cancelled, elapsedMs: (elapsedMs * 1000).rounded() / 1000,
            cursor: cancelled ? nil : nextCursor)
    }
}
