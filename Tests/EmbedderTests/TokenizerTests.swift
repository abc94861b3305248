import Embedder
import Foundation
import Testing

/// Tokenizer rules the reference texts exercise only in passing, with ids read
/// from the model's own vocab.txt.
@Suite struct TokenizerTests {
    func vocabulary() throws -> [String: Int] {
        let dir = try Fixtures.modelDirectory.get()
        let lines = try String(contentsOfFile: dir + "/vocab.txt", encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var v: [String: Int] = [:]
        for (i, l) in lines.enumerated() where v[String(l)] == nil { v[String(l)] = i }
        return v
    }

    @Test func casePunctuationAccentsAndIdeographsAreSplitAsBERTDoes() throws {
        let t = try Fixtures.embedder.get()
        let v = try vocabulary()
        // Lowercased, accents stripped (é → e), punctuation isolated.
        #expect(t.tokenize("Café!") == [101, v["cafe"]!, v["!"]!, 102])
        // ASCII symbols count as punctuation, as in BERT ($, +, |).
        #expect(t.tokenize("a+b") == [101, v["a"]!, v["+"]!, v["b"]!, 102])
        // Control characters vanish; tabs and newlines separate words.
        #expect(t.tokenize("web\u{0007}\tserver\n") == [101, v["web"]!, v["server"]!, 102])
        // Each CJK ideograph is a word of its own.
        #expect(t.tokenize("中文") == [101, v["中"]!, v["文"]!, 102])
    }

    @Test func longWordsAndUnknownWordsBecomeOneUNK() throws {
        let t = try Fixtures.embedder.get()
        #expect(t.tokenize(String(repeating: "a", count: 101)) == [101, 100, 102])
        #expect(t.tokenize(String(repeating: "a", count: 100)).count > 3)
        // A character outside the vocabulary makes its whole word unknown.
        #expect(t.tokenize("ab\u{16A0}cd") == [101, 100, 102])
    }

    @Test func longTextsAreCutTo256TokensEndingInSEP() throws {
        let t = try Fixtures.embedder.get()
        let ids = t.tokenize(String(repeating: "search ", count: 1000))
        #expect(ids.count == 256)
        #expect(ids.first == 101)
        #expect(ids.last == 102)
        #expect(t.tokenize("").count == 2)
    }
}
