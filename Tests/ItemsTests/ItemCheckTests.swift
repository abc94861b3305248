import Foundation
import Items
import Testing

/// The checks every published item goes through: domain identifiers and
/// attribute names read byte by byte, and ``ItemDecoder/check(_:)``
/// refusing exactly what ``ItemDecoder/decode(_:)`` refuses.
struct ItemCheckTests {
    @Test func domainIdentifiers() {
        for valid in ["", "a", "org.debian.games", "algolia.bench.r.12", "a-b_c.D9", "é.x", "日本.語"] {
            #expect(DomainIdentifier.isValid(valid), "\(valid)")
        }
        for invalid in [".", ".a", "a.", "a..b", "a b", "a\tb", "a\nb", "a\r\nb", "a\u{0B}b", "a\u{0C}b", "é..x", "a\u{00A0}b", "x.\u{2003}"] {
            #expect(!DomainIdentifier.isValid(invalid), "\(invalid.debugDescription)")
        }
        #expect(DomainIdentifier.isValid(String(repeating: "a", count: 512)))
        #expect(!DomainIdentifier.isValid(String(repeating: "a", count: 513)))
    }

    /// Every string of up to three characters from a small alphabet (ASCII
    /// and not) against the rule as written: dot-separated, non-empty
    /// parts, no whitespace Character.
    @Test func domainIdentifiersAgreeWithTheRule() {
        let alphabet: [Character] = ["a", ".", " ", "\t", "\n", "-", "é", "\u{00A0}", "\u{1F}"]
        var strings = [""]
        for _ in 0..<3 { strings += strings.flatMap { s in alphabet.map { s + String($0) } } }
        for s in Set(strings) {
            let rule =
                s.isEmpty
                || s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && !$0.contains(where: \.isWhitespace) }
            #expect(DomainIdentifier.isValid(s) == rule, "\(s.debugDescription)")
        }
    }

    @Test func attributeNames() {
        for valid in ["a", "_", "title", "brand.name", "a-b_9", String(repeating: "x", count: 128)] {
            #expect(AttributeName.isValid(valid), "\(valid)")
        }
        for invalid in ["", "9a", ".a", "-a", "a b", "é", "aé", String(repeating: "x", count: 129)] {
            #expect(!AttributeName.isValid(invalid), "\(invalid)")
        }
    }

    @Test func checkRefusesWhatDecodeRefuses() throws {
        let decoder = ItemDecoder()
        let cases: [(String, ItemError.Code?)] = [
            (#"{"uniqueIdentifier": "a", "domainIdentifier": "x.y", "attributes": {"title": "t", "n": 1, "tags": ["a", "b"]}}"#, nil),
            (#"{"uniqueIdentifier": "a", "attributes": {"place": {"latitude": 1, "longitude": 2}}}"#, nil),
            (#"{"attributes": {"title": "t"}}"#, .missingIdentifier),
            (#"{"uniqueIdentifier": "a", "domainIdentifier": "x..y"}"#, .invalidDomain),
            (#"{"uniqueIdentifier": "a", "attributes": {"9lives": 1}}"#, .invalidAttributeName),
            (#"{"uniqueIdentifier": "a", "attributes": {"tags": ["a", 1]}}"#, .wrongType),
            (#"{"uniqueIdentifier": "a", "attributes": {"tags": [["a"]]}}"#, .wrongType),
            (#"{"uniqueIdentifier": "a", "attributes": {"title": 5}}"#, .wrongType),
            (#"{"uniqueIdentifier": "a", "attributes": {"place": {"latitude": 100, "longitude": 2}}}"#, .invalidLocation),
        ]
        for (text, code) in cases {
            let json = try JSONValue.parse(text)
            var decoded: ItemError.Code?
            do throws(ItemError) { _ = try decoder.decode(json) } catch { decoded = error.code }
            var checked: ItemError.Code?
            do throws(ItemError) { try decoder.check(json) } catch { checked = error.code }
            #expect(decoded == code, "\(text)")
            #expect(checked == code, "\(text)")
        }
    }
}
