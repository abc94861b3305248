import Foundation
import Items
import Testing

@testable import WireProtocol

/// The coordinator's raw path: a query worker's `shard_batch` read without
/// decoding its items, and a `result_batch` spliced from them, must be what
/// the decoding path gives, byte for byte.
struct RawShardBatchTests {
    static let items: [JSONValue] = [
        EnvelopeTests.item,
        .object([
            "uniqueIdentifier": .string("ü \u{1F600} \\ / \t"), "domainIdentifier": .string("d"),
            "attributes": .object([
                "title": .string("line\nbreak \u{1}"), "n": .number(-1.5e-7), "big": .number(12345678901234),
                "list": .array([.null, .bool(false), .array([]), .object([:])]),
            ]),
        ]),
        .object([:]),
    ]

    static func frame(_ batch: Body.ShardBatch, id: String = "q17") -> Data {
        Envelope(id: id, body: .shardBatch(batch)).encoded()
    }

    @Test func readsWhatTheWorkerWrote() throws {
        let cases: [Body.ShardBatch] = [
            Body.ShardBatch(shard: 1, seq: 3, hits: Self.items.map { Hit(item: $0) }, doneCount: 40),
            Body.ShardBatch(shard: 0, seq: 1, hits: Self.items.map { Hit(item: $0, sort: [.string("b"), .number(2), .null], score: 0.75) }),
            Body.ShardBatch(shard: 5, seq: 9, hits: []),
        ]
        for batch in cases {
            let raw = try #require(RawShardBatch.read(Self.frame(batch)))
            #expect(raw.id == "q17")
            #expect(raw.shard == batch.shard && raw.seq == batch.seq && raw.doneCount == batch.doneCount)
            #expect(try raw.decoded() == batch)
            // Each item's bytes are the writer's bytes for it.
            #expect(raw.hits.map { Array($0.item.bytes) } == batch.hits.map { JSONWriter.bytes($0.item) })
            #expect(raw.hits.map(\.sort) == batch.hits.map(\.sort))
            #expect(raw.hits.map(\.score) == batch.hits.map(\.score))
        }
    }

    @Test func splicedResultBatchIsTheDecodedOnesBytes() throws {
        for key: String? in [nil, "k-1"] {
            let decoded = Envelope(id: "c\"9", body: .resultBatch(Body.ResultBatch(items: Self.items, seq: 12)), key: key)
            let spliced = Envelope(id: "c\"9", body: .resultBatch(Body.ResultBatch(rawItems: Self.items.map(RawJSON.init), seq: 12)), key: key)
            #expect(spliced.encoded() == decoded.encoded())
            let back = try Envelope.decode(spliced.encoded())
            #expect(back == decoded)
        }
        // A last batch that carries its query's completion, spliced or not.
        let completion = Body.Completion(count: 2, failedShards: [ShardFailure(shard: 3, reason: "gone")], cancelled: false, elapsedMs: 1.25)
        var last = Body.ResultBatch(rawItems: Self.items.map(RawJSON.init), seq: 13)
        last.completion = completion
        let lastDecoded = Envelope(id: "c9", body: .resultBatch(Body.ResultBatch(items: Self.items, seq: 13, completion: completion)))
        #expect(Envelope(id: "c9", body: .resultBatch(last)).encoded() == lastDecoded.encoded())
        #expect(try Envelope.decode(Envelope(id: "c9", body: .resultBatch(last)).encoded()) == lastDecoded)
        let empty = Envelope(id: "e", body: .resultBatch(Body.ResultBatch(rawItems: [], seq: 1)))
        #expect(empty.encoded() == Envelope(id: "e", body: .resultBatch(Body.ResultBatch(items: [], seq: 1))).encoded())
    }

    @Test func forwardsAFrameReadThroughTheRawPath() throws {
        // Worker frame → raw read → spliced client batch equals the batch
        // built from the fully decoded frame.
        let batch = Body.ShardBatch(shard: 2, seq: 1, hits: Self.items.map { Hit(item: $0) }, doneCount: 3)
        let data = Self.frame(batch)
        let raw = try #require(RawShardBatch.read(data))
        guard case .shardBatch(let full) = try Envelope.decode(data).body else { Issue.record("not a shard batch"); return }
        let viaRaw = Envelope(id: "r", body: .resultBatch(Body.ResultBatch(rawItems: raw.hits.map(\.item), seq: 1))).encoded()
        let viaTree = Envelope(id: "r", body: .resultBatch(Body.ResultBatch(items: full.hits.map(\.item), seq: 1))).encoded()
        #expect(viaRaw == viaTree)
    }

    @Test func declinesWhatIsNotAWellFormedShardBatch() throws {
        let good = String(
            decoding: Self.frame(Body.ShardBatch(shard: 0, seq: 1, hits: [Hit(item: .object(["a": .string("x")]))])),
            as: UTF8.self)
        #expect(RawShardBatch.read(Data(good.utf8)) != nil)
        let bad: [String] = [
            String(good.dropLast()),  // truncated
            good + "x",  // trailing bytes
            good.replacingOccurrences(of: "\"v\":1", with: "\"v\":2"),
            good.replacingOccurrences(of: "shard_batch", with: "result_batch"),
            good.replacingOccurrences(of: "\"x\"", with: "\"x\\q\""),  // unknown escape
            good.replacingOccurrences(of: "\"x\"", with: "\"x\u{1}\""),  // raw control character
            good.replacingOccurrences(of: "\"x\"", with: "[1 2]"),
            good.replacingOccurrences(of: "\"x\"", with: "tru"),
            good.replacingOccurrences(of: "\"x\"", with: "{\"a\" 1}"),
            good.replacingOccurrences(of: "\"item\"", with: "\"itm\""),  // a hit without an item
            good.replacingOccurrences(of: "\"seq\":1", with: "\"seq\":\"1\""),
            good.replacingOccurrences(of: "\"id\":\"q17\",", with: ""),
            "[]", "", "{",
        ]
        for text in bad {
            #expect(RawShardBatch.read(Data(text.utf8)) == nil, "read: \(text)")
        }
        #expect(RawShardBatch.read(Data(good.utf8), maxBytes: 10) == nil)
    }
}
