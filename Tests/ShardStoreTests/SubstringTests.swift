import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// Substring patterns are answered from the word index through the
/// vocabulary's trigrams; these tests hold them (and the equality, prefix and
/// range tests beside them) to the plain definition on shapes the general
/// differential test rarely draws: patterns cut out of stored values across
/// word boundaries, long texts, text that is not ASCII, a shard that changes
/// between queries, and shards written in the old format.
@Suite struct SubstringTests {
    static let pieces = [
        "libactivemq-java", "ActiveMQ", "MyWindowClass", "NSWindow", "x86_64", "Café", "crème brûlée", "naïve",
        "Straße", "ÉCOLE", "日本語テキスト", "Ωmega", "fooⓐbar", "C++", "3D", "v2.5.1", "İstanbul", "ﬁle", "e\u{301}clair",
        "data", "database", "kernel", "toolkit", "ToolKit", "über", "résumé", "São Paulo", "zlib1g", "python3-pip",
    ]

    static func phrase(_ rng: inout SplitMix64, _ words: Int) -> String {
        let seps = [" ", " ", "-", ", ", "/", ".", "_", "\n", " (", ") "]
        var s = ""
        for i in 0..<words {
            if i > 0 { s += seps.randomElement(using: &rng)! }
            if Int.random(in: 0..<5, using: &rng) == 0 {
                // A word no other item may have: later writes bring new terms.
                let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éü")
                s += String((0..<Int.random(in: 3...9, using: &rng)).map { _ in letters.randomElement(using: &rng)! })
            } else {
                s += pieces.randomElement(using: &rng)!
            }
        }
        return s
    }

    static func corpus(_ rng: inout SplitMix64, count: Int, from first: Int = 0) -> [JSONValue] {
        (first..<(first + count)).map { i in
            var attrs: [String: JSONValue] = [:]
            attrs["title"] = .string(phrase(&rng, Int.random(in: 1...3, using: &rng)))
            if Bool.random(using: &rng) {
                // Over 256 bytes: a long text (kind 5).
                attrs["contentDescription"] = .string(phrase(&rng, Int.random(in: 30...70, using: &rng)))
            }
            if Bool.random(using: &rng) { attrs["keywords"] = .array((0..<Int.random(in: 1...3, using: &rng)).map { _ in .string(phrase(&rng, 1)) }) }
            if Bool.random(using: &rng) { attrs["tag"] = .string(phrase(&rng, 2)) }
            if Bool.random(using: &rng) { attrs["installedSize"] = .number(Double(Int.random(in: 1...5000, using: &rng))) }
            return .object([
                "uniqueIdentifier": .string("item\(i)"),
                "domainIdentifier": .string("org.test"),
                "attributes": .object(attrs),
            ])
        }
    }

    /// A comparison on the new paths: a piece of a stored value as a
    /// substring, suffix, equality or prefix pattern, or a range.
    static func leaf(_ rng: inout SplitMix64, values: [String]) -> QueryPlan.Predicate {
        let attribute = ["title", "contentDescription", "keywords", "tag", "*"].randomElement(using: &rng)!
        let value = Array(values.randomElement(using: &rng)!)
        let a = Int.random(in: 0..<max(1, value.count), using: &rng)
        let b = min(value.count, a + Int.random(in: 1...12, using: &rng))
        var piece = value.isEmpty ? "x" : String(value[a..<b])
        if Int.random(in: 0..<4, using: &rng) == 0 { piece = piece.uppercased() }
        let options = ["", "c", "d", "cd", "cd", "w", "cdw", "cdt"].randomElement(using: &rng)!
        switch Int.random(in: 0..<7, using: &rng) {
        case 0, 1, 2: return SubstringTests.textTest(attribute, "*" + piece + "*", options)
        case 3: return SubstringTests.textTest(attribute, "*" + piece, options)
        case 4: return SubstringTests.textTest(attribute, String(value.prefix(b)) + (Bool.random(using: &rng) ? "*" : ""), options)
        case 5: return SubstringTests.textTest(attribute, String(value), options)
        default:
            let lower = Double(Int.random(in: 0...5000, using: &rng))
            return range("installedSize", lower, lower + Double(Int.random(in: 0...800, using: &rng)))
        }
    }

    static func textTest(_ attribute: String, _ pattern: String, _ options: String) -> QueryPlan.Predicate {
        text(attribute, pattern, options)
    }

