import Foundation
import Items
import QueryPlan
import Testing

@testable import ShardStore

/// Entities, exact domains, suggestions and groups in one shard.
@Suite struct EntityStoreTests {
    @Test func exactDomainLeavesSubdomainsOut() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("a", domain: "org.x", #"{"title": "one"}"#), item("b", domain: "org.x.y", #"{"title": "two"}"#),
            item("c", domain: "org.x.y.z", #"{"title": "three"}"#), item("d", domain: "org.xy", #"{"title": "four"}"#),
        ])
        #expect(try s.idSet(.exactDomain(["org.x"])) == ["a"])
        #expect(try s.idSet(.exactDomain(["org.x.y"])) == ["b"])
        #expect(try s.idSet(.exactDomain(["org.x", "org.x.y.z"])) == ["a", "c"])
        #expect(try s.idSet(.not(.exactDomain(["org.x"]))) == ["b", "c", "d"])
        #expect(try s.idSet(.domain(["org.x"])) == ["a", "b", "c"])
        // Through the plan's JSON form, as it travels.
        let back = try QueryPlan.Predicate(json: QueryPlan.Predicate.exactDomain(["org.x"]).json)
        #expect(back == .exactDomain(["org.x"]))
    }

    @Test func deletingATypeIsExact() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        let entities = [
            AppEntity(type: "Land", id: "1", title: "one"), AppEntity(type: "Land", id: "2:with:colons", title: "two"),
            AppEntity(type: "LandX", id: "1", title: "three"), AppEntity(type: "Lan", id: "1", title: "four"),
        ]
        try s.put(entities.map { $0.itemJSON() } + [item("entity-like", #"{"title": "five", "entityType": "Land"}"#)])
        #expect(try s.deleteEntities(type: "Land", ids: ["9"]) == 0)
        #expect(try s.deleteEntities(type: "Land") == 2)
        #expect(try s.idSet(.all) == ["entity:LandX:1", "entity:Lan:1", "entity-like"])
    }

    @Test func associationRewritesTheItemWithItsEntity() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([item("shop", #"{"title": "corner shop"}"#)])
        #expect(try s.associate(uniqueIdentifier: "shop", with: EntityAssociation(type: "Shop", id: "7", priority: 4)))
        #expect(try !s.associate(uniqueIdentifier: "nope", with: EntityAssociation(type: "Shop", id: "8")))
        var found: [JSONValue] = []
        try s.run(Query(predicate: .all)) { found += $0.map(\.item) }
        #expect(found.first?["entity"]?["id"]?.stringValue == "7")
        #expect(found.first?["attributes"]?["title"]?.stringValue == "corner shop")
        // Still found by its words after the rewrite.
        #expect(try s.search(SearchPlan(words: ["corner"], window: 5)).nbHits == 1)
    }

    @Test func suggestionsCountWhatTheyWouldFind() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("1", #"{"title": "python tools", "displayName": "Python module"}"#),
            item("2", #"{"title": "python3 modules"}"#),
            item("3", #"{"title": "pythonic python"}"#),
            item("4", #"{"title": "pyramid"}"#),
            item("5", #"{"title": "python monitor"}"#),
        ])
        let one = try s.suggest(SearchPlan(words: ["pyth"]), limit: 10)
        #expect(one.map(\.text) == ["python", "python3", "pythonic"])
        #expect(one.map(\.count) == [3, 1, 1])
        let two = try s.suggest(SearchPlan(words: ["python", "mo"]), limit: 10)
        #expect(two.map(\.text) == ["python module", "python monitor"])
        #expect(two.map(\.count) == [1, 1])
        // A complete word suggests itself only.
        let done = try s.suggest(SearchPlan(words: ["python"], prefixLast: false), limit: 10)
        #expect(done.map(\.text) == ["python"])
        // The cut: only the best one asked for, best first.
        #expect(try s.suggest(SearchPlan(words: ["python", "mo"]), limit: 1).map(\.text) == ["python module"])
        #expect(try s.suggest(SearchPlan(words: ["tools", "py"]), limit: 5).map(\.text) == ["tools python"])
    }

    @Test func groupsPerExactDomainWithTotals() throws {
        let dir = TempDir()
        let s = try openStore(dir)
        try s.put([
            item("a1", domain: "org.a", #"{"title": "kiwi one"}"#), item("a2", domain: "org.a", #"{"title": "kiwi two"}"#),
            item("a3", domain: "org.a", #"{"title": "kiwi"}"#), item("b1", domain: "org.a.b", #"{"title": "kiwi three"}"#),
            item("c1", domain: "org.c", #"{"title": "mango"}"#),
        ])
        let groups = try s.searchGrouped(SearchPlan(words: ["kiwi"]), perDomain: 2)
        #expect(groups.map(\.domain) == ["org.a", "org.a.b"])
        #expect(groups.map(\.total) == [3, 1])
        #expect(groups[0].hits.map(\.uniqueIdentifier) == ["a3", "a1"])
    }
}
