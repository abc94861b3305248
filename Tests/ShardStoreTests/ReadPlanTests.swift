import Foundation
import Items
import Testing

@testable import ShardStore

/// How whole columns and id lists are read from SQLite: each way finds the
/// same rows, and SQLite runs each the way its doc comment says (see
/// ``FacetRead``: a patch by the primary key's range, a whole column by one
/// scan of the table or through the `(name, key)` index; every id from the
/// domain index, not the table of JSON rows).
@Suite struct ReadPlanTests {
    /// Items holding lists, numbers, dates and booleans in `section`, and a
    /// `rare` attribute only a few hold; some replaced and deleted, so that
    /// ids have gaps.
    static func store(_ dir: TempDir) throws -> ShardStore {
        let s = try openStore(dir)
        try s.put(
            (0..<300).map { i in
                let section = i % 5 == 0 ? #"["b\#(i % 7)", "a\#(i % 3)", "b\#(i % 7)"]"# : i % 5 == 1 ? "\(i % 11)" : #""Sec \#(i % 4)""#
                let rare = i % 50 == 0 ? #", "rare": "R\#(i % 3)""# : ""
                let flag = i % 9 == 0 ? #", "flag": \#(i % 2 == 0)"# : ""
                let date = i % 13 == 0 ? #", "section2": "2026-11-\#(10 + i % 9)T00:00:00Z""# : ""
                return item("i\(i)", #"{"title": "t\#(i)", "section": \#(section)\#(rare)\#(flag)\#(date)}"#)
            })
        try s.put((0..<40).map { i in item("i\(i * 7)", #"{"title": "again", "section": "Sec \#(i % 6)", "rare": "R9"}"#) })
        _ = try s.delete(ids: (0..<20).map { "i\($0 * 11)" })
        return s
    }

    /// Each entry as (item, value).
    static func entries(_ c: FacetColumn) -> [(Int64, String)] {
        zip(c.items, c.values).map { ($0, c.names[Int($1)]) }
    }

    @Test func everyReadFindsTheSameEntriesInItemOrder() throws {
        let dir = TempDir()
        let s = try Self.store(dir)
        let watermark = try #require(try s.changeMark()).watermark
        var checked = 0
        for name in ["section", "rare", "flag", "section2", "title"] {
            let id = try #require(s.nameIDs[name])
            var table = FacetColumn(), index = FacetColumn()
            try s.readEntries(of: id, .table, into: &table)
            try s.readEntries(of: id, .index, into: &index)
            let expected = Self.entries(table)
            #expect(!expected.isEmpty, "\(name)")
            #expect(Self.entries(index).elementsEqual(expected, by: ==), "\(name)")
            #expect(zip(table.items, table.items.dropFirst()).allSatisfy { $0 <= $1 }, "\(name): in item order")
            // A patch's read from a point in the ids is the tail of the whole.
            let from = watermark - 25
            var since = FacetColumn()
            try s.readEntries(of: id, .since(from), into: &since)
            #expect(Self.entries(since).elementsEqual(expected.filter { $0.0 >= from }, by: ==), "\(name)")
            checked += expected.count
        }
        #expect(checked > 700)
        // A list's values stay in their order, repeats included, under one item.
        var section = FacetColumn()
        try s.readEntries(of: try #require(s.nameIDs["section"]), .index, into: &section)
        let find = try s.db.prepare("SELECT id FROM items WHERE uid = 'i5'")
        let i5 = try #require(try find.scalar()?.int64)
        #expect(Self.entries(section).filter { $0.0 == i5 }.map(\.1) == ["b5", "a2", "b5"])
    }

    /// Columns a search counts together: those read by scanning the table
    /// come from one scan, the others through the index, and each equals
    /// its own read.
    @Test func columnsCountedTogetherAreReadInOneScan() throws {
        let dir = TempDir()
        let w = try Self.store(dir)
        defer { SharedColumns.shared.forget(path: w.path) }
        let r = try openStore(dir, mode: .readOnly)
        let names = try ["section", "title", "flag", "rare"].map { try #require(w.nameIDs[$0]) }
        try r.prepareFacetColumns(names)
        #expect(r.searchCache.facetColumnReads == 4)
        #expect(r.searchCache.facetTableScans == 1, "section and title by one scan, flag and rare through the index")
        for name in names {
            var alone = FacetColumn()
            try w.readEntries(of: name, .index, into: &alone)
            #expect(Self.entries(try r.facetColumn(name)).elementsEqual(Self.entries(alone), by: ==), "\(name)")
        }
        #expect(r.searchCache.facetColumnReads == 4, "each held")
        let explain = try w.db.prepare("EXPLAIN QUERY PLAN " + FacetRead.tableSQL(names: 3))
        defer { try? explain.reset() }
        var plan: [String] = []
        while try explain.step() { plan.append(explain.string(at: 3) ?? "") }
        #expect(plan == ["SCAN attrs"], "\(plan)")
    }

    @Test func aColumnFewItemsHoldIsReadThroughTheIndexAndOneMostHoldByTheTable() throws {
        #expect(FacetRead.whole(entries: 10, items: 1_000) == .index)
        #expect(FacetRead.whole(entries: 249, items: 1_000) == .index)
        #expect(FacetRead.whole(entries: 250, items: 1_000) == .table)
        #expect(FacetRead.whole(entries: 3_000, items: 1_000) == .table)
        let dir = TempDir()
        let s = try Self.store(dir)
        let reads = try s.wholeFacetReads(of: [try #require(s.nameIDs["rare"]), try #require(s.nameIDs["section"])])
        #expect(reads.map(\.read) == [.index, .table])
    }

    /// The plans SQLite makes for each read: without statistics it would
    /// take the `(name, key)` index for all three facet reads, and sort.
    @Test func sqliteRunsEachReadAsDescribed() throws {
        let dir = TempDir()
        let s = try Self.store(dir)
        func plan(_ read: FacetRead) throws -> String { try plan(read.sql) }
        func plan(_ sql: String) throws -> String {
            let explain = try s.db.prepare("EXPLAIN QUERY PLAN " + sql)
            defer { try? explain.reset() }
            var details: [String] = []
            while try explain.step() { details.append(explain.string(at: 3) ?? "") }
            return details.joined(separator: "; ")
        }
        let since = try plan(.since(1))
        #expect(since.contains("PRIMARY KEY") && !since.contains("attrs_key") && !since.contains("TEMP B-TREE"), "\(since)")
        let table = try plan(.table)
        #expect(table.contains("SCAN attrs") && !table.contains("attrs_key") && !table.contains("TEMP B-TREE"), "\(table)")
        let index = try plan(.index)
        #expect(index.contains("attrs_key"), "\(index)")
        let every = try plan(ShardStore.everyIDSQL)
        #expect(every.contains("COVERING INDEX items_domain"), "\(every)")
        let ids = try plan(ShardStore.idsSinceSQL)
        #expect(ids.contains("PRIMARY KEY") && !ids.contains("TEMP B-TREE"), "\(ids)")
    }

    @Test func theUniverseIsEveryIDSorted() throws {
        let dir = TempDir()
        let s = try Self.store(dir)
        let expected = try s.db.prepare("SELECT id FROM items ORDER BY id").map { $0.int64(at: 0) }
        #expect(expected.count == 280)
        #expect(try s.universe(QueryContext(isCancelled: { false }, wantsScores: false)) == expected)
    }
}
