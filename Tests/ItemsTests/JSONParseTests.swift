import Foundation
import Items
import Testing

/// `JSONValue.parse` reads plain JSON itself and leaves the rest to
/// `JSONSerialization`; the two must agree on every document, and where
/// Foundation throws, `parse` must throw too.
@Suite struct JSONParseTests {
    func agree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        agree(bytes: Data(text.utf8), sourceLocation: sourceLocation)
        let fast = Result { try JSONValue.parse(text) }
        let reference = Result { try JSONValue.parseWithFoundation(Data(text.utf8)) }
        switch (fast, reference) {
        case (.success(let a), .success(let b)): #expect(a == b, "\(text.debugDescription)", sourceLocation: sourceLocation)
        case (.failure, .failure): break
        default: Issue.record("\(text.debugDescription): \(fast) vs \(reference)", sourceLocation: sourceLocation)
        }
    }

    /// A frame's bytes (read in place when they are ASCII).
    func agree(bytes: Data, sourceLocation: SourceLocation = #_sourceLocation) {
        let fast = Result { try JSONValue.parse(bytes) }
        let reference = Result { try JSONValue.parseWithFoundation(bytes) }
        switch (fast, reference) {
        case (.success(let a), .success(let b)): #expect(a == b, "\(Array(bytes))", sourceLocation: sourceLocation)
        case (.failure, .failure): break
        default: Issue.record("\(Array(bytes)): \(fast) vs \(reference)", sourceLocation: sourceLocation)
        }
    }

    /// Bytes that are not UTF-8 are not JSON, whether the frame is ASCII
    /// up to them or not (an ASCII frame is read in place).
    @Test func framesThatAreNotUTF8AreRefused() {
        let plain = Array(#"{"k":"abcdefghij","n":1}"#.utf8)
        for bad: [UInt8] in [[0xFF], [0xC3], [0xC3, 0x28], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xED, 0xA0, 0x80]] {
            for offset in [7, 9, 14] {
                var b = plain
                b.insert(contentsOf: bad, at: offset)
                #expect(throws: (any Error).self, "\(b)") { try JSONValue.parse(Data(b)) }
                agree(bytes: Data(b))
            }
        }
        agree(bytes: Data(plain))
        agree(bytes: Data(#"{"k":"é日本"}"#.utf8))
    }

    @Test func edgeCases() {
        for text in [
            #"{"a":1,"b":[true,false,null],"c":"x\"y\\z\/\n\t\u00e9\ud83c\udf0d","d":-1.5e3,"e":{}}"#,
            "  [1, 2.0, 0, 0.5, 1E2, 1e-2, 123456789012345] ", "\"text\"", "3", "true", "null",
            "-0", "-0.0", "01", "1.", ".5", "+1", "1e", "1e400", "12345678901234567890", "0.1234567890123456789",
            #"{"a":1,"a":2}"#, #""\q""#, "\"a\u{1}b\"", #""\ud800""#, #""\udc00x""#, #""\u0000""#,
            "[1,]", "{\"a\":1,}", "[", "{", "", " ", "[1] x", "\u{FEFF}[1]", "nul", "tru", "[\"é\", \"日本\"]",
            "{\"k\": \"line\\r\\nnext\"}", String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
        ] { agree(text) }
    }

    /// Strings are scanned eight bytes at a time until a quote, a backslash
    /// or a control character: each of those at every offset of a long
    /// string, and right after a run of plain bytes, ends or escapes there
    /// as it should (a control character still declines the document).
    @Test func specialBytesAtEveryOffsetOfALongString() {
        for special in ["\\\"", "\\n", "\\u00e9", "\u{1}", "\u{1F}", "\t", "é", "\"x"] {
            for offset in 0..<24 {
                let before = String(repeating: "a", count: offset), after = String(repeating: "b", count: 24 - offset)
                agree("{\"k\":\"" + before + special + after + "\",\"n\":1}")
                agree("[\"" + before + special + after + "\"]")
            }
        }
    }

    /// U+FEFF inside a string is a character like any other (RFC 8259); only
    /// a byte order mark before the document is not JSON. Foundation on Linux
    /// drops it where a run of string characters starts, so here `parse`
    /// deliberately differs from `parseWithFoundation`.
    /// Objects are made from a stack of members shared by every level: nested
    /// objects, objects in arrays and empty ones come out whole, and a key
    /// given twice at any depth still declines the document.
    @Test func nestedObjectsAndDuplicateKeysInTheStrictReader() {
        func strict(_ text: String) -> JSONValue? {
            Array(text.utf8).withUnsafeBufferPointer { StrictJSONReader.parse($0) }
        }
        #expect(
            strict(#"{"a":{"b":1,"c":{"d":[{"e":2},{}],"f":{}}},"g":[{"h":true,"i":null}],"j":"k"}"#)
                == .object([
                    "a": .object(["b": .number(1), "c": .object(["d": .array([.object(["e": .number(2)]), .object([:])]), "f": .object([:])])]),
                    "g": .array([.object(["h": .bool(true), "i": .null])]),
                    "j": .string("k"),
                ]))
        #expect(strict(#"{"a":1,"a":2}"#) == nil)
        #expect(strict(#"{"x":{"a":1,"b":{"c":1},"a":2}}"#) == nil)
        #expect(strict(#"[{"a":1},{"b":{"a":1,"a":1}}]"#) == nil)
        #expect(strict(#"{"a":{"b":1},"b":{"b":1}}"#) == .object(["a": .object(["b": .number(1)]), "b": .object(["b": .number(1)])]))
    }

    @Test func byteOrderMarkInsideAStringIsKept() throws {
        #expect(try JSONValue.parse("{\"\u{FEFF}b\":\"x\\n\u{FEFF}y\"}") == .object(["\u{FEFF}b": .string("x\n\u{FEFF}y")]))
    }

    @Test func corpusAndMutations() throws {
        var lines: [String] = [#"{"uniqueIdentifier":"x","attributes":{"title":"A \"b\"","n":[1,2.5,-3e2]}}"#]
        // The repository's own sample corpus: present in every checkout, so a
        // missing file is a failure, not a quiet pass over one line.
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../samples/debian-packages.jsonl").standardized.path
        let corpus = try String(contentsOfFile: path, encoding: .utf8)
        lines += corpus.split(separator: "\n").prefix(1500).map(String.init)
        #expect(lines.count > 250, "the sample corpus at \(path) should have its 300 lines")
        // Seeded, so a failing mutation replays on the next run.
        var rng = SeededGenerator(seed: 0x5EED_0009)
        let junk: [Character] = ["\"", "\\", ",", ":", "{", "}", "[", "]", "0", "-", "e", ".", "\u{1}", " ", "é", "u"]
        for line in lines {
            agree(line)
            // A few single-character mutations of each document.
            let chars = Array(line)
            for _ in 0..<3 where !chars.isEmpty {
                var c = chars
                c[Int.random(in: 0..<c.count, using: &rng)] = junk.randomElement(using: &rng)!
                agree(String(c))
            }
        }
    }
}

/// SplitMix64, kept local because the test target depends only on `Items`.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
