import Foundation
import Items
import QueryPlan

/// What became of one item of a write batch.
package enum WriteOutcome: Sendable, Hashable {
    /// Stored (inserted or replaced).
    case stored(uniqueIdentifier: String)
    /// Rejected, with the reason; the identifier when the item had a usable one.
    case rejected(uniqueIdentifier: String?, ItemError)

    package var isStored: Bool {
        if case .stored = self { return true }
        return false
    }
}

/// One matching item as a query returns it.
package struct StoredResult: Sendable, Hashable {
    /// `uniqueIdentifier`, `domainIdentifier`, `attributes` (only the fetched
    /// ones), `expirationDate` and `entity` when present — the shape producers send.
    package var item: JSONValue
    /// One value per sort key of the query, so a coordinator can merge the
    /// ordered streams of several shards: attribute values as JSON numbers
    /// (dates as seconds since the reference date) or text, `null` when the item has
    /// none; for `.relevance`, the score. Compare with ``precedes(_:_:by:)``.
    package var sortValues: [JSONValue]
    /// The relevance score (higher is better) when the query sorts by relevance.
    /// Shard-local: BM25 statistics differ between shards.
    package var score: Double?
    /// For a query run with `rawItems`: the item as JSON text, in
    /// ``JSONWriter``'s form (what it writes for ``item``), and `item` is
    /// `null`. The store copies it out of the JSON it stored, keeping only the
    /// fetched attributes, instead of building a tree that a query worker
    /// would only write out again (see `RawJSON` in WireProtocol).
    package var rawItem: [UInt8]?

    package init(item: JSONValue, sortValues: [JSONValue] = [], score: Double? = nil) {
        self.item = item
        self.sortValues = sortValues
        self.score = score
    }

    package init(rawItem: [UInt8]) {
        self.item = .null
        self.rawItem = rawItem
        self.sortValues = []
    }

    /// The store's ordering, for merging sorted shard streams: true when a
    /// result with `a` comes before one with `b`.
    ///
    /// Missing values come last in either direction; numbers come before text;
    /// text compares case- and diacritic-insensitively first, then exactly.
    package static func precedes(_ a: [JSONValue], _ b: [JSONValue], by keys: [SortKey]) -> Bool {
        SortOrder(keys: keys).precedes(a, b)
    }
}

/// Figures for one shard, for the stats endpoint and capacity planning.
package struct ShardStats: Sendable, Hashable, Codable {
    /// Items stored, expired ones not yet purged included.
    package var itemCount: Int
    /// Items past their expiration date, invisible to queries, awaiting a purge.
    package var expiredCount: Int
    /// Attribute value rows (one per list element).
    package var valueCount: Int
    /// Distinct attribute names seen.
    package var attributeNameCount: Int
    /// Distinct terms in the word index.
    package var wordCount: Int
    /// Custom attribute declarations in force.
    package var declaredAttributeCount: Int
    /// Bytes on disk: the database file and its write-ahead log.
    package var fileBytes: Int64
    package var walBytes: Int64
}

/// Gathers a streamed query's results into batches of the plan's size and
/// stops at its limit: what every streaming path of ``ShardStore/run`` does
/// with a result once it is found.
struct ResultBatcher {
    let limit: Int?
    let batchSize: Int
    private var batch: [StoredResult] = []
    /// Results handed over so far (or waiting in the current batch).
    private(set) var delivered = 0

    init(limit: Int?, batchSize: Int) {
        self.limit = limit
        self.batchSize = batchSize
        batch.reserveCapacity(min(batchSize, 1024))
    }

    /// Adds a result, handing a full batch to `onBatch` (after a last check
    /// for cancellation); true once the limit is reached and the caller
    /// should stop.
    mutating func add(
        _ result: StoredResult, isCancelled: () -> Bool,
        onBatch: ([StoredResult]) throws -> Void
    ) throws -> Bool {
        batch.append(result)
        delivered += 1
        let done = limit.map { delivered >= $0 } ?? false
        if batch.count == batchSize || done {
            if isCancelled() { throw StoreError(.cancelled, "the query was cancelled") }
            try onBatch(batch)
            batch.removeAll(keepingCapacity: true)
        }
        return done
    }

    /// Hands over what is left; returns how many results were delivered.
    mutating func finish(onBatch: ([StoredResult]) throws -> Void) throws -> Int {
        if !batch.isEmpty { try onBatch(batch) }
        batch.removeAll()
        return delivered
    }
}
