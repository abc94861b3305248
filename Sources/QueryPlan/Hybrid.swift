import Foundation
import Items

/// The semantic part of a search: the query's embedding, computed once (by
/// the coordinator) and sent to every shard, and how much it weighs.
public struct SemanticPlan: Sendable, Hashable {
    /// The query text's unit-length embedding.
    public var vector: [Float]
    /// 0 ranks by words alone, 1 by meaning alone; between, both are fused
    /// (see ``HybridRanking``).
    public var ratio: Double
    public init(vector: [Float], ratio: Double) {
        self.vector = vector
        self.ratio = ratio
    }

    /// The vector as base64 of little-endian float32: exact, and a quarter of
    /// the size of the numbers written out in JSON.
    public var json: JSONValue {
        let data = vector.withUnsafeBufferPointer { Data(buffer: $0) }
        return .object(["vector": .string(data.base64EncodedString()), "ratio": .number(ratio)])
    }

    public init(json: JSONValue) throws(PlanDecodingError) {
        guard let text = json["vector"]?.stringValue, let data = Data(base64Encoded: text), data.count % 4 == 0 else {
            throw PlanDecodingError(path: "search.semantic.vector", message: "expected base64 of little-endian float32 numbers")
        }
        guard let ratio = json["ratio"]?.doubleValue, ratio >= 0, ratio <= 1 else {
            throw PlanDecodingError(path: "search.semantic.ratio", message: "expected a number from 0 to 1")
        }
        var v = [Float](repeating: 0, count: data.count / 4)
        _ = v.withUnsafeMutableBytes { data.copyBytes(to: $0) }
        self.init(vector: v, ratio: ratio)
    }
}

/// How lexical and semantic rankings become one order: reciprocal rank
/// fusion (RRF), with a navigational exception.
///
/// Why RRF rather than normalised scores: the lexical ranking here has no
/// score at all — it is Algolia's tie-breaking order of criteria (typos,
/// proximity, attribute, exactness, custom ranking) — so there is nothing to
/// normalise on that side, while its positions are well defined and the same
/// on every shard. Positions also make the fusion independent of how cosine
/// scores spread for a given query (short queries score low everywhere). An
/// item's fused score is `(1 − ratio) / (k + lexicalRank) + ratio / (k +
/// semanticRank)` with `k` = 60 (the constant of Cormack et al., which
/// Elasticsearch and OpenSearch use too); a rank past the window counts as no
/// contribution.
///
/// Shards and the coordinator agree because both lists are global: each
/// shard sends its best `window` by each ranking, so the union holds the
/// global best `window` of each, and the coordinator numbers them. Cosine
/// scores are per item (the query vector is the same everywhere), so an item
/// scores the same whichever shard holds it.
///
/// Navigational queries: when the query is the whole value of a searchable
/// attribute of a hit (`exactAttribute`, a package's name typed in full), the
/// person named what they want; those hits come first, in lexical order,
/// unless the ratio is 1 (meaning alone). Without this, a package that
/// several others describe better would lose its own name.
public enum HybridRanking {
    public static let k = 60.0

    /// One hit's place in the fused order, and why.
    public struct Placement: Sendable, Hashable {
        /// Position in the hits given.
        public var index: Int
        /// 1-based positions in the lexical and semantic orders (nil: past the window, or not in it).
        public var lexicalRank: Int?
        public var semanticRank: Int?
        public var score: Double
        /// Whether it came first as a navigational match.
        public var navigational: Bool
    }

    /// The hits (any shards' union) in fused order, best first; hits ranked
    /// by neither list, or only by one whose weight is 0, are left out.
    public static func fuse(ranks: [SearchRank], ids: [String], plan: SearchPlan) -> [Placement] {
        let ratio = plan.semantic?.ratio ?? 0
        let window = max(plan.window, 1)
        var lexical = ranks.indices.filter { ranks[$0].lexical }
        lexical.sort { SearchRanking.precedes(ranks[$0], ids[$0], ranks[$1], ids[$1], plan: plan) }
        var semantic = ranks.indices.filter { ranks[$0].semanticScore != nil }
        semantic.sort {
            let a = ranks[$0].semanticScore!, b = ranks[$1].semanticScore!
            return a != b ? a > b : ids[$0] < ids[$1]
        }
        var lexicalRank: [Int: Int] = [:], semanticRank: [Int: Int] = [:]
        for (p, i) in lexical.prefix(window).enumerated() { lexicalRank[i] = p + 1 }
        for (p, i) in semantic.prefix(window).enumerated() { semanticRank[i] = p + 1 }
        var placements: [Placement] = []
        for i in ranks.indices {
            let l = ratio < 1 ? lexicalRank[i] : nil
            let s = ratio > 0 ? semanticRank[i] : nil
            guard l != nil || s != nil else { continue }
            let score = (l.map { (1 - ratio) / (k + Double($0)) } ?? 0) + (s.map { ratio / (k + Double($0)) } ?? 0)
            let navigational = l != nil && plan.words.count > 0 && ranks[i].exactAttribute != SearchRank.noExactAttribute
            placements.append(
                Placement(
                    index: i, lexicalRank: lexicalRank[i], semanticRank: semanticRank[i],
                    score: score, navigational: navigational))
        }
        placements.sort { a, b in
            if a.navigational != b.navigational { return a.navigational }
            if a.navigational { return a.lexicalRank! < b.lexicalRank! }
            if a.score != b.score { return a.score > b.score }
            return ids[a.index] < ids[b.index]
        }
        return placements
    }
}
