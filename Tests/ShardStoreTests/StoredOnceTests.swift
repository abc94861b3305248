import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// Format 3 keeps a text value once when it equals its folded key byte for
/// byte (`attrs.text` NULL, readers take `coalesce(text, key)`); these tests
/// hold what is stored, and that a format-2 shard (every text in full) answers
/// the same, read-only and after its upgrade, with writes and deletions
/// mixing rows of both forms.
@Suite struct StoredOnceTests {
    /// The stored `text` and `key` of each value of `uid`, by attribute name and position.
    static func rows(_ path: String, _ uid: String) throws -> [String: (text: String?, key: String?)] {
        let db = try Database(path: path, mode: .readOnly)
        let s = try db.prepare(
            "SELECT n.name, a.pos, a.text, a.key FROM attrs a JOIN names n ON n.id = a.name JOIN items i ON i.id = a.item WHERE i.uid = ?")
        try s.bind(uid, at: 0)
        var out: [String: (String?, String?)] = [:]
        try s.forEachRow { r in out["\(r.string(at: 0) ?? "?")[\(r.int64(at: 1))]"] = (r.string(at: 2), r.string(at: 3)) }
        return out
    }

    @Test func aTextEqualToItsKeyIsStoredOnlyAsTheKey() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let description = String(repeating: "word ", count: 20) + "end"
        try store.put([
            item(
                "a",
                #"{"title": "zlib1g", "displayName": "Zlib Library", "keywords": ["kernel", "Café", "e\u0301clair"], "contentDescription": "\#(description)", "installedSize": 12}"#
            ),
            item("b", #"{"title": "zlib1g-dev", "displayName": "zlib library"}"#),
        ])
        let rows = try Self.rows(dir.path("shard.db"), "a")
        #expect(rows["title[0]"]?.text == nil)
        #expect(rows["title[0]"]?.key == "zlib1g")
        #expect(rows["displayName[0]"]?.text == "Zlib Library")
        #expect(rows["displayName[0]"]?.key == "zlib library")
        #expect(rows["keywords[0]"]?.text == nil)
        #expect(rows["keywords[1]"]?.text == "Café")
        // Canonically equal to its fold's first letters is not enough: the bytes differ.
        #expect(rows["keywords[2]"]?.text == "e\u{301}clair")
        // Past the key's 64 characters the key is a prefix: the text stays.
        #expect(rows["contentDescription[0]"]?.text == description)
        #expect(rows["installedSize[0]"]?.text == nil && rows["installedSize[0]"]?.key == nil)

        // Every path that reads a value's text sees it whole.
        #expect(try store.idSet(text("title", "zlib1g")) == ["a"])
        #expect(try store.idSet(text("title", "ZLIB1G", "c")) == ["a"])
        #expect(try store.idSet(text("title", "*lib1*")) == ["a", "b"])
        #expect(try store.idSet(text("title", "zlib1g*")) == ["a", "b"])
        #expect(try store.idSet(text("keywords", "kernel")) == ["a"])
        #expect(try store.idSet(text("displayName", "zlib library")) == ["b"])
        #expect(try store.idSet(text("displayName", "zlib library", "c")) == ["a", "b"])
        #expect(try store.idSet(text("*", "kernel", "cdw")) == ["a"])
        #expect(try store.ids(.all, sort: [.attribute("title", ascending: false)]) == ["b", "a"])
        // The word index forgets exactly what it indexed (its text is re-derived from these rows).
        _ = try store.delete(ids: ["a"])
        #expect(try store.idSet(text("*", "kernel", "cdw")).isEmpty)
        #expect(try store.idSet(text("title", "zlib*", "cdw")) == ["b"])
    }

    /// A shard written in format 2 (each text kept in full) answers the same
    /// read-only, is upgraded to format 3 when opened for writing, and keeps
    /// answering the same as items of both forms are written, replaced and deleted.
    @Test func formatTwoShardsAnswerTheSameAndAreUpgraded() throws {
        var rng = SplitMix64(state: 91)
        let dir = TempDir()
        let items = SubstringTests.corpus(&rng, count: 120)
        var current: [String: Item] = [:]
        try SubstringTests.decode(items, into: &current)
        do {
            let store = try openStore(dir)
            try store.put(items)
        }
        try Self.makeFormatTwo(dir.path("shard.db"))
        let plans = (0..<150).map { _ in SubstringTests.leaf(&rng, values: SubstringTests.values(current)) }
        func expectAnswers(_ store: ShardStore, _ context: String) throws {
            for p in plans + [text("*", "kernel", "cdw"), text("title", "data*", "cdw")] {
                let expected = Set(current.values.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
                let got = try store.idSet(p)
                #expect(got == expected, "\(context): \(p)")
                if got != expected { return }
            }
        }
        let old = try Database(path: dir.path("shard.db"), mode: .readOnly)
        #expect(try SubstringTests.format(old) == "2")
        #expect(try old.prepare("SELECT count(*) FROM attrs WHERE kind IN (0, 5) AND text IS NULL").scalar()?.int64 == 0)
        try expectAnswers(try openStore(dir, mode: .readOnly), "format 2, read-only")

        let writer = try openStore(dir)
        #expect(try SubstringTests.format(try Database(path: dir.path("shard.db"), mode: .readOnly)) == "3")
        try expectAnswers(writer, "upgraded")
        let replaced = SubstringTests.corpus(&rng, count: 40, from: 100)
        try writer.put(replaced)
        try SubstringTests.decode(replaced, into: &current)
        #expect(try old.prepare("SELECT count(*) FROM attrs WHERE kind IN (0, 5) AND text IS NULL").scalar()?.int64 ?? 0 > 0)
        // Old rows (items 1-3) and new ones (items 100-102) deleted alike.
        let gone = ["item1", "item2", "item3", "item100", "item101", "item102"]
        _ = try writer.delete(ids: gone)
        for id in gone { current[id] = nil }
        try expectAnswers(writer, "upgraded, then written")
        try expectAnswers(try openStore(dir, mode: .readOnly), "upgraded, then written, read-only")
    }

    /// Turns a shard into what format 2 wrote: every text value in `text`.
    static func makeFormatTwo(_ path: String) throws {
        let db = try Database(path: path)
        try db.execute(
            """
            UPDATE attrs SET text = key WHERE kind IN (0, 5) AND text IS NULL;
            UPDATE meta SET value = '2' WHERE key = 'format';
            """)
    }
}
