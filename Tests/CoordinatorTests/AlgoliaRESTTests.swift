import Foundation
import Items
import Testing
import WireProtocol

@testable import Coordinator

/// The REST API's mapping, without processes: parameters as clients send
/// them, records as items and back, partial updates, facet-value matching,
/// and where a local request's replies go.
@Suite("Algolia REST mapping")
struct AlgoliaRESTTests {
    @Test("the v4 params string: JSON lists as lists, numbers as numbers, text parameters as text")
    func paramsString() {
        let p = AlgoliaParams.decode(
            "query=2024&hitsPerPage=5&facets=%5B%22brand%22%2C%22type%22%5D&facetFilters=%5B%5B%22brand%3AAcme%22%5D%5D"
                + "&highlightPreTag=__ais-highlight__&filters=price+%3E+3&analytics=false&tagFilters=")
        #expect(p["query"] == .string("2024"))
        #expect(p["hitsPerPage"] == .number(5))
        #expect(p["facets"] == .array([.string("brand"), .string("type")]))
        #expect(p["facetFilters"] == .array([.array([.string("brand:Acme")])]))
        #expect(p["highlightPreTag"] == .string("__ais-highlight__"))
        #expect(p["filters"] == .string("price > 3"))
        #expect(p["analytics"] == .bool(false))
        let normalized = AlgoliaParams.normalized(p)
        #expect(normalized["tagFilters"] == nil, "an empty filter is no filter")
    }

    @Test("v5 members win over the params string; ignored switches are dropped")
    func bothForms() {
        let p = AlgoliaParams.from(
            [
                "params": .string("query=a&page=2"), "page": .number(3), "indexName": .string("i"),
                "responseFields": .array([.string("*")]),
            ], dropping: ["indexName"])
        #expect(p == ["query": .string("a"), "page": .number(3)])
    }

    @Test("index names are one domain label")
    func labels() {
        #expect(AlgoliaIndex.label("products_v2-fr") == "products_v2-fr")
        #expect(AlgoliaIndex.label("a.b c/é") == "a%2Eb%20c%2F%C3%A9")
        #expect(DomainIdentifier.isValid(AlgoliaIndex.recordDomain("a.b c/é", "x")))
        #expect(AlgoliaIndex.recordDomain("p", "x").hasPrefix("algolia.p.r."))
        #expect(AlgoliaIndex.uid("p", "o/1") == "p/o/1")
    }

    @Test("records become items with flattened nested objects and _geoloc, and come back whole")
    func records() throws {
        let record: [String: JSONValue] = [
            "objectID": .string("o1"), "title": .string("T"), "tags": .array([.string("a")]),
            "brand": .object(["name": .string("Acme"), "country": .object(["code": .string("FR")])]),
            "_geoloc": .object(["lat": .number(48.85), "lng": .number(2.35)]), "gone": .null,
        ]
        let item = try AlgoliaRecord.item(record, objectID: "o1", index: "p")
        let attributes = try #require(item["attributes"]?.objectValue)
        #expect(attributes["brand.name"] == .string("Acme"))
        #expect(attributes["brand.country.code"] == .string("FR"))
        #expect(attributes["latitude"] == .number(48.85) && attributes["longitude"] == .number(2.35))
        #expect(attributes["gone"] == nil && attributes["objectID"] == nil)
        #expect(item["uniqueIdentifier"] == .string("p/o1"))
        var back = try #require(AlgoliaRecord.record(item: item, index: "p"))
        back["gone"] = .null
        #expect(back == record)
    }

