import Foundation
import Items
import QueryPlan
import Testing

@testable import SearchParameters

/// The `semantic` / `hybrid` parameters, and the fusion of lexical and semantic ranks.
@Suite struct HybridTests {
    @Test func bothSpellingsAreRead() throws {
        let s = try request(#"{"query": "vim", "semantic": {"query": "text editor", "ratio": 0.25}}"#).semantic
        #expect(s == SemanticParameters(query: "text editor", ratio: 0.25))
        #expect(try request(#"{"query": "vim", "semantic": {}}"#).semantic == SemanticParameters(query: "vim", ratio: 0.5))
        #expect(
            try request(#"{"query": "vim", "hybrid": {"semanticRatio": 1, "embedder": "default"}}"#).semantic
                == SemanticParameters(query: "vim", ratio: 1))
        #expect(try request(#"{"query": "vim"}"#).semantic == nil)
    }

    @Test func badSemanticParametersNameTheField() throws {
        #expect(try failure(#"{"query": "x", "semantic": {"ratio": 1.5}}"#)?.parameter == "semantic.ratio")
        #expect(try failure(#"{"query": "x", "semantic": {"ratio": "high"}}"#)?.parameter == "semantic.ratio")
        #expect(try failure(#"{"query": "x", "semantic": {"text": "y"}}"#)?.parameter == "semantic.text")
        #expect(try failure(#"{"query": "x", "semantic": {"text": "y"}}"#)?.code == .unknownParameter)
        #expect(try failure(#"{"query": "x", "semantic": true}"#)?.parameter == "semantic")
        #expect(try failure(#"{"query": "  ", "semantic": {}}"#)?.parameter == "semantic.query")
        #expect(try failure(#"{"query": "", "hybrid": {}}"#)?.parameter == "query")
        #expect(try failure(#"{"query": "x", "hybrid": {"embedder": "other"}}"#)?.parameter == "hybrid.embedder")
        #expect(try failure(#"{"query": "x", "semantic": {}, "hybrid": {}}"#)?.parameter == "hybrid")
    }

    @Test func thePlanCarriesTheVectorExactly() throws {
        var plan = SearchPlan(words: ["vim"])
        plan.semantic = SemanticPlan(vector: [0.1, -0.25, 1e-8, 0.333333343], ratio: 0.3)
        let decoded = try SearchPlan(json: try JSONValue.parse(JSONWriter.string(plan.json)))
        #expect(decoded.semantic == plan.semantic)
        var rank = SearchRank(words: 1)
        rank.semanticScore = 0.5
        rank.lexical = false
        let back = try SearchRank(json: rank.json)
        #expect(back.semanticScore == 0.5 && back.lexical == false)
    }

    func rank(lexical: Bool = true, typos: Int = 0, exact: Bool = false, score: Double?) -> SearchRank {
        var r = SearchRank(words: 1, typos: typos, exactAttribute: exact ? 0 : SearchRank.noExactAttribute)
        r.lexical = lexical
        r.semanticScore = score
        return r
    }

    @Test func reciprocalRankFusion() {
        var plan = SearchPlan(words: ["editor"], window: 10)
        plan.semantic = SemanticPlan(vector: [], ratio: 0.5)
        // a: lexical 1st, semantic 3rd; b: lexical 2nd, semantic 1st; c: only semantic, 2nd; d: only lexical, 3rd.
        let ranks = [rank(typos: 0, score: 0.3), rank(typos: 1, score: 0.9), rank(lexical: false, score: 0.8), rank(typos: 2, score: nil)]
        let ids = ["a", "b", "c", "d"]
        let order = HybridRanking.fuse(ranks: ranks, ids: ids, plan: plan)
        #expect(order.map { ids[$0.index] } == ["b", "a", "c", "d"])
        #expect(order.first?.lexicalRank == 2 && order.first?.semanticRank == 1)
        #expect(abs(order[0].score - (0.5 / 62 + 0.5 / 61)) < 1e-12)
        // Words alone: the lexical order, semantic-only hits left out.
        plan.semantic?.ratio = 0
        #expect(HybridRanking.fuse(ranks: ranks, ids: ids, plan: plan).map { ids[$0.index] } == ["a", "b", "d"])
        // Meaning alone: by score, lexical-only hits left out.
        plan.semantic?.ratio = 1
        #expect(HybridRanking.fuse(ranks: ranks, ids: ids, plan: plan).map { ids[$0.index] } == ["b", "c", "a"])
    }

    @Test func aNavigationalMatchComesFirst() {
        var plan = SearchPlan(words: ["gimp"], window: 10)
        plan.semantic = SemanticPlan(vector: [], ratio: 0.9)
        let ranks = [rank(typos: 0, exact: true, score: 0.2), rank(lexical: false, score: 0.9), rank(lexical: false, score: 0.8)]
        let ids = ["gimp", "krita", "mypaint"]
        let order = HybridRanking.fuse(ranks: ranks, ids: ids, plan: plan)
        #expect(order.map { ids[$0.index] } == ["gimp", "krita", "mypaint"])
        #expect(order[0].navigational)
        plan.semantic?.ratio = 1  // meaning alone ignores names
        #expect(HybridRanking.fuse(ranks: ranks, ids: ids, plan: plan).map { ids[$0.index] } == ["krita", "mypaint", "gimp"])
    }

    @Test func onlyTheWindowOfEachListIsNumbered() {
        var plan = SearchPlan(words: [], window: 2)
        plan.semantic = SemanticPlan(vector: [], ratio: 1)
        let ranks = [0.9, 0.8, 0.7].map { rank(lexical: false, score: $0) }
        #expect(HybridRanking.fuse(ranks: ranks, ids: ["x", "y", "z"], plan: plan).count == 2)
    }
}
