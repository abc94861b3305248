import Foundation
import Items
import QueryPlan
import Testing

@testable import WireProtocol

/// Every message survives encoding and decoding unchanged, on both the
/// hand-written paths (messages that carry items) and the `Codable` ones.
struct EnvelopeTests {
    static let item: JSONValue = .object([
        "uniqueIdentifier": .string("deb:0ad"), "domainIdentifier": .string("org.debian.games"),
        "attributes": .object([
            "title": .string("0ad \"quoted\"\n"), "installedSize": .number(28591),
            "keywords": .array([.string("game::strategy")]), "ratio": .number(0.25), "ok": .bool(true),
        ]),
    ])

    static let bodies: [Body] = [
        .publish(Body.Publish(items: [item, .object([:])], batch: "b1")),
        .publish(Body.Publish(items: [])),
        .publishAck(
            Body.PublishAck(
                batch: "b1",
                results: [
                    ItemResult(index: 0, uniqueIdentifier: "a", status: .stored),
                    ItemResult(
                        index: 1, uniqueIdentifier: nil, status: .rejected,
                        error: WireError(code: "missing_identifier", message: "m", field: "uniqueIdentifier")),
                ])),
        .declare(Body.Declare(attributes: [AttributeDeclaration(AttributeSpec(name: "dueAt", type: .date))])),
        .declareAck(Body.Empty()),
        .delete(Body.Delete(ids: ["a"], domains: ["org.debian"], all: nil, shards: [1, 2])),
        .deleteAck(Body.DeleteAck(deleted: 3)),
        .query(
            Body.QueryRequest(
                query: "title == \"x\"", fetchAttributes: ["title"], sort: [.object(["attribute": .string("title")])],
                limit: 5, batchSize: 2, deadlineMs: 100)),
        .query(
            Body.QueryRequest(
                language: "cloudkit", sort: [.object(["attribute": .string("name"), "ascending": .bool(false)])],
                limit: 20, recordType: "Employee", predicate: "favoriteColor == %@ AND location != nil",
                arguments: [.string("red"), .object(["recordName": .string("e1")])], cursor: "eyJ2IjoxfQ")),
        .completion(Body.Completion(count: 20, failedShards: [], cancelled: false, elapsedMs: 2, cursor: "eyJ2IjoxfQ")),
        .resultBatch(Body.ResultBatch(items: [item], seq: 4)),
        .resultBatch(
            Body.ResultBatch(
                items: [item], seq: 5,
                completion: Body.Completion(
                    count: 3, failedShards: [ShardFailure(shard: 1, reason: "deadline")], cancelled: false, elapsedMs: 0.75, cursor: "eyJ2IjoxfQ"))),
        .query(Body.QueryRequest(query: "title == \"x\"", limit: 20, completionInBatch: true)),
        .completion(Body.Completion(count: 9, failedShards: [ShardFailure(shard: 2, reason: "deadline")], cancelled: false, elapsedMs: 1.5)),
        .cancel(Body.Cancel(query: "c7")),
        .stats(Body.Empty()),
        .statsReply(Body.Stats(stats: .object(["shards": .number(4)]))),
        .ping(Body.Empty()),
        .pong(Body.Pong(shardCount: 4, servedShards: [0, 1, 2, 3])),
        .error(WireError(code: "bad_query", message: "expected a value", position: 9)),
        .register(Body.Register(role: .indexer, worker: "indexer-0", shards: [0, 2], host: "h", pid: 42)),
        .registered(Body.Registered(shardCount: 4, heartbeatMs: 1000)),
        .challenge(Body.Challenge(nonce: "5f1e")),
        .register(Body.Register(role: .query, worker: "query-1", shards: [1], proof: "ab12", nonce: "5f1e")),
        .heartbeat(Body.Heartbeat(worker: "w")),
        .write(Body.Write(shard: 3, items: [item], evict: ["x", "y"])),
        .writeAck(Body.WriteAck(shard: 3, results: [ItemResult(index: 0, uniqueIdentifier: "deb:0ad", status: .stored)])),
        .shardQuery(Body.ShardQuery(shard: 1, plan: .object(["predicate": .object(["op": .string("all")])]), deadlineMs: 50)),
        .shardBatch(Body.ShardBatch(shard: 1, seq: 2, hits: [Hit(item: item, sort: [.number(1), .null], score: 0.5), Hit(item: item)])),
        .shardDone(Body.ShardDone(shard: 1, count: 2, error: WireError(code: "cancelled", message: "cancelled"))),
        .search(Body.Search(params: .object(["query": .string("vim"), "facets": .array([.string("section")])]), deadlineMs: 500)),
        .search(Body.Search(params: .object([:]))),
        .searchResult(
            Body.SearchResult(
                response: .object(["hits": .array([item]), "nbHits": .number(1)]),
                failedShards: [ShardFailure(shard: 3, reason: "no live query worker")])),
        .shardSearch(Body.ShardSearch(shard: 2, plan: .object(["words": .array([.string("vim")])]), deadlineMs: 40)),
        .shardSearchResult(
            Body.ShardSearchResult(
                shard: 2, hits: [Body.RankedHit(id: "deb:0ad", item: item, rank: SearchRank(words: 1, typos: 1, proximity: 2, custom: [.number(3)]))],
                nbHits: 7, facets: ["section": ["games": 7]], facetStats: ["installedSize": [1, 9, 20, 7]],
                exhaustiveFacetsCount: false)),
        .shardSearch(Body.ShardSearch(shard: 1, plan: .object(["words": .array([.string("py")])]), suggest: 10, perDomain: 3)),
        .shardSearchResult(
            Body.ShardSearchResult(
                shard: 1, hits: [], nbHits: 4, facets: [:], facetStats: [:], exhaustiveFacetsCount: true,
                suggestions: [Body.SuggestionCount(suggestion: "python", count: 4)],
                groups: [
                    Body.ShardGroup(
                        domainIdentifier: "org.debian.python", total: 4,
                        hits: [Body.RankedHit(id: "deb:0ad", item: item, rank: SearchRank())])
                ])),
        .entityDonate(Body.EntityDonate(entities: [.object(["type": .string("T"), "id": .string("1")])], priority: 10, batch: "b")),
        .entityDelete(Body.EntityDelete(entityType: "LandmarkEntity", ids: ["1", "2"], shards: [0])),
        .entityAssociate(Body.EntityAssociate(uniqueIdentifier: "deb:0ad", entity: EntityAssociation(type: "GameEntity", id: "0ad", priority: 2))),
        .entityAck(Body.EntityAck(count: 3)),
        .suggest(Body.Suggest(text: "pyth", limit: 5, hitsPerPage: 2, params: .object(["aroundLatLng": .string("1,2")]), deadlineMs: 50)),
        .suggestResult(
            Body.SuggestResult(
                suggestions: [Body.SuggestionCount(suggestion: "python", count: 9)], response: .object(["nbHits": .number(9)]),
                failedShards: [ShardFailure(shard: 1, reason: "down")])),
        .spotlight(Body.Spotlight(text: "python", perDomain: 2, params: nil, deadlineMs: 10)),
        .spotlightResult(
            Body.SpotlightResult(groups: [
                Body.SpotlightGroup(
                    domainIdentifier: "org.debian", total: 5,
                    items: [.object(["objectID": .string("deb:0ad")])], continuation: "abc")
            ])),
        .continueSearch(Body.Continue(token: "abc", page: 2, hitsPerPage: 10, deadlineMs: 30)),
        // Replication: numbered changes and a registration that reports how far its shards are.
        .write(
            {
                var w = Body.Write(shard: 1, items: [item]); w.sequence = 42; return w
            }()),
        .delete(
            {
                var d = Body.Delete(ids: ["a"], shards: [1]); d.sequence = 43; return d
            }()),
        .entityDelete(
            {
                var d = Body.EntityDelete(entityType: "T", shards: [1]); d.sequence = 44; return d
            }()),
        .register(
            {
                var r = Body.Register(role: .indexer, worker: "indexer-1", shards: [0, 1], host: "h", pid: 7)
                r.replica = "h:/data/replica-1"
                r.sequences = [ShardSequence(shard: 0, sequence: 0), ShardSequence(shard: 1, sequence: 44)]
                return r
            }()),
        .keys(Body.Keys(action: "create", app: "acme", role: "search", rateLimit: 5, maxItemsPerPublish: 100, description: "web")),
        .keysReply(
            Body.KeysReply(
                apiKey: "llk_" + String(repeating: "ab", count: 32),
                keys: [.object(["id": .string("0123456789abcdef"), "app": .string("acme"), "role": .string("search")])])),
        .copyRequest(Body.CopyRequest(shard: 2, copy: "copy-7", offset: 1_048_576, maxBytes: 1_048_576)),
        .copyChunk(Body.CopyChunk(shard: 2, copy: "copy-7", sequence: 40, offset: 0, size: 6, data: Data("SQLite".utf8).base64EncodedString())),
        .copyAck(Body.CopyAck(shard: 2, copy: "copy-7", received: 6)),
        .copyAck(Body.CopyAck(shard: 2, copy: "copy-7", received: 6, installed: true, sequence: 40)),
    ]

