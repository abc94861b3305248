import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// ``ItemRows``: every item's row in memory, exactly SQLite's, for the hits
/// of searches while the index it was read with is current.
@Suite struct ItemRowsTests {
    /// Each item's identifier and JSON, as SQLite holds them.
    static func sqlRows(_ s: ShardStore) throws -> [Int64: (uid: [UInt8], json: [UInt8])] {
        let q = try s.db.prepare("SELECT id, uid, json FROM items")
        defer { try? q.reset() }
        var rows: [Int64: (uid: [UInt8], json: [UInt8])] = [:]
        while try q.step() {
            rows[q.int64(at: 0)] = (q.withUTF8(at: 1) { Array($0) } ?? [], q.withUTF8(at: 2) { Array($0) } ?? [])
        }
        return rows
    }

    /// A random store and two readers of it: one with its posting index
    /// (and so its rows) read, one that never takes hits from rows.
    static func readers(_ dir: TempDir, seed: UInt64) throws -> (withRows: ShardStore, without: ShardStore) {
        _ = try ForwardIndexTests.store(dir, seed: seed)
        let withRows = try openStore(dir, mode: .readOnly)
        let without = try openStore(dir, mode: .readOnly)
        without.searchCache.searchesUseItemRows = false
        try withRows.buildSuggestionIndex()
        return (withRows, without)
    }

    static func held(_ rows: ItemRows, _ id: Int64) -> (uid: [UInt8], json: [UInt8])? {
        rows.withRow(id) { uid, json, _ in (Array(uid), Array(json)) }
    }

