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
}
