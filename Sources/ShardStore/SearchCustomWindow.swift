import Foundation
import QueryPlan
import SQLite

/// Every item's first value of one attribute as a custom ranking reads it
/// (``ShardStore/attributeSortValues(ids:name:_:)``: a number, text, or
/// none), one entry per item id.
///
/// Why: with the default custom ranking (`rankingHint`) every item holds a
/// value, so an empty query, or a common word whose matches tie on the
/// word criteria, had each candidate's value read from SQLite and ranked as
/// JSON: seconds on a shard of a hundred thousand items. Held per
/// connection while the data is the same, it is one array read per
/// candidate (see ``SearchRun/customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``).
struct SortColumn {
    enum Kind: UInt8 {
        case missing = 0
        case number = 1
        case text = 2
    }
    /// `kinds[id]`, `numbers[id]` (for a number); ids past the end hold none.
    var kinds: [UInt8] = []
    var numbers: [Double] = []

    /// Reads the column as the large-set path of
    /// ``ShardStore/attributeSortValues(ids:name:_:)`` does: numbers (dates
    /// and booleans too) from the covering `(name, num)` index, locations
    /// left out, then the items whose first value is text.
    init(store: ShardStore, name: Int64) throws {
        let numberRows = try store.db.prepare(
            "SELECT item, num FROM attrs WHERE name = ? AND num IS NOT NULL AND pos = 0"
                + (try store.holdsLocations(name) ? " AND kind != 4" : ""))
        try numberRows.bind(name, at: 0)
        defer { try? numberRows.reset() }
        while try numberRows.step() { put(numberRows.int64(at: 0), .number, numberRows.double(at: 1)) }
        let textRows = try store.db.prepare("SELECT item FROM attrs WHERE name = ? AND key IS NOT NULL AND pos = 0")
        try textRows.bind(name, at: 0)
        defer { try? textRows.reset() }
        while try textRows.step() { put(textRows.int64(at: 0), .text, 0) }
    }

    /// Sets item `id`'s value, growing the arrays past the largest id held
    /// (by half, so that ids read in order grow them a few times).
    private mutating func put(_ id: Int64, _ kind: Kind, _ number: Double) {
        guard id >= 0, id < Int64(Int32.max) else { return }
        let i = Int(id)
        if i >= kinds.count {
            let grow = max(i + 1, kinds.count + kinds.count / 2)
            kinds += repeatElement(Kind.missing.rawValue, count: grow - kinds.count)
            numbers += repeatElement(0, count: grow - numbers.count)
        }
        kinds[i] = kind.rawValue
        numbers[i] = number
    }

    /// The column of the data after a commit: the items `removed` names
    /// (those deleted since, from the ``RemovalLog``) hold no value, and the
    /// values of the items stored since (ids from `from` on) are read by the
    /// primary key's range, as the whole read classes them (a location is
    /// no value, a text row wins over a number).
    mutating func patch(removed: [Int64], from: Int64, store: ShardStore, name: Int64) throws {
        for id in removed where id >= 0 && id < Int64(kinds.count) { kinds[Int(id)] = Kind.missing.rawValue }
        let rows = try store.db.prepare(
            "SELECT item, kind, num, key IS NOT NULL FROM attrs WHERE item >= ? AND +name = ? AND pos = 0 ORDER BY item, name, pos")
        try rows.bind(from, at: 0)
        try rows.bind(name, at: 1)
        defer { try? rows.reset() }
        while try rows.step() {
            guard rows.int64(at: 1) != ValueKind.location.rawValue else { continue }
            if rows.int64(at: 3) != 0 {
                put(rows.int64(at: 0), .text, 0)
            } else if !rows.isNull(at: 2) {
                put(rows.int64(at: 0), .number, rows.double(at: 2))
            }
        }
    }

    @inline(__always)
    func kind(_ id: Int64) -> Kind {
        guard id >= 0, id < Int64(kinds.count) else { return .missing }
        return Kind(rawValue: kinds[Int(id)]) ?? .missing
    }
}

