import Foundation
import Items
import QueryPlan
import SQLite

/// Every value of one attribute, by item, for counting facets: entries sorted
/// by item id, values interned.
struct FacetColumn {
    var items: [Int64] = []
    var values: [Int32] = []
    var names: [String] = []
    /// The numeric value of each interned value, for facet stats (nil for text).
    var numbers: [Double?] = []
    /// Item `id`'s entries are `offsets[id]..<offsets[id + 1]`, so counting
    /// a matching set is one lookup per item rather than a merge with every
    /// entry (empty when ids are too sparse for a table: see ``index()``).
    var offsets: [Int32] = []

    /// Fills ``offsets`` when the largest id is within a small multiple of
    /// the entries (ids grow with every write, so a shard that rewrote most
    /// of its items many times falls back to merging).
    mutating func index() {
        guard let first = items.first, first >= 0, let last = items.last,
            last < Int64(8 * items.count + 65_536), items.count < Int(Int32.max)
        else { return }
        var offsets = [Int32](repeating: 0, count: Int(last) + 2)
        var e = 0
        for id in 0..<offsets.count {
            while e < items.count, items[e] < Int64(id) { e += 1 }
            offsets[id] = Int32(e)
        }
        self.offsets = offsets
    }
}

extension ShardStore {
    /// Every value of an attribute by item; rebuilt after any change, since
    /// facet counts must be exact.
    func facetColumn(_ name: Int64) throws -> FacetColumn {
        let cache = searchCache
        if cache.facetVersion != dataVersion {
            cache.facetColumns = [:]
            cache.facetVersion = dataVersion
        }
        if let c = cache.facetColumns[name] { return c }
        var column = FacetColumn()
        var index: [String: Int32] = [:]
        let s = try db.prepare("SELECT item, kind, coalesce(text, key), num FROM attrs WHERE name = ? ORDER BY item, pos")
        try s.bind(name, at: 0)
        while try s.step() {
            guard let kind = ValueKind(rawValue: s.int64(at: 1)) else { continue }
            let value: String
            var number: Double?
            switch kind {
            case .text, .longText: value = s.string(at: 2) ?? ""
            case .number: number = s.double(at: 3); value = canonicalText(number!)
            case .boolean: value = s.double(at: 3) != 0 ? "true" : "false"
            case .date: value = ISODate.format(Date(timeIntervalSinceReferenceDate: s.double(at: 3)))
            case .location: continue
            }
            let id: Int32
            if let known = index[value] {
                id = known
            } else {
                id = Int32(column.names.count)
                index[value] = id
                column.names.append(value)
                column.numbers.append(number)
            }
            column.items.append(s.int64(at: 0))
            column.values.append(id)
        }
        try s.reset()
        column.index()
        cache.facetColumns[name] = column
        return column
    }
}

extension FacetColumn {
    /// How many items of `set` (sorted) hold each value, each counted once
    /// per item, and the stats of the numeric ones.
    func counts(over set: [Int64]) -> (counts: [Int], stats: FacetStats?) {
        var counts = [Int](repeating: 0, count: names.count)
        var stats: FacetStats?
        // Entries are sorted by item, several per item for a list. A
        // value is counted once per item: `lastItem[v]` is the last item
        // (its index in `set`, plus one) that counted it — a Set per item
        // cost more than the rest of the count.
        var lastItem = [Int32](repeating: 0, count: names.count)
        let hasNumbers = numbers.contains { $0 != nil }
        func count(_ v: Int, _ stamp: Int32) {
            if lastItem[v] != stamp {
                lastItem[v] = stamp
                counts[v] += 1
                if hasNumbers, let x = numbers[v] {
                    if stats == nil { stats = FacetStats(min: x, max: x, sum: 0, count: 0) }
                    stats!.merge(FacetStats(min: x, max: x, sum: x, count: 1))
                }
            }
        }
        if !offsets.isEmpty {
            offsets.withUnsafeBufferPointer { offsets in
                values.withUnsafeBufferPointer { values in
                    for (i, item) in set.enumerated() where item >= 0 && item < offsets.count - 1 {
                        let stamp = Int32(truncatingIfNeeded: i + 1)
                        for e in Int(offsets[Int(item)])..<Int(offsets[Int(item) + 1]) { count(Int(values[e]), stamp) }
                    }
                }
            }
        } else {
            items.withUnsafeBufferPointer { items in
                values.withUnsafeBufferPointer { values in
                    set.withUnsafeBufferPointer { set in
                        var i = 0, j = 0
                        while i < set.count, j < items.count {
                            if set[i] < items[j] {
                                i += 1
                            } else if set[i] > items[j] {
                                // Gallop: the matching set is usually far smaller than the column.
                                var step = 1, hi = j
                                while hi < items.count, items[hi] < set[i] { j = hi + 1; hi = j + step; step &<<= 1 }
                                hi = min(hi, items.count)
                                while j < hi {
                                    let mid = (j + hi) >> 1
                                    if items[mid] < set[i] { j = mid + 1 } else { hi = mid }
                                }
                            } else {
                                let item = set[i]
                                let stamp = Int32(truncatingIfNeeded: i + 1)
                                while j < items.count, items[j] == item {
                                    count(Int(values[j]), stamp)
                                    j += 1
                                }
                                i += 1
                            }
                        }
                    }
                }
            }
        }
        return (counts, stats)
    }
}

