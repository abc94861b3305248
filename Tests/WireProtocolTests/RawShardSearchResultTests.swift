import Foundation
import Items
import QueryPlan
import Testing

@testable import WireProtocol

/// A shard's search answer: its hits' items written as the store gave them
/// and read back as bytes must be what the tree path writes and reads.
struct RawShardSearchResultTests {
    static func hits(raw: Bool) -> [Body.RankedHit] {
        RawShardBatchTests.items.enumerated().map { i, item in
            let rank = SearchRank(words: i + 1, typos: i, proximity: 2, custom: [.number(Double(i)), .string("é")])
            return raw
                ? Body.RankedHit(id: "id-\(i)", item: .null, rank: rank, rawItem: RawJSON(item))
                : Body.RankedHit(id: "id-\(i)", item: item, rank: rank)
        }
    }

    static func result(raw: Bool, groups: Bool) -> Body.ShardSearchResult {
        Body.ShardSearchResult(
            shard: 3, hits: hits(raw: raw), nbHits: 1234, facets: ["kind": ["a": 2, "b\"": 1]],
            facetStats: ["size": [1, 9, 20, 4]], exhaustiveFacetsCount: false,
            suggestions: [Body.SuggestionCount(suggestion: "vi", count: 7)],
            groups: groups ? [Body.ShardGroup(domainIdentifier: "d.x", total: 9, hits: hits(raw: raw))] : nil)
    }

    static func trees(_ r: Body.ShardSearchResult) -> Body.ShardSearchResult {
        var r = r
        func tree(_ hs: [Body.RankedHit]) -> [Body.RankedHit] { hs.map { Body.RankedHit(id: $0.id, item: $0.tree, rank: $0.rank) } }
        r.hits = tree(r.hits)
        r.groups = r.groups.map { $0.map { Body.ShardGroup(domainIdentifier: $0.domainIdentifier, total: $0.total, hits: tree($0.hits)) } }
        return r
    }

    @Test func rawItemsAreWrittenAsTheTreesWouldBe() throws {
        for groups in [false, true] {
            let raw = Envelope(id: "s4", body: .shardSearchResult(Self.result(raw: true, groups: groups))).encoded()
            let tree = Envelope(id: "s4", body: .shardSearchResult(Self.result(raw: false, groups: groups))).encoded()
            #expect(raw == tree)
            // The ordinary decode reads it too.
            guard case .shardSearchResult(let back) = try Envelope.decode(raw).body else { Issue.record("not a search result"); return }
            #expect(back == Self.result(raw: false, groups: groups))
        }
    }

    @Test func readsEachItemAsItsBytes() throws {
        for groups in [false, true] {
            let frame = Envelope(id: "s4", body: .shardSearchResult(Self.result(raw: false, groups: groups))).encoded()
            let (id, read) = try #require(RawShardSearchResult.read(frame))
            #expect(id == "s4")
            #expect(read.hits.allSatisfy { $0.item == .null && $0.rawItem != nil })
            #expect(read.hits.map { Array($0.rawItem!.bytes) } == RawShardBatchTests.items.map { JSONWriter.bytes($0) })
            #expect(Self.trees(read) == Self.result(raw: false, groups: groups))
        }
    }

    @Test func declinesWhatIsNotAWellFormedShardSearchResult() throws {
        let good = String(decoding: Envelope(id: "s4", body: .shardSearchResult(Self.result(raw: false, groups: true))).encoded(), as: UTF8.self)
        #expect(RawShardSearchResult.read(Data(good.utf8)) != nil)
        let bad: [String] = [
            String(good.dropLast()),
            good + " ",
            good.replacingOccurrences(of: "\"v\":1", with: "\"v\":2"),
            good.replacingOccurrences(of: "\"nbHits\":1234", with: "\"nbHits\":\"many\""),
            good.replacingOccurrences(of: "\"id\":\"id-0\"", with: "\"id\":0"),
            good.replacingOccurrences(of: "\"rank\":", with: "\"rnk\":"),
            good.replacingOccurrences(of: "\"total\":9", with: "\"total\":null"),
            good.replacingOccurrences(of: "\"n\":", with: "\"n\" "),  // an item that is not JSON
            good.replacingOccurrences(of: "\"id\":\"s4\",", with: ""),
        ]
        for text in bad {
            #expect(RawShardSearchResult.read(Data(text.utf8)) == nil, "read: \(text.prefix(120))")
        }
        #expect(RawShardSearchResult.read(Data(good.utf8), maxBytes: 10) == nil)
        // Another message's frame is declined before it is walked.
        let batch = Envelope(id: "q", body: .shardBatch(Body.ShardBatch(shard: 0, seq: 1, hits: []))).encoded()
        #expect(RawShardSearchResult.read(batch) == nil)
    }
}
