import Foundation
import Items
import QueryPlan
import ShardStore
import Testing

/// A shard's vector search is exact: the two-pass search (8-bit codes with a
/// proven bound, then float32 for the rows that may qualify) returns what
/// scoring every row in float32 returns; vectors follow their items.
@Suite struct VectorSearchTests {
    struct Random {
        var state: UInt64
        mutating func next() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Double(state >> 11) / Double(1 << 53)) - 0.5
        }
        mutating func unit(_ d: Int) -> [Float] {
            var v = (0..<d).map { _ in next() }
            let n = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
            for i in v.indices { v[i] /= n }
            return v
        }
    }

    func dot(_ a: [Float], _ b: [Float]) -> Double { zip(a, b).reduce(0) { $0 + Double($1.0) * Double($1.1) } }

    @Test func theTwoPassSearchIsExact() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        var rng = Random(state: 7)
        var vectors: [String: [Float]] = [:]
        var items: [JSONValue] = []
        for i in 0..<3000 {
            let id = "i\(i)"
            // Some duplicates, so that equal scores occur.
            vectors[id] = i % 500 == 1 ? vectors["i0"]! : rng.unit(384)
            items.append(item(id, #"{"title": "t\#(i)", "section": "\#(i % 3 == 0 ? "a" : "b")"}"#))
        }
        _ = try writer.write(items, vectors: vectors)
        let reader = try openStore(dir, mode: .readOnly)
        for _ in 0..<20 {
            let q = rng.unit(384)
            let got = try reader.nearest(q, k: 10)
            let want = vectors.map { ($0.key, dot($0.value, q)) }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }
            #expect(got.count == 10)
            for (g, w) in zip(got, want.prefix(10)) {
                #expect(abs(Double(g.score) - w.1) < 1e-5)
            }
            // The same items, except where float32 and double disagree on a near-tie.
            let cut = want[9].1
            let sure = want.prefix(10).filter { $0.1 > cut + 1e-5 }.map(\.0)
            #expect(Set(sure).isSubset(of: Set(got.map(\.uniqueIdentifier))))
        }
        // The query itself is its own nearest item, with cosine 1.
        #expect(try reader.nearest(vectors["i42"]!, k: 1).first?.uniqueIdentifier == "i42")
        // Filters apply before ranking: the best item of section "a" by brute force.
        let q = rng.unit(384)
        var plan = SearchPlan(filter: .text(TextTest(attribute: .named("section"), pattern: TextPattern(literal: "a"))), window: 5)
        plan.semantic = SemanticPlan(vector: q, ratio: 1)
        let result = try reader.search(plan)
        let inA = vectors.filter { Int($0.key.dropFirst())! % 3 == 0 }
        #expect(result.nbHits == inA.count)
        let best = inA.max { dot($0.value, q) < dot($1.value, q) }!.key
        #expect(result.hits.first?.uniqueIdentifier == best)
        #expect(result.hits.allSatisfy { $0.rank.lexical == false && $0.rank.semanticScore != nil })
    }

    @Test func vectorsAreReplacedAndDeletedWithTheirItems() throws {
        let dir = TempDir()
        let writer = try openStore(dir)
        var rng = Random(state: 3)
        let a = rng.unit(8), b = rng.unit(8)
        _ = try writer.write([item("x", #"{"title": "x"}"#), item("y", #"{"title": "y"}"#)], vectors: ["x": a, "y": b])
        let reader = try openStore(dir, mode: .readOnly)
        #expect(try reader.nearest(a, k: 1).first?.uniqueIdentifier == "x")
        #expect(try writer.vectorCount() == 2)
        // Replaced with b's vector: the reader's index follows the commit.
        _ = try writer.write([item("x", #"{"title": "x2"}"#)], vectors: ["x": b])
        #expect(try reader.nearest(a, k: 2).map(\.uniqueIdentifier).sorted() == ["x", "y"])
        #expect(abs(try reader.nearest(b, k: 2).map(\.score).min()! - 1) < 1e-5)
        // Replaced without a vector (its text no longer semantic): the vector goes.
        _ = try writer.write([item("x", #"{"title": "x3"}"#)])
        #expect(try reader.nearest(a, k: 5).map(\.uniqueIdentifier) == ["y"])
        _ = try writer.delete(ids: ["y"])
        #expect(try reader.nearest(a, k: 5).isEmpty)
        #expect(try writer.vectorCount() == 0)
    }
}
