import Foundation
import Items
import ShardStore
import Testing

/// A declaration that conflicts with what a shard holds is refused, and
/// refused before anything changes.
@Suite struct DeclarationCheckTests {
    @Test func anotherTypeThanTheDeclaredOneIsRefused() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.declare([AttributeSpec(name: "dueAt", type: .date)])
        try store.put([item("a", #"{"dueAt": "2026-01-01T00:00:00Z"}"#)])
        let error = #expect(throws: StoreError.self) { try store.declare([AttributeSpec(name: "dueAt", type: .number)]) }
        #expect(error?.code == .invalidDeclaration)
        #expect(error?.message.contains("'dueAt' is declared date; declaring it number conflicts") == true)
        #expect(store.schema.spec(for: "dueAt")?.type == .date)
        // The same type again, with other flags, is accepted.
        try store.declare([AttributeSpec(name: "dueAt", type: .date, searchableByDefault: false)])
        #expect(throws: StoreError.self) { try store.declare([AttributeSpec(name: "dueAt", type: .date, multiValued: true)]) }
    }

    @Test func storedValuesOfAnotherTypeRefuseADeclarationNamingThem() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.put([
            item("@acme/one", #"{"size": "big"}"#), item("@acme/two", #"{"size": "small"}"#),
            item("@other/three", #"{"flag": true}"#),
        ])
        let error = #expect(throws: StoreError.self) { try store.declare([AttributeSpec(name: "size", type: .number)]) }
        #expect(error?.message.contains("'size' holds 2 text values (item '@acme/one' among them)") == true, "\(String(describing: error))")
        // Checked for one app: nothing changes, and another app's items are counted, never named;
        // the app's own are named without its tag.
        let check = #expect(throws: StoreError.self) { try store.checkDeclaration([AttributeSpec(name: "flag", type: .text)], exampleTag: "@acme/") }
        #expect(check?.message.contains("'flag' holds 1 boolean value; declaring it text") == true, "\(String(describing: check))")
        #expect(check?.message.contains("three") == false)
        let own = #expect(throws: StoreError.self) { try store.checkDeclaration([AttributeSpec(name: "size", type: .date)], exampleTag: "@acme/") }
        #expect(own?.message.contains("(item 'one' among them)") == true, "\(String(describing: own))")
        #expect(store.schema.spec(for: "size") == nil)
        // Text is text, long or short; a declaration that agrees with the values is accepted.
        try store.put([item("@acme/long", #"{"size": "\#(String(repeating: "long ", count: 100))"}"#)])
        try store.declare([AttributeSpec(name: "size", type: .text)])
        #expect(store.schema.spec(for: "size")?.type == .text)
    }

    @Test func aNewAttributeIsDeclaredFreely() throws {
        let dir = TempDir()
        let store = try openStore(dir)
        try store.checkDeclaration([AttributeSpec(name: "fresh", type: .number)])
        try store.declare([AttributeSpec(name: "fresh", type: .number)])
        #expect(store.schema.spec(for: "fresh")?.type == .number)
    }
}