extension ShardStore {
    /// Whether any item holds a text value of attribute `name` (every text
    /// row has a key: one step in the `(name, key)` index).
    func holdsText(_ name: Int64) throws -> Bool {
        let s = try db.prepare("SELECT 1 FROM attrs WHERE name = ? AND key IS NOT NULL LIMIT 1")
        try s.bind(name, at: 0)
        defer { try? s.reset() }
        return try s.step()
    }

    /// Attribute `name`'s ``SortColumn`` for the data this connection
    /// reads: taken from another read-only connection of the process that
    /// has it for the same data (see ``SharedColumns``), else patched with
    /// the changes since the one held (see ``SortColumn/patch(removed:from:store:name:)``),
    /// else read whole.
    func sortColumn(_ name: Int64) throws -> SortColumn {
        let version = dataSeen
        let held = universeCache.sortColumns[name]
        if let held, held.version == version { return held.column }
        let mark = try changeMark()
        let shares = sharesColumns
        var column: SortColumn
        if shares, let mark, let shared = SharedColumns.shared.columns(path: path, mark: mark)?.sorts[name] {
            column = shared
            searchCache.columnsTaken += 1
        } else {
            if let held, let old = held.mark, let mark, let removed = try removed(since: old, upTo: mark) {
                column = held.column
                universeCache.sortColumns[name] = nil
                try column.patch(removed: removed, from: old.watermark, store: self, name: name)
                universeCache.sortColumnPatches += 1
            } else {
                column = try SortColumn(store: self, name: name)
            }
            if shares, let mark {
                let shared = column
                SharedColumns.shared.publish(path: path, mark: mark) {
                    if $0.sorts.count >= UniverseCache.maxSortColumns { $0.sorts = [:] }
                    $0.sorts[name] = shared
                }
            }
        }
        if universeCache.sortColumns.count >= UniverseCache.maxSortColumns { universeCache.sortColumns = [:] }
        universeCache.sortColumns[name] = (version, mark, column)
        return column
    }
}

extension SearchRun {
    /// Whether the plan's order is one a window picked by custom values
    /// follows (the default ranking, no distinct, no point, no phrase),
    /// for ``customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``
    /// and ``orderedWindow(_:)``; tests turn both off to compare.
    var windowByCustomValues: Bool {
        store.searchCache.searchesUseCustomWindow && plan.ranking == nil && plan.distinct == nil && plan.around == nil
            && matcher.phrases.isEmpty && plan.window > 0
    }

    /// The candidates of `chosen` (indexes of `matched`) that can make the
    /// window, found without building their ranks: each one's order as a
    /// row of integers — the word criteria (one word: typos, attribute,
    /// exactness; none without words), the custom values, its place in
    /// the identifiers' order — and the window's by a bounded heap over
    /// the rows. Returns the window and whatever ties with its last on the
    /// whole row (canonically equal identifiers), in `chosen`'s order; nil
    /// when the order is not one this covers (a `ranking`, distinct, a
    /// point, several words or a phrase, text custom values, no identifier
    /// order), and the full ranking goes on over every candidate.
    ///
    /// Why: a common word or the empty query leaves tens of thousands of
    /// candidates tied on everything but their custom values, and building
    /// a rank with those values for each, to keep 20, was most of such a
    /// search. The row follows ``QueryPlan/SearchRanking/compare(_:_:plan:)``
    /// criterion for criterion, so the window is the one the full ranking
    /// finds (the randomized differential tests hold it to that).
    func customWindow(
        _ chosen: [Int], matched: [Int64], typos: [Int], attribute: [Int], exactAttribute: [Int], exactWords: [Int]
    ) throws -> [Int]? {
        guard windowByCustomValues, plan.words.count <= 1, chosen.count > 4 * plan.window else { return nil }
        let ids = chosen.map { matched[$0] }
        guard let order = try tieOrder(candidates: ids.count), let places = Self.places(ids, in: order) else { return nil }
        let hasWords = !plan.words.isEmpty
        let width = (hasWords ? 4 : 0) + 2 * plan.customRanking.count + 1
        var rows = [UInt64](repeating: 0, count: width * ids.count)
        for (i, k) in chosen.enumerated() where hasWords {
            let r = i * width
            rows[r] = CustomRows.ordered(typos[k])
            rows[r + 1] = CustomRows.ordered(attribute[k])
            rows[r + 2] = CustomRows.ordered(exactAttribute[k])
            rows[r + 3] = ~CustomRows.ordered(exactWords[k])
        }
        guard try CustomRows.fill(&rows, ids: ids, width: width, at: hasWords ? 4 : 0, keys: plan.customRanking, store: store) else { return nil }
        for i in ids.indices { rows[i * width + width - 1] = UInt64(places[i]) }
        let window = rows.withUnsafeBufferPointer { rows -> [Int] in
            func less(_ a: Int, _ b: Int) -> Bool { CustomRows.compare(rows, width: width, a, b) < 0 }
            let best = Self.smallest(Array(ids.indices), plan.window, by: less)
            guard let last = best.last else { return [] }
            return ids.indices.filter { !less(last, $0) }
        }
        store.searchCache.customWindows += 1
        return window.map { chosen[$0] }
    }
}

