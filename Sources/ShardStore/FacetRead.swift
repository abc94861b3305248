import Foundation
import Items
import QueryPlan
import SQLite

/// How one attribute's facet entries are read from `attrs`, in item order.
///
/// `attrs`' primary key is `(item, name, pos)`: a scan of the table in key
/// order meets each item's rows together, so the entries of one name come
/// out in item order with no sort, and a range of item ids is a range of
/// the table. The `(name, key)` index finds one name's entries without
/// reading the others', but in key order: each entry's row is then a seek
/// into the table, and the whole is sorted again. The `+name` keeps SQLite
/// from choosing that index on its own.
enum FacetRead: Equatable {
    /// The entries of the items from this id on (a patch).
    case since(Int64)
    /// Every entry, by scanning the table.
    case table
    /// Every entry, through the `(name, key)` index.
    case index

    /// A whole column's read: through the index when the attribute's
    /// `entries` are fewer than a quarter of the shard's `items` (an
    /// attribute few items hold: the index reads little), else the table,
    /// since the seeks would then reach most of its pages, in random order.
    static func whole(entries: Int64, items: Int64) -> FacetRead {
        entries * 4 < items ? .index : .table
    }

    /// Every entry of several names, by one scan of the table, each row
    /// with its name last.
    static func tableSQL(names: Int) -> String {
        "SELECT item, kind, coalesce(text, key), num, name FROM attrs WHERE +name IN ("
            + Array(repeating: "?", count: names).joined(separator: ", ") + ") ORDER BY item, name, pos"
    }

    var sql: String {
        let columns = "SELECT item, kind, coalesce(text, key), num FROM attrs"
        switch self {
        case .since: return columns + " WHERE item >= ? AND +name = ? ORDER BY item, name, pos"
        case .table: return columns + " WHERE +name = ? ORDER BY item, name, pos"
        case .index: return columns + " WHERE name = ? ORDER BY item, pos"
        }
    }
}

extension ShardStore {
    /// How each of `names`' whole columns is best read (see
    /// ``FacetRead/whole(entries:items:)``): the shard's items counted once
    /// for them all.
    func wholeFacetReads(of names: [Int64]) throws -> [(name: Int64, read: FacetRead)] {
        guard !names.isEmpty else { return [] }
        let items = try db.prepare("SELECT count(*) FROM items").scalar()?.int64 ?? 0
        let count = try db.prepare("SELECT count(*) FROM attrs WHERE name = ?")
        return try names.map { name in
            try count.bind(name, at: 0)
            return (name, FacetRead.whole(entries: try count.scalar()?.int64 ?? 0, items: items))
        }
    }

    /// Appends attribute `name`'s entries that `read` finds to `column`, in
    /// item order.
    ///
    /// How the rows are found (see ``FacetRead``): the items stored since a
    /// patch's watermark by the primary key's range, and a whole column
    /// either the same way over the whole table or through the `(name, key)`
    /// index, whichever reads less. SQLite, left to choose, takes the
    /// index for both (it has no statistics), so a patch walked every entry
    /// of the attribute and a whole read sought each entry's row in random
    /// order, then sorted them: on a shard larger than the page cache that
    /// is a disk read per entry.
    func readEntries(of name: Int64, _ read: FacetRead, into column: inout FacetColumn) throws {
        let s = try db.prepare(read.sql)
        switch read {
        case .since(let from):
            try s.bind(from, at: 0)
            try s.bind(name, at: 1)
        case .table, .index:
            try s.bind(name, at: 0)
        }
        defer { try? s.reset() }
        while try s.step() {
            guard let (value, number) = Self.facetValue(s) else { continue }
            column.append(item: s.int64(at: 0), value: value, number: number)
        }
    }

    /// The whole columns of `names` (each one a whole read would scan the
    /// table for) from one scan of the table: a scan's cost is the table's
    /// size, whatever the names, so a search counting three facets reads it
    /// once rather than three times.
    func readWholeColumns(_ names: [Int64]) throws -> [Int64: FacetColumn] {
        let s = try db.prepare(FacetRead.tableSQL(names: names.count))
        for (i, name) in names.enumerated() { try s.bind(name, at: i) }
        defer { try? s.reset() }
        var columns: [Int64: FacetColumn] = [:]
        for name in names { columns[name] = FacetColumn() }
        while try s.step() {
            guard let (value, number) = Self.facetValue(s) else { continue }
            columns[s.int64(at: 4)]?.append(item: s.int64(at: 0), value: value, number: number)
        }
        return columns
    }

    /// A facet entry's value as it is counted, from a row of ``FacetRead``'s
    /// columns (item, kind, text, number); nil for a location.
    static func facetValue(_ s: Statement) -> (String, Double?)? {
        guard let kind = ValueKind(rawValue: s.int64(at: 1)) else { return nil }
        switch kind {
        case .text, .longText: return (s.string(at: 2) ?? "", nil)
        case .number:
            let number = s.double(at: 3)
            return (canonicalText(number), number)
        case .boolean: return (s.double(at: 3) != 0 ? "true" : "false", nil)
        case .date: return (ISODate.format(Date(timeIntervalSinceReferenceDate: s.double(at: 3))), nil)
        case .location: return nil
        }
    }
}
