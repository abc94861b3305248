import Embedder
import Foundation
import Testing

/// The embedder against sentence-transformers' own output for 330 texts: 24
/// queries, 300 Debian package descriptions and six edge cases (empty, one letter,
/// accents and emoji, CJK, a text past 256 tokens, punctuation runs).
@Suite struct ReferenceTests {
    @Test func tokenIDsEqualTheReferenceForEveryText() throws {
        let embedder = try Fixtures.embedder.get()
        let references = try Fixtures.references.get()
        #expect(references.count == 330)
        var mismatches: [String] = []
        for r in references {
            let ids = embedder.tokenize(r.text)
            if ids != r.inputIDs {
                let at = (0..<min(ids.count, r.inputIDs.count)).first { ids[$0] != r.inputIDs[$0] } ?? min(ids.count, r.inputIDs.count)
                mismatches.append(
                    "\(r.id): first difference at token \(at) of \(r.inputIDs.count): got \(ids[at...].prefix(5)), expected \(r.inputIDs[at...].prefix(5))"
                )
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) texts tokenised differently:\n\(mismatches.prefix(10).joined(separator: "\n"))")
        // The reference truncates three texts to exactly 256 tokens.
        #expect(references.filter { $0.inputIDs.count == 256 }.count == 3)
    }

    @Test func vectorsHaveCosineAtLeast0_9999WithTheReferenceForEveryText() throws {
        let embedder = try Fixtures.embedder.get()
        let references = try Fixtures.references.get()
        // All texts in one call: several packed passes, the way documents are indexed.
        let vectors = embedder.embed(references.map(\.text))
        #expect(vectors.count == references.count)
        var worst = (cosine: 1.0, id: "")
        for (v, r) in zip(vectors, references) {
            #expect(v.count == 384)
            let c = cosine(v, r.embedding)
            if c < worst.cosine { worst = (c, r.id) }
            #expect(c >= 0.9999, "\(r.id): cosine \(c)")
        }
        print("embedder: lowest cosine to the reference \(worst.cosine) (\(worst.id)) over \(references.count) texts")
    }

    @Test func aTextAloneGetsTheVectorItGetsInABatch() throws {
        let embedder = try Fixtures.embedder.get()
        let texts = try Fixtures.references.get().prefix(40).map(\.text)
        let batch = embedder.embed(texts)
        for (i, text) in texts.enumerated() where i % 7 == 0 {
            let alone = embedder.embed([text])[0]
            let diff = zip(alone, batch[i]).map { abs($0 - $1) }.max()!
            #expect(diff < 1e-5, "text \(i): largest difference \(diff)")
        }
    }

    @Test func theModelCardsExampleHasItsDocumentedFirstComponents() throws {
        let v = try Fixtures.embedder.get().embed(["This is an example sentence"])[0]
        let documented: [Float] = [0.06765684, 0.06349587, 0.04871317, 0.07930502, 0.03744812]
        for (got, want) in zip(v.prefix(5), documented) {
            #expect(abs(got - want) < 2e-6, "got \(v.prefix(5)), documented \(documented)")
        }
        let norm = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
        #expect(abs(norm - 1) < 1e-5)
    }

    @Test func anEmptyListGivesNoVectors() throws {
        #expect(try Fixtures.embedder.get().embed([]).isEmpty)
    }
}
