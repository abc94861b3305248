import Items
import Planner
import QueryPlan

extension ResultMerger {
    /// Whether hits remain that were never released, or a shard never finished.
    var mayHoldMore: Bool {
        if !running.isEmpty { return true }
        return buffers.contains { shard, buffer in (heads[shard] ?? 0) < buffer.count }
    }
}

extension CoordinatorCore {
    /// The cursor a predicate query's completion carries: when it stopped at
    /// its limit and a shard may still hold matches, the last result's sort
    /// values. A query that ran to its end gets none, so the last page is the
    /// one without a cursor.
    func nextCursor(_ rq: RunningQuery) -> String? {
        guard let fingerprint = rq.cursorFingerprint, let limit = rq.query.limit, rq.count >= limit, limit > 0,
              let last = rq.lastSort, rq.merger?.mayHoldMore ?? true else { return nil }
        return QueryCursor.encode(after: last, fingerprint: fingerprint)
    }
}
