import Foundation
import Items
import QueryPlan
import SQLite
import Testing

@testable import ShardStore

/// Word queries over every text attribute trust the word index for most
/// items (`items.wordcheck`); these are the cases where the index alone would
/// be wrong, and the store must still answer as `TextMatcher` does.
@Suite struct WordCheckTests {
    static let items = [
        item("camel", #"{"title": "libFoo"}"#),
        item("apart", #"{"title": "lib foo"}"#),
        item("class", #"{"displayName": "MyWindowClass"}"#),
        item("ns", #"{"displayName": "NSWindow"}"#),
        item("cafe", #"{"title": "Café crème"}"#),
        item("accented", #"{"title": "Über Window", "keywords": ["straße"]}"#),
        // ⓐ is a letter to Words (alphabetic) and a separator to FTS5 (a symbol).
        item("circled", #"{"title": "fooⓐbar"}"#),
        item("toolkit", #"{"title": "toolkit", "keywords": ["plain", "words"]}"#),
        item("ToolKit", #"{"title": "ToolKit"}"#),
    ]

    static func expectAnswers(_ store: ShardStore, _ context: String) throws {
        // The index holds "libFoo" whole (for `t`), `w` sees only lib + Foo.
        #expect(try store.idSet(text("*", "libfoo", "cdw")) == [], "\(context)")
        #expect(try store.idSet(text("*", "libf*", "cdw")) == [], "\(context)")
        #expect(try store.idSet(text("*", "lib*", "cdw")) == ["camel", "apart"], "\(context)")
        #expect(try store.idSet(text("*", "foo", "cw")) == ["camel", "apart"], "\(context)")
        #expect(try store.idSet(text("*", "toolkit", "cdw")) == ["toolkit"], "\(context)")
        #expect(try store.idSet(text("*", "tool*", "cdw")) == ["toolkit", "ToolKit"], "\(context)")
        #expect(try store.idSet(text("*", "window", "cdw")) == ["class", "accented"], "\(context)")
        #expect(try store.idSet(text("*", "nswindow", "cdw")) == ["ns"], "\(context)")
        // Not ASCII: always checked, so `d` decides.
        #expect(try store.idSet(text("*", "cafe", "cdw")) == ["cafe"], "\(context)")
        #expect(try store.idSet(text("*", "cafe", "cw")) == [], "\(context)")
        #expect(try store.idSet(text("*", "creme", "cdw")) == ["cafe"], "\(context)")
        #expect(try store.idSet(text("*", "uber", "cdw")) == ["accented"], "\(context)")
        #expect(try store.idSet(text("*", "uber", "cw")) == [], "\(context)")
        #expect(try store.idSet(text("*", "bar", "cdw")) == [], "\(context)")
        // Without `c` nothing is trusted: case decides.
        #expect(try store.idSet(text("*", "Foo", "w")) == ["camel"], "\(context)")
        #expect(try store.idSet(text("*", "words", "cdw")) == ["toolkit"], "\(context)")
    }

    @Test func theIndexIsTrustedOnlyWhereItAgreesWithTheMatcher() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put(Self.items)
        try Self.expectAnswers(store, "fresh shard")
        // Replacing an item replaces what it records.
        try store.put([item("camel", #"{"title": "libfoo"}"#)])
        #expect(try store.idSet(text("*", "libfoo", "cdw")) == ["camel"])
    }

    /// A text attribute left out of `*` is still in the word index.
    @Test func attributesOutsideEveryAttributeAreNotTrusted() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.declare([AttributeSpec(name: "secret", type: .text, searchableByDefault: false)])
        try store.put([item("hidden", #"{"title": "haystack", "secret": "needle"}"#)])
        #expect(try store.idSet(text("*", "needle", "cdw")) == [])
        #expect(try store.idSet(text("secret", "needle", "cdw")) == ["hidden"])
        #expect(try store.idSet(text("*", "haystack", "cdw")) == ["hidden"])
    }

    /// A shard written before `wordcheck` existed: readers check every match,
    /// and opening it for writing adds the column (all "check") in place.
    @Test func shardsWithoutTheColumnStillAnswerAndAreUpgraded() throws {
        let dir = TempDir()
        do {
            let store = try openStore(dir)
            try store.put(Self.items)
        }
        do {
            let db = try Database(path: dir.path("shard.db"))
            try db.execute("ALTER TABLE items DROP COLUMN wordcheck")
        }
        let reader = try openStore(dir, mode: .readOnly)
        try Self.expectAnswers(reader, "old shard, read-only")
        let writer = try openStore(dir)
        try Self.expectAnswers(writer, "old shard, upgraded")
        try writer.put([item("new", #"{"title": "fresh libBar"}"#)])
        let db = try Database(path: dir.path("shard.db"), mode: .readOnly)
        let checks = try db.prepare("SELECT uid, wordcheck FROM items ORDER BY uid").map { ($0.string(at: 0) ?? "", $0.string(at: 1)) }
        #expect(checks.first { $0.0 == "camel" }?.1 == "*")
        #expect(checks.first { $0.0 == "new" }?.1 == "libbar")
        #expect(try reader.idSet(text("*", "bar", "cdw")) == ["new"])
        #expect(try reader.idSet(text("*", "libbar", "cdw")) == [])
    }

    /// The fast builder records what the reference one does, on random items
    /// of ASCII, camel-case and accented texts that share words.
    @Test func theBuilderAgreesWithItsDefinition() {
        var rng = SystemRandomNumberGenerator()
        let pieces = [
            "lib", "Foo", "foo", "libfoo", "LibFoo", "Bar", "NSWindow", "window", "py", "Qt", "PyQt", "pyqt",
            "x11", "X11Lib", "café", "Über", "straße", "ⓐ", "gtkWidget", "gtk", "widget", "A", "a1B2", "ToolKit",
        ]
        let separators = [" ", "-", ".", "\n", "_", "/", ""]
        var differing = 0
        for _ in 0..<3000 {
            var fast = WordCheck.Builder(), reference = WordCheck.ReferenceBuilder()
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                var text = ""
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    text += pieces.randomElement(using: &rng)! + separators.randomElement(using: &rng)!
                }
                let indexText = Words.indexText(text)
                let indexed = Fold.isASCII(indexText) ? indexText : Fold.fold(indexText)
                fast.add(text, indexed: indexed)
                reference.add(text, indexed: indexed)
            }
            if fast.value != reference.value { differing += 1 }
            #expect(fast.value == reference.value)
            if differing > 5 { break }
        }
    }
}