extension SearchRun {
    /// Facet counts: conjunctive facets over the matches, a disjunctive one
    /// over the matches of the filter without its own refinements.
    /// `filters` finds each filter's items (the search's own filter's
    /// conditions already read). `alsoMatching` adds, for a disjunctive facet's filter, the items that
    /// match it otherwise than by words (a semantic search's vector matches).
    func countFacets(
        matched: [Int64], filters: SearchFilters, restrict: ([Int64]?) throws -> [Int64],
        alsoMatching: (([Int64]?) throws -> [Int64])? = nil, into result: inout ShardSearchResult
    ) throws {
        var disjunctiveSets: [String: [Int64]] = [:]
        var facets = plan.facets
        if let star = facets.firstIndex(of: "*") {
            facets.remove(at: star)
            facets += store.facetAttributes().filter { !facets.contains($0) }
        }
        for facet in facets where facet != SearchPlan.disjunctiveSetSizes {
            try context.checkCancelled()
            var set = matched
            if let filter = plan.disjunctiveFilters[facet] {
                if let known = disjunctiveSets[facet] {
                    set = known
                } else {
                    let items = try filters.ids(filter)
                    set = try restrict(items)
                    if mustVerify, !plan.words.isEmpty { set = try set.filter { try textMatch($0) != nil } }
                    if let alsoMatching { set = IDs.union(set, try alsoMatching(items)) }
                    disjunctiveSets[facet] = set
                }
            }
            guard let name = store.nameIDs[plan.facetAliases[facet] ?? facet] else { result.facets[facet] = [:]; continue }
            let column = try store.facetColumn(name)
            let (counts, stats) = column.counts(over: set)
            var values: [(String, Int)] = []
            for (v, c) in counts.enumerated() where c > 0 { values.append((column.names[v], c)) }
            if values.count > ShardStore.maxFacetValues {
                values.sort { ($0.1, $1.0) > ($1.1, $0.0) }
                values = Array(values.prefix(ShardStore.maxFacetValues))
                result.exhaustiveFacetsCount = false
            }
            result.facets[facet] = Dictionary(values, uniquingKeysWith: +)
            if let stats { result.facetStats[facet] = stats }
        }
        if facets.contains(SearchPlan.disjunctiveSetSizes) {
            var sizes: [String: Int] = [:]
            for facet in facets where plan.disjunctiveFilters[facet] != nil { sizes[facet] = disjunctiveSets[facet]?.count ?? 0 }
            result.facets[SearchPlan.disjunctiveSetSizes] = sizes
        }
    }
}

extension ShardStore {
    /// The attributes `facets: ["*"]` counts on this shard: every attribute
    /// its items hold, except those whose values are not categories, which
    /// Algolia's users would not list in `attributesForFaceting` either:
    /// prose (the standard attributes that hold sentences), identifiers
    /// (attributes `unique`, whose every value differs: `url`, `path`), and
    /// locations.
    func facetAttributes() -> [String] {
        nameIDs.keys.filter { name in
            guard !StandardAttributes.prose.contains(name) else { return false }
            guard let spec = schema.spec(for: name) else { return true }
            return !spec.unique && spec.type != .location && spec.type != .date && spec.searchable
        }.sorted()
    }
}