    /// Every item's row is SQLite's byte for byte (text past ASCII, escapes,
    /// deleted items among them), and an id without an item has none.
    @Test func everyRowIsSQLitesRow() throws {
        let dir = TempDir()
        let s = try ForwardIndexTests.store(dir, seed: 71)
        try s.put([item("quoted", #"{"title": "say \"hi\"\\ \u0001 日本語 café", "n": 1.5}"#)])
        let rows = try #require(try s.db.transaction(.deferred) { try ItemRows(db: s.db) })
        let sql = try Self.sqlRows(s)
        #expect(rows.count == sql.count && sql.count == 298)
        let maxID = try #require(sql.keys.max())
        for id in -1...(maxID + 2) {
            let mine = Self.held(rows, id), theirs = sql[id]
            #expect(mine?.uid == theirs?.uid && mine?.json == theirs?.json, "\(id)")
        }
        // Past its limit, none are read (SQLite then serves every hit).
        #expect(try s.db.transaction(.deferred) { try ItemRows(db: s.db, maxBytes: 1_000) } == nil)
    }

    /// Reading a row's attributes from its layout gives what reading the
    /// whole row gives, for every row and attribute lists of every kind:
    /// a location (an object within an attribute), no attributes, names
    /// absent, and a name made of quotes and commas that spells out the
    /// bytes of keys and values in a row. A key with an escape (the store's
    /// names have none, but JSON may) leaves its row without a layout.
    @Test func aRowsLayoutReadsWhatTheWholeRowReads() throws {
        let escaped = Array(#"{"attributes":{"ti\"tle":"x","title":"y"},"uniqueIdentifier":"e"}"#.utf8)
        #expect(escaped.withUnsafeBufferPointer { AttributesLayout($0) } == nil)
        let plain = Array(#"{"attributes":{"a":"b","title":"y"},"uniqueIdentifier":"e"}"#.utf8)
        #expect(plain.withUnsafeBufferPointer { AttributesLayout($0) } == AttributesLayout(start: 14, end: 35, keys: Flat([15, 23])[...]))

        let dir = TempDir()
        let s = try ForwardIndexTests.store(dir, seed: 79)
        try s.put([
            item("located", #"{"title": "n", "place": {"latitude": 1.5, "longitude": -2.25}, "zeta": "z"}"#),
            item("empty", #"{}"#),
            item("quotes", #"{"a": "b", "c": 1, "title": "say \"hi\""}"#),
        ])
        let rows = try #require(try s.db.transaction(.deferred) { try ItemRows(db: s.db) })
        let sql = try Self.sqlRows(s)
        let lists: [[String]] = [
            ["title"], ["title", "contentDescription", "keywords"], ["nope"], [], [#"a":"b","c"#],
            ["place"], ["c", "a"], ["size", "section"], [#"ti"tle"#],
        ]
        var laidOut = 0
        for id in sql.keys {
            let read: Bool? = rows.withRow(id) { uidBytes, json, layout in
                let uid = String(decoding: uidBytes, as: UTF8.self)
                if layout != nil { laidOut += 1 }
                for names in lists {
                    let keep = FetchList(names)
                    let a = StrictJSONReader.parseItem(json, keepingAttributes: keep, uid: uid, layout: layout)
                    let b = StrictJSONReader.parseItem(json, keepingAttributes: keep, uid: uid)
                    #expect(a != nil && a == b, "\(uid) \(names)")
                    // The same as text: copied by the layout, by a walk, and
                    // written from the parsed item, byte for byte.
                    let projected = layout.flatMap { StrictJSONReader.projectItem(json, keepingAttributes: keep, layout: $0) }
                    let walked = StrictJSONReader.projectItem(json, keepingAttributes: keep)
                    #expect(projected != nil && projected == walked && walked == b.map(JSONWriter.bytes), "\(uid) \(names)")
                }
                return true
            }
            #expect(read == true)
        }
        #expect(laidOut == sql.count && sql.count == 300)
    }

    /// A layout's projection declines bytes that are not in the writer's
    /// compact form (space after a value, after a comma, around a colon),
    /// rather than copy a member with its space: the walk then writes it.
    @Test func aLayoutProjectionDeclinesSpacedText() throws {
        for text in [
            #"{"attributes":{"a":"b" ,"title":"y"},"uniqueIdentifier":"e"}"#,
            #"{"attributes":{"a":"b","title":"y" },"uniqueIdentifier":"e"}"#,
            #"{"attributes":{"a":"b", "title":"y"},"uniqueIdentifier":"e"}"#,
            #"{"attributes":{"a":"b","title": "y"},"uniqueIdentifier":"e"}"#,
            #"{"attributes":{"a":"b","title" :"y"},"uniqueIdentifier":"e"}"#,
        ] {
            let json = Array(text.utf8)
            let layout = try #require(json.withUnsafeBufferPointer { AttributesLayout($0) })
            #expect(json.withUnsafeBufferPointer { StrictJSONReader.projectItem($0, keepingAttributes: FetchList(["title"]), layout: layout) } == nil)
            #expect(
                json.withUnsafeBufferPointer { StrictJSONReader.projectItem($0, keepingAttributes: FetchList(["title"])) }
                    == Array(#"{"attributes":{"title":"y"},"uniqueIdentifier":"e"}"#.utf8))
        }
    }

    /// A search asked for raw items (the coordinator's local worker) gives
    /// the same hits, each item as the JSON text of the tree it gives
    /// otherwise, from the rows (by their layouts) and from SQLite alike.
    @Test func rawSearchesGiveTheTextOfTheirTrees() throws {
        let dir = TempDir()
        let (withRows, without) = try Self.readers(dir, seed: 87)
        defer { PostingIndexes.shared.forget(path: withRows.path) }
        var found = 0
        for plan in ForwardIndexTests.randomPlans(80, seed: 87) {
            if try PostingIndexTests.held(withRows) == nil { try withRows.buildSuggestionIndex() }
            let trees = try withRows.search(plan)
            for store in [withRows, without] {
                let raw = try store.search(plan, rawItems: true)
                #expect(raw.hits.map(\.uniqueIdentifier) == trees.hits.map(\.uniqueIdentifier) && raw.nbHits == trees.nbHits)
                #expect(raw.hits.map(\.rank) == trees.hits.map(\.rank))
                #expect(raw.hits.allSatisfy { $0.item == .null })
                #expect(raw.hits.map(\.rawItem) == trees.hits.map { JSONWriter.bytes($0.item) }, "\(plan.words)")
            }
            #expect(trees.hits.allSatisfy { $0.rawItem == nil })
            found += trees.hits.count
        }
        #expect(found > 100)
    }

    /// Rows read before items were replaced and deleted still agree with
    /// SQLite wherever both hold an id (a replaced item gets a new id), and
    /// hold none of the new ids: why the rows need no key of their own.
    @Test func rowsReadBeforeChangesNeverDisagreeWithSQLite() throws {
        let dir = TempDir()
        let s = try ForwardIndexTests.store(dir, seed: 73)
        let before = try #require(try s.db.transaction(.deferred) { try ItemRows(db: s.db) })
        let old = try Self.sqlRows(s)
        try s.put([item("i1", #"{"title": "replaced panda"}"#), item("i2", #"{"title": "replaced again"}"#)])
        #expect(try s.delete(ids: ["i4", "i6"]) == 2)
        let now = try Self.sqlRows(s)
        var shared = 0
        for (id, row) in now {
            guard let mine = Self.held(before, id) else {
                #expect(old[id] == nil, "\(id) was held before")
                continue
            }
            shared += 1
            #expect(mine.uid == row.uid && mine.json == row.json, "\(id)")
        }
        #expect(shared == now.count - 2)
    }

    /// Searches with the index's rows answer exactly as those without them
    /// (which read SQLite), on random plans, and took their hits from the rows.
    @Test func searchesWithAndWithoutTheRowsAgree() throws {
        for seed in [81, 83] as [UInt64] {
            let dir = TempDir()
            let (withRows, without) = try Self.readers(dir, seed: seed)
            defer { PostingIndexes.shared.forget(path: withRows.path) }
            var found = 0
            for plan in ForwardIndexTests.randomPlans(120, seed: seed) {
                if try PostingIndexTests.held(withRows) == nil { try withRows.buildSuggestionIndex() }
                let a = try withRows.search(plan), b = try without.search(plan)
                #expect(a == b, "\(plan.words) \(plan.searchableAttributes)")
                found += a.hits.count
            }
            #expect(found > 150)
            #expect(withRows.searchCache.rowsServed >= found / 2)
            #expect(without.searchCache.rowsServed == 0)
        }
    }
}
