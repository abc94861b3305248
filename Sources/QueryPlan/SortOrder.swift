import Items

/// Orders results by a query's sort keys. Shards sort by it and the
/// coordinator's k-way merge compares by it: one definition, so a merged
/// stream is sorted exactly as each shard's is.
public struct SortOrder: Sendable {
    public var keys: [SortKey]

    public init(keys: [SortKey]) { self.keys = keys }

    /// True when a result with sort values `a` comes before one with `b`.
    /// Relevance sorts descending; missing values come last in either direction.
    public func precedes(_ a: [JSONValue], _ b: [JSONValue]) -> Bool {
        for (i, key) in keys.enumerated() {
            let x = SortValue(json: i < a.count ? a[i] : .null)
            let y = SortValue(json: i < b.count ? b[i] : .null)
            let ascending: Bool
            switch key {
            case .attribute(_, let asc): ascending = asc
            case .relevance: ascending = false
            case .identifier: ascending = true
            }
            let c = SortValue.compare(x, y, ascending: ascending)
            if c != 0 { return c < 0 }
        }
        return false
    }
}

/// A sort value in the one total order that stores sort by and the
/// coordinator merges by: numbers before text, text by its folded key (case
/// and diacritics ignored) then by its raw form, missing values last.
package enum SortValue {
    case missing
    case number(Double)
    case text(key: String, raw: String)

    package init(json: JSONValue) {
        switch json {
        case .number(let d): self = .number(d)
        case .bool(let b): self = .number(b ? 1 : 0)
        case .string(let s): self = .text(key: Fold.key(s), raw: s)
        default: self = .missing
        }
    }

    package var json: JSONValue {
        switch self {
        case .missing: .null
        case .number(let d): .number(d)
        case .text(_, let raw): .string(raw)
        }
    }

    /// -1, 0 or 1; missing values are last whatever the direction.
    package static func compare(_ x: SortValue, _ y: SortValue, ascending: Bool) -> Int {
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