    @Test func theKeyRidesInTheEnvelope() throws {
        let e = Envelope(id: "r1", body: .ping(Body.Empty()), key: "llk_x")
        let text = String(decoding: e.encoded(), as: UTF8.self)
        #expect(text.contains("\"key\":\"llk_x\""))
        #expect(try Envelope.decode(e.encoded()).key == "llk_x")
        // Fast-path bodies carry it too.
        let p = Envelope(id: "r2", body: .publish(Body.Publish(items: [])), key: "k2")
        #expect(try Envelope.decode(p.encoded()).key == "k2")
        #expect(try Envelope.decode(Envelope(id: "r3", body: .ping(Body.Empty())).encoded()).key == nil)
        #expect(throws: ProtocolError.self) { try Envelope.decode(Data(#"{"v":1,"type":"ping","id":"x","key":5}"#.utf8)) }
    }

    @Test func everyMessageSurvivesARoundTrip() throws {
        for body in Self.bodies {
            let e = Envelope(id: "r1", body: body)
            let back = try Envelope.decode(e.encoded())
            #expect(back == e, "\(body.type.rawValue)")
        }
    }

    /// FNV-1a written out independently of the implementation.
    static func fnv1a(_ s: String) -> Int {
        var h: UInt64 = 14_695_981_039_346_656_037
        for b in s.utf8 { h = (h ^ UInt64(b)) &* 1_099_511_628_211 }
        return Int(h % 1000)
    }

