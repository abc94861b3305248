import Foundation
import QueryPlan

/// Every item of a shard in the order a search without words ranks them by
/// default: by the custom ranking's values, then by the place of the
/// item's identifier (``ItemOrder``). Held per connection for one version
/// of the data and one custom ranking.
///
/// Why: the empty query (InstantSearch's first request, and every browse
/// by refinements alone) matches most of a shard, and picking its 20 best
/// by their custom values built a row for every match and ran a heap over
/// them: 37% of a 1M-item empty query, and 30 MB of rows a shard at 10M.
/// Walked from the front, the order gives the window after about
/// `window / density` steps, whatever the shard's size.
struct CustomOrder {
    /// Item ids, best first; ``sameRow`` is set on an entry whose whole row
    /// (values and place) equals the previous entry's: canonically equal
    /// identifiers, whose order the ranking leaves open.
    let entries: [UInt32]
    static let sameRow: UInt32 = 1 << 31

    /// The order of `ids` (the shard's every item) under `keys`; nil when
    /// an id is past what an entry holds, has no place, or a value is not
    /// one ``CustomRows`` covers.
    init?(ids: [Int64], places order: ItemOrder, keys: [CustomRank], store: ShardStore) throws {
        guard let last = ids.last, last < Int64(Self.sameRow), let places = SearchRun.places(ids, in: order) else { return nil }
        let width = 2 * keys.count + 1
        var rows = [UInt64](repeating: 0, count: width * ids.count)
        guard try CustomRows.fill(&rows, ids: ids, width: width, at: 0, keys: keys, store: store) else { return nil }
        for i in ids.indices { rows[i * width + width - 1] = UInt64(places[i]) }
        entries = rows.withUnsafeBufferPointer { rows in
            func compare(_ a: Int, _ b: Int) -> Int { CustomRows.compare(rows, width: width, a, b) }
            let sorted = ids.indices.sorted { compare($0, $1) < 0 }
            var entries = [UInt32](repeating: 0, count: sorted.count)
            for (p, i) in sorted.enumerated() {
                entries[p] = UInt32(ids[i]) | (p > 0 && compare(sorted[p - 1], i) == 0 ? Self.sameRow : 0)
            }
            return entries
        }
    }

    /// The window's candidates among `matched` (sorted ids, all in the
    /// order), as indexes of `matched`, ascending: the first `window` met
    /// and whatever ties with the last of them on the whole row, as
    /// ``SearchRun/customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``
    /// picks them.
    func window(_ window: Int, of matched: [Int64]) -> [Int] {
        var picked: [Int] = []
        picked.reserveCapacity(window + 4)
        for e in entries {
            if picked.count >= window, e & Self.sameRow == 0 { break }
            let id = Int64(e & ~Self.sameRow)
            if let k = IDs.index(of: id, in: matched) { picked.append(k) }
        }
        picked.sort()
        return picked
    }
}

/// The ``CustomOrder``s a connection holds: one per custom ranking, of the
/// data last seen. An order is built the second time the same data is
/// searched without words under its ranking: building sorts every item,
/// several times one heap pass, so data that changes between such searches
/// (a bulk publish) keeps the heap.
struct CustomOrders {
    var version = UniverseCache.Version(data: -2, changes: 0)
    var orders: [[CustomRank]: CustomOrder] = [:]
    /// Rankings searched once at `version`, whose order is built at the next.
    var asked: Set<[CustomRank]> = []
    /// Rankings whose order cannot be built at `version` (a text value, no
    /// identifier order at hand): not tried again until the data changes.
    var refused: Set<[CustomRank]> = []
    /// Orders built (for tests).
    var builds = 0
    static let maxOrders = 4
}

extension SearchRun {
    /// The window of a search without words through the shard's
    /// ``CustomOrder``, as indexes of `matched`; nil when the search is not
    /// one it covers (as ``customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``,
    /// and its words are none), when the matches are too sparse for a walk
    /// to be short (under an eighth of the shard), or the first time the
    /// data is searched so.
    func orderedWindow(_ matched: [Int64]) throws -> [Int]? {
        guard windowByCustomValues, plan.words.isEmpty, matched.count > 4 * plan.window else { return nil }
        let universe = try store.universe(context)
        guard matched.count * 8 >= universe.count else { return nil }
        let keys = plan.customRanking
        let version = store.dataSeen
        var held = store.universeCache.customOrders
        if held.version != version { held = CustomOrders(version: version, builds: held.builds) }
        defer { store.universeCache.customOrders = held }
        if held.orders[keys] == nil {
            if held.refused.contains(keys) { return nil }
            guard held.asked.contains(keys) else {
                held.asked.insert(keys)
                return nil
            }
            // (Built once a version: the identifiers' order is worth reading at any size.)
            guard let places = try tieOrder(candidates: max(universe.count, SearchCache.itemOrderMinCandidates)),
                let order = try CustomOrder(ids: universe, places: places, keys: keys, store: store)
            else {
                held.refused.insert(keys)
                return nil
            }
            if held.orders.count >= CustomOrders.maxOrders { held.orders = [:] }
            held.orders[keys] = order
            held.builds += 1
        }
        guard let order = held.orders[keys] else { return nil }
        store.searchCache.customWindows += 1
        return order.window(plan.window, of: matched)
    }
}