    @Test("a list of objects becomes a list per field, and comes back whole; one mixed with values is refused")
    func listsOfObjects() throws {
        let variants = JSONValue.array([
            .object(["sku": .string("a"), "price": .number(3)]), .object(["sku": .string("b")]),
        ])
        let record: [String: JSONValue] = ["objectID": .string("o"), "variants": variants]
        let item = try AlgoliaRecord.item(record, objectID: "o", index: "p")
        let attributes = try #require(item["attributes"]?.objectValue)
        #expect(attributes["variants.sku"] == .array([.string("a"), .string("b")]))
        #expect(attributes["variants.price"] == .array([.number(3)]))
        #expect(attributes["variants"] == nil)
        #expect(try #require(AlgoliaRecord.record(item: item, index: "p")) == record)
        #expect(throws: RESTError.self) {
            try AlgoliaRecord.item(["variants": .array([.object(["size": .number(1)]), .number(2)])], objectID: "o", index: "p")
        }
        #expect(throws: RESTError.self) {
            try AlgoliaRecord.item([AlgoliaRecord.objectsAttribute: .string("x")], objectID: "o", index: "p")
        }
    }

    @Test("partial updates: plain values and the built-in operations")
    func partial() throws {
        let before: [String: JSONValue] = ["n": .number(1), "tags": .array([.string("a")]), "keep": .string("k")]
        let after = try AlgoliaREST.applyPartial(
            [
                "n": .object(["_operation": .string("Increment"), "value": .number(2)]),
                "tags": .object(["_operation": .string("AddUnique"), "value": .string("a")]),
                "new": .object(["_operation": .string("Add"), "value": .string("x")]),
                "title": .string("t"),
            ], to: before)
        #expect(after["n"] == .number(3))
        #expect(after["tags"] == .array([.string("a")]))
        #expect(after["new"] == .array([.string("x")]))
        #expect(after["title"] == .string("t") && after["keep"] == .string("k"))
        let removed = try AlgoliaREST.applyPartial(["tags": .object(["_operation": .string("Remove"), "value": .string("a")])], to: before)
        #expect(removed["tags"] == .array([]))
        let down = try AlgoliaREST.applyPartial(["n": .object(["_operation": .string("Decrement"), "value": .number(5)])], to: before)
        #expect(down["n"] == .number(-4))
        #expect(throws: RESTError.self) {
            try AlgoliaREST.applyPartial(["n": .object(["_operation": .string("Multiply"), "value": .number(2)])], to: before)
        }
    }

    @Test("facet values match word prefixes, folding case and diacritics")
    func facetValues() {
        #expect(AlgoliaREST.highlightPrefixes("New York, USA", ["yo"], "<em>", "</em>") == "New <em>Yo</em>rk, USA")
        #expect(AlgoliaREST.highlightPrefixes("Crème brûlée", ["bru"], "<b>", "</b>") == "Crème <b>brû</b>lée")
        #expect(AlgoliaREST.highlightPrefixes("Ecuador", ["cua"], "<em>", "</em>") == nil, "prefixes of words only")
        #expect(AlgoliaREST.highlightPrefixes("Ecuador", [], "<em>", "</em>") == "Ecuador")
    }

    @Test("settings fill what the search leaves out; ranking and searchable attributes go as written")
    func settings() {
        let s = AlgoliaSettings(json: [
            "hitsPerPage": .number(7), "customRanking": .array([.string("desc(pop)")]),
            "ranking": .array([.string("asc(price)"), .string("typo")]),
            "searchableAttributes": .array([.string("title,alt"), .string("unordered(body)")]),
            "replicas": .array([.string("r1"), .string("virtual(r2)")]),
        ])
        let p = s.apply(to: ["hitsPerPage": .number(3)])
        #expect(p["hitsPerPage"] == .number(3))
        #expect(p["customRanking"] == .array([.string("desc(pop)")]))
        #expect(p["ranking"] == .array([.string("asc(price)"), .string("typo")]))
        #expect(p["restrictSearchableAttributes"] == .array([.string("title,alt"), .string("unordered(body)")]))
        // A search's own restriction keeps the setting's order, groups and unordered().
        let narrowed = s.apply(to: ["restrictSearchableAttributes": .array([.string("body"), .string("alt")])])
        #expect(narrowed["restrictSearchableAttributes"] == .array([.string("alt"), .string("unordered(body)")]))
        // Without a ranking setting, Algolia's default (geo second).
        let plain = AlgoliaSettings(json: [:]).apply(to: [:])
        #expect(plain["ranking"] == .array(["typo", "geo", "words", "filters", "proximity", "attribute", "exact", "custom"].map { .string($0) }))
        #expect(s.replicas == ["r1", "r2"])
    }

    @Test("a local request's replies are gathered until the one that ends it")
    func localReplies() {
        var local = LocalClients()
        let route = local.route()
        #expect(LocalClients.isLocal(route))
        // ZeroMQ's own routing ids are a zero byte and four more: never local.
        #expect(!LocalClients.isLocal([Data([0, 0, 0, 0, 1])]))
        #expect(!LocalClients.isLocal([Data("client".utf8)]))
        #expect(local.route() != route)
    }

    @Test("InstantSearch's page with refined disjunctive facets is recognised, and nothing else")
    func disjunctivePage() {
        let base: [String: JSONValue] = ["query": .string("lib"), "maxValuesPerFacet": .number(10)]
        var main = base
        main["facets"] = .array([.string("section"), .string("arch")])
        main["hitsPerPage"] = .number(20)
        main["facetFilters"] = .array([.array([.string("section:libs")]), .array([.string("arch:all")])])
        var extra = base
        extra["facets"] = .string("section")
        extra["hitsPerPage"] = .number(0)
        extra["facetFilters"] = .array([.array([.string("arch:all")])])
        extra["attributesToRetrieve"] = .array([])
        extra["analytics"] = .bool(false)
        let page = AlgoliaDisjunctivePage([("i", nil, main), ("i", nil, extra)])
        #expect(page?.extras.map(\.facet) == ["section"])
        #expect(page?.index == "i")
        // Alone, another index, a hit asked, another query, two facets, a facet search: run one by one.
        #expect(AlgoliaDisjunctivePage([("i", nil, main)]) == nil)
        #expect(AlgoliaDisjunctivePage([("i", nil, main), ("j", nil, extra)]) == nil)
        var hit = extra
        hit["hitsPerPage"] = .number(1)
        #expect(AlgoliaDisjunctivePage([("i", nil, main), ("i", nil, hit)]) == nil)
        var other = extra
        other["query"] = .string("libs")
        #expect(AlgoliaDisjunctivePage([("i", nil, main), ("i", nil, other)]) == nil)
        var two = extra
        two["facets"] = .array([.string("section"), .string("arch")])
        #expect(AlgoliaDisjunctivePage([("i", nil, main), ("i", nil, two)]) == nil)
        #expect(AlgoliaDisjunctivePage([("i", nil, main), ("i", "section", extra)]) == nil)
    }
}
