import Foundation
import Items
import QueryPlan
import Synchronization
import Testing

@testable import SearchParameters
@testable import WireProtocol

/// The search response is written as bytes directly (``SearchResponseBuilder/responseBytes(processingTimeMS:)``):
/// those bytes must be the canonical JSON the tree would give (sorted keys,
/// the writer's number forms), with the members a tree built in the same
/// order would hold, and the frame that splices them must be the frame of
/// the tree.
@Suite struct ResponseWriterTests {
    static func builder() throws -> SearchResponseBuilder {
        let request = try SearchRequest(
            params: .object([
                "query": .string("vim editor"),
                "facets": .array([.string("section")]),
                "getRankingInfo": .bool(true),
                "attributesToHighlight": .array([.string("title"), .string("keywords"), .string("size"), .string("contentDescription")]),
                "attributesToSnippet": .array([.string("contentDescription:3")]),
            ]))
        var b = SearchResponseBuilder(request: request)
        func item(_ title: String, _ extra: [String: JSONValue] = [:]) -> JSONValue {
            var attributes: [String: JSONValue] = [
                "title": .string(title), "keywords": .array([.string("editor"), .string("text"), .number(3)]),
                "size": .number(1234), "section": .string("editors"),
                "contentDescription": .string("Vi IMproved, a highly configurable text editor for programmers \"quoted\""),
                // An attribute named like a field of the hit: the hit's own value wins.
                "objectID": .string("not the id"),
                "Zeta": .bool(true), "_under": .null, "é": .string("past ASCII"),
            ]
            attributes.merge(extra) { $1 }
            return .object([
                "attributes": .object(attributes), "domainIdentifier": .string("org.debian.editors"),
                "entity": .object(["type": .string("PackageEntity"), "id": .string(title)]),
            ])
        }
        b.add(
            Body.ShardSearchResult(
                shard: 0,
                hits: [
                    Body.RankedHit(id: "deb:vim", item: item("vim"), rank: SearchRank(words: 2, typos: 0, proximity: 1, custom: [.number(9)])),
                    Body.RankedHit(
                        id: "deb:neovim",
                        item: item("neovim", ["title": .string("neovim \u{1}"), "contentDescription": .string("Vim, l’éditeur de texte")]),
                        rank: SearchRank(words: 2, typos: 1, proximity: 3)),
                ],
                nbHits: 2, facets: ["section": ["editors": 2]], facetStats: [:], exhaustiveFacetsCount: true))
        return b
    }

