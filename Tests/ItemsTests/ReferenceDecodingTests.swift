import Foundation
import Items
import Testing

/// CloudKit-style references, `{"recordName": …}`, decode as the record
/// name they point to; other objects are still locations (or errors).
struct ReferenceDecodingTests {
    func decode(_ attributes: String, schema: AttributeSchema = AttributeSchema()) throws(ItemError) -> Item {
        let json = try! JSONValue.parse(#"{"uniqueIdentifier": "t1", "attributes": \#(attributes)}"#)
        return try ItemDecoder(schema: schema).decode(json)
    }

    @Test func referencesAreTheirRecordName() throws {
        let item = try decode(#"{"employee": {"recordName": "e1", "action": "none"}, "reviewers": [{"recordName": "e2"}, "e3"]}"#)
        #expect(item.attributes["employee"] == .text("e1"))
        #expect(item.attributes["reviewers"] == .list([.text("e2"), .text("e3")]))
        // A declared text attribute takes a reference too.
        let declared = try decode(#"{"title": {"recordName": "e9"}}"#)
        #expect(declared.attributes["title"] == .text("e9"))
    }

    @Test func otherObjectsAreLocationsOrErrors() throws {
        let item = try decode(#"{"place": {"latitude": 1, "longitude": 2}}"#)
        #expect(item.attributes["place"] == .location(Location(latitude: 1, longitude: 2)))
        #expect(throws: ItemError.self) { try decode(#"{"employee": {"recordName": ""}}"#) }
        #expect(throws: ItemError.self) { try decode(#"{"employee": {"recordName": 5}}"#) }
        #expect(throws: ItemError.self) { try decode(#"{"title": {"name": "x"}}"#) }
    }
}
