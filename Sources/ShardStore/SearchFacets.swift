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
    /// Each value's position in ``names``.
    var valueIDs: [String: Int32] = [:]
    /// Item `id`'s entries are `offsets[id]..<offsets[id + 1]`, so counting
    /// a matching set is one lookup per item rather than a merge with every
    /// entry (empty when ids are too sparse for a table: see ``index()``).
    var offsets: [Int32] = []

    /// Adds one entry: after every entry held (an item's values in order,
    /// items by id).
    mutating func append(item: Int64, value: String, number: Double?) {
        let id: Int32
        if let known = valueIDs[value] {
            id = known
        } else {
            id = Int32(names.count)
            valueIDs[value] = id
            names.append(value)
            numbers.append(number)
        }
        items.append(item)
        values.append(id)
    }

    /// Leaves out the entries of the items `gone` holds (values no item
    /// holds any more stay interned and count zero, which no answer lists).
    mutating func remove(_ gone: IDBits) {
        var kept = 0
        for e in items.indices where !gone.contains(items[e]) {
            items[kept] = items[e]
            values[kept] = values[e]
            kept += 1
        }
        items.removeSubrange(kept...)
        values.removeSubrange(kept...)
    }

    /// Fills ``offsets`` when the largest id is within a small multiple of
    /// the entries (ids grow with every write, so a shard that rewrote most
    /// of its items many times falls back to merging).
    mutating func index() {
        offsets = []
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
    /// Every value of an attribute by item, exact for the data this
    /// connection reads (facet counts must be exact). Kept across commits
    /// and patched with each one's changes rather than read again: the
    /// entries of the items removed since (the shard's ``RemovalLog``) are
    /// taken out and those of the items stored since (ids at or above the
    /// mark's watermark, one range read of `attrs`'s key) appended, so a
    /// search during a bulk publish reads a few rows per commit instead of
    /// every value of each facet. Read whole when there is no mark to
    /// patch from (see ``changeMark()``). Counts are over live matches
    /// only, so a removed item's entries could not be counted anyway: they
    /// are taken out to keep the column the size of the data, and a missed
    /// addition is what would make a count wrong (the differential tests
    /// between writes catch that).
    ///
    /// A read-only connection takes the columns of its data from the
    /// process's ``SharedColumns`` when another has read or patched them,
    /// and shares its own.
    func facetColumn(_ name: Int64) throws -> FacetColumn {
        try prepareFacetColumns([name])
        // Held: prepareFacetColumns takes or reads every name it is given.
        return searchCache.facetColumns[name]!
    }

    /// Holds the columns of `names` for a search that counts them all:
    /// those whose whole read scans the table (see ``FacetRead``) are read
    /// in one scan together rather than a scan each, the others each
    /// through the index.
    func prepareFacetColumns(_ names: [Int64]) throws {
        try bringFacetColumnsUpToDate()
        let cache = searchCache
        var missing = Array(Set(names.filter { cache.facetColumns[$0] == nil })).sorted()
        if sharesColumns, let mark = cache.facetMark, let held = SharedColumns.shared.columns(path: path, mark: mark)?.facets {
            for name in missing { if let c = held[name] { cache.facetColumns[name] = c; cache.columnsTaken += 1 } }
            missing.removeAll { cache.facetColumns[$0] != nil }
        }
        let reads = try wholeFacetReads(of: missing)
        let scanned = reads.filter { $0.read == .table }.map(\.name)
        if scanned.count > 1 {
            for (name, var column) in try readWholeColumns(scanned) { keepWholeColumn(name, &column) }
            cache.facetTableScans += 1
        }
        for (name, read) in reads where cache.facetColumns[name] == nil {
            var column = FacetColumn()
            try readEntries(of: name, read, into: &column)
            keepWholeColumn(name, &column)
            if read == .table { cache.facetTableScans += 1 }
        }
    }

    /// Indexes a column read whole and keeps it (shared, when this connection shares).
    private func keepWholeColumn(_ name: Int64, _ column: inout FacetColumn) {
        column.index()
        let cache = searchCache
        cache.facetColumns[name] = column
        cache.facetColumnReads += 1
        if sharesColumns, let mark = cache.facetMark {
            let shared = column
            SharedColumns.shared.publish(path: path, mark: mark) { $0.facets[name] = shared }
        }
    }

    /// Brings the facet columns held to the data this connection reads:
    /// taken from ``SharedColumns``, patched, or dropped.
    private func bringFacetColumnsUpToDate() throws {
        let cache = searchCache
        let version = dataSeen
        let shares = sharesColumns
        if cache.facetVersion != version {
            let mark = try changeMark()
            let held = shares ? mark.flatMap { SharedColumns.shared.columns(path: path, mark: $0) }?.facets ?? [:] : [:]
            if cache.patchesFacetColumns, !cache.facetColumns.isEmpty, let old = cache.facetMark, let mark,
                let removed = try removed(since: old, upTo: mark)
            {
                let gone = IDBits(removed)
                for (name, var column) in cache.facetColumns {
                    cache.facetColumns[name] = nil
                    if let shared = held[name] {
                        cache.facetColumns[name] = shared
                        cache.columnsTaken += 1
                        continue
                    }
                    if !removed.isEmpty { column.remove(gone) }
                    try readEntries(of: name, .since(old.watermark), into: &column)
                    column.index()
                    cache.facetColumns[name] = column
                    cache.facetColumnPatches += 1
                }
                if shares {
                    let patched = cache.facetColumns
                    SharedColumns.shared.publish(path: path, mark: mark) { $0.facets.merge(patched) { held, _ in held } }
                }
            } else {
                cache.facetColumns = [:]
            }
            cache.facetVersion = version
            cache.facetMark = mark
        }
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
        if !offsets.isEmpty, !hasNumbers {
            // The common case (a category, one value an item) counted in
            // place: an item's lone value needs no check that it was
            // counted for the item already, and no stats are kept. Over
            // an empty query's every item, the check and the call per
            // entry were most of the count.
            counts.withUnsafeMutableBufferPointer { counts in
                lastItem.withUnsafeMutableBufferPointer { lastItem in
                    offsets.withUnsafeBufferPointer { offsets in
                        values.withUnsafeBufferPointer { values in
                            for (i, item) in set.enumerated() where item >= 0 && item < offsets.count - 1 {
                                let lo = Int(offsets[Int(item)]), hi = Int(offsets[Int(item) + 1])
                                if hi - lo == 1 {
                                    counts[Int(values[lo])] += 1
                                    continue
                                }
                                let stamp = Int32(truncatingIfNeeded: i + 1)
                                for e in lo..<hi where lastItem[Int(values[e])] != stamp {
                                    lastItem[Int(values[e])] = stamp
                                    counts[Int(values[e])] += 1
                                }
                            }
                        }
                    }
                }
            }
        } else if !offsets.isEmpty {
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
        try store.prepareFacetColumns(facets.compactMap { store.nameIDs[plan.facetAliases[$0] ?? $0] })
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
