import Foundation
import Items
import Testing

/// The text an item is embedded from (`SemanticText`) is exactly what the
/// reference embeddings were computed from: with `displayName` and
/// `contentDescription` declared semantic in that order, each of the 300
/// reference items' texts is `displayName + ". " + contentDescription`.
@Suite struct SemanticTextTests {
    @Test func theReferenceItemTextsAreTheSemanticTexts() throws {
        let references = try Fixtures.references.get().filter { $0.kind == "item" }
        #expect(references.count == 300)
        let script = Fixtures.repository.deletingLastPathComponent().appendingPathComponent("shared/datasets/debian_packages.py").path
        let corpus = try Fixtures.run(["python3", script, "--limit", "300"])
        var schema = AttributeSchema()
        try schema.setSemantic("displayName", true)
        try schema.setSemantic("contentDescription", true)
        var texts: [String: String] = [:]
        for line in corpus.split(separator: "\n") {
            let item = try ItemDecoder(schema: schema).decode(try JSONValue.parse(String(line)))
            texts[item.uniqueIdentifier] = SemanticText.text(of: item, schema: schema)
        }
        for r in references {
            #expect(texts[r.id] == r.text, "\(r.id)")
        }
        // The declared order is the order in the text.
        var reversed = AttributeSchema()
        try reversed.setSemantic("contentDescription", true)
        try reversed.setSemantic("displayName", true)
        try reversed.setSemantic("contentDescription", true)  // a second declaration keeps its place
        let item = Item(uniqueIdentifier: "x", attributes: ["displayName": .text("A"), "contentDescription": .text("B"), "title": .text("t")])
        #expect(SemanticText.text(of: item, schema: reversed) == "B. A")
        #expect(throws: ItemError.self) { try reversed.setSemantic("rankingHint", true) }  // a number has no sentence
    }

    @Test func anEntityIsEmbeddedFromItsDisplayRepresentation() throws {
        let entity = AppEntity(type: "Landmark", id: "1", title: "Golden Gate", subtitle: "a suspension bridge")
        let item = try ItemDecoder(schema: AttributeSchema()).decode(entity.itemJSON())
        #expect(SemanticText.text(of: item, schema: AttributeSchema()) == "Golden Gate. a suspension bridge")
        let plain = Item(uniqueIdentifier: "p", attributes: ["title": .text("Golden Gate")])
        #expect(SemanticText.text(of: plain, schema: AttributeSchema()) == nil)
    }
}
