import Items
import Planner
import QueryPlan

extension CoordinatorCore {
    /// The cursor a predicate query's completion carries: the last result's
    /// sort values, when the page is full. A full page always has one (a shard
    /// that stopped at the limit may hold more, which the coordinator cannot
    /// tell from here), so the page after it may be empty; a page that is not
    /// full is the last and has none.
    func nextCursor(_ rq: RunningQuery) -> String? {
        guard let fingerprint = rq.cursorFingerprint, let limit = rq.query.limit, limit > 0, rq.count >= limit,
            let last = rq.lastSort
        else { return nil }
        return QueryCursor.encode(after: last, fingerprint: fingerprint)
    }
}