    @Test func everyMessageTypeIsCovered() {
        #expect(Set(Self.bodies.map(\.type)) == Set(MessageType.allCases))
    }

    @Test func itemCarryingMessagesNameTheirFaults() {
        func fault(_ json: String) -> ProtocolError? {
            do { _ = try Envelope.decode(Data(json.utf8)); return nil } catch { return error }
        }
        #expect(fault(#"{"v":1,"type":"publish","id":"a"}"#)?.message == "publish: missing field 'items'")
        #expect(fault(#"{"v":1,"type":"publish","id":"a","items":{}}"#)?.message == "publish: field 'items' should be a list")
        #expect(fault(#"{"v":1,"type":"write","id":"a","shard":"x","items":[]}"#)?.message == "write: field 'shard' should be a whole number")
        #expect(fault(#"{"v":1,"type":"shard_batch","id":"a","shard":1,"seq":1,"hits":[1]}"#)?.id == "a")
        #expect(fault(#"{"v":1,"type":"ping","id":7}"#)?.message == "request 'id' must be text, found number")
        // A hit's rank is read when the frame is: a malformed one is named.
        #expect(
            fault(#"{"v":1,"type":"shard_search_result","id":"a","shard":0,"nbHits":1,"hits":[{"id":"x","item":{},"rank":3}]}"#)?.message
                == "shard_search_result: field 'hits[0].rank': expected an object")
        let big = Data((#"{"v":1,"type":"publish","id":"big","items":[""# + String(repeating: "x", count: 2000) + #""]}"#).utf8)
        do { _ = try Envelope.decode(big, maxBytes: 1000); Issue.record("must be too large") } catch {
            #expect(error.code == .tooLarge)
            #expect(error.id == "big")
        }
    }

    @Test func sharding() {
        // Pinned values: FNV-1a 64 of "org.debian.games" is 0x936fb64382bbdda1
        // (worked out by hand in Python), and of "a" the published test vector
        // 0xaf63dc4c8601ec8c, so the same domain lands on the same shard in
        // every process and on every host.
        #expect(Sharding.shard(forDomain: "org.debian.games", shardCount: 8) == 1)
        #expect(Sharding.shard(forDomain: "a", shardCount: 1 << 40) == Int(0xaf63_dc4c_8601_ec8c % UInt64(1 << 40)))
        // FNV-1a is fixed: these values must never change, or stored items would be looked for on the wrong shard.
        let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
        #expect(Sharding.shard(forDomain: "", shardCount: 8) == Int(offsetBasis % 8))
        #expect(Sharding.shard(forDomain: "org.debian.games", shardCount: 1000) == Self.fnv1a("org.debian.games"))
        var counts = [Int](repeating: 0, count: 8)
        for i in 0..<8000 { counts[Sharding.shard(forDomain: "org.example.d\(i)", shardCount: 8)] += 1 }
        #expect(counts.allSatisfy { $0 > 800 && $0 < 1200 })
        #expect(Sharding.parseList("0,2-4,2") == [0, 2, 3, 4])
        #expect(Sharding.parseList("all", shardCount: 3) == [0, 1, 2])
        #expect(Sharding.parseList("x") == nil)
    }
}

/// The tree coders give what Foundation's JSON coders give, without a second parse.
struct TreeCoderTests {
    /// The hand-written encodings (`fastJSON`) write what the `Codable`
    /// form writes, field for field, absent optionals left out.
    @Test func handWrittenEncodingsEqualTheCodableForm() throws {
        var bodies = EnvelopeTests.bodies
        bodies.append(.shardDone(Body.ShardDone(shard: 2, count: 0, error: WireError(code: "bad_plan", message: "m", position: 4, field: "f"))))
        bodies.append(.completion(Body.Completion(count: 3, failedShards: [ShardFailure(shard: 1, reason: "r")], cancelled: true, elapsedMs: 1.25)))
        bodies.append(.shardBatch(Body.ShardBatch(shard: 0, seq: 3, hits: [], doneCount: 12)))
        for body in bodies {
            for key in [nil, "k\"1"] {
                let envelope = Envelope(id: "t1", body: body, key: key)
                let codable = try JSONValueEncoder().encode(EncodableEnvelope(envelope: envelope))
                #expect(try JSONValue.parse(envelope.encoded()) == codable, "\(body.type.rawValue)")
                // The very bytes of the tree (keys sorted, the writer's forms).
                if case .search = body { #expect(envelope.encoded() == Data(JSONWriter.bytes(codable)), "\(body.type.rawValue)") }
            }
        }
    }

    @Test func encodingAndDecodingAgreeWithFoundation() throws {
        for body in EnvelopeTests.bodies {
            let envelope = EncodableEnvelope(envelope: Envelope(id: "t1", body: body))
            let foundation = try JSONValue.parse(try JSONEncoder().encode(envelope))
            let tree = try JSONValueEncoder().encode(envelope)
            #expect(tree == foundation, "\(body.type.rawValue)")
        }
        // Decoding: every Codable body type, from the tree, equals JSONDecoder's.
        let ack = Body.PublishAck(
            batch: "b",
            results: [
                ItemResult(
                    index: 0, uniqueIdentifier: "a", status: .rejected,
                    error: WireError(code: "x", message: "m", position: 3))
            ])
        let data = try JSONEncoder().encode(ack)
        #expect(
            try JSONValueDecoder().decode(Body.PublishAck.self, from: JSONValue.parse(data)) == JSONDecoder().decode(Body.PublishAck.self, from: data)
        )
        let reg = Body.Register(role: .query, worker: "w", shards: [1, 2], host: nil, pid: 7)
        let regData = try JSONEncoder().encode(reg)
        #expect(try JSONValueDecoder().decode(Body.Register.self, from: JSONValue.parse(regData)) == reg)
    }

    @Test func decodingErrorsNameThePath() {
        let bad: JSONValue = .object(["role": .string("indexer"), "worker": .string("w"), "shards": .array([.number(1), .string("x")])])
        do {
            _ = try JSONValueDecoder().decode(Body.Register.self, from: bad)
            Issue.record("decoded")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["shards", "1"])
        } catch {
            Issue.record("\(error)")
        }
        // A fraction is not a whole number; null is not a value.
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Body.DeleteAck.self, from: .object(["deleted": .number(1.5)])) }
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Body.DeleteAck.self, from: .object(["deleted": .null])) }
    }
}
