import Foundation
import Items
import QueryPlan

/// What became of one item of a write batch.
public enum WriteOutcome: Sendable, Hashable {
    /// Stored (inserted or replaced).
    case stored(uniqueIdentifier: String)
    /// Rejected, with the reason; the identifier when the item had a usable one.
    case rejected(uniqueIdentifier: String?, ItemError)

    public var isStored: Bool {
        if case .stored = self { return true }
        return false
    }
}

/// One matching item as a query returns it.
public struct StoredResult: Sendable, Hashable {
    /// `uniqueIdentifier`, `domainIdentifier`, `attributes` (only the fetched
    /// ones), `expirationDate` and `entity` when present — the shape producers send.
    public var item: JSONValue
    /// One value per sort key of the query, so a coordinator can merge the
    /// ordered streams of several shards: attribute values as JSON numbers
    /// (dates as seconds since 2001-01-01) or text, `null` when the item has
    /// none; for `.relevance`, the score. Compare with ``precedes(_:_:by:)``.
    public var sortValues: [JSONValue]
    /// The relevance score (higher is better) when the query sorts by relevance.
    /// Shard-local: BM25 statistics differ between shards.
    public var score: Double?

    public init(item: JSONValue, sortValues: [JSONValue] = [], score: Double? = nil) {
        self.item = item
        self.sortValues = sortValues
        self.score = score
    }

    /// The store's ordering, for merging sorted shard streams: true when a
    /// result with `a` comes before one with `b`.
    ///
    /// Missing values come last in either direction; numbers come before text;
    /// text compares case- and diacritic-insensitively first, then exactly.
    public static func precedes(_ a: [JSONValue], _ b: [JSONValue], by keys: [SortKey]) -> Bool {
        for (i, key) in keys.enumerated() {
            let x = SortValue(json: i < a.count ? a[i] : .null)
            let y = SortValue(json: i < b.count ? b[i] : .null)
            let ascending: Bool
            switch key {
            case .attribute(_, let asc): ascending = asc
            case .relevance: ascending = false
            }
            let c = SortValue.compare(x, y, ascending: ascending)
            if c != 0 { return c < 0 }
        }
        return false
    }
}

/// Figures for one shard, for the stats endpoint and capacity planning.
public struct ShardStats: Sendable, Hashable, Codable {
    /// Items stored, expired ones not yet purged included.
    public var itemCount: Int
    /// Items past their expiration date, invisible to queries, awaiting a purge.
    public var expiredCount: Int
    /// Attribute value rows (one per list element).
    public var valueCount: Int
    /// Distinct attribute names seen.
    public var attributeNameCount: Int
    /// Distinct terms in the word index.
    public var wordCount: Int
    /// Custom attribute declarations in force.
    public var declaredAttributeCount: Int
    /// Bytes on disk: the database file and its write-ahead log.
    public var fileBytes: Int64
    public var walBytes: Int64
}

/// A sort value with the store's total order; see ``StoredResult/precedes(_:_:by:)``.
enum SortValue {
    case missing
    case number(Double)
    case text(key: String, raw: String)

    init(json: JSONValue) {
        switch json {
        case .number(let d): self = .number(d)
        case .bool(let b): self = .number(b ? 1 : 0)
        case .string(let s): self = .text(key: Fold.key(s), raw: s)
        default: self = .missing
        }
    }

    var json: JSONValue {
        switch self {
        case .missing: .null
        case .number(let d): .number(d)
        case .text(_, let raw): .string(raw)
        }
    }

    /// -1, 0 or 1; missing values are last whatever the direction.
    static func compare(_ x: SortValue, _ y: SortValue, ascending: Bool) -> Int {
        let c: Int
        switch (x, y) {
        case (.missing, .missing): return 0
        case (.missing, _): return 1
        case (_, .missing): return -1
        case (.number(let a), .number(let b)): c = a < b ? -1 : a > b ? 1 : 0
        case (.number, .text): c = -1
        case (.text, .number): c = 1
        case (.text(let ka, let ra), .text(let kb, let rb)):
            c = ka < kb ? -1 : ka > kb ? 1 : (ra < rb ? -1 : ra > rb ? 1 : 0)
        }
        return ascending ? c : -c
    }
}
