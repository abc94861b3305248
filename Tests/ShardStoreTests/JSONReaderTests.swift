import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// The store's reader of its own items: a result's projection.
@Suite struct JSONReaderTests {
    /// `parseItem` gives what parsing the whole item and keeping only the
    /// fetched attributes gives, whatever the members: the names it knows
    /// (`attributes`, `domainIdentifier`, `uniqueIdentifier`, `entity`) and
    /// names that only start like them, an identifier equal to the `uid`
    /// handed in, different from it, or written with escapes.
    @Test func theProjectionIsTheFilteredItem() throws {
        var rng = SplitMix64(state: 11)
        let names = [
            "attributes", "domainIdentifier", "uniqueIdentifier", "entity", "attributesX", "uniqueIdentifie",
            "domain", "expirationDate", "a",
        ]
        let texts = ["deb:vim", "deb:vix", "gcc:vim", "a\"b", "back\\slash", "", "é-ü", "line\nbreak", "org.debian.editors", "uniqueIdentifier"]
        let attributeNames = ["title", "contentDescription", "keywords", "downloadSize", "titl"]
        var checked = 0, reused = 0
        for _ in 0..<2000 {
            var item: [String: JSONValue] = [:]
            for name in names where Bool.random(using: &rng) {
                if name == "attributes" {
                    var attrs: [String: JSONValue] = [:]
                    for a in attributeNames where Bool.random(using: &rng) {
                        attrs[a] =
                            Bool.random(using: &rng)
                            ? .string(texts.randomElement(using: &rng)!)
                            : .array([.string(texts.randomElement(using: &rng)!), .number(Double(Int.random(in: 0...9, using: &rng)))])
                    }
                    item[name] = .object(attrs)
                } else {
                    item[name] = Int.random(in: 0..<5, using: &rng) == 0 ? .number(3) : .string(texts.randomElement(using: &rng)!)
                }
            }
            let stored = JSONWriter.bytes(.object(item))
            let keep = FetchList(attributeNames.filter { _ in Bool.random(using: &rng) })
            // The uid the row would give: usually the item's own identifier.
            let uid: String? = Bool.random(using: &rng) ? (item["uniqueIdentifier"]?.stringValue ?? "deb:vim") : texts.randomElement(using: &rng)
            let projected = stored.withUnsafeBufferPointer { StrictJSONReader.parseItem($0, keepingAttributes: keep, uid: uid) }
            var expected = item
            if case .object(let attrs)? = item["attributes"] {
                expected["attributes"] = .object(attrs.filter { keep.names.contains($0.key) })
            }
            #expect(projected == .object(expected), "\(String(decoding: stored, as: UTF8.self)) keeping \(keep.names) uid \(uid ?? "nil")")
            checked += 1
            if let uid, item["uniqueIdentifier"] == .string(uid), !uid.contains("\\"), !uid.contains("\"") { reused += 1 }
        }
        // The identifier was given back from the uid often, not only parsed.
        #expect(checked == 2000 && reused > 300, "\(reused)")
    }
}
