import Items
import QueryPlan
import WireProtocol

/// Orders two hits' sort values the way the shard stores order them.
///
/// Stores sort text by UTF-8 bytes (SQLite's BINARY collation), numbers
/// numerically, and put items without a value last whatever the direction.
/// The merge must agree exactly, or the merged stream would not be sorted.
public struct SortOrder: Sendable {
    public var keys: [SortKey]

    public init(keys: [SortKey]) { self.keys = keys }

    /// True when `a` must come before `b`.
    public func precedes(_ a: [JSONValue], _ b: [JSONValue]) -> Bool {
        for (i, key) in keys.enumerated() {
            let x = i < a.count ? a[i] : .null
            let y = i < b.count ? b[i] : .null
            let ascending: Bool
            switch key {
            case .attribute(_, let asc): ascending = asc
            case .relevance: ascending = false
            }
            let c = Self.compare(x, y)
            if c == 0 { continue }
            // Missing values go last in both directions.
            if x == .null { return false }
            if y == .null { return true }
            return ascending ? c < 0 : c > 0
        }
        return false
    }

    /// -1, 0, 1. Nulls compare equal to each other and after everything else.
    static func compare(_ x: JSONValue, _ y: JSONValue) -> Int {
        switch (x, y) {
        case (.null, .null): return 0
        case (.null, _): return 1
        case (_, .null): return -1
        case (.number(let a), .number(let b)): return a < b ? -1 : a > b ? 1 : 0
        case (.bool(let a), .bool(let b)): return a == b ? 0 : (!a ? -1 : 1)
        case (.string(let a), .string(let b)):
            if a == b { return 0 }
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
        // Numbers sort before text, as in SQLite.
        case (.number, .string), (.bool, .string): return -1
        case (.string, .number), (.string, .bool): return 1
        default: return 0
        }
    }
}

/// A k-way merge of sorted per-shard streams.
///
/// A hit can be released once every shard still running has offered a hit
/// that sorts no earlier, so the client's first batch goes out as soon as each
/// shard has sent its first batch, not when the slowest shard has finished.
public struct ResultMerger: Sendable {
    let order: SortOrder
    var buffers: [Int: [Hit]] = [:]
    var heads: [Int: Int] = [:]
    var running: Set<Int>

    public init(order: SortOrder, shards: [Int]) {
        self.order = order
        self.running = Set(shards)
        for s in shards { buffers[s] = []; heads[s] = 0 }
    }

    public mutating func add(shard: Int, hits: [Hit]) {
        buffers[shard, default: []].append(contentsOf: hits)
    }

    /// The shard will send nothing more (done, failed or cancelled).
    public mutating func finish(shard: Int) {
        running.remove(shard)
    }

    /// Drops a shard's unreleased hits (it is being retried elsewhere).
    public mutating func reset(shard: Int) {
        buffers[shard] = []
        heads[shard] = 0
        running.insert(shard)
    }

    /// Releases every hit that is now certain of its place.
    public mutating func drain(max: Int = .max) -> [(shard: Int, hit: Hit)] {
        var out: [(shard: Int, hit: Hit)] = []
        while out.count < max {
            var best: Int?
            var blocked = false
            for (shard, buffer) in buffers {
                let h = heads[shard] ?? 0
                if h >= buffer.count {
                    // An empty running shard may still send something earlier.
                    if running.contains(shard) { blocked = true; break }
                    continue
                }
                if let b = best {
                    let bh = buffers[b]![heads[b]!]
                    if order.precedes(buffer[h].sort ?? [], bh.sort ?? []) { best = shard }
                } else {
                    best = shard
                }
            }
            guard !blocked, let shard = best else { break }
            let h = heads[shard]!
            out.append((shard, buffers[shard]![h]))
            heads[shard] = h + 1
            if h + 1 > 256 {
                // Compact now and then, so long streams don't hold every hit.
                buffers[shard]!.removeFirst(h + 1)
                heads[shard] = 0
            }
        }
        return out
    }

    public var isExhausted: Bool {
        running.isEmpty && buffers.allSatisfy { (s, b) in (heads[s] ?? 0) >= b.count }
    }
}