    /// Hits from two shards that tie on the ranking criteria are ordered by
    /// identifier when their custom values are the same, and by the custom
    /// ranking when those differ (entity priority, higher first), whatever
    /// their identifiers say.
    @Test func tiesGoToTheCustomRankingThenTheIdentifiers() throws {
        func order(_ hits: [(String, Double)]) throws -> [String] {
            var b = SearchResponseBuilder(request: try SearchRequest(params: .object(["query": .string("corner shop")])))
            for (shard, half) in [hits.prefix(2), hits.dropFirst(2)].enumerated() {
                b.add(
                    Body.ShardSearchResult(
                        shard: shard,
                        hits: half.map { id, priority in
                            Body.RankedHit(
                                id: id, item: .object(["attributes": .object(["title": .string("corner shop")])]),
                                rank: SearchRank(words: 2, proximity: 1, custom: [.number(priority), .null]))
                        }, nbHits: half.count, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
            }
            let response = try JSONValue.parse(Data(b.responseBytes(processingTimeMS: 1)))
            return response["hits"]?.arrayValue?.compactMap { $0["objectID"]?.stringValue } ?? []
        }
        #expect(try order([("d", 0), ("b", 0), ("c", 0), ("a", 0)]) == ["a", "b", "c", "d"])
        #expect(try order([("d", 0), ("b", 5), ("c", 0), ("a", 0)]) == ["b", "a", "c", "d"])
        #expect(try order([("d", 7), ("b", 5), ("c", 0), ("a", 0)]) == ["d", "b", "a", "c"])
    }

    /// An app's search keeps every shard's hits as they came and rewrites
    /// only the page's items (``SearchResponseBuilder/itemTransform``): the
    /// page is the one a builder over rewritten items writes, raw or tree,
    /// and the transform runs once per hit on the page, never for the rest.
    @Test func onlyThePagesItemsAreRewritten() throws {
        let request = try SearchRequest(params: .object(["query": .string("vim"), "hitsPerPage": .number(1), "page": .number(1)]))
        let items: [JSONValue] = ["a", "b", "c"].map {
            .object([
                "uniqueIdentifier": .string("app/\($0)"), "domainIdentifier": .string("app.d"),
                "attributes": .object(["title": .string("vim \($0)")]),
            ])
        }
        @Sendable func rewrite(_ item: JSONValue) -> JSONValue {
            guard case .object(var o) = item else { return item }
            o["uniqueIdentifier"] = .string(String(o["uniqueIdentifier"]!.stringValue!.dropFirst(4)))
            o["domainIdentifier"] = .string("d")
            return .object(o)
        }
        func hits(_ items: [JSONValue], raw: Bool) -> [Body.RankedHit] {
            items.enumerated().map { i, item in
                Body.RankedHit(id: "x\(i)", item: raw ? .null : item, rank: SearchRank(words: 1, typos: i), rawItem: raw ? RawJSON(item) : nil)
            }
        }
        let calls = Mutex(0)
        var expected = SearchResponseBuilder(request: request)
        expected.add(
            Body.ShardSearchResult(
                shard: 0, hits: hits(items.map(rewrite), raw: false), nbHits: 3, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
        for raw in [false, true] {
            var b = SearchResponseBuilder(request: request) { item in
                calls.withLock { $0 += 1 }
                return rewrite(item)
            }
            b.add(Body.ShardSearchResult(shard: 0, hits: hits(items, raw: raw), nbHits: 3, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
            calls.withLock { $0 = 0 }
            let bytes = b.responseBytes(processingTimeMS: 1)
            #expect(bytes == expected.responseBytes(processingTimeMS: 1))
            #expect(calls.withLock { $0 } == 1)
            #expect(String(decoding: bytes, as: UTF8.self).contains("\"domainIdentifier\":\"d\""))
        }
    }

    /// Hits whose items come as JSON text (the coordinator's local worker,
    /// ``Body/RankedHit/rawItem``) give the bytes their trees give: values
    /// copied as they are, highlights and snippets from the parsed values,
    /// `entity` and `domainIdentifier`, an attribute named `objectID`; and
    /// with or without attributes to highlight named (every retrieved text
    /// value then, lists of text among them), or to retrieve.
    @Test func hitsHeldAsTextGiveTheBytesOfTheirTrees() throws {
        let tree = try Self.builder()
        func raw(_ b: SearchResponseBuilder) -> SearchResponseBuilder {
            var r = SearchResponseBuilder(request: b.request)
            r.add(
                Body.ShardSearchResult(
                    shard: 0, hits: b.hits.map { Body.RankedHit(id: $0.id, item: .null, rank: $0.rank, rawItem: RawJSON($0.item)) },
                    nbHits: b.nbHits, facets: b.facets, facetStats: [:], exhaustiveFacetsCount: true))
            return r
        }
        #expect(raw(tree).rawItems.allSatisfy { $0 != nil })
        #expect(raw(tree).responseBytes(processingTimeMS: 7) == tree.responseBytes(processingTimeMS: 7))
        for params: JSONValue in [
            .object(["query": .string("editor vim")]),
            .object(["query": .string("text"), "attributesToRetrieve": .array([.string("title"), .string("keywords")])]),
            .object(["query": .string("quoted"), "attributesToSnippet": .array([.string("contentDescription:2")])]),
        ] {
            var other = SearchResponseBuilder(request: try SearchRequest(params: params))
            other.add(
                Body.ShardSearchResult(
                    shard: 0, hits: zip(tree.hits.indices, tree.hits).map { Body.RankedHit(id: $1.id, item: $1.item, rank: $1.rank) },
                    nbHits: tree.nbHits, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
            let bytes = other.responseBytes(processingTimeMS: 1)
            #expect(raw(other).responseBytes(processingTimeMS: 1) == bytes, "\(params)")
            #expect(String(decoding: bytes, as: UTF8.self).contains("<em>"))
        }
        // Text that is not an item object is read whole, as its tree.
        var odd = SearchResponseBuilder(request: tree.request)
        odd.add(
            Body.ShardSearchResult(
                shard: 0, hits: [Body.RankedHit(id: "x", item: .null, rank: SearchRank(words: 2), rawItem: RawJSON(.array([])))],
                nbHits: 1, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
        var same = SearchResponseBuilder(request: tree.request)
        same.add(
            Body.ShardSearchResult(
                shard: 0, hits: [Body.RankedHit(id: "x", item: .array([]), rank: SearchRank(words: 2))],
                nbHits: 1, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
        #expect(odd.responseBytes(processingTimeMS: 1) == same.responseBytes(processingTimeMS: 1))
    }

    @Test func theBytesAreTheCanonicalJSONOfTheirTree() throws {
        let bytes = try Self.builder().responseBytes(processingTimeMS: 7)
        let tree = try JSONValue.parse(Data(bytes))
        #expect(JSONWriter.bytes(tree) == bytes)
        let hits = try #require(tree["hits"]?.arrayValue)
        #expect(hits.count == 2)
        #expect(hits[0]["objectID"] == .string("deb:vim"))
        #expect(hits[0]["domainIdentifier"] == .string("org.debian.editors"))
        #expect(hits[0]["_highlightResult"]?["title"]?["value"] == .string("<em>vim</em>"))
        #expect(hits[0]["_highlightResult"]?["title"]?["fullyHighlighted"] == .bool(true))
        #expect(hits[0]["_highlightResult"]?["keywords"]?.arrayValue?.count == 3)
        #expect(hits[0]["_highlightResult"]?["keywords"]?.arrayValue?.first?["matchedWords"] == .array([.string("editor")]))
        #expect(
            hits[0]["_highlightResult"]?["size"]
                == .object([
                    "value": .string("1234"), "matchLevel": .string("none"),
                    "matchedWords": .array([]), "fullyHighlighted": .bool(false),
                ]))
        #expect(hits[0]["_snippetResult"]?["contentDescription"]?["matchLevel"] == .string("partial"))
        #expect(hits[0]["_rankingInfo"]?["proximityDistance"] == .number(1))
        #expect(tree["facets"] == .object(["section": .object(["editors": .number(2)])]))
        #expect(tree["processingTimeMS"] == .number(7))
        #expect(tree["nbHits"] == .number(2))
    }

    /// Without `attributesToHighlight`, a hit highlights its retrieved
    /// attributes that hold text (a string, or an array with one), and
    /// only those.
    @Test func byDefaultTheRetrievedTextIsHighlighted() throws {
        let attributes: [String: JSONValue] = [
            "title": .string("vim"), "keywords": .array([.number(1), .string("editor")]), "size": .number(3),
            "flags": .array([.bool(true)]), "section": .string("editors"), "é": .string("past ASCII"),
        ]
        let item = JSONValue.object(["attributes": .object(attributes), "domainIdentifier": .string("org.debian")])
        for retrieve in [nil, ["title", "size", "keywords"], ["flags", "size"]] as [[String]?] {
            var params: [String: JSONValue] = ["query": .string("vim editor")]
            if let retrieve { params["attributesToRetrieve"] = .array(retrieve.map(JSONValue.string)) }
            var b = SearchResponseBuilder(request: try SearchRequest(params: .object(params)))
            b.add(
                Body.ShardSearchResult(
                    shard: 0, hits: [Body.RankedHit(id: "deb:vim", item: item, rank: SearchRank(words: 2))],
                    nbHits: 1, facets: [:], facetStats: [:], exhaustiveFacetsCount: true))
            let hit = try #require(try JSONValue.parse(Data(b.responseBytes(processingTimeMS: 1)))["hits"]?.arrayValue?.first)
            let expected = Set(attributes.keys.filter { (retrieve?.contains($0) ?? true) && SearchResponseBuilder.isText(attributes[$0]!) })
            #expect(Set(hit["_highlightResult"]?.objectValue?.keys ?? [:].keys) == expected, "\(String(describing: retrieve))")
            #expect(hit["domainIdentifier"] == .string("org.debian"))
            #expect(expected.isEmpty == (hit["_highlightResult"] == nil))
        }
    }

    @Test func aWrittenResponseFramesAsItsTreeDoes() throws {
        let bytes = try Self.builder().responseBytes(processingTimeMS: 3)
        let tree = try JSONValue.parse(Data(bytes))
        let failed = [ShardFailure(shard: 1, reason: "no answer within the deadline of \"5\" ms")]
        for key in [nil, "k1"] as [String?] {
            let written = Envelope(id: "r-1", body: .searchResult(.written(RawJSON(trusted: ArraySlice(bytes)), failedShards: failed)), key: key)
            let built = Envelope(id: "r-1", body: .searchResult(Body.SearchResult(response: tree, failedShards: failed)), key: key)
            #expect(written.encoded() == built.encoded())
            let read = try Envelope.decode(written.encoded())
            #expect(read.body == .searchResult(Body.SearchResult(response: tree, failedShards: failed)))
        }
    }

    /// A typed query's answer splices its written response the same way,
    /// and frames with or without results read back as they were built.
    @Test func aWrittenSuggestResponseFramesAsItsTreeDoes() throws {
        let bytes = try Self.builder().responseBytes(processingTimeMS: 4)
        let tree = try JSONValue.parse(Data(bytes))
        let suggestions = [Body.SuggestionCount(suggestion: "vim", count: 2), Body.SuggestionCount(suggestion: "vim \"tiny\"", count: 1)]
        let failed = [ShardFailure(shard: 0, reason: "gone")]
        for key in [nil, "k1"] as [String?] {
            let written = Envelope(
                id: "s-1",
                body: .suggestResult(
                    .written(
                        suggestions: suggestions, response: RawJSON(trusted: ArraySlice(bytes)),
                        failedShards: failed)), key: key)
            let built = Envelope(
                id: "s-1", body: .suggestResult(Body.SuggestResult(suggestions: suggestions, response: tree, failedShards: failed)), key: key)
            #expect(written.encoded() == built.encoded())
            #expect(try Envelope.decode(written.encoded()).body == built.body)
            // The Codable form is the reference for the fast one.
            let codable = try JSONValueEncoder().encode(Body.SuggestResult(suggestions: suggestions, response: tree, failedShards: failed))
            #expect(try JSONValue.parse(written.encoded())["response"] == codable["response"])
            #expect(try JSONValue.parse(written.encoded())["suggestions"] == codable["suggestions"])
        }
        let bare = Envelope(id: "s-2", body: .suggestResult(Body.SuggestResult(suggestions: suggestions)))
        #expect(try JSONValue.parse(bare.encoded())["response"] == nil)
        #expect(try Envelope.decode(bare.encoded()).body == bare.body)
    }
}