    static func values(_ items: [String: Item]) -> [String] {
        items.values.flatMap { $0.attributes.values.flatMap { $0.elements.compactMap { if case .text(let s) = $0 { s } else { nil } } } }
    }

    static func decode(_ items: [JSONValue], into current: inout [String: Item]) throws {
        let decoder = ItemDecoder()
        for json in items { let i = try decoder.decode(json); current[i.uniqueIdentifier] = i }
    }

    /// Random plans, with writes, replacements and deletions between rounds,
    /// asked of the writer's own connection and of a reader's: both must see
    /// every term as soon as it is committed.
    @Test(arguments: [5, 6] as [UInt64])
    func substringEqualityPrefixAndRangeAgreeWithTheDefinition(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let dir = TempDir()
        let store = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        var current: [String: Item] = [:]
        var next = 0
        var checked = 0, nonEmpty = 0
        for round in 0..<6 {
            let batch = Self.corpus(&rng, count: round == 0 ? 150 : 30, from: round == 0 ? 0 : Int.random(in: 0...(next), using: &rng))
            try store.put(batch)
            try Self.decode(batch, into: &current)
            next = current.count
            if round > 0 {
                let gone = (0..<5).map { _ in "item\(Int.random(in: 0..<next, using: &rng))" }
                _ = try store.delete(ids: gone)
                for id in gone { current[id] = nil }
            }
            let values = Self.values(current)
            for q in 0..<80 {
                var p = Self.leaf(&rng, values: values)
                if q % 5 == 0 { p = .and([p, Self.leaf(&rng, values: values)]) }
                if q % 7 == 0 { p = .not(p) }
                let expected = Set(current.values.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
                let connection = q % 2 == 0 ? store : reader
                let got = try connection.idSet(p)
                #expect(got == expected, "round \(round): \(p)")
                if got != expected { return }
                checked += 1
                if !expected.isEmpty, expected.count < current.count { nonEmpty += 1 }
            }
        }
        #expect(checked == 480)
        #expect(nonEmpty > 200, "most plans should select some items but not all")
    }

    /// Patterns whose pieces span words, or that hold no letter or digit to
    /// look up, are answered exactly, as are patterns with no match at all.
    @Test func patternsAcrossWordsAndWithoutLettersAreExact() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let long = String(repeating: "filler words here ", count: 20)
        try store.put([
            item("a", #"{"title": "libactivemq-java", "contentDescription": "\#(long) Apache ActiveMQ broker, C++ bindings \#(long)"}"#),
            item("b", #"{"title": "lib activemq java", "contentDescription": "\#(long) a C+ + mix \#(long)"}"#),
            item("c", #"{"title": "日本語テキスト", "contentDescription": "\#(long) Crème Brûlée \#(long)"}"#),
            item("d", #"{"title": "x86_64-linux", "keywords": ["İstanbul", "ﬁle"]}"#),
        ])
        #expect(try store.idSet(text("title", "*mq-ja*")) == ["a"])
        #expect(try store.idSet(text("title", "*mq ja*")) == ["b"])
        #expect(try store.idSet(text("title", "*activemq*")) == ["a", "b"])
        #expect(try store.idSet(text("title", "*ACTIVEMQ*")) == [])
        #expect(try store.idSet(text("title", "*ACTIVEMQ*", "c")) == ["a", "b"])
        #expect(try store.idSet(text("contentDescription", "*ache activ*", "c")) == ["a"])
        #expect(try store.idSet(text("contentDescription", "*C++*")) == ["a"])
        #expect(try store.idSet(text("contentDescription", "*+ +*")) == ["b"])
        #expect(try store.idSet(text("contentDescription", "*rème Brû*")) == ["c"])
        #expect(try store.idSet(text("contentDescription", "*rème brû*")) == [])
        #expect(try store.idSet(text("contentDescription", "*reme Bru*")) == [])
        #expect(try store.idSet(text("contentDescription", "*reme Bru*", "d")) == ["c"])
        #expect(try store.idSet(text("contentDescription", "*REME BRU*", "cd")) == ["c"])
        #expect(try store.idSet(text("title", "*語テ*")) == ["c"])
        #expect(try store.idSet(text("title", "*6_6*")) == ["d"])
        #expect(try store.idSet(text("keywords", "*stan*", "cd")) == ["d"])
        #expect(try store.idSet(text("*", "*ivem*", "c")) == ["a", "b"])
        #expect(try store.idSet(text("*", "*zzqx*", "cd")) == [])
        #expect(try store.idSet(text("contentDescription", "*ler words here  Apa*")) == ["a"])
    }

    /// A connection keeps the vocabulary it read across small commits and
    /// checks every item written since (ids above its watermark) as well: a
    /// new item that takes the place of the one with the largest id, and a
    /// replaced item that gains a brand-new word, are found through the stale
    /// vocabulary, on the streamed path (one substring comparison) and the
    /// general one (a conjunction; a run no stale term holds), by the
    /// writer's connection and a reader's, and what was deleted or replaced
    /// is no longer found.
    @Test func aStaleVocabularyFindsWhatWasWrittenSince() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        try store.put([
            item("a", #"{"title": "kernel toolkit"}"#), item("b", #"{"title": "database"}"#),
            item("c", #"{"title": "zlib1g kernel"}"#),
        ])
        for connection in [store, reader] {
            #expect(try connection.idSet(text("title", "*tool*")) == ["a"])
            #expect(connection.substringCache.reads == 1)
        }
        // The item with the largest id goes, and a new one comes with a word no term holds.
        _ = try store.delete(ids: ["c"])
        try store.put([item("d", #"{"title": "quokkamatic kernel"}"#)])
        // A replaced item gains a brand-new word and loses its old ones.
        try store.put([item("a", #"{"title": "kernel xylophonist"}"#)])
        for (name, connection) in [("writer", store), ("reader", reader)] {
            #expect(try connection.idSet(text("title", "*kkamat*")) == ["d"], "\(name)")
            #expect(try connection.idSet(text("title", "*ernel*")) == ["a", "d"], "\(name)")
            #expect(try connection.idSet(text("*", "*ophoni*")) == ["a"], "\(name)")
            #expect(try connection.idSet(.and([text("title", "*ophon*"), text("title", "*erne*")])) == ["a"], "\(name)")
            #expect(try connection.idSet(.and([text("title", "*kamat*"), text("title", "*erne*")])) == ["d"], "\(name)")
            #expect(try connection.idSet(text("title", "*tool*")) == [], "\(name)")
            #expect(try connection.idSet(text("title", "*lib1*")) == [], "\(name)")
            #expect(try connection.ids(text("title", "*ernel*"), limit: 1) == ["d"], "\(name): rowid order, the replaced item last")
            #expect(connection.substringCache.reads == 1, "\(name): the vocabulary read before the writes served them")
        }
    }

    /// Past ``ShardStore/maxSubstringDelta`` items written since, the
    /// vocabulary is read again (what a static shard pays once).
    @Test func aLargeDeltaReadsTheVocabularyAgain() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        try store.put([item("first", #"{"title": "kernel"}"#)])
        #expect(try reader.idSet(text("title", "*erne*")) == ["first"])
        let many = (0...Int(ShardStore.maxSubstringDelta)).map { item("n\($0)", #"{"title": "gadget\#($0 % 7)"}"#) }
        try store.put(many)
        #expect(try reader.idSet(text("title", "*adget3*")).count == many.indices.filter { $0 % 7 == 3 }.count)
        #expect(reader.substringCache.reads == 2)
        try store.put([item("last", #"{"title": "wombatic"}"#)])
        #expect(try reader.idSet(text("title", "*mbati*")) == ["last"])
        #expect(reader.substringCache.reads == 2)
    }

    /// A shard whose content is replaced by a copy (another replica's, whose
    /// ids mean nothing against this one's watermark) has its vocabulary
    /// read again.
    @Test func replacedContentReadsTheVocabularyAgain() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let reader = try openStore(dir, mode: .readOnly)
        try store.put((0..<20).map { item("x\($0)", #"{"title": "kernel"}"#) })
        #expect(try reader.idSet(text("title", "*erne*")).count == 20)
        let other = try openStore(dir, "other.db")
        try other.put([item("y", #"{"title": "platypodes"}"#)])
        _ = try other.snapshot(to: dir.path("copy.db"))
        _ = try store.replaceContent(withCopyAt: dir.path("copy.db"))
        for (name, connection) in [("writer", store), ("reader", reader)] {
            #expect(try connection.idSet(text("title", "*atypod*")) == ["y"], "\(name)")
            #expect(try connection.idSet(text("title", "*erne*")) == [], "\(name)")
        }
    }

    /// FTS5 keeps only the first 32,768 bytes of a token; a substring past
    /// them is in no term, and must still be found.
    @Test func substringsPastFTS5sTokenLimitAreFound() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        let token = String(repeating: "a", count: 40_000) + "needle"
        try store.put([item("huge", #"{"contentDescription": "\#(token)"}"#), item("small", #"{"contentDescription": "aaa"}"#)])
        #expect(try store.idSet(text("contentDescription", "*aneedle*")) == ["huge"])
        #expect(try store.idSet(text("contentDescription", "*aaa*")) == ["huge", "small"])
    }

    /// A shard written in format 1 (with the trigram table and the long-text
    /// index) answers the same read-only, is upgraded to the current format
    /// when opened for writing, and keeps answering the same after writes
    /// and deletions that would have touched the tables it no longer has.
    @Test func formatOneShardsAnswerTheSameAndAreUpgraded() throws {
        var rng = SplitMix64(state: 77)
        let dir = TempDir()
        let items = Self.corpus(&rng, count: 120)
        var current: [String: Item] = [:]
        try Self.decode(items, into: &current)
        do {
            let store = try openStore(dir)
            try store.put(items)
        }
        try Self.makeFormatOne(dir.path("shard.db"))
        let plans = (0..<150).map { _ in Self.leaf(&rng, values: Self.values(current)) }
        func expectAnswers(_ store: ShardStore, _ context: String) throws {
            for p in plans {
                let expected = Set(current.values.filter { Reference.matches(p, $0) }.map(\.uniqueIdentifier))
                let got = try store.idSet(p)
                #expect(got == expected, "\(context): \(p)")
                if got != expected { return }
            }
        }
        let old = try Database(path: dir.path("shard.db"), mode: .readOnly)
        #expect(try Self.format(old) == "1")
        #expect(try Self.hasTable(old, "grams"))
        try expectAnswers(try openStore(dir, mode: .readOnly), "format 1, read-only")

        let writer = try openStore(dir)
        let upgraded = try Database(path: dir.path("shard.db"), mode: .readOnly)
        #expect(try Self.format(upgraded) == String(Layout.format))
        #expect(try !Self.hasTable(upgraded, "grams"))
        #expect(try !Self.hasTable(upgraded, "attrs_long"))
        try expectAnswers(writer, "upgraded")
        let replaced = Self.corpus(&rng, count: 40, from: 100)
        try writer.put(replaced)
        try Self.decode(replaced, into: &current)
        _ = try writer.delete(ids: ["item1", "item2", "item3"])
        for id in ["item1", "item2", "item3"] { current[id] = nil }
        try expectAnswers(writer, "upgraded, then written")
        try expectAnswers(try openStore(dir, mode: .readOnly), "upgraded, then written, read-only")
    }

    static func format(_ db: Database) throws -> String? {
        try db.prepare("SELECT value FROM meta WHERE key = 'format'").scalar()?.string
    }

    static func hasTable(_ db: Database, _ name: String) throws -> Bool {
        let s = try db.prepare("SELECT count(*) FROM sqlite_master WHERE name = ?")
        try s.bind(name, at: 0)
        return try s.scalar()?.int64 == 1
    }

    /// Turns a shard into what format 1 wrote, with format 1's statements:
    /// the same tables plus `grams` (every short text value of an item, as
    /// it was, or folded when not ASCII, one row per item) and `attrs_long`,
    /// and every text value in `attrs.text`.
    static func makeFormatOne(_ path: String) throws {
        let db = try Database(path: path)
        try db.execute(
            """
            UPDATE attrs SET text = key WHERE kind IN (0, 5) AND text IS NULL;
            CREATE VIRTUAL TABLE grams USING fts5(text, content='', tokenize='trigram', detail=none, columnsize=0);
            INSERT INTO grams(grams, rank) VALUES('automerge', 8);
            CREATE INDEX attrs_long ON attrs(name) WHERE kind = 5;
            UPDATE meta SET value = '1' WHERE key = 'format';
            """)
        var texts: [Int64: [String]] = [:]
        try db.prepare("SELECT item, text FROM attrs WHERE kind = 0 ORDER BY item, name, pos").forEachRow { r in
            let text = r.string(at: 1) ?? ""
            texts[r.int64(at: 0), default: []].append(Fold.isASCII(text) ? text : Fold.fold(text))
        }
        let insert = try db.prepare("INSERT INTO grams(rowid, text) VALUES (?, ?)")
        for (id, parts) in texts {
            try insert.bind(id, at: 0)
            try insert.bind(parts.joined(separator: "\n"), at: 1)
            try insert.run()
            try insert.reset()
        }
    }
}