/// The custom values' part of a window's rows (``SearchRun/customWindow(_:matched:typos:attribute:exactAttribute:exactWords:)``,
/// ``CustomOrder``): per key, the value's class (numbers before missing
/// ones, both ways: ``QueryPlan/SortValue/compare(_:_:ascending:)``) and
/// the number, reversed for a descending key, as unsigned integers that
/// order as the ranking does.
enum CustomRows {
    /// A signed integer in an order-preserving unsigned form.
    static func ordered(_ x: Int) -> UInt64 { UInt64(bitPattern: Int64(x)) ^ (1 << 63) }

    /// Rows `a` and `b` of `rows` (each `width` wide) compared: -1, 0 or 1.
    @inline(__always)
    static func compare(_ rows: UnsafeBufferPointer<UInt64>, width: Int, _ a: Int, _ b: Int) -> Int {
        var x = a * width, y = b * width
        for _ in 0..<width {
            if rows[x] != rows[y] { return rows[x] < rows[y] ? -1 : 1 }
            x += 1
            y += 1
        }
        return 0
    }

    /// A number in an order-preserving unsigned form.
    static func ordered(_ d: Double) -> UInt64 {
        let b = d.bitPattern
        return b & (1 << 63) != 0 ? ~b : b | (1 << 63)
    }

    /// Writes item `ids[i]`'s custom values into row `i` of `rows` (each
    /// `width` wide) from column `at` on. False when an order is not one
    /// the rows cover (a text value, NaN): the caller ranks in full.
    static func fill(
        _ rows: inout [UInt64], ids: [Int64], width: Int, at offset: Int, keys: [CustomRank], store: ShardStore
    ) throws -> Bool {
        for (j, key) in keys.enumerated() {
            let c = offset + 2 * j
            func number(_ i: Int, _ d: Double) -> Bool {
                guard !d.isNaN else { return false }
                // -0 and 0 compare equal.
                let v = ordered(d == 0 ? 0 : d)
                rows[i * width + c + 1] = key.ascending ? v : ~v
                return true
            }
            func missing(_ i: Int) { rows[i * width + c] = 1 }
            if key.attribute == CustomRank.entityPriority {
                let priorities = try store.entityPriorities()
                if priorities.isEmpty { continue }
                for (i, id) in ids.enumerated() { guard number(i, priorities[id] ?? 0) else { return false } }
            } else if let name = store.nameIDs[key.attribute] {
                let column = try store.sortColumn(name)
                for (i, id) in ids.enumerated() {
                    switch column.kind(id) {
                    case .missing: missing(i)
                    case .text: return false
                    case .number: guard number(i, column.numbers[Int(id)]) else { return false }
                    }
                }
            } else {
                for i in ids.indices { missing(i) }
            }
        }
        return true
    }
}
