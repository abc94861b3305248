import Foundation
import Items
import Testing

/// `JSONWriter` is the canonical form items are stored and sent in: sorted
/// keys, no spaces, only the escapes JSON requires.
@Suite struct JSONWriterTests {
    @Test func escapesOnlyWhatJSONRequires() throws {
        let cases: [(String, String)] = [
            ("", #""""#),
            ("plain text", #""plain text""#),
            ("a \"quote\" and a \\ slash", #""a \"quote\" and a \\ slash""#),
            ("\"\\", #""\"\\""#),
            ("line\nnext\ttab\rcr", #""line\nnext\ttab\rcr""#),
            ("\u{0}\u{1}x\u{1F}", #""\u0000\u0001x\u001f""#),
            ("é 日本 🌍 / </script>", "\"é 日本 🌍 / </script>\""),
            ("ends with a slash\\", #""ends with a slash\\""#),
        ]
        for (text, expected) in cases {
            #expect(JSONWriter.string(.string(text)) == expected, "\(text.debugDescription)")
            #expect(try JSONValue.parse(JSONWriter.string(.string(text))) == .string(text))
        }
    }

    /// An object written member by member (``JSONObjectWriter``, the
    /// search response's hits) is the canonical form of the dictionary of
    /// its members, a key set again keeping its last value: few members
    /// and many, keys past ASCII, upper and
    /// lower case, prefixes of each other, set twice and three times.
    @Test func anObjectWrittenMemberByMemberIsItsDictionarysCanonicalForm() throws {
        var rng = SystemRandomNumberGenerator()
        let keys = ["a", "ab", "b", "B", "_x", "objectID", "é", "z", "Zeta", "a\"q", "domainIdentifier", "ü", "日本"]
        for count in [0, 1, 2, 5, 12, 31, 32, 33, 60] {
            var writer = JSONObjectWriter()
            var dictionary: [String: JSONValue] = [:]
            for k in 0..<count {
                let key =
                    k < keys.count && Bool.random(using: &rng) ? keys[k] : keys.randomElement(using: &rng)! + "\(Int.random(in: 0..<4, using: &rng))"
                let value = JSONValue.number(Double(k))
                if Bool.random(using: &rng) {
                    writer.set(key, value)
                } else {
                    writer.set(key, bytes: JSONWriter.bytes(value))
                }
                dictionary[key] = value
            }
            var out: [UInt8] = []
            writer.write(into: &out)
            #expect(out == JSONWriter.bytes(.object(dictionary)), "\(count) members")
        }
    }

    @Test func sortsKeysAndRoundTrips() throws {
        let value: JSONValue = .object([
            "b": .array([.number(1), .number(2.5), .bool(true), .null]),
            "a": .object(["z": .string("last"), "Z": .string("upper first"), "é": .number(-3)]),
            "c\"d": .string("key with a quote"),
        ])
        let text = JSONWriter.string(value)
        #expect(text == #"{"a":{"Z":"upper first","z":"last","é":-3},"b":[1,2.5,true,null],"c\"d":"key with a quote"}"#)
        #expect(try JSONValue.parse(text) == value)
    }

    /// Whole numbers are written digit by digit: every magnitude, both signs,
    /// the same text as Swift's own `String(Int64)`.
    @Test func wholeNumbersAsSwiftWritesThem() throws {
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 12345, -987654321, 8_999_999_999_999_999, -8_999_999_999_999_999]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            values.append(Int64.random(in: -8_999_999_999_999_999...8_999_999_999_999_999, using: &rng) >> Int64.random(in: 0...60, using: &rng))
        }
        for v in values {
            #expect(JSONWriter.string(.number(Double(v))) == String(Int64(Double(v))), "\(v)")
        }
        #expect(JSONWriter.string(.array([.number(-0.0), .number(2.5), .number(1e300)])) == "[0,2.5,1e+300]")
    }
}
